package import Engine
package import EngineDNNL
import Foundation
package import MediaIO
package import ModelCatalog
internal import ModelFormats

/// A loaded upscaling model: the graph, how to tile it, and a runner that keeps its prepared
/// graphs and buffers across frames.
package final class Upscaler {
    /// Catalog name or the `.param` file name.
    package let name: String
    /// Output scale.
    package let scale: Int
    /// How the model is tiled.
    package let spec: TilingSpec
    /// The graph.
    package let graph: Graph
    /// The files the model was read from.
    package let modelFiles: [String]
    private var runner: TiledRunner
    /// The bundle's alpha submodel (`alphaMode` `separateModel`), tiled like the main one
    /// (in fp32 under `--precision int8`).
    private let alphaRunner: TiledRunner?
    /// The tile size asked for (nil: automatic).
    private let requestedTile: Int?
    /// The tiles' memory budget (`--max-memory`; nil: the standard one, speed-capped).
    private let memoryBudget: Int?
    /// Global poolings over the whole picture in statistics passes (`--pooling whole`).
    private let wholePicturePooling: Bool
    /// How many threads its backends use (`--threads`).
    package let threads: Int
    /// The model store (where int8 calibrations are kept).
    private let store: ModelStore
    /// The precision resolved for the model (`--precision`); int8 runs fp32 until calibrated.
    private let precision: ComputePrecision
    /// What the Vulkan backend stores the model's values in ("fp32", "fp16"); nil on oneDNN.
    private var storage: String?
    /// The backend the model's tiles run on, in the precision the plan chose (`models verify`
    /// times a tile on it, as `run` computes).
    package private(set) var engine: InferenceBackend
    /// The int8 engine, once the model runs int8.
    private var int8Backend: DNNLBackend?
    /// Whether the model runs in int8 once calibrated, and is not yet: the first picture it
    /// upscales calibrates it (`calibrateInt8`).
    private var needsCalibration = false
    /// The int8 calibration in use (nil outside `--precision int8`, or before the first picture).
    private var calibration: Int8Calibration?
    /// Keeps a bundle's extracted files alive.
    private let bundle: ModelBundle?
    private var planar = FloatPlanarImage(channels: 3, width: 1, height: 1)

    /// Loads `model`: the built-in ("2" or vivify-fast-2x), a catalog name (fetched on first
    /// use), or a path to an ncnn `.param`, a Core ML `.mlmodel`/`.mlpackage` or a `.wifm`
    /// (see `ModelResolver`), tiled by the catalog's, the bundle's or the graph's own rules.
    /// - Parameters:
    ///   - tile: interior tile size in input pixels; nil picks one (`TiledRunner.automaticTileSize`).
    ///   - log: receives one line when a model is fetched.
    ///   - settings: the precision the model computes in, its tiles' memory budget and the
    ///     threads its backend uses.
    ///   - allowInt8: whether `--precision int8` may quantise this model (a filter stage runs
    ///     fp32: its calibration is not kept in a segmented job's manifest).
    ///   - role: what messages call it ("filter"; default "upscaler").
    package init(model: String, tile: Int? = nil, backend: BackendChoice = .onednn, settings: ComputeSettings = ComputeSettings(),
                store: ModelStore = ModelStore(), allowInt8: Bool = true, role: String? = nil, log: (String) -> Void = { _ in }) throws {
        let backend = try backend.resolved()
        let loaded = try ModelResolver.resolve(model, task: .upscale, store: store, library: settings.customLayers, role: role, log: log)
        loaded.warnings.forEach(log)
        name = loaded.name
        modelFiles = loaded.files
        graph = loaded.graph
        let tiling = try loaded.spec ?? ModelResolver.inferTiling(loaded.graph)
        spec = tiling
        bundle = loaded.bundle
        requestedTile = tile
        memoryBudget = settings.memoryBudget
        wholePicturePooling = settings.wholePicturePooling
        threads = settings.threads
        let engine: InferenceBackend
        self.store = store
        if backend == .onednn {
            var plan = try PrecisionPlan(model: loaded.name, files: loaded.files, store: store, choice: settings.precision)
            if !allowInt8 && plan.precision == .int8 { (plan.precision, plan.calibration) = (.fp32, nil) }
            precision = plan.precision
            digest = plan.digest
            if let c = plan.calibration {
                calibration = c
                int8CalibrationOrigin = plan.origin
            }
            // int8 without a calibration yet runs fp32 until its first picture with detail.
            needsCalibration = plan.precision == .int8 && plan.calibration == nil
            let dnnl = try plan.makeBackend(threads: settings.threads)
            if plan.calibration != nil { int8Backend = dnnl }
            engine = dnnl
        } else {
            precision = .fp32
            engine = try backend.make(precision: settings.precision, threads: settings.threads, modelFiles: loaded.files,
                                      pinnedAuto: settings.vulkanAutoStorage)
            storage = BackendChoice.precision(of: engine)
        }
        alphaRunner = try loaded.alphaGraph.map { try TiledRunner(graph: $0, spec: tiling, backend: backend == .onednn ? DNNLBackend(precision: .fp32, threads: settings.threads) : engine, tileSize: tile,
                                                                       memoryBudget: settings.memoryBudget, wholePicturePooling: settings.wholePicturePooling) }
        self.engine = engine
        scale = spec.scale
        runner = try TiledRunner(graph: graph, spec: spec, backend: engine, tileSize: tile, memoryBudget: settings.memoryBudget,
                                 wholePicturePooling: settings.wholePicturePooling)
        if runner.poolingFellBack {
            log("note: \(name)'s global poolings cannot take the whole picture's averages in tiles (a layer after one is not 1×1): --pooling whole is not used; each tile pools its own part.")
        }
        let unplaced = graph.unplacedExternalKernels
        if !unplaced.isEmpty {
            // A compiled layer that cannot say where its values lie (a library of ABI version
            // 1, or one that says its layer looks anywhere): whole frames, and the user is told.
            log("\(tile == nil ? "note" : "warning"): \(name) runs on whole frames\(tile.map { " (--tile \($0) is not used)" } ?? ""): \(unplaced.joined(separator: ", ")) \(unplaced.count == 1 ? "gives" : "give") no geometry (a library of custom layer ABI version 1 has no way to; one of version \(CompiledCustomLayers.abiVersion) gives none for a layer that may look anywhere). To run it in tiles, rebuild the library against vivify_custom_layer.h version \(CompiledCustomLayers.abiVersion) with vivify_custom_layer_geometry.")
        } else if let tile, graph.needsWholeFrame {
            if let passes = runner.statisticsPasses {
                log("note: \(name) normalises by statistics of the whole picture (instance normalisation): a picture larger than --tile \(runner.tileSize) runs in \(passes) passes over its tiles, one per normalisation and one for the output.")
            } else {
                log("warning: \(name) sees the whole picture (a reshape, a softmax along rows, an external layer or the like), so it runs on whole frames: --tile \(tile) is not used.")
            }
        }
    }

    /// How many times a `height`×`width` picture goes through the model's tiles: 1, or one
    /// pass per instance normalisation and one more when the picture takes several tiles.
    package func passes(height: Int, width: Int) -> Int { runner.passes(height: height, width: width) }

    /// Interior tile side in input pixels.
    package var tileSize: Int { runner.tileSize }

    /// The interior tile used for a `height`×`width` picture (at most `tileSize`, dividing it evenly).
    package func tileInterior(height: Int, width: Int) -> (h: Int, w: Int) { runner.tileInterior(height: height, width: width) }

    /// Upscales an alpha plane: through the bundle's alpha model when it has one, else through
    /// the main model as a 3-channel copy.
    package func upscaleAlpha(_ alpha: FloatPlanarImage) throws -> FloatPlanarImage {
        guard let alphaRunner else { return try upscale(alpha) }
        return try upscale(alpha, with: alphaRunner)
    }

    /// Upscales a float image (1 or 3 channels, [0, 1]); grey goes through the model as RGB.
    package func upscale(_ image: FloatPlanarImage) throws -> FloatPlanarImage {
        try upscale(image, with: runner)
    }

    private func upscale(_ image: FloatPlanarImage, with runner: TiledRunner) throws -> FloatPlanarImage {
        let c = image.channels
        let input = image.expandedToRGB()
        var out = FloatPlanarImage(channels: 3, width: image.width * scale, height: image.height * scale)
        try run(input, into: &out, with: runner)
        if c == 1 {
            var grey = FloatPlanarImage(channels: 1, width: out.width, height: out.height)
            let n = out.width * out.height
            for i in 0..<n { grey.data[i] = (out.data[i] + out.data[n + i] + out.data[2 * n + i]) / 3 }
            return grey
        }
        return out
    }

    /// Calibrates the int8 model on `images` (planar RGB, [0, 1]): runs them in fp32 recording
    /// every quantised layer's input range, keeps that beside the model store and switches to
    /// int8. Under `--precision int8` a model with no stored calibration calibrates on the
    /// first picture it upscales.
    package func calibrateInt8(on images: [FloatPlanarImage]) throws {
        let calibration = try measureInt8Ranges(on: images)
        try? int8Cache().save(calibration)
        if precision == .int8 { try use(calibration, origin: "first picture") }
    }

    /// Where this model's int8 calibration is kept in the model store.
    package func int8Cache() throws -> Int8CalibrationCache {
        Int8CalibrationCache(store: store, name: name, digest: try filesDigest())
    }

    /// The SHA-256 of the model's files (`ModelDigest`), hashed once per load: the
    /// precision plan's when it needed one, else on first use.
    package func filesDigest() throws -> SHA256.Digest {
        if let digest { return digest }
        let d = try ModelDigest.of(files: modelFiles)
        digest = d
        return d
    }
    private var digest: SHA256.Digest?

    /// The int8 input ranges of every layer on `images` (planar RGB, [0, 1]), measured in fp32
    /// and kept nowhere (`vivify models calibrate` writes them where asked).
    package func measureInt8Ranges(on images: [FloatPlanarImage]) throws -> Int8Calibration {
        let observer = Int8Observer()
        let probe = try TiledRunner(graph: graph, spec: spec, backend: DNNLBackend(precision: .fp32, observer: observer, threads: threads), tileSize: runner.tileSize)
        for image in images { _ = try upscale(image, with: probe) }
        return observer.calibration
    }

    private func use(_ calibration: Int8Calibration, origin: String) throws {
        int8CalibrationOrigin = origin
        let int8 = try DNNLBackend(precision: .int8, calibration: calibration, threads: threads)
        int8Backend = int8
        runner = try TiledRunner(graph: graph, spec: spec, backend: int8, tileSize: requestedTile, memoryBudget: memoryBudget,
                                 wholePicturePooling: wholePicturePooling)
        self.calibration = calibration
        needsCalibration = false
    }

    /// The int8 calibration in use as JSON (for a segmented job's manifest, so that every
    /// segment quantises alike); nil when the model does not run int8 (yet).
    package var int8CalibrationJSON: String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys  // the same text in every process (manifests compare it)
        guard let calibration, let data = try? encoder.encode(calibration) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs int8 with the calibration `json` (`int8CalibrationJSON`) under `--precision int8`.
    package func useInt8Calibration(json: String) throws {
        guard precision == .int8 else { return }
        guard let c = try? JSONDecoder().decode(Int8Calibration.self, from: Data(json.utf8)) else {
            throw EngineError(.invalidGraph, "The int8 calibration recorded for \(name) cannot be read. Plan the job again.")
        }
        try use(c, origin: "manifest")
    }

    /// Whether the model runs int8 layers now (`--precision int8`, calibrated).
    package var runsInt8: Bool { precision == .int8 && !needsCalibration }

    /// Where the int8 calibration in use came from: "shipped" (measured for a catalog model, see
    /// `ShippedCalibrations`), "model store" (`vivify models calibrate`, or an earlier first
    /// picture), "first picture" or "manifest" (a segmented job's); nil when none is in use.
    package private(set) var int8CalibrationOrigin: String?

    /// How many tile runs clipped in int8 and were done again in fp32 (pictures unlike the
    /// calibration set, such as saturated synthetic patterns).
    package var int8Fallbacks: Int { int8Backend?.int8Fallbacks ?? 0 }

    /// How many of those tile runs went straight to fp32, after most of the picture's tiles
    /// before them clipped.
    package var int8Skips: Int { int8Backend?.int8Skips ?? 0 }

    /// Whether the model runs int8 once calibrated (`--precision int8`, or `auto` on a catalog
    /// upscaler where the CPU has VNNI or AMX).
    package var quantisesToInt8: Bool { precision == .int8 }

    /// The precision the model's convolutions compute in now ("fp32", "bf16" or "int8").
    package var computePrecision: String { storage ?? (runsInt8 ? "int8" : precision == .int8 ? "fp32" : precision.rawValue) }

    /// Whether `image` can calibrate int8: pictures with little variation (a black lead-in, a
    /// blank warm-up frame) would set ranges far too narrow for what follows. Such pictures
    /// run in fp32 and the next one is tried.
    package static func canCalibrate(_ image: FloatPlanarImage) -> Bool {
        let n = Double(image.data.count)
        guard n > 0 else { return false }
        var sum = 0.0, squares = 0.0
        for v in image.data {
            sum += Double(v)
            squares += Double(v) * Double(v)
        }
        let mean = sum / n
        return (squares / n - mean * mean).squareRoot() >= 0.05
    }

    private func run(_ input: FloatPlanarImage, into out: inout FloatPlanarImage, with runner: TiledRunner? = nil) throws {
        if needsCalibration, runner == nil, Self.canCalibrate(input) { try calibrateInt8(on: [input]) }
        let runner = runner ?? self.runner
        int8Backend?.beginPicture()
        try input.data.withUnsafeBufferPointer { i in
            try out.data.withUnsafeMutableBufferPointer { o in
                try runner.run(input: i, channels: 3, height: input.height, width: input.width, output: o)
            }
        }
    }

    /// Upscales an `rgb24` frame into planar float RGB (`scale ×`), not rounded to 8 bits.
    package func upscale(_ frame: VideoFrame, into output: inout FloatPlanarImage) throws {
        planar.load(from: frame)
        try upscale(planar, into: &output)
    }

    /// Upscales planar float RGB into `output` (`scale ×`), reusing its storage.
    package func upscale(_ image: FloatPlanarImage, into output: inout FloatPlanarImage) throws {
        guard image.channels == 3 else { output = try upscale(image); return }
        if output.channels != 3 || output.width != image.width * scale || output.height != image.height * scale {
            output = FloatPlanarImage(channels: 3, width: image.width * scale, height: image.height * scale)
        }
        try run(image, into: &output)
    }

    /// Gives back the frame-sized float buffers kept for the next frame.
    package func releaseBuffers() {
        planar = FloatPlanarImage(channels: 3, width: 1, height: 1)
    }

    /// Runs the model once on a blank frame of this size, so the first real frame does not pay
    /// for primitive creation and first-touch of buffers (live mode measures every frame).
    package func warmUp(width: Int, height: Int) throws {
        var blank = VideoFrame(format: .rgb24, width: width, height: height)
        blank.color = .bt709
        // The upscale stage's own path: an rgb24 frame into planar float.
        var out = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try upscale(blank, into: &out)
    }

    /// Floating-point operations (2 per multiply-add) to upscale one `width`×`height` frame.
    package func flopsPerFrame(width: Int, height: Int) throws -> Double {
        2 * Double(try runner.multiplyAdds(channels: 3, height: height, width: width))
    }

    /// Floating-point operations per output pixel (2 per multiply-add), measured on a 256-pixel
    /// tile with its border (so tiling overhead is included, as it is paid in practice).
    package func flopsPerOutputPixel() throws -> Double {
        let side = 256
        let shape = Shape(c: graph.inputChannels ?? 3, h: side + 2 * spec.padding, w: side + 2 * spec.padding)
        let macs = try graph.multiplyAdds(input: shape)
        let out = try graph.inferShapes(input: shape)[graph.output]!
        return 2 * Double(macs) / Double(out.h * out.w)
    }
}
