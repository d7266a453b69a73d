import ArgumentParser
import Foundation
import Vivify

struct BenchModelCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-model",
        abstract: "Time one model's graph on one padded frame and measure the machine's sgemm peak (prints JSON).",
        discussion: "The engine half of Benchmarks/run: the same input size as the ncnn peer, no tiling. Threads: --threads (default: all cores).")

    @Option(help: "A built-in or catalog name, or a model file: ncnn .param (with its .bin), .mlmodel, .mlpackage, .onnx or .wifm.")
    var model: String

    @Option(help: "Frame size before padding, WxH.")
    var size: String = "640x360"

    @Option(help: "Padding in pixels: left,top,right,bottom.")
    var pad: String = "0,0,0,0"

    @Option(help: "Timed runs after one warm-up.")
    var runs: Int = 5

    @Option(help: "Backend: auto (default: Vulkan on a GPU when there is one, else onednn), onednn, vulkan or reference.")
    var backend: BackendChoice = .auto

    @OptionGroup var threadOptions: ThreadOptions
    @OptionGroup var precisionOptions: PrecisionOptions

    @Flag(help: "Also measure oneDNN sgemm GFLOP/s (2048³, median of 5).")
    var gemmPeak = false

    func validate() throws { _ = try frameSizeOption(size, "--size") }

    func run() throws {
        let frame = try frameSizeOption(size, "--size")
        let pads = pad.split(separator: ",").compactMap { Int($0) }
        guard pads.count == 4 else { throw ValidationError("'--pad \(pad)' needs four numbers: left,top,right,bottom.") }
        if let note = try backend.precisionNote(precisionOptions.precision) { Notes.once(note) }
        let r = try EngineBench.run(model: model, width: frame.width, height: frame.height, pad: pads, runs: runs, backend: try backend.resolved(),
                                    limits: RunLimits(threads: threadOptions, precision: precisionOptions))
        var json: [String: Any] = ["model": r.model, "input_shape": r.inputShape, "output_shape": r.outputShape, "runs": r.runs,
                                   "median_s": r.medianSeconds, "gflop": r.gflop, "achieved_gflops": r.achievedGFLOPS, "backend": r.backend,
                                   "threads": r.threads, "precision": r.precision]
        if let omp = r.openMPThreads { json["openmp_threads"] = omp }
        if gemmPeak { json["sgemm_peak_gflops"] = try EngineBench.gemmPeakGFLOPS() }
        let data = try JSONSerialization.data(withJSONObject: json, options: [.sortedKeys])
        print(String(decoding: data, as: UTF8.self))
    }
}

struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Run generated frames through the real pipeline and report against the target frame rate.",
        discussion: "Prints the per-stage frame-timing summary, whether the target rate is met, the limiting stage, FLOPs per frame and the achieved GFLOP/s of each model stage.")

    /// The model options of `vivify run`, so that a stage's option is declared once and the
    /// bench runs what `run` would (its backend, precision, tiles, colour guide and filters).
    @OptionGroup var model: ModelOptions

    @Option(help: "Frame size, WxH.")
    var size: String

    @Option(help: "Number of generated frames.")
    var frames: Int = 60

    @Flag(inversion: .prefixedNo, help: "Anchor each shot's colour to its own earlier frames, as `vivify run` does (on by default).")
    var anchor = true

    @OptionGroup var limitOptions: LimitOptions
    @OptionGroup var timing: TimingOptions

    func validate() throws {
        _ = try frameSizeOption(size, "--size")
        if frames < 1 { throw ValidationError("'--frames \(frames)' must be at least 1.") }
    }

    /// The bench these options describe: generated frames through the stages, the output
    /// thrown away.
    func benchConfiguration() throws -> RunConfiguration {
        var c = Bench.configuration(size: FrameSize(parsing: size)!, frames: frames)
        c.stages = model.stages(anchorShots: anchor)
        c.run.backend = model.backend
        if let fps = timing.targetFps { c.run.targetFPS = fps }
        c.limits = model.limits(pixels: limitOptions)
        return c
    }

    func run() throws {
        MediaLog.configure(verbose: false)
        try timing.outputs.check(inputs: [])
        let result = try Bench.run(try benchConfiguration(), log: { ProgressReporter.writeStderr("vivify: \($0)\n") })
        print(result.text, terminator: "")
        if let tracer = result.tracer { try timing.outputs.write(tracer, report: result.report) }
    }
}
