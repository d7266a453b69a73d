import ArgumentParser
import Foundation
import Vivify

struct ImageCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "image",
        abstract: "Process still images (PNG or JPEG, 8- or 16-bit, grey or RGB, with alpha): one, or a batch into a directory.",
        discussion: """
        `vivify image IN OUT` writes one picture; its format follows OUT's extension (.png or .jpg); PNG keeps the input's bit depth. Alpha is upscaled with the same model on a 3-channel copy.
        `vivify image IN... OUTDIR` (several inputs, a directory of pictures or a glob, or an OUTDIR that is a directory or ends in /) loads the models once and writes each picture into OUTDIR under its own name (extension from --format, else the input's). Reading, processing and writing overlap. A picture that fails is named and skipped; the batch goes on and then exits with the first failure's code (see "Exit codes"). Inputs are never overwritten.
        """)

    @Argument(help: ArgumentHelp("Input pictures (files, directories, globs), then the output picture or directory.", valueName: "IN… OUT"))
    var paths: [String] = []

    @Option(help: "Output format in batch mode: png or jpg (default: the input's).")
    var format: String?

    @OptionGroup var overwriteOptions: OverwriteOptions
    @OptionGroup var limitOptions: LimitOptions

    @OptionGroup var modelOptions: ModelOptions

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    func validate() throws {
        guard paths.count >= 2 else { throw ValidationError("Give an input picture (or several, or a directory) and then the output.") }
    }

    /// Several inputs, a directory or glob among them, or an output directory.
    var isBatch: Bool {
        guard paths.count == 2 else { return true }
        var isDirectory: ObjCBool = false
        let input = paths[0], output = paths[1]
        if FileManager.default.fileExists(atPath: input, isDirectory: &isDirectory), isDirectory.boolValue { return true }
        if !FileManager.default.fileExists(atPath: input), ImageBatch.isGlob(input) { return true }
        if output.hasSuffix("/") { return true }
        return FileManager.default.fileExists(atPath: output, isDirectory: &isDirectory) && isDirectory.boolValue
    }

    /// The job these options describe, from `input` (a batch's: none) to `output` (a batch's:
    /// the directory).
    func configuration(input: String, output: String) -> RunConfiguration {
        var c = RunConfiguration(input: input, output: output)
        c.stages = modelOptions.stages()
        c.output.existing = overwriteOptions.existing
        c.run.backend = modelOptions.backend
        c.limits = modelOptions.limits(pixels: limitOptions)
        return c
    }

    func run() throws {
        MediaLog.configure(verbose: false)
        if isBatch { return try runBatch() }
        let input = paths[0], output = paths[1]
        let warnings = try ImageJob.run(configuration(input: input, output: output),
                                        log: { if !quiet { ProgressReporter.writeStderr("vivify: \($0)\n") } })
        if !quiet { for w in warnings { ProgressReporter.writeStderr("vivify: warning: \(w)\n") } }
    }

    func runBatch() throws {
        let quiet = self.quiet
        let started = ProgressReporter.now()
        var reporter: ProgressReporter?
        let summary: ImageBatch.Summary
        summary = try ImageBatch.run(
            inputs: Array(paths.dropLast()), format: format, configuration: configuration(input: "", output: paths.last!),
            log: { if !quiet { ProgressReporter.writeStderr("vivify: \($0)\n") } },
            // --quiet silences progress and warnings, never a failure.
            failure: { ProgressReporter.writeStderr("vivify: \($0)\n") },
            progress: { done, total in
                guard !quiet else { return }
                if reporter == nil {
                    reporter = ProgressReporter(total: total, interactive: ProgressReporter.stderrIsTerminal, interval: 2, noun: "image", rateUnit: "images/s", started: started)
                }
                if done == total { reporter?.finish(framesDone: done) } else { reporter?.update(framesDone: done) }
            })
        let seconds = ProgressReporter.now() - started
        // The summary line, which names the failures, is kept under --quiet when any failed.
        if !quiet || !summary.failed.isEmpty {
            var line = String(format: "vivify: %d of %d pictures written to %@ in %.1f s", summary.written.count,
                              summary.written.count + summary.skipped.count + summary.failed.count, paths.last!, seconds)
            if !summary.skipped.isEmpty { line += "; \(summary.skipped.count) left as they were (-n)" }
            if !summary.failed.isEmpty { line += "; \(summary.failed.count) failed: " + summary.failed.map { "'\($0.input)'" }.joined(separator: ", ") }
            ProgressReporter.writeStderr(line + ".\n")
        }
        if let first = summary.failed.first {
            throw ReportedFailure(ErrorReport.exitCode(for: first.error))
        }
    }
}
