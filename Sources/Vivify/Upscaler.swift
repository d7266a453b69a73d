import Engine
import Foundation
import MediaIO
import ModelCatalog
import ModelFormats

/// Which backend runs the models.
public enum BackendChoice: String, Sendable, CaseIterable {
    /// oneDNN, the fast CPU path (default).
    case onednn
    /// The plain Swift reference loops (slow; for checking).
    case reference

    func make() throws -> InferenceBackend {
        switch self {
        case .onednn: return try DNNLBackend()
        case .reference: return ReferenceBackend()
        }
    }
}

/// A loaded upscaling model: the graph, how to tile it, and a runner that keeps its prepared
/// graphs and buffers across frames.
public final class Upscaler {
    /// Catalog name or the `.param` file name.
    public let name: String
    /// Output scale.
    public let scale: Int
    /// How the model is tiled.
    public let spec: TilingSpec
    /// The graph.
    public let graph: Graph
    private let runner: TiledRunner
    /// The bundle's alpha submodel (`alphaMode` `separateModel`), tiled like the main one.
    private let alphaRunner: TiledRunner?
    /// Keeps a bundle's extracted files alive.
    private let bundle: ModelBundle?
    private var planar = FloatPlanarImage(channels: 3, width: 1, height: 1)
    private var result = FloatPlanarImage(channels: 3, width: 1, height: 1)

    /// Loads `model` (a catalog name, fetched on first use, or a path to an ncnn `.param`,
    /// a Core ML `.mlmodel`/`.mlpackage` or a `.wifm`). Catalog entries in a Core ML format load
    /// through `ModelLoader` with the entry's tiling (scale, padding, border).
    /// - Parameters:
    ///   - tile: interior tile size in input pixels; nil picks one from a 3 GiB budget.
    ///   - log: receives one line when a model is fetched.
    public init(model: String, tile: Int? = nil, backend: BackendChoice = .onednn, store: ModelStore = ModelStore(),
                log: (String) -> Void = { _ in }) throws {
        let engine = try backend.make()
        // "2" (or its name) is the built-in 2× upscaler carried inside the binary.
        let model = try BuiltinModels.resolve(upscale: model)
        if ModelLoader.handles(model) {
            // Core ML files and .wifm bundles: the loader adapts the graph to [0, 1] RGB.
            let loaded = try ModelLoader.load(model, task: .upscale)
            loaded.warnings.forEach(log)
            name = loaded.name
            graph = loaded.graph
            let tiling = try loaded.spec ?? Self.inferSpec(loaded.graph)
            spec = tiling
            bundle = loaded.bundle
            alphaRunner = try loaded.alphaGraph.map { try TiledRunner(graph: $0, spec: tiling, backend: engine, tileSize: tile) }
        } else {
            let resolved = try Self.resolve(model, store: store, log: log)
            name = resolved.name
            switch resolved.format {
            case .coreml, .mlprogram:
                // A catalog Core ML model: the loader adapts it to [0, 1] RGB; the catalog says how to tile it.
                let loaded = try ModelLoader.load(resolved.primaryURL.path, task: .upscale)
                loaded.warnings.forEach(log)
                graph = loaded.graph
                spec = try resolved.entry.map { try Self.spec(for: $0, graph: loaded.graph) } ?? loaded.spec ?? Self.inferSpec(loaded.graph)
            case .ncnn:
                guard let param = resolved.paramURL, let bin = resolved.binURL else {
                    throw MediaError(.invalidOptions, "Model '\(resolved.name)' resolved to no .param/.bin pair.")
                }
                let loaded = try NCNNImporter.load(paramPath: param.path, binPath: bin.path,
                                                   inputName: resolved.entry?.inputBlob, outputName: resolved.entry?.outputBlob)
                graph = loaded
                spec = try resolved.entry.map { try Self.spec(for: $0, graph: loaded) } ?? Self.inferSpec(loaded)
            }
            bundle = nil
            alphaRunner = nil
        }
        scale = spec.scale
        runner = try TiledRunner(graph: graph, spec: spec, backend: engine, tileSize: tile)
    }

    /// Interior tile side in input pixels.
    public var tileSize: Int { runner.tileSize }

    static func resolve(_ model: String, store: ModelStore, log: (String) -> Void) throws -> ResolvedModel {
        do {
            if let entry = store.catalog.entry(named: model), !store.isInstalled(entry) {
                let report = try store.fetch(entry)
                log("fetched model \(entry.name) into \(store.modelDirectory(for: entry).path) (\(report.files.count) files, SHA-256 verified)")
            }
            let r = try store.resolve(model)
            if r.entry == nil, let param = r.paramURL, let bin = r.binURL,
               let entry = try Self.catalogEntry(matching: param, store: store) {
                return ResolvedModel(name: r.name, entry: entry, paramURL: param, binURL: bin)
            }
            return r
        } catch let e as CatalogError {
            throw MediaError(e.kind == .invalid ? .invalidOptions : e.kind == .notFound ? .inputUnreadable : .corruptInput, e.message)
        }
    }

    /// A user's `.param` that is byte for byte a catalog model gets that model's tiling rules.
    static func catalogEntry(matching param: URL, store: ModelStore) throws -> ModelEntry? {
        guard let digest = try? SHA256.hash(fileAt: param).hex else { return nil }
        return store.catalog.entries.first { $0.paramFile?.sha256 == digest }
    }

    static func spec(for e: ModelEntry, graph: Graph) throws -> TilingSpec {
        switch e.border {
        case .none:
            // "Same"-padded network: overlap tiles by its receptive field so tiles are exact.
            return TilingSpec(scale: e.scale, padding: max(e.tileOverlap, graph.receptiveRadius()), border: .reflect,
                              multiple: e.tileMultiple, addNearestInput: e.outputIsResidualOverNearest)
        case .replicate:
            return TilingSpec(scale: e.scale, padding: e.padding, border: .replicate, multiple: e.tileMultiple,
                              addNearestInput: e.outputIsResidualOverNearest)
        case .reflect:
            return TilingSpec(scale: e.scale, padding: e.padding, border: .reflect, multiple: e.tileMultiple,
                              addNearestInput: e.outputIsResidualOverNearest)
        }
    }

    /// Learns scale and border loss of an unknown model from its shapes at two input sizes:
    /// out = scale · (in − 2·loss).
    static func inferSpec(_ graph: Graph) throws -> TilingSpec {
        let c = graph.inputChannels ?? 3
        var outs: [Int] = []
        for n in [64, 96] {
            let shapes = try graph.inferShapes(input: Shape(c: c, h: n, w: n))
            guard let o = shapes[graph.output] else { throw EngineError("\(graph.source): the output is never produced.") }
            outs.append(o.h)
        }
        let diff = outs[1] - outs[0]
        guard diff > 0, diff % 32 == 0 else {
            throw EngineError("\(graph.source): cannot tell the model's scale from its shapes (64 → \(outs[0]), 96 → \(outs[1])). Use a catalog model or a model with an integer scale.")
        }
        let s = diff / 32
        let loss2 = 64 * s - outs[0]
        guard loss2 >= 0, loss2 % (2 * s) == 0 else {
            throw EngineError("\(graph.source): the output size does not fit scale \(s) with an even border.")
        }
        let loss = loss2 / (2 * s)
        if loss == 0 {
            return TilingSpec(scale: s, padding: graph.receptiveRadius(), border: .reflect, multiple: 4)
        }
        return TilingSpec(scale: s, padding: loss, border: .replicate, multiple: 4)
    }

    /// Upscales an alpha plane: through the bundle's alpha model when it has one, else through
    /// the main model as a 3-channel copy.
    public func upscaleAlpha(_ alpha: FloatPlanarImage) throws -> FloatPlanarImage {
        guard let alphaRunner else { return try upscale(alpha) }
        return try upscale(alpha, with: alphaRunner)
    }

    /// Upscales a float image (1 or 3 channels, [0, 1]); grey goes through the model as RGB.
    public func upscale(_ image: FloatPlanarImage) throws -> FloatPlanarImage {
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

    private func run(_ input: FloatPlanarImage, into out: inout FloatPlanarImage, with runner: TiledRunner? = nil) throws {
        let runner = runner ?? self.runner
        try input.data.withUnsafeBufferPointer { i in
            try out.data.withUnsafeMutableBufferPointer { o in
                try runner.run(input: i, channels: 3, height: input.height, width: input.width, output: o)
            }
        }
    }

    /// Upscales an `rgb24` frame into `output` (reshaped to `scale ×`), reusing buffers.
    public func upscale(_ frame: VideoFrame, into output: inout VideoFrame) throws {
        planar.load(from: frame)
        if result.width != frame.width * scale || result.height != frame.height * scale {
            result = FloatPlanarImage(channels: 3, width: frame.width * scale, height: frame.height * scale)
        }
        try run(planar, into: &result)
        result.store(into: &output)
        output.pts = frame.pts
        output.duration = frame.duration
        output.timeBase = frame.timeBase
        output.color = frame.color
        output.sampleAspectRatio = frame.sampleAspectRatio
    }

    /// Upscales an `rgb24` frame into planar float RGB (`scale ×`), not rounded to 8 bits.
    public func upscale(_ frame: VideoFrame, into output: inout FloatPlanarImage) throws {
        planar.load(from: frame)
        try upscale(planar, into: &output)
    }

    /// Upscales planar float RGB into `output` (`scale ×`), reusing its storage.
    public func upscale(_ image: FloatPlanarImage, into output: inout FloatPlanarImage) throws {
        guard image.channels == 3 else { output = try upscale(image); return }
        if output.channels != 3 || output.width != image.width * scale || output.height != image.height * scale {
            output = FloatPlanarImage(channels: 3, width: image.width * scale, height: image.height * scale)
        }
        try run(image, into: &output)
    }

    /// Runs the model once on a blank frame of this size, so the first real frame does not pay
    /// for primitive creation and first-touch of buffers (live mode measures every frame).
    public func warmUp(width: Int, height: Int) throws {
        var blank = VideoFrame(format: .rgb24, width: width, height: height)
        blank.color = .bt709
        var out = VideoFrame(format: .rgb24, width: 1, height: 1)
        try upscale(blank, into: &out)
    }

    /// Floating-point operations (2 per multiply-add) to upscale one `width`×`height` frame.
    public func flopsPerFrame(width: Int, height: Int) throws -> Double {
        2 * Double(try runner.multiplyAdds(channels: 3, height: height, width: width))
    }

    /// Floating-point operations per output pixel (2 per multiply-add), measured on a 256-pixel
    /// tile with its border (so tiling overhead is included, as it is paid in practice).
    public func flopsPerOutputPixel() throws -> Double {
        let side = 256
        let shape = Shape(c: graph.inputChannels ?? 3, h: side + 2 * spec.padding, w: side + 2 * spec.padding)
        let macs = try graph.multiplyAdds(input: shape)
        let out = try graph.inferShapes(input: shape)[graph.output]!
        return 2 * Double(macs) / Double(out.h * out.w)
    }
}
