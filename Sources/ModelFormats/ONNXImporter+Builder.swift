import Engine
import Foundation

extension ONNXImporter {

    /// Translates one graph.
    struct Builder {
        // The importer's own types, for the extensions in ONNXImporter+Nodes and +Layers.
        typealias Attributes = ONNXImporter.Attributes
        typealias NodeContext = ONNXImporter.NodeContext
        typealias Constant = ONNXImporter.Constant
        typealias DataType = ONNXImporter.DataType

        let source: String
        let directory: String?
        let opset: Int
        let options: ONNXImportOptions
        var builder = GraphBuilder()
        /// The image input's rank (1–4); lower ranks are lifted to 1×C×H×W with leading ones,
        /// so axis `a` of a runtime value is the engine's axis `a + 4 − inputRank`.
        var inputRank = 4
        /// The rank of each runtime value as the model sees it (the input's unless a reshape
        /// that keeps 1×C×H×W changed it), by ONNX name.
        var modelRanks: [String: Int] = [:]
        /// The rank of the node's first operand, and the rank its output gets (nil: the same).
        var rank = 4
        var outputRank: Int?
        /// Whether a value folded into the graph came from the image's size (Shape).
        var shapeDependent = false
        /// Reshapes and transposes of an image waiting to become a pixel shuffle.
        var views: [String: View] = [:]
        var values: [String: Int] = [:]
        var constants: [String: Constant] = [:]
        var opCounts: [String: Int] = [:]
        var inputValue = 0, outputValue = 0
        var inputName = "", outputName = ""
        var inputDimensions: [Int?] = []

        init(source: String, directory: String?, opset: Int, options: ONNXImportOptions) {
            self.source = source
            self.directory = directory
            self.opset = opset
            self.options = options
        }

        /// An image reshaped to more than four dimensions (and perhaps transposed).
        struct View {
            var source: Int
            var dims: [Int]
            var perm: [Int]?
        }

        mutating func read(_ graph: ProtobufMessage) throws {
            for t in try graph.messages(5, what: "the initializers", source: source) {
                let (name, value) = try ONNXImporter.tensor(t, source: source, directory: directory)
                constants[name] = value
            }
            for (name, t) in options.bindings {
                constants[name] = Constant(dims: t.dims, floats: t.values, ints: t.ints)
            }
            let inputs = try graph.messages(11, what: "the graph inputs", source: source).filter { constants[$0.string(1)] == nil }
            guard inputs.count == 1 else {
                throw ModelFormatError(.unsupported, "'\(source)' has \(inputs.count) runtime inputs (\(inputs.map { $0.string(1) }.joined(separator: ", "))); Vivify runs models with one image input. Export the model with one input, or bind the others to values (vivify infer --input NAME=FILE).")
            }
            inputName = inputs[0].string(1)
            inputDimensions = try Self.dimensions(inputs[0], source: source)
            inputRank = inputDimensions.count
            guard (1...4).contains(inputRank), inputRank < 4 || inputDimensions[0] == nil || inputDimensions[0] == 1 || options.inputShape != nil else {
                throw ModelFormatError(.unsupported, "'\(source)': input '\(inputName)' has shape \(inputDimensions.map { $0.map(String.init) ?? "?" }); Vivify feeds images as 1×C×H×W. Export the model with an NCHW image input.")
            }
            inputValue = builder.newValue(inputName)
            values[inputName] = inputValue
            let nodes = try graph.messages(1, what: "the nodes", source: source)
            guard nodes.count <= ModelLimits.maxLayers else {
                throw ModelFormatError(.malformed, "'\(source)' has \(nodes.count) nodes, beyond the limit of \(ModelLimits.maxLayers).")
            }
            for (i, n) in nodes.enumerated() { try node(n, index: i) }
            let declared = try graph.messages(12, what: "the graph outputs", source: source).map { $0.string(1) }
            guard let first = declared.first else {
                throw ModelFormatError(.malformed, "'\(source)' declares no graph output. Export it again.")
            }
            if let wanted = options.output, !declared.contains(wanted) {
                throw ModelFormatError(.unsupported, "'\(source)' has no output '\(wanted)'; its outputs are \(declared.joined(separator: ", ")).")
            }
            outputName = options.output ?? first
            guard let v = values[outputName] else {
                throw ModelFormatError(.unsupported, "'\(source)': output '\(outputName)' is a constant or is never computed; nothing to run.")
            }
            outputValue = v
        }

        /// ValueInfoProto → TypeProto (2) → tensor_type (1) → shape (2) → dim (1): dim_value (1) | dim_param (2).
        static func dimensions(_ info: ProtobufMessage, source: String) throws -> [Int?] {
            guard let type = try info.message(2, what: "the input type", source: source),
                  let tensor = try type.message(1, what: "the input tensor type", source: source),
                  let shape = try tensor.message(2, what: "the input shape", source: source) else { return [nil, nil, nil, nil] }
            return try shape.messages(1, what: "the input dimensions", source: source).map { $0.has(1) ? $0.int(1) : nil }
        }

        /// The image's declared dimensions lifted to four (N, C, H, W).
        var liftedDimensions: [Int?] { [Int?](repeating: 1, count: max(0, 4 - inputDimensions.count)) + inputDimensions }

        /// The input shape shapes are worked out for: the concrete one, or a probe (declared
        /// dimensions, 64 where symbolic).
        var probeShape: Shape? {
            if let s = options.inputShape { return s }
            let d = liftedDimensions
            guard let c = d[1] else { return nil }
            return Shape(c: c, h: max(d[2] ?? 64, 1), w: max(d[3] ?? 64, 1))
        }

        /// The shape of value `v` at the probe shape.
        func shape(of v: Int) -> Shape? {
            guard let input = probeShape else { return nil }
            let probe = builder.graph(input: inputValue, output: v, source: source)
            guard let shapes = try? probe.inferShapes(input: input), v < shapes.count else { return nil }
            return shapes[v]
        }

        /// The channel count of value `v`, from shape inference on a small probe.
        func channelCount(of v: Int) -> Int? { shape(of: v)?.c }

        /// Value `v`'s dimensions as the model sees them (rank `rank`); a use that
        /// depends on a probe size marks the model as remade per shape.
        mutating func modelDimensions(of v: Int, _ context: NodeContext) throws -> [Int] {
            guard let s = shape(of: v) else { throw context.unsupported("needs the size of '\(builder.names[v])', which is not known before running (the input's channel count is symbolic)") }
            if options.inputShape == nil && (liftedDimensions[2] == nil || liftedDimensions[3] == nil) { shapeDependent = true }
            // The engine keeps pooled and fully connected vectors as C×1×1: the model's 1×C.
            if rank == 2 && producesVector(v) { return [1, s.c] }
            return Array([1, s.c, s.h, s.w].suffix(rank))
        }

        /// Axis `a` of a runtime value as the engine's NCHW axis (0–3).
        func engineAxis(_ a: Int, _ context: NodeContext) throws -> Int {
            let k = a < 0 ? a + rank : a
            guard k >= 0, k < rank else { throw context.malformed("has axis \(a) for a rank-\(rank) input") }
            return k + 4 - rank
        }
    }
}
