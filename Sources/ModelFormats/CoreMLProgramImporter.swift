import Engine
import Foundation

/// An ML Program imported onto the engine's graph IR, with what a caller needs to feed it.
public struct CoreMLProgramModel: Sendable {
    /// The network. Its input is the program's input as Core ML sees it: for an image input,
    /// 0–255 RGB (or BGR, or grey) values; scaling the program applies itself is in the graph.
    public let graph: Graph
    /// The program's input name.
    public let inputName: String
    /// The name of the program output the graph computes (the first one).
    public let outputName: String
    /// The declared input shape `[N, C, H, W]`; −1 marks a size fixed only at run time.
    public let inputShape: [Int]
    /// Whether Core ML's description declares the input an image (pixel values 0–255).
    public let inputIsImage: Bool
    /// A human-readable summary: file, input and output, op and node counts, weight types.
    public let description: String
}

/// Reads Core ML ML Programs (`.mlpackage` directories, or a `model.mlmodel` whose weights lie
/// in `weights/` beside it) onto the engine's graph IR.
///
/// A package holds `Manifest.json`, whose root item is the `Model` protobuf
/// (`Data/com.apple.CoreML/model.mlmodel`), and the weight blobs
/// (`Data/com.apple.CoreML/weights/weight.bin`). The model's `mlProgram` field (502) holds the
/// MIL program; its `main` function's ops become graph nodes in program order (see
/// `CoreMLProgramOps.swift` for the op mapping). NeuralNetwork models are the business of the
/// NeuralNetwork importer.
public enum CoreMLProgramImporter {
    /// Loads the ML Program at `path` (a `.mlpackage` directory or its `model.mlmodel`).
    ///
    /// Errors name the file and, for a model the engine cannot run, the op type and the op's
    /// output name.
    public static func load(path: String) throws -> CoreMLProgramModel {
        let modelPath = try modelFile(package: path)
        guard let data = FileManager.default.contents(atPath: modelPath) else {
            throw ModelFormatError(.unreadable, "Cannot read '\(modelPath)', the model inside '\(path)'. Check that the .mlpackage is complete.")
        }
        let modelDirectory = (modelPath as NSString).deletingLastPathComponent
        // Weight files stay inside the package (or the bare model's folder).
        var isDirectory: ObjCBool = false
        let root = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue ? path : modelDirectory
        return try parse(model: data, weightsDirectory: modelDirectory, root: root, source: path)
    }

    /// The model protobuf of a package (via `Manifest.json`), or `path` itself if it is a file.
    static func modelFile(package path: String) throws -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ModelFormatError(.unreadable, "Cannot open the Core ML model '\(path)': no such file or directory. Pass the path of an .mlpackage.")
        }
        guard isDirectory.boolValue else { return path }
        let fallback = path + "/Data/com.apple.CoreML/model.mlmodel"
        let manifestPath = path + "/Manifest.json"
        guard let manifest = FileManager.default.contents(atPath: manifestPath) else {
            if FileManager.default.fileExists(atPath: fallback) { return fallback }
            throw ModelFormatError(.malformed, "'\(path)' is not an .mlpackage: it has no Manifest.json. Pass the path of an .mlpackage directory.")
        }
        guard let json = try? JSONSerialization.jsonObject(with: manifest) as? [String: Any],
              let root = json["rootModelIdentifier"] as? String,
              let items = json["itemInfoEntries"] as? [String: Any],
              let item = items[root] as? [String: Any], let relative = item["path"] as? String else {
            if FileManager.default.fileExists(atPath: fallback) { return fallback }
            throw ModelFormatError(.unreadable, "Cannot read '\(manifestPath)': it does not name the root model. The package is damaged; export it again.")
        }
        return try ContainedPath.resolve("Data/" + relative, inside: path, what: "the root model Manifest.json names", source: path)
    }

    /// Imports a serialized `Model` message; blobs are read from `weightsDirectory` (what
    /// `@model_path` stands for). `source` names the model in messages.
    static func parse(model data: Data, weightsDirectory: String, root: String? = nil, source: String) throws -> CoreMLProgramModel {
        let model = try Message(data, what: "the model", source: source)
        guard let program = try model.message(502, what: "the ML Program", source: source) else {
            if model.has(500) || model.has(403) || model.has(303) {
                throw ModelFormatError(.malformed, "'\(source)' holds a Core ML NeuralNetwork, not an ML Program. Load it with the Core ML NeuralNetwork importer.")
            }
            throw ModelFormatError(.unsupported, "'\(source)' holds no ML Program (a Core ML model of another kind). Vivify runs ML Programs and NeuralNetworks only.")
        }
        let info = try Interface(model.message(2, what: "the model description", source: source), source: source)
        let (functionName, function) = try function(program: program, named: info.defaultFunction, source: source)
        guard function.inputs.count == 1 else {
            throw ModelFormatError(.unsupported, "The ML Program in '\(source)' has \(function.inputs.count) inputs (\(function.inputs.map(\.name).joined(separator: ", "))); Vivify's engine runs single-input models.")
        }
        guard let outputName = function.outputs.first else {
            throw ModelFormatError(.malformed, "The ML Program in '\(source)' returns nothing.")
        }
        var builder = ProgramBuilder(source: source, blobs: BlobFiles(modelDirectory: weightsDirectory, root: root ?? weightsDirectory, source: source))
        let (inputName, inputType) = function.inputs[0]
        let input = try builder.addInput(inputName, inputType)
        for op in function.operations { try builder.add(op) }
        guard case .variable(let output, let outputType) = builder.symbols[outputName] else {
            throw ModelFormatError(.unsupported, "The ML Program output '\(outputName)' in \(source) is a constant or never computed; Vivify runs networks whose output depends on the input.")
        }
        let raw = builder.graph.graph(input: input, output: output, source: source)
        let graph = simplify(raw)
        let inputIsImage = info.inputs[inputName]?.isImage ?? false
        var text = "ML Program '\((source as NSString).lastPathComponent)' (function '\(functionName)', opset \(function.opset)): "
        text += "input '\(inputName)' \(info.inputs[inputName]?.text ?? inputType.description), "
        text += "output '\(outputName)' \(info.outputs[outputName]?.text ?? outputType.description)"
        if function.outputs.count > 1 { text += " (outputs \(function.outputs.dropFirst().joined(separator: ", ")) are not computed)" }
        let computeOps = function.operations.filter { !$0.type.hasPrefix("const") }.count
        text += "; \(computeOps) ops → \(graph.nodes.count) graph nodes"
        if !builder.weightTypes.isEmpty { text += "; weights \(builder.weightTypes.sorted().joined(separator: ", "))" }
        text += "."
        for line in info.metadata { text += "\n" + line }
        return CoreMLProgramModel(graph: graph, inputName: inputName, outputName: outputName,
                                  inputShape: inputType.shape.map { $0 ?? -1 }, inputIsImage: inputIsImage, description: text)
    }

    /// What the model description (Model.proto field 2) says about the features.
    ///
    /// ModelDescription: 1 input, 10 output (FeatureDescription: 1 name, 2 shortDescription,
    /// 3 type), 21 defaultFunctionName, 100 metadata (1 shortDescription, 2 versionString,
    /// 3 author, 4 license). FeatureType: 4 imageType (1 width, 2 height, 3 colorSpace:
    /// 10 grey, 20 RGB, 30 BGR, 40 grey fp16; 21/31 flexible sizes), 5 multiArrayType.
    struct Interface {
        struct Feature {
            var isImage: Bool
            var text: String
        }
        var inputs: [String: Feature] = [:]
        var outputs: [String: Feature] = [:]
        var metadata: [String] = []
        var defaultFunction: String?

        init(_ m: Message?, source: String) throws {
            guard let m else { return }
            func features(_ field: Int) throws -> [String: Feature] {
                var out: [String: Feature] = [:]
                for f in try m.messages(field, what: "a feature description", source: source) {
                    out[f.string(1)] = try Self.feature(f.message(3, what: "a feature type", source: source), source: source)
                }
                return out
            }
            inputs = try features(1)
            outputs = try features(10)
            let name = m.string(21)
            defaultFunction = name.isEmpty ? nil : name
            if let meta = try m.message(100, what: "the model metadata", source: source) {
                for (field, label) in [(1, "Description"), (3, "Author"), (4, "Licence"), (2, "Version")] where !meta.string(field).isEmpty {
                    metadata.append("\(label): \(meta.string(field))")
                }
            }
        }

        static func feature(_ t: Message?, source: String) throws -> Feature? {
            guard let t else { return nil }
            if let image = try t.message(4, what: "an image type", source: source) {
                let spaces = [10: "greyscale", 20: "RGB", 30: "BGR", 40: "greyscale fp16"]
                let space = spaces[image.int(3)] ?? "colour space \(image.int(3))"
                let flexible = image.has(21) || image.has(31)
                return Feature(isImage: true, text: "\(space) image \(image.int(1))×\(image.int(2))\(flexible ? " (flexible size)" : " (fixed size)"), pixel values 0–255")
            }
            if let array = try t.message(5, what: "a multi-array type", source: source) {
                let shape = try array.varints(1).map(String.init).joined(separator: "×")
                let flexible = array.has(21) || array.has(31)
                return Feature(isImage: false, text: "multi-array \(shape)\(flexible ? " (flexible shape)" : "")")
            }
            return Feature(isImage: false, text: "a non-tensor feature")
        }
    }
}
