internal import Engine
internal import EngineDNNL
import Foundation
package import ModelCatalog
internal import ModelFormats
import Models

/// Times one model's graph on one padded frame, the way the ncnn peer benchmark does (same
/// input size, no tiling, input copy and output copy included in each run).
package enum EngineBench {
    /// What a run measured.
    package struct Result: Codable, Sendable {
        package var model: String
        package var inputShape: [Int]
        package var outputShape: [Int]
        package var runs: [Double]
        package var medianSeconds: Double
        package var gflop: Double
        package var achievedGFLOPS: Double
        package var backend: String
        /// The compute thread count (`--threads`), and the one oneDNN's OpenMP runtime ran with.
        package var threads: Int
        package var openMPThreads: Int?
        /// What the convolutions computed in ("fp32", "bf16" or "int8").
        package var precision: String
    }

    /// Runs `model` (catalog name or `.param` path) on a `width`×`height` frame padded by
    /// `pad` (left, top, right, bottom) pixels, under `limits` (its threads and precision).
    package static func run(model: String, width: Int, height: Int, pad: [Int], runs: Int, backend: BackendChoice,
                           limits: RunLimits = RunLimits(), store: ModelStore = ModelStore()) throws -> Result {
        let loaded = try self.loaded(model, store: store, library: limits.customLayers)
        let graph = loaded.graph
        let shape = Shape(c: graph.inputChannels ?? 3, h: height + pad[1] + pad[3], w: width + pad[0] + pad[2])
        try checkSize(loaded, shape: shape, width: width, height: height, pad: pad)
        // A picture-like input: smooth shading, some texture and a little noise. Uniform noise
        // drives int8 layers far past ranges calibrated on photos, and int8 would time its
        // clipping guard's fp32 reruns instead of itself.
        var input = [Float](repeating: 0, count: shape.count)
        var state: UInt64 = 7
        for c in 0..<shape.c {
            for y in 0..<shape.h {
                for x in 0..<shape.w {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Float(state >> 40) / Float(1 << 24) - 0.5
                    let (fx, fy) = (Float(x), Float(y))
                    let v = 0.5 + 0.25 * sin(fx * 0.031 + Float(c)) * cos(fy * 0.043) + 0.1 * sin(fx * 0.29 + fy * 0.17) + 0.04 * noise
                    input[(c * shape.h + y) * shape.w + x] = v
                }
            }
        }
        let backend = try backend.resolved()
        let engine: InferenceBackend
        var precision = ComputePrecision.fp32
        if backend == .onednn {
            var plan = try PrecisionPlan(model: loaded.name, files: loaded.files, store: store, choice: limits.precisionChoice)
            precision = plan.precision
            if precision == .int8 && plan.calibration == nil {
                // No kept or shipped calibration: one on the timed input itself.
                let observer = Int8Observer()
                let probe = try DNNLBackend(precision: .fp32, observer: observer, threads: limits.threadCount).prepare(graph, input: shape)
                var out = [Float](repeating: 0, count: probe.outputShape.count)
                try input.withUnsafeBufferPointer { i in try out.withUnsafeMutableBufferPointer { try probe.run(input: i, output: $0) } }
                plan.calibration = observer.calibration
            }
            engine = try plan.makeBackend(threads: limits.threadCount)
        } else {
            engine = try backend.make(precision: limits.precisionChoice, threads: limits.threadCount, modelFiles: loaded.files)
        }
        let prepared = try engine.prepare(graph, input: shape)
        var output = [Float](repeating: 0, count: prepared.outputShape.count)
        func once() throws -> Double {
            (engine as? DNNLBackend)?.beginPicture()  // each timed run is a picture of its own
            let start = DispatchTime.now().uptimeNanoseconds
            try input.withUnsafeBufferPointer { i in try output.withUnsafeMutableBufferPointer { try prepared.run(input: i, output: $0) } }
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        _ = try once()
        let times = try (0..<runs).map { _ in try once() }
        let median = times.sorted()[times.count / 2]
        let gflop = 2 * Double(try graph.multiplyAdds(input: shape)) / 1e9
        let o = prepared.outputShape
        return Result(model: model, inputShape: [shape.c, shape.h, shape.w], outputShape: [o.c, o.h, o.w], runs: times,
                      medianSeconds: median, gflop: gflop, achievedGFLOPS: gflop / median, backend: backend.rawValue,
                      threads: limits.threadCount, openMPThreads: OpenMPThreads.current(),
                      // What ran: oneDNN's plan, the Vulkan storage (fp16 where asked, or under
                      // auto for a catalog upscaler on a GPU, and the device stores it), fp32 on
                      // the reference.
                      precision: backend == .vulkan ? BackendChoice.precision(of: engine) : precision.rawValue)
    }

    /// The version of the oneDNN library linked.
    package static var oneDNNVersion: String { DNNLVersion.string }

    /// The single-precision matrix-multiply peak of this machine in GFLOP/s (oneDNN sgemm), the
    /// roofline the engine's achieved GFLOP/s is read against.
    package static func gemmPeakGFLOPS() throws -> Double { try GEMMPeak.measure() }

    /// The graph of an upscaler (catalog name, file or bundle) or of a colorizer (`.param`
    /// with its description, or a `colorize` bundle).
    static func graph(_ model: String, store: ModelStore) throws -> Graph {
        try loaded(model, store: store).graph
    }

    /// Refuses (64) an input the model cannot take, before any work, with the size `vivify
    /// run` gives it: a colorizer's own input size, or tiles padded by the model's border and
    /// rounded to its multiple. Shapes that do not fit a U-Net's strides (or its crops) failed
    /// at a layer, as a damaged model (65), naming neither `--size` nor a size that works.
    private static func checkSize(_ loaded: LoadedModel, shape: Shape, width: Int, height: Int, pad: [Int]) throws {
        let graph = loaded.graph
        let problem: String
        do {
            _ = try graph.inferShapes(input: shape)
            return
        } catch let e as EngineError where e.kind == .invalidGraph {
            problem = e.message
        }
        func fits(_ s: Shape) -> Bool { (try? graph.inferShapes(input: s)) != nil }
        func up(_ v: Int, _ m: Int) -> Int { (v + m - 1) / m * m }
        var advice = "Try a larger --size, or --pad."
        if let colour = loaded.colorizer {
            if let side = colour.inputSize {
                let s = up(side, colour.inputMultiple)
                advice = "\(loaded.name) sees every frame at \(s)×\(s) (frames are resized to it): time it with --size \(s)x\(s)."
            } else if fits(Shape(c: shape.c, h: up(height, colour.inputMultiple), w: up(width, colour.inputMultiple))) {
                advice = "Its sides must be multiples of \(colour.inputMultiple) (vivify run rounds frames up so): e.g. --size \(up(width, colour.inputMultiple))x\(up(height, colour.inputMultiple)) with no --pad."
            }
        } else if let spec = loaded.spec ?? (try? ModelResolver.inferTiling(graph)) {
            let w = up(width, spec.multiple), h = up(height, spec.multiple), p = spec.padding
            if fits(Shape(c: shape.c, h: h + 2 * p, w: w + 2 * p)) {
                advice = "vivify run gives it tiles rounded up to a multiple of \(spec.multiple) and padded by \(p) pixels on every side: time that with --size \(w)x\(h) --pad \(p),\(p),\(p),\(p)."
            }
        }
        throw EngineError(.invalidSetting, "\(loaded.name) cannot take a \(width)×\(height) frame padded by \(pad.map(String.init).joined(separator: ",")) (\(shape.w)×\(shape.h) in all): \(problem) \(advice)")
    }

    private static func loaded(_ model: String, store: ModelStore, library: String? = nil) throws -> LoadedModel {
        let colorizer = BuiltinModels.task(of: model) == .colorize
            || (model.lowercased().hasSuffix(".wifm") && (try? ModelBundle.open(path: model).manifest.task) == .colorize)
            || (ModelFileFormat.forPath(model)?.importer != nil && (try? ColorizerSpec.beside(param: model)) != nil)
        return try ModelResolver.resolve(model, task: colorizer ? .colorize : .upscale, store: store, library: library)
    }
}
