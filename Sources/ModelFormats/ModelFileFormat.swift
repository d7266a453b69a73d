import Engine
import Foundation

/// A graph read from a model file, before it is adapted to a task.
public struct ImportedGraph: Sendable {
    /// The graph on the engine's IR.
    public var graph: Graph
    /// Whether the input takes image pixels (0–255) rather than a tensor.
    public var inputIsImage: Bool
}

/// Every model file form Vivify reads, each declared once: its extensions, a description,
/// its importer and its describer. Adding a format is one entry here plus its importer; the
/// resolver, the CLI's model-argument rule and `vivify models info` all read this table.
///
/// | format | extensions | what it is |
/// |---|---|---|
/// | ncnn | .param (+ .bin) | ncnn text graph with fp16/fp32 weights beside it |
/// | Core ML NeuralNetwork | .mlmodel | Core ML protobuf with NeuralNetwork layers |
/// | Core ML ML Program | .mlpackage | Core ML package with a MIL program and weight blobs |
/// | ONNX | .onnx | ONNX ModelProto (external-data tensors beside it) |
/// | .wifm | .wifm | our bundle: one of the above, a manifest and info.md (see the spec) |
public struct ModelFileFormat: Sendable {
    /// Which format.
    public enum Kind: String, Sendable, CaseIterable {
        case ncnn
        case coreMLNeuralNetwork
        case coreMLProgram
        case onnx
        case wifm
    }

    /// Which format.
    public let kind: Kind
    /// Name in messages ("ncnn").
    public let name: String
    /// File extensions, lower case without the dot; the first is the one named in messages.
    public let extensions: [String]
    /// One line on what the file is.
    public let summary: String
    /// Reads the graph (`weights`: a separate weights file when the format has one;
    /// `customLayers`: a bundle's declarations of Core ML custom layers, nil to read the
    /// `NAME.layers.json` beside a bare model; `library`: the compiled custom layer library
    /// of `--custom-layers`); nil for bundles, which hold a model of another format.
    public let importer: (@Sendable (_ path: String, _ weights: String?, _ customLayers: CustomLayerDeclarations?,
                                     _ library: String?) throws -> ImportedGraph)?
    /// A text description of a file of this format.
    public let describer: @Sendable (_ path: String) throws -> String

    /// The table.
    public static let all: [ModelFileFormat] = [
        ModelFileFormat(kind: .ncnn, name: "ncnn", extensions: ["param"],
                        summary: "ncnn .param graph with its .bin weights beside it",
                        importer: { path, weights, _, _ in ImportedGraph(graph: try NCNNImporter.load(paramPath: path, binPath: weights), inputIsImage: false) },
                        describer: { path in
                            let g = try NCNNImporter.load(paramPath: path)
                            return "ncnn model \(path): \(g.nodes.count) layers, input '\(g.valueNames[g.input])', output '\(g.valueNames[g.output])'\n"
                        }),
        ModelFileFormat(kind: .coreMLNeuralNetwork, name: "Core ML NeuralNetwork", extensions: ["mlmodel"],
                        summary: "Core ML model file (NeuralNetwork layers)",
                        importer: { path, _, customLayers, library in
                            let m = try CoreMLImporter.load(path: path, customLayers: customLayers, library: library)
                            return ImportedGraph(graph: m.graph, inputIsImage: m.inputIsImage)
                        },
                        describer: { try CoreMLImporter.load(path: $0).description + "\n" }),
        ModelFileFormat(kind: .coreMLProgram, name: "Core ML ML Program", extensions: ["mlpackage"],
                        summary: "Core ML package (ML Program with weight blobs)",
                        importer: { path, _, _, _ in
                            let m = try CoreMLProgramImporter.load(path: path)
                            return ImportedGraph(graph: m.graph, inputIsImage: m.inputIsImage)
                        },
                        describer: { try CoreMLProgramImporter.load(path: $0).description + "\n" }),
        ModelFileFormat(kind: .onnx, name: "ONNX", extensions: ["onnx"],
                        summary: "ONNX model (opsets 7–\(ONNXImporter.newestOpset), one NCHW image input)",
                        importer: { path, _, _, _ in ImportedGraph(graph: try ONNXImporter.load(path: path).graph, inputIsImage: false) },
                        describer: { try ONNXImporter.load(path: $0).description + "\n" }),
        ModelFileFormat(kind: .wifm, name: ".wifm bundle", extensions: ["wifm"],
                        summary: "Vivify model bundle: a model of one of the formats above, its manifest and info.md",
                        importer: nil,
                        describer: { path in
                            let bundle = try ModelBundle.open(path: path)
                            var text = bundle.manifest.summary
                            if !text.hasSuffix("\n") { text += "\n" }
                            for w in bundle.warnings { text += "warning: \(w)\n" }
                            if let info = bundle.infoMarkdown { text += "\ninfo.md:\n" + info + (info.hasSuffix("\n") ? "" : "\n") }
                            return text
                        }),
    ]

    /// The format of `kind`.
    public static func of(_ kind: Kind) -> ModelFileFormat { all.first { $0.kind == kind }! }

    /// The format a path's extension names, or nil.
    public static func forPath(_ path: String) -> ModelFileFormat? {
        let ext = (path as NSString).pathExtension.lowercased()
        return all.first { $0.extensions.contains(ext) }
    }

    /// The weights file that goes with the model at `path` where its format keeps them in a
    /// file of their own: an ncnn `.param`'s `.bin` beside it, with the same name; nil for every
    /// other format. The one place that rule is written (resolver, importer, bundles, the files
    /// a run reads).
    public static func weightsFile(beside path: String) -> String? {
        guard forPath(path)?.kind == .ncnn else { return nil }
        return (path as NSString).deletingPathExtension + ".bin"
    }

    /// Every extension of the table.
    public static var allExtensions: [String] { all.flatMap(\.extensions) }

    /// "an ncnn .param, a .mlmodel, a .mlpackage or a .wifm" style list for messages.
    public static var extensionList: String {
        let names = allExtensions.map { "." + $0 }
        return names.dropLast().joined(separator: ", ") + " or " + names.last!
    }
}
