import Foundation
internal import MediaIO
internal import Pipeline
internal import SafeFiles

/// `vivify image IN… OUTDIR`: many pictures in one process. The models are loaded once; one
/// thread reads the next pictures while the models work on the current one and another writes
/// the finished ones (load : process : save, as the ncnn CLIs split them). A picture that
/// cannot be read, processed or written is named and skipped; the others go on.
package enum ImageBatch {
    /// Picture files a directory contributes (by extension, case-insensitive): the formats
    /// Vivify reads.
    package static let extensions = Set(ImageIO.readableExtensions)

    /// What happened.
    package struct Summary: Sendable {
        /// Pictures written.
        package var written: [String] = []
        /// Outputs that existed and were left alone (`-n`).
        package var skipped: [String] = []
        /// Inputs that failed, with the error.
        package var failed: [(input: String, error: any Error)] = []
    }

    /// Whether `argument` is a glob pattern (has `*`, `?` or `[`); a file of that name is not.
    package static func isGlob(_ argument: String) -> Bool {
        argument.contains(where: { "*?[".contains($0) })
    }

    /// The picture files `arguments` name: files as given, a directory's pictures (sorted, not
    /// recursive) and glob patterns (`*.png`, for shells that pass them through).
    package static func expand(_ arguments: [String]) throws -> [String] {
        var files: [String] = []
        for argument in arguments {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: argument, isDirectory: &isDirectory) {
                if isDirectory.boolValue {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: argument)) ?? []
                    files += names.filter { !$0.hasPrefix(".") && extensions.contains(($0 as NSString).pathExtension.lowercased()) }
                        .sorted().map { (argument as NSString).appendingPathComponent($0) }
                } else {
                    files.append(argument)
                }
            } else if isGlob(argument) {
                var g = glob_t()
                defer { globfree(&g) }
                if glob(argument, 0, nil, &g) == 0 {
                    files += (0..<Int(g.gl_pathc)).compactMap { g.gl_pathv[$0].map { String(cString: $0) } }
                }
            } else {
                // A missing file is reported as that picture's failure, not a usage error.
                files.append(argument)
            }
        }
        return files
    }

    /// The output for `input` in `directory`: the same name, with `format`'s extension (nil:
    /// the input's, or png when the input's is not one Vivify writes).
    package static func outputPath(for input: String, in directory: String, format: String?) -> String {
        let name = (input as NSString).lastPathComponent
        let stem = (name as NSString).deletingPathExtension
        let own = (name as NSString).pathExtension.lowercased()
        let ext = format ?? (["png", "jpg", "jpeg"].contains(own) ? (name as NSString).pathExtension : "png")
        return (directory as NSString).appendingPathComponent(stem + "." + ext)
    }

    /// Runs every input through the stages into the configuration's output, a directory
    /// (created when missing), each picture in `format` (png or jpg; nil: the input's).
    /// `progress` receives (pictures done, total) after each one. `log` gets notes and
    /// warnings; `failure` one line for each picture that failed (`skipped 'x.png': …`, what
    /// failed and the fix), which a caller that silences `log` still shows. Of the
    /// configuration, the batch reads what `ImageJob.run` does, but for the input: `inputs`
    /// (files, directories, globs).
    package static func run(inputs arguments: [String], format: String?, configuration: RunConfiguration,
                           log: @escaping @Sendable (String) -> Void = { _ in },
                           failure: @escaping @Sendable (String) -> Void,
                           progress: (Int, Int) -> Void = { _, _ in }) throws -> Summary {
        let backend = try configuration.run.backend.resolved()
        let directory = configuration.output.path
        let stages = configuration.stages, existingOutput = configuration.output.existing
        let limits = configuration.limits
        if let format, !["png", "jpg", "jpeg"].contains(format.lowercased()) {
            throw MediaError(.invalidOptions, "'--format \(format)' is not an image format Vivify writes. Use png or jpg.")
        }
        let inputs = try expand(arguments)
        guard !inputs.isEmpty else {
            throw MediaError(.inputUnreadable, "No pictures in \(arguments.map { "'\($0)'" }.joined(separator: ", ")) (looked for \(extensions.sorted().joined(separator: ", "))).")
        }
        // Two inputs with the same name would write the same output: refused before any work.
        let outputs = inputs.map { outputPath(for: $0, in: directory, format: format) }
        var seen: [String: String] = [:]
        for (input, out) in zip(inputs, outputs) {
            if let other = seen[out] {
                throw MediaError(.invalidOptions, "'\(other)' and '\(input)' would both be written as '\(out)'. Give them different names or process them separately.")
            }
            seen[out] = input
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            // A missing output named like a picture is a picture asked of several inputs (a
            // folder, a glob), not a folder to make.
            let ext = (directory as NSString).pathExtension.lowercased()
            if !directory.hasSuffix("/"), ImageIO.readableExtensions.contains(ext) {
                let given = arguments.count == 1 ? "'\(arguments[0])' is a folder or pattern" : "\(arguments.count) inputs are given"
                throw MediaError(.invalidOptions, "'\(directory)' is named like a picture, but \(given): the output of a batch is a folder. Name a folder (e.g. '\((directory as NSString).deletingPathExtension)/'), or give one picture file as the input.")
            }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw MediaError(.outputUnwritable, "Cannot create the output directory '\(directory)': \(failureReason(error)). Choose a folder you can write to.")
            }
        } else if !isDirectory.boolValue {
            throw MediaError(.invalidOptions, "'\(directory)' is a file; with several pictures the output is a directory.")
        }
        // Every output the very file of its input (a batch into its own folder, same names and
        // format): nothing could be written, so refused before the models are loaded. Some
        // of them only: those are skipped, each named, and the rest go on.
        if zip(inputs, outputs).allSatisfy({ OutputGuard.isSameFile($0, $1) }) {
            let folder = (inputs[0] as NSString).deletingLastPathComponent
            let which = inputs.count == 1 ? "the picture" : "all \(inputs.count) pictures"
            throw MediaError(.invalidOptions, "The output folder '\(directory)' is where \(which) came from, under the same names: each output would be written over its own input, which Vivify never does. Choose another output folder (e.g. '\(((folder.isEmpty ? "." : folder) as NSString).appendingPathComponent("vivified"))/'), or write beside them in another format (--format \(outputs[0].lowercased().hasSuffix(".png") ? "jpg" : "png")).")
        }
        let models = try ImageJob.makeModels(stages, backend: backend, limits: limits, log: log)

        // Load ahead on one thread (at most two pictures waiting), save behind on another.
        let loaded = FrameQueue<(String, Result<StillImage, any Error>)>(name: "→ image batch", policy: .backpressure(capacity: 2))
        let loader = Thread {
            for input in inputs {
                loaded.push((input, Result { try ImageIO.read(path: input, maxPixels: limits.pixelLimit) }))
            }
            loaded.finish()
        }
        loader.start()
        let saver = DispatchQueue(label: "vivify.image-batch.save")
        let saving = DispatchGroup()
        let pendingSaves = DispatchSemaphore(value: 2)
        let results = Locked(Summary())

        for index in 0..<inputs.count {
            // The loader pushes one item per input and never cancels: pop has one for each.
            guard let item = loaded.pop() else { break }
            let (input, read) = item
            let output = outputs[index]
            do {
                try ImageIO.validateOutputPath(output)
                let url: URL
                switch try OutputGuard.check(output: output, inputs: inputs, reads: configuration.readFiles, existing: existingOutput) {
                case .write(let target): url = target
                case .skip:
                    results.withLock { $0.skipped.append(output) }
                    progress(index + 1, inputs.count)
                    continue
                }
                let image = try ImageJob.process(try read.get(), name: input, models: models, maxPixels: limits.pixelLimit, outputExtension: url.pathExtension, log: log)
                pendingSaves.wait()
                saver.async(group: saving) {
                    defer { pendingSaves.signal() }
                    do {
                        let warnings = try ImageJob.save(image, to: url, output: output, replacing: existingOutput == .replace)
                        for w in warnings { log("warning: \(w)") }
                        results.withLock { $0.written.append(output) }
                    } catch {
                        failure("skipped '\(input)': \(ErrorReport.message(for: error))")
                        results.withLock { $0.failed.append((input, error)) }
                    }
                }
            } catch {
                failure("skipped '\(input)': \(ErrorReport.message(for: error))")
                results.withLock { $0.failed.append((input, error)) }
            }
            progress(index + 1, inputs.count)
        }
        saving.wait()
        return results.withLock { $0 }
    }
}
