import Engine
import Foundation

/// A Core ML NeuralNetwork model on the engine's graph IR, with what its input expects.
///
/// The model's image preprocessing (the `scaler`: `channelScale` and the per-colour biases) is
/// already inside `graph` as its first node, so the graph takes exactly what the model's input
/// feature takes: for an image input, 0–255 pixel values in the model's colour order; for a
/// multi-array input, whatever the model declares. `description` says which.
public struct CoreMLModel: Sendable {
    /// The network, preprocessing included.
    public let graph: Graph
    /// The name of the input feature the graph is fed with.
    public let inputName: String
    /// The name of the blob the graph's result is read from.
    public let outputName: String
    /// Whether the input feature is an image (0–255 pixel values) rather than a multi-array.
    public let inputIsImage: Bool
    /// The input size the model declares (the default size when it allows several), if any.
    public let inputShape: (c: Int, h: Int, w: Int)?
    /// The scaler's `channelScale`, applied inside the graph; nil without a scaler.
    public let preprocessingScale: Float?
    /// The scaler's biases in the graph's channel order (R, G, B; B, G, R; or gray), applied
    /// inside the graph after the scale; nil without a scaler.
    public let channelBiases: [Float]?
    /// The file's `specificationVersion`.
    public let specVersion: Int
    /// A human-readable account of what the model expects and produces.
    public let description: String
}

/// Reads Core ML NeuralNetwork models (`.mlmodel`, specification version 1 and later; model
/// types `neuralNetwork`, `neuralNetworkClassifier` and `neuralNetworkRegressor`) onto the
/// engine's graph IR.
///
/// The file is one protobuf `Model` message (apple/coremltools, mlmodel/format/Model.proto),
/// decoded by field number with our `ProtobufReader`:
///
///     Model ─┬─ specificationVersion (1)
///            ├─ description (2) ── input (1) / output (10) features: image or multi-array
///            └─ neuralNetwork (500) | neuralNetworkRegressor (303) | neuralNetworkClassifier (403)
///                 ├─ layers (1)         one graph node each (a few lower to two or three)
///                 └─ preprocessing (2)  scaler → a leading channel-affine node
///
/// Layers are translated in file order; each reads blobs by name. Unsupported layers are an
/// error naming the layer type, the layer and the file. ML Programs (`mlProgram`, 502) are not
/// NeuralNetworks and are refused with a pointer to the ML Program importer.
public enum CoreMLImporter {
    /// Loads the `.mlmodel` file at `path` (or the NeuralNetwork inside an `.mlpackage`).
    /// `customLayers` declares what its custom layers compute; when nil, the file
    /// `NAME.layers.json` beside the model is read if there is one. `library`: the compiled
    /// custom layer library (`--custom-layers`) for custom layers nothing declares.
    public static func load(path: String, customLayers: CustomLayerDeclarations? = nil, library: String? = nil) throws -> CoreMLModel {
        var file = path
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            // An .mlpackage keeps its spec at a fixed place; ML Programs are refused below by type.
            let inner = (path as NSString).appendingPathComponent("Data/com.apple.CoreML/model.mlmodel")
            guard FileManager.default.fileExists(atPath: inner) else {
                throw ModelFormatError(.malformed, "'\(path)' is a folder without Data/com.apple.CoreML/model.mlmodel, so it is not a Core ML model package. Pass an .mlmodel file or an .mlpackage folder.")
            }
            file = inner
        }
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ModelFormatError(.unreadable, "Cannot read the Core ML model '\(path)'. Check the path and its permissions.")
        }
        var declarations = customLayers
        if declarations == nil {
            let beside = CustomLayerDeclarations.besidePath(for: path)
            if FileManager.default.fileExists(atPath: beside) { declarations = try CustomLayerDeclarations.read(path: beside) }
        }
        return try parse(data, source: path, customLayers: declarations, library: library)
    }

    /// Parses the bytes of a `.mlmodel` file; `source` names it in messages; `customLayers`
    /// declares what its custom layers compute, `library` runs those nothing declares.
    public static func parse(_ data: Data, source: String, customLayers: CustomLayerDeclarations? = nil, library: String? = nil) throws -> CoreMLModel {
        let model = try Message(data, what: "the model", source: source)
        let version = model.int(1)
        guard version >= 1 else {
            throw ModelFormatError(.malformed, "'\(source)' is not a Core ML model: its specificationVersion is \(version), and every .mlmodel has 1 or more. Pass a Core ML .mlmodel file.")
        }
        let networkField: Int
        if model.has(500) {
            networkField = 500
        } else if model.has(403) {
            networkField = 403
        } else if model.has(303) {
            networkField = 303
        } else {
            throw refusal(model, version: version, source: source)
        }
        let kind = [500: "NeuralNetwork", 403: "NeuralNetworkClassifier", 303: "NeuralNetworkRegressor"][networkField]!
        guard let description = try model.message(2, what: "the model description", source: source) else {
            throw ModelFormatError(.malformed, "'\(source)' has no model description, so its input and output are unknown. The file is incomplete.")
        }
        // Present, but possibly with the wrong wire type (a number where a message belongs).
        guard let network = try model.message(networkField, what: "the \(kind)", source: source) else {
            throw ModelFormatError(.malformed, "'\(source)' has a \(kind) field that is not a message. The file is damaged.")
        }
        let inputs = try description.messages(1, what: "an input feature", source: source).map { try Feature($0, source: source) }
        let outputs = try description.messages(10, what: "an output feature", source: source).map { try Feature($0, source: source) }
        guard let input = inputs.first else {
            throw ModelFormatError(.malformed, "'\(source)' declares no input feature. The file is incomplete.")
        }
        guard inputs.count == 1 else {
            throw ModelFormatError(.unsupported, "'\(source)' has \(inputs.count) inputs (\(inputs.map { "'\($0.name)'" }.joined(separator: ", "))); Vivify's engine runs networks with one input. Use a model with a single image or multi-array input.")
        }
        let inputShape = try input.tensorShape(source: source)
        let preprocessing = try Preprocessing(network, input: input, source: source)

        var builder = NetworkBuilder(source: source, inputName: input.name, declaredInput: inputShape.map { Shape(c: $0.c, h: $0.h, w: $0.w) })
        builder.inputChannels = inputShape?.c ?? input.image?.channels
        builder.customLayers = customLayers
        builder.customLayerLibrary = library
        builder.addPreprocessing(preprocessing)
        let layers = try network.messages(1, what: "a layer", source: source)
        for (k, layer) in layers.enumerated() {
            try builder.add(layer, index: k)
        }

        // The classifier's outputs are a label and a probability dictionary, not blobs: its
        // graph ends at the layer that feeds them.
        let outputName: String
        var outputNote = ""
        if networkField == 403 {
            let named = network.string(200)
            outputName = named.isEmpty ? builder.lastOutput ?? "" : named
            let stringLabels = try network.message(100, what: "the class labels", source: source)
            let intLabels = try network.message(101, what: "the class labels", source: source)
            let labels = stringLabels?.strings(1).count ?? intLabels?.ints(1).count ?? 0
            outputNote = "Output: blob '\(outputName)', the class probabilities behind the classifier's \(labels) labels (the label and dictionary outputs are not produced)."
        } else {
            guard let first = outputs.first else {
                throw ModelFormatError(.malformed, "'\(source)' declares no output feature. The file is incomplete.")
            }
            outputName = first.name
            outputNote = "Output: '\(first.name)', \(first.summary)."
            if outputs.count > 1 {
                outputNote += " The other outputs (\(outputs.dropFirst().map { "'\($0.name)'" }.joined(separator: ", "))) are not produced."
            }
        }
        let graph = try builder.finish(output: outputName)
        if let s = inputShape {
            // Check every layer against the declared size now, so a bad file fails at load.
            _ = try graph.inferShapes(input: Shape(c: s.c, h: s.h, w: s.w))
        }

        var text = ["Core ML \(kind) model (specification version \(version)), \(layers.count) layers → \(graph.nodes.count) engine nodes."]
        if let meta = try description.message(100, what: "the metadata", source: source) {
            let short = meta.string(1), author = meta.string(3)
            if !short.isEmpty { text.append("About: \(short).") }
            if !author.isEmpty { text.append("Author: \(author).") }
        }
        text.append("Input: '\(input.name)', \(input.summary).")
        text.append(preprocessing.summary(input: input))
        text.append(outputNote)
        text += builder.notes
        return CoreMLModel(
            graph: graph, inputName: input.name, outputName: outputName, inputIsImage: input.image != nil,
            inputShape: inputShape, preprocessingScale: preprocessing.scale, channelBiases: preprocessing.biases,
            specVersion: version, description: text.joined(separator: "\n"))
    }

    /// The error for a model whose type is not a NeuralNetwork.
    static func refusal(_ model: Message, version: Int, source: String) -> ModelFormatError {
        let types: [Int: String] = [
            200: "pipeline classifier", 201: "pipeline regressor", 202: "pipeline", 300: "GLM regressor",
            301: "support vector regressor", 302: "tree ensemble regressor", 304: "Bayesian probit regressor",
            400: "GLM classifier", 401: "support vector classifier", 402: "tree ensemble classifier",
            404: "k-nearest-neighbours classifier", 501: "item similarity recommender", 555: "custom model",
            556: "linked model", 560: "class confidence thresholding", 600: "one-hot encoder", 601: "imputer",
            602: "feature vectorizer", 603: "dictionary vectorizer", 604: "scaler", 606: "categorical mapping",
            607: "normalizer", 609: "array feature extractor", 610: "non-maximum suppression", 900: "identity",
            2000: "text classifier", 2001: "word tagger", 2002: "Vision feature print", 2003: "sound analysis preprocessing",
            2004: "gazetteer", 2005: "word embedding", 2006: "audio feature print", 3000: "serialized model",
        ]
        if model.has(502) {
            return ModelFormatError(.malformed, "'\(source)' is a Core ML ML Program (mlProgram, specification version \(version)), not a NeuralNetwork. This importer reads NeuralNetwork .mlmodel files; load ML Programs with Vivify's ML Program importer.")
        }
        let kind = model.numbers.compactMap { types[$0] }.first
        return ModelFormatError(.unsupported, "'\(source)' is a Core ML \(kind.map { "\($0) model" } ?? "model with no model type") (specification version \(version)), not a neural network. Vivify runs neuralNetwork, neuralNetworkClassifier and neuralNetworkRegressor models.")
    }

    /// An input or output feature (FeatureDescription: name 1, type 3).
    struct Feature {
        /// Image feature (ImageFeatureType): size and colour space.
        struct Image {
            var width: Int, height: Int
            /// 10 grayscale, 20 RGB, 30 BGR, 40 grayscale fp16.
            var colorSpace: Int
            /// Flexible sizes, described ("any of 256×256, 512×512").
            var flexibility: String?

            var channels: Int { colorSpace == 20 || colorSpace == 30 ? 3 : 1 }
            var colorName: String {
                switch colorSpace {
                case 10: return "grayscale"
                case 20: return "RGB"
                case 30: return "BGR"
                case 40: return "grayscale fp16"
                default: return "colour space \(colorSpace)"
                }
            }
        }

        var name: String
        var image: Image?
        /// Multi-array shape (ArrayFeatureType.shape), when the feature is one.
        var arrayShape: [Int]?
        var arrayType: Int = 0
        var arrayFlexibility: String?
        var other: String?

        init(_ m: Message, source: String) throws {
            name = m.string(1)
            guard let type = try m.message(3, what: "the type of feature '\(m.string(1))'", source: source) else {
                other = "no type"
                return
            }
            if let i = try type.message(4, what: "image feature '\(name)'", source: source) {
                var width = i.int(1), height = i.int(2)
                var flexibility: String?
                if let e = try i.message(21, what: "the sizes of image feature '\(name)'", source: source) {
                    let sizes = try e.messages(1, what: "an image size", source: source).map { ($0.int(1), $0.int(2)) }
                    if width == 0 || height == 0, let f = sizes.first { (width, height) = f }
                    flexibility = "any of " + sizes.map { "\($0.0)×\($0.1)" }.joined(separator: ", ")
                } else if let r = try i.message(31, what: "the size range of image feature '\(name)'", source: source) {
                    let wr = try r.message(1, what: "a size range", source: source), hr = try r.message(2, what: "a size range", source: source)
                    func range(_ m: Message?) -> (Int, Int) { (m?.int(1) ?? 0, m?.int(2) ?? -1) }
                    let (w0, w1) = range(wr), (h0, h1) = range(hr)
                    if width == 0 || height == 0 { (width, height) = (w0, h0) }
                    func text(_ a: Int, _ b: Int) -> String { b < 0 ? "\(a) or more" : "\(a)…\(b)" }
                    flexibility = "width \(text(w0, w1)), height \(text(h0, h1))"
                }
                image = Image(width: width, height: height, colorSpace: i.int(3), flexibility: flexibility)
            } else if let a = try type.message(5, what: "multi-array feature '\(name)'", source: source) {
                arrayShape = a.ints(1)
                arrayType = a.int(2)
                if let e = try a.message(21, what: "the shapes of feature '\(name)'", source: source) {
                    let shapes = try e.messages(1, what: "a shape", source: source).map { $0.ints(1) }
                    if arrayShape?.isEmpty ?? true { arrayShape = shapes.first }
                    arrayFlexibility = "any of " + shapes.map { $0.map(String.init).joined(separator: "×") }.joined(separator: ", ")
                } else if let r = try a.message(31, what: "the shape range of feature '\(name)'", source: source) {
                    let ranges = try r.messages(1, what: "a size range", source: source).map { ($0.int(1), $0.int(2)) }
                    if arrayShape?.isEmpty ?? true { arrayShape = ranges.map(\.0) }
                    arrayFlexibility = ranges.map { $0.1 < 0 ? "\($0.0)+" : "\($0.0)…\($0.1)" }.joined(separator: " × ")
                }
            } else {
                let kinds = [1: "int64", 2: "double", 3: "string", 6: "dictionary", 7: "sequence", 8: "state"]
                other = type.numbers.compactMap { kinds[$0] }.first ?? "unknown type"
            }
        }

        var arrayTypeName: String {
            [65568: "FLOAT32", 65600: "DOUBLE", 131104: "INT32", 131080: "INT8", 65552: "FLOAT16"][arrayType] ?? "unspecified type"
        }

        /// C×H×W of an image or multi-array input: a rank-1 shape [C] is C×1×1; longer shapes
        /// keep their last three dimensions (leading batch/sequence dimensions must be 1).
        func tensorShape(source: String) throws -> (c: Int, h: Int, w: Int)? {
            if let image {
                guard image.width > 0, image.height > 0 else { return nil }
                return (image.channels, image.height, image.width)
            }
            guard let shape = arrayShape else {
                throw ModelFormatError(.unsupported, "Input '\(name)' of '\(source)' is a \(other ?? "non-tensor") feature; Vivify's engine takes an image or a multi-array input.")
            }
            if shape.isEmpty { return nil }
            let lead = shape.dropLast(min(3, shape.count))
            guard lead.allSatisfy({ $0 == 1 }) else {
                throw ModelFormatError(.unsupported, "Input '\(name)' of '\(source)' has shape \(shape.map(String.init).joined(separator: "×")); Vivify's engine runs batch 1, at most C×H×W.")
            }
            let last = Array(shape.suffix(3))
            guard last.allSatisfy({ (1...ModelLimits.maxDimension).contains($0) }) else {
                throw ModelFormatError(.malformed, "Input '\(name)' of '\(source)' declares shape \(shape.map(String.init).joined(separator: "×")), with a size of 0 or less or beyond \(ModelLimits.maxDimension). The file is damaged.")
            }
            switch last.count {
            case 1: return (last[0], 1, 1)
            case 2: return (1, last[0], last[1])
            default: return (last[0], last[1], last[2])
            }
        }

        /// "RGB image 156×156" or "multi-array 3×156×156 (DOUBLE)".
        var summary: String {
            if let image {
                var s = "\(image.colorName) image, \(image.width) wide × \(image.height) high"
                if let f = image.flexibility { s += " (flexible: \(f))" }
                return s
            }
            if let shape = arrayShape {
                var s = "multi-array" + (shape.isEmpty ? "" : " " + shape.map(String.init).joined(separator: "×")) + " (\(arrayTypeName))"
                if let f = arrayFlexibility { s += " (flexible: \(f))" }
                return s
            }
            return other ?? "unknown feature"
        }
    }

    /// The input's NeuralNetworkPreprocessing: a scaler (channelScale 10, blueBias 20,
    /// greenBias 21, redBias 22, grayBias 30) or a mean image (meanImage 1).
    struct Preprocessing {
        var scale: Float?
        var biases: [Float]?
        /// A per-channel mean to subtract (a mean image that is constant over each channel).
        var mean: [Float]?

        init(_ network: Message, input: Feature, source: String) throws {
            for p in try network.messages(2, what: "the preprocessing", source: source) {
                let feature = p.string(1)
                guard feature.isEmpty || feature == input.name else { continue }
                if let s = try p.message(10, what: "the image scaler", source: source) {
                    guard let image = input.image else {
                        throw ModelFormatError(.malformed, "'\(source)' has an image scaler on input '\(input.name)', which is not an image; Core ML scales only image inputs. The file is inconsistent.")
                    }
                    scale = s.float(10)
                    switch image.colorSpace {
                    case 20: biases = [s.float(22), s.float(21), s.float(20)]
                    case 30: biases = [s.float(20), s.float(21), s.float(22)]
                    default: biases = [s.float(30)]
                    }
                } else if let m = try p.message(11, what: "the mean image", source: source) {
                    let values = m.floats(1)
                    guard let shape = try input.tensorShape(source: source), values.count == shape.c * shape.h * shape.w else {
                        throw ModelFormatError(.malformed, "'\(source)': the mean image of input '\(input.name)' has \(values.count) values, which does not match the input size. The file is inconsistent.")
                    }
                    let plane = shape.h * shape.w
                    var perChannel: [Float] = []
                    for c in 0..<shape.c {
                        let slice = values[(c * plane)..<((c + 1) * plane)]
                        guard slice.allSatisfy({ $0 == slice.first }) else {
                            throw ModelFormatError(.unsupported, "'\(source)': input '\(input.name)' subtracts a mean image that varies across the picture; Vivify's engine applies only per-channel constants. Use a model without mean-image preprocessing.")
                        }
                        perChannel.append(slice.first ?? 0)
                    }
                    mean = perChannel
                }
            }
        }

        /// One sentence on what the graph takes and what its first node does.
        func summary(input: Feature) -> String {
            var s: String
            if let image = input.image {
                let order = image.colorSpace == 30 ? "in B, G, R channel order" : image.colorSpace == 20 ? "in R, G, B channel order" : "in one gray channel"
                s = "The graph takes 0–255 pixel values \(order)"
            } else {
                s = "The graph takes the multi-array's values as the model declares them (no pixel convention)"
            }
            if let scale, let biases {
                let names = input.image?.colorSpace == 30 ? ["B", "G", "R"] : input.image?.colorSpace == 20 ? ["R", "G", "B"] : ["gray"]
                let b = zip(names, biases).map { "\($0): \($1)" }.joined(separator: ", ")
                var scaleText = "\(scale)"
                if scale > 0, abs(1 / scale - (1 / scale).rounded()) < 1e-3, let inverse = ModelLimits.integer((1 / scale).rounded()) { scaleText += " (1/\(inverse))" }
                s += "; its first node applies the model's preprocessing y = x · \(scaleText) + (\(b))"
                if abs(scale * 255 - 1) < 1e-4 { s += ", so the network itself sees values in about [0, 1] plus the biases" }
                s += "."
            } else if let mean {
                s += "; its first node subtracts the model's per-channel mean (\(mean.map { "\($0)" }.joined(separator: ", ")))."
            } else {
                s += "; the model has no preprocessing."
            }
            return s
        }
    }
}
