import Engine
import Foundation
import ModelFormats

/// A model read from any supported form (ncnn `.param`, Core ML `.mlmodel`, ML Program
/// `.mlpackage`, or a `.wifm` bundle of any of them), with its graph adapted to take the
/// engine's frames: RGB in [0, 1] in, RGB in [0, 1] out for upscalers.
struct LoadedModel {
    var name: String
    var graph: Graph
    /// How to tile it, when the form says (a bundle's shrinkSize and scale).
    var spec: TilingSpec?
    /// The bundle's alpha submodel (`alphaMode` `separateModel`).
    var alphaGraph: Graph?
    /// The bundle's colorizer keys (`task` `colorize`).
    var colorizer: ColorizerSpec?
    /// Keeps a bundle's private extraction directory alive as long as the model.
    var bundle: ModelBundle?
    /// Warnings from reading it (tolerated bundle mistakes).
    var warnings: [String] = []
}

enum ModelLoader {
    /// Whether `argument` names a file form this loader reads (rather than a catalog name or
    /// an ncnn `.param`, which the catalog path handles).
    static func handles(_ argument: String) -> Bool {
        let ext = (argument as NSString).pathExtension.lowercased()
        return ["wifm", "mlmodel", "mlpackage"].contains(ext)
    }

    static func load(_ path: String, task: WifmManifest.Task) throws -> LoadedModel {
        guard FileManager.default.fileExists(atPath: path) else {
            throw MediaError(.inputUnreadable, "Cannot open the model '\(path)': no such file. Check the path.")
        }
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        switch (path as NSString).pathExtension.lowercased() {
        case "wifm":
            return try loadBundle(path, name: name, task: task)
        default:
            let (graph, isImage) = try importGraph(path)
            var g = graph
            if task == .upscale {
                // Image inputs take 0–255 pixels; the output range is measured on a grey tile.
                if isImage { g = g.prependingAffine(scale: [255], bias: [0]) }
                g = try normalisedOutput(g)
            }
            return LoadedModel(name: name, graph: g, spec: nil)
        }
    }

    /// The graph of a Core ML or ncnn file, and whether it takes image pixels (0–255).
    static func importGraph(_ path: String, weights: String? = nil) throws -> (Graph, Bool) {
        switch (path as NSString).pathExtension.lowercased() {
        case "mlmodel":
            let m = try CoreMLImporter.load(path: path)
            return (m.graph, m.inputIsImage)
        case "mlpackage":
            let m = try CoreMLProgramImporter.load(path: path)
            return (m.graph, m.inputIsImage)
        case "param":
            return (try NCNNImporter.load(paramPath: path, binPath: weights), false)
        default:
            throw MediaError(.unsupported, "Cannot read the model '\(path)': use an ncnn .param, a Core ML .mlmodel or .mlpackage, or a .wifm bundle.")
        }
    }

    /// Scales a graph's output to [0, 1] when it produces 0–255: a mid-grey tile must come
    /// back mid-grey from any upscaler.
    static func normalisedOutput(_ graph: Graph) throws -> Graph {
        let side = 48
        let c = graph.inputChannels ?? 3
        let prepared = try ReferenceBackend().prepare(graph, input: Shape(c: c, h: side, w: side))
        let out = try prepared.run(Tensor(shape: prepared.inputShape, data: [Float](repeating: 0.5, count: prepared.inputShape.count)))
        let mean = out.data.reduce(0, +) / Float(max(out.data.count, 1))
        return mean > 8 ? graph.appendingAffine(scale: [1 / 255], bias: [0]) : graph
    }

    static func loadBundle(_ path: String, name: String, task: WifmManifest.Task) throws -> LoadedModel {
        let bundle: ModelBundle
        do {
            bundle = try ModelBundle.open(path: path)
        } catch let e as BundleError {
            throw MediaError(.corruptInput, e.message)
        }
        let m = bundle.manifest
        guard m.task == task else {
            throw MediaError(.invalidOptions, "The bundle '\(path)' is a \(m.task.rawValue) model; use it with --\(m.task == .upscale ? "upscale" : "colorize").")
        }
        func adapted(_ sub: WifmManifest.SubModel) throws -> Graph {
            let (raw, isImage) = try importGraph(bundle.url(for: sub).path, weights: bundle.weightsURL(for: sub)?.path)
            guard task == .upscale else { return raw }
            var g = raw
            let input = m.inputs.contains(where: { $0.name == sub.inputName }) ? m.input(for: sub) : nil
            // Tensor/IO: model input = scale · pixel + bias, pixel = 255 · x. A Core ML image
            // input takes pixels itself (its scaler is in the graph).
            let n = input?.normalize ?? (isImage ? .none : .zeroToOne)
            g = g.prependingAffine(scale: [255 * n.scale], bias: [n.redBias, n.greenBias, n.blueBias])
            if let out = m.outputs.first(where: { $0.name == sub.outputName }), let d = out.denormalize {
                // Tensor/IO: pixel = (y + bias) · scale; x = pixel / 255.
                let k = d.scale / 255
                g = g.appendingAffine(scale: [k], bias: [d.redBias * k, d.greenBias * k, d.blueBias * k])
            } else {
                g = try normalisedOutput(g)
            }
            return g
        }
        var loaded = LoadedModel(name: m.name, graph: try adapted(m.main), bundle: bundle, warnings: bundle.warnings)
        if task == .upscale {
            loaded.spec = TilingSpec(scale: m.scale, padding: m.shrinkSize, border: .replicate, multiple: 1)
            if m.alphaMode == .separateModel, let alpha = m.alpha { loaded.alphaGraph = try adapted(alpha) }
        } else if let c = m.colorizer {
            let channels = m.inputShape?.first ?? 1
            loaded.colorizer = ColorizerSpec(input: channels == 4 ? .lHintsMask : .l, inputSize: c.inputSize, inputMultiple: c.inputMultiple,
                                             lCenter: c.lCenter, lScale: c.lScale, output: m.output(for: m.main).role == .rgb ? .rgb : .ab,
                                             abScale: c.abScale, upsample: ColorizerSpec.Upsample(rawValue: c.upsample) ?? .bilinear)
        }
        return loaded
    }
}
