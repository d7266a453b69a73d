import Engine
import Foundation

/// An ONNX model on the engine's graph IR.
public struct ONNXModel: Sendable {
    /// The network.
    public let graph: Graph
    /// The graph input the engine feeds (the one input that is not an initializer).
    public let inputName: String
    /// The graph output read as the result.
    public let outputName: String
    /// The input's declared dimensions (N, C, H, W, or fewer for a lower rank); nil where symbolic.
    public let inputDimensions: [Int?]
    /// The output's rank as the model sees it (the engine's result is 1×C×H×W; a rank-r
    /// output is its last r dimensions).
    public var outputRank: Int = 4
    /// Operator set versions by domain ("" is the default ONNX domain).
    public let opsets: [String: Int]
    /// The exporter that wrote the file ("pytorch 2.5").
    public let producer: String
    /// How many nodes of each op type the file holds, most frequent first.
    public let opCounts: [(op: String, count: Int)]

    /// A human-readable account of the model.
    public var description: String {
        let dims = inputDimensions.map { $0.map(String.init) ?? "?" }.joined(separator: "x")
        let ops = opCounts.map { "\($0.op) ×\($0.count)" }.joined(separator: ", ")
        let sets = opsets.sorted { $0.key < $1.key }.map { "\($0.key.isEmpty ? "ai.onnx" : $0.key) \($0.value)" }.joined(separator: ", ")
        return "ONNX model \(graph.source): input '\(inputName)' \(dims), output '\(outputName)'; opset \(sets); "
            + "\(graph.nodes.count) engine nodes from \(opCounts.reduce(0) { $0 + $1.count }) ONNX nodes (\(ops))"
            + (flops.map { "; \($0)" } ?? "")
            + (producer.isEmpty ? "" : "; written by \(producer)")
    }

    /// Arithmetic per run: 2 × multiply-adds at the declared size, or at 640×360 where H and W
    /// are symbolic ("1.23 GFLOP at 640x360").
    public var flops: String? {
        let d = [Int?](repeating: 1, count: max(0, 4 - inputDimensions.count)) + inputDimensions
        guard d.count == 4, let c = d[1] else { return nil }
        let shape = Shape(c: c, h: d[2] ?? 360, w: d[3] ?? 640)
        guard let g = try? graph.specialized(for: shape), let macs = try? g.multiplyAdds(input: shape) else { return nil }
        let value = Double(macs) * 2
        let text = value >= 1e9 ? String(format: "%.2f GFLOP", value / 1e9) : String(format: "%.2f MFLOP", value / 1e6)
        return "\(text) at \(shape.w)x\(shape.h)"
    }
}

extension Graph {
    /// Transpose (channels last) → softmax along the width → transpose back, as PyTorch
    /// writes a softmax over channels below opset 13, becomes one softmax over channels.
    func foldingTransposedSoftmax() -> Graph {
        var readers = [Int](repeating: 0, count: valueNames.count)
        for n in nodes { for i in n.inputs { readers[i] += 1 } }
        readers[output] += 1
        var out = nodes
        var removed = Set<Int>()
        for (k, n) in nodes.enumerated() where k + 2 < nodes.count {
            guard case .transpose([1, 2, 0]) = n.op, case .softmax(3) = nodes[k + 1].op, case .transpose([2, 0, 1]) = nodes[k + 2].op,
                  nodes[k + 1].inputs == [n.output], nodes[k + 2].inputs == [nodes[k + 1].output],
                  readers[n.output] == 1, readers[nodes[k + 1].output] == 1 else { continue }
            out[k + 2] = Node(name: nodes[k + 1].name, op: .softmaxChannels, inputs: n.inputs, output: nodes[k + 2].output)
            removed.formUnion([k, k + 1])
        }
        guard !removed.isEmpty else { return self }
        var g = self
        g.nodes = out.enumerated().filter { !removed.contains($0.offset) }.map(\.element)
        return g
    }
}

/// A tensor given to the importer: values of a graph input bound as a constant.
public struct ONNXTensor: Sendable, Equatable {
    /// Dimensions (empty for a scalar).
    public var dims: [Int]
    /// The values as floats.
    public var values: [Float]
    /// The exact values of an integer tensor.
    public var ints: [Int64]?

    /// Makes a tensor.
    public init(dims: [Int], values: [Float], ints: [Int64]? = nil) {
        self.dims = dims
        self.values = values
        self.ints = ints
    }
}

/// How to import: graph inputs other than the image bound to values, and the image's concrete
/// shape when it is known (shape arithmetic then folds for it).
public struct ONNXImportOptions: Sendable {
    /// Graph inputs bound as constants, by name (parameters fed as inputs: weights, scales,
    /// pads, an exponent).
    public var bindings: [String: ONNXTensor]
    /// The image's shape (batch 1); nil: symbolic, and a model whose layers depend on the
    /// size is remade for each shape the engine prepares.
    public var inputShape: Shape?
    /// The graph output to read (nil: the first).
    public var output: String?

    /// Makes options.
    public init(bindings: [String: ONNXTensor] = [:], inputShape: Shape? = nil, output: String? = nil) {
        self.bindings = bindings
        self.inputShape = inputShape
        self.output = output
    }
}

/// Reads ONNX models (`.onnx`, a `ModelProto` protobuf, onnx/onnx.proto) onto the engine's
/// graph IR with our own protobuf reader: the graph's initializers (inline or in external-data
/// files beside the model) are constants, `Constant` nodes too; image ops become IR nodes.
///
///     ModelProto ─┬─ ir_version (1), producer_name (2) / version (3), opset_import (8)
///                 └─ graph (7) ─┬─ node (1): input (1), output (2), name (3), op_type (4), attribute (5), domain (7)
///                               ├─ initializer (5): TensorProto
///                               └─ input (11) / output (12): ValueInfoProto
///
/// The engine runs batch-1 NCHW image tensors, so the model takes one runtime input of shape
/// 1×C×H×W (H and W may be symbolic: tiles of any size) and every op must keep that form.
/// An op outside the supported list, or an attribute the engine cannot honour, is an error
/// naming the op, the node and the file.
public enum ONNXImporter {
    /// The newest default-domain opset read (ONNX 1.17's).
    public static let newestOpset = 22

    /// The ops this importer translates (for `vivify models info` and the README).
    public static let supportedOps: [String] = [
        "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Constant", "ConstantOfShape", "Conv",
        "ConvTranspose", "DepthToSpace", "Div", "Dropout", "Elu", "Expand", "Flatten", "Gather", "Gemm",
        "GlobalAveragePool", "HardSigmoid", "Identity", "InstanceNormalization", "LeakyRelu", "MatMul", "Max",
        "MaxPool", "Min", "Mul", "PRelu", "Pad", "Pow", "Relu", "Reshape", "Resize", "Shape", "Sigmoid", "Slice",
        "Softmax", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Upsample",
    ]

    /// Loads the `.onnx` file at `path` (external-data tensors are read from beside it).
    public static func load(path: String) throws -> ONNXModel {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the ONNX model '\(path)'. Check the path and its permissions.")
        }
        return try parse(data, source: path, directory: (path as NSString).deletingLastPathComponent)
    }

    /// What a file holds, without translating it: its nodes' op types in order, its runtime
    /// inputs (graph inputs that are not initializers) and outputs.
    public static func inspect(path: String) throws -> (ops: [String], inputs: [String], outputs: [String], nonTensor: [String]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the ONNX model '\(path)'. Check the path and its permissions.")
        }
        let model = try ProtobufMessage(data, what: "the model", source: path)
        guard let graph = try model.message(7, what: "the graph", source: path) else {
            throw ModelFormatError(.malformed, "'\(path)' is not an ONNX model: it has no graph.")
        }
        let initializers = Set(try graph.messages(5, what: "the initializers", source: path).map { $0.string(8) })
        let inputs = try graph.messages(11, what: "the graph inputs", source: path).filter { !initializers.contains($0.string(1)) }
        let outputs = try graph.messages(12, what: "the graph outputs", source: path)
        // ValueInfoProto type (2) → TypeProto: tensor_type (1); sequences, maps, optionals otherwise.
        let nonTensor = try (inputs + outputs).filter { v in try v.message(2, what: "a value type", source: path).map { !$0.has(1) } ?? false }.map { $0.string(1) }
        return (try graph.messages(1, what: "the nodes", source: path).map { $0.string(4) },
                inputs.map { $0.string(1) }, outputs.map { $0.string(1) }, nonTensor)
    }

    /// Reads a serialized TensorProto (the `.pb` files of ONNX's test data).
    public static func readTensor(path: String) throws -> (name: String, tensor: ONNXTensor) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the tensor file '\(path)'. Check the path and its permissions.")
        }
        let message = try ProtobufMessage(data, what: "the tensor", source: path)
        let (name, c) = try tensor(message, source: path, directory: (path as NSString).deletingLastPathComponent)
        return (name, ONNXTensor(dims: c.dims, values: c.floats, ints: c.ints))
    }

    /// Loads the `.onnx` file at `path` with import options.
    public static func load(path: String, options: ONNXImportOptions) throws -> ONNXModel {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the ONNX model '\(path)'. Check the path and its permissions.")
        }
        return try parse(data, source: path, directory: (path as NSString).deletingLastPathComponent, options: options)
    }

    /// Parses the bytes of an `.onnx` file; `source` names it in messages, `directory` holds
    /// its external-data files.
    public static func parse(_ data: Data, source: String, directory: String? = nil,
                             options: ONNXImportOptions = ONNXImportOptions()) throws -> ONNXModel {
        let model = try ProtobufMessage(data, what: "the model", source: source)
        guard let graph = try model.message(7, what: "the graph", source: source) else {
            throw ModelFormatError(.malformed, "'\(source)' is not an ONNX model: it has no graph. Pass an .onnx file exported by PyTorch, tf2onnx or onnx's helpers.")
        }
        var opsets: [String: Int] = [:]
        for o in try model.messages(8, what: "the opset imports", source: source) { opsets[o.string(1)] = o.int(2) }
        let opset = opsets[""] ?? opsets["ai.onnx"] ?? 1
        guard (1...ONNXImporter.newestOpset).contains(opset) else {
            throw ModelFormatError(.unsupported, "'\(source)' uses ONNX opset \(opset); Vivify reads opsets 7 to \(ONNXImporter.newestOpset). Re-export the model with an opset in that range.")
        }
        var b = Builder(source: source, directory: directory, opset: opset, options: options)
        try b.read(graph)
        let producer = [model.string(2), model.string(3)].filter { !$0.isEmpty }.joined(separator: " ")
        var engineGraph = b.builder.graph(input: b.inputValue, output: b.outputValue, source: source).foldingTransposedSoftmax()
        if b.shapeDependent && options.inputShape == nil {
            // Shape arithmetic was folded for a probe size: remake the graph for each real one.
            engineGraph.specializer = { shape in
                var o = options
                o.inputShape = shape
                return try parse(data, source: source, directory: directory, options: o).graph
            }
        }
        var result = ONNXModel(graph: engineGraph,
                         inputName: b.inputName, outputName: b.outputName, inputDimensions: b.inputDimensions,
                         opsets: opsets, producer: producer,
                         opCounts: b.opCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { ($0.key, $0.value) })
        result.outputRank = b.modelRanks[b.outputName] ?? b.inputRank
        return result
    }

    /// A constant tensor (an initializer, a `Constant` node, or folded arithmetic).
    struct Constant {
        var dims: [Int]
        var floats: [Float]
        /// The exact integers, for integer tensors (shapes, pads, axes).
        var ints: [Int64]?
        var count: Int { floats.count }
    }

    /// ONNX TensorProto data types.
    enum DataType: Int {
        case float = 1, uint8 = 2, int8 = 3, uint16 = 4, int16 = 5, int32 = 6, int64 = 7, bool = 9, float16 = 10, double = 11, uint32 = 12, uint64 = 13
    }

    /// Decodes a TensorProto (dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7,
    /// name 8, raw_data 9, double_data 10, external_data 13, data_location 14).
    static func tensor(_ t: ProtobufMessage, source: String, directory: String?) throws -> (name: String, value: Constant) {
        let name = t.string(8)
        let dims = t.ints(1)
        guard dims.allSatisfy({ $0 >= 0 }), let count = ModelLimits.elementCount(dims) else {
            throw ModelFormatError(.malformed, "'\(source)': tensor '\(name)' has dimensions \(dims), beyond the model limits. The file is damaged or not a model Vivify can run.")
        }
        guard let type = DataType(rawValue: t.int(2)) else {
            throw ModelFormatError(.unsupported, "'\(source)': tensor '\(name)' has ONNX data type \(t.int(2)), which Vivify does not read (float, float16, double and integer types only).")
        }
        var raw = t.bytes(9)
        if t.int(14) == 1 {
            raw = try externalData(t, name: name, source: source, directory: directory)
        }
        func fail(_ what: String) -> ModelFormatError {
            ModelFormatError(.malformed, "'\(source)': tensor '\(name)' (\(dims)) \(what). The file is damaged; export it again.")
        }
        var floats: [Float] = []
        var ints: [Int64]?
        if let raw, !raw.isEmpty || count == 0 {
            let width: Int
            switch type {
            case .float, .int32, .uint32: width = 4
            case .int64, .double, .uint64: width = 8
            case .float16, .int16, .uint16: width = 2
            case .uint8, .int8, .bool: width = 1
            }
            guard raw.count == count * width else { throw fail("holds \(raw.count) bytes for \(count) values of \(width)") }
            raw.withUnsafeBytes { (p: UnsafeRawBufferPointer) in
                switch type {
                case .float: floats = (0..<count).map { Float(bitPattern: p.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self).littleEndian) }
                case .double: floats = (0..<count).map { Float(Double(bitPattern: p.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self).littleEndian)) }
                case .float16: floats = HalfFloats.decode(p, count: count)
                case .int64: ints = (0..<count).map { Int64(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 8, as: Int64.self)) }
                case .uint64: ints = (0..<count).map { Int64(bitPattern: UInt64(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self))) }
                case .int32: ints = (0..<count).map { Int64(Int32(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 4, as: Int32.self))) }
                case .uint32: ints = (0..<count).map { Int64(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
                case .int16: ints = (0..<count).map { Int64(Int16(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 2, as: Int16.self))) }
                case .uint16: ints = (0..<count).map { Int64(UInt16(littleEndian: p.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) }
                case .int8: ints = (0..<count).map { Int64(Int8(bitPattern: p[$0])) }
                case .uint8, .bool: ints = (0..<count).map { Int64(p[$0]) }
                }
            }
        } else {
            switch type {
            case .float: floats = t.floats(4)
            case .double: floats = t.fixedBytes(10, width: 8).withUnsafeBytes { p in (0..<(p.count / 8)).map { Float(Double(bitPattern: p.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self).littleEndian)) } }
            case .float16:
                // fp16 values travel as the low 16 bits of int32_data.
                let bits = t.ints(5).map { UInt16(truncatingIfNeeded: $0).littleEndian }
                floats = bits.withUnsafeBytes { HalfFloats.decode($0, count: $0.count / 2) }
            case .int64: ints = t.ints(7).map(Int64.init)
            case .uint64: ints = (try t.varints(11)).map { Int64(bitPattern: $0) }
            case .int32, .int16, .int8, .uint16, .uint8, .bool: ints = t.ints(5).map(Int64.init)
            case .uint32: ints = (try t.varints(11)).map { Int64(bitPattern: $0) }
            }
            guard (ints?.count ?? floats.count) == count else { throw fail("holds \(ints?.count ?? floats.count) values") }
        }
        if let ints { floats = ints.map { Float($0) } }
        return (name, Constant(dims: dims, floats: floats, ints: ints))
    }

    /// External data: `location` (a file beside the model, never outside its folder),
    /// `offset`, `length`.
    static func externalData(_ t: ProtobufMessage, name: String, source: String, directory: String?) throws -> Data {
        var fields: [String: String] = [:]
        for e in try t.messages(13, what: "the external data of tensor '\(name)'", source: source) { fields[e.string(1)] = e.string(2) }
        guard let location = fields["location"], !location.isEmpty, let directory else {
            throw ModelFormatError(.malformed, "'\(source)': tensor '\(name)' is stored outside the file but names no location. Export it again with its data file.")
        }
        let parts = location.split(separator: "/")
        guard !location.hasPrefix("/"), !parts.contains("..") else {
            throw ModelFormatError(.malformed, "'\(source)': tensor '\(name)' points its data at '\(location)', outside the model's folder; refused. Keep external data beside the model.")
        }
        // Inside the folder after links are resolved, and a regular file (a FIFO hung the read).
        let path = try ContainedPath.resolve(location, inside: directory, what: "the external data of tensor '\(name)'", source: source)
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw ModelFormatError(.unreadable, "'\(source)': cannot read '\(path)', the external data of tensor '\(name)'. Keep the data file beside the model.")
        }
        defer { try? handle.close() }
        let offset = UInt64(fields["offset"] ?? "0") ?? 0
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? UInt64) ?? 0
        let length = fields["length"].flatMap { UInt64($0) } ?? (size >= offset ? size - offset : 0)
        guard offset <= size, length <= size - offset, length <= UInt64(ModelLimits.maxTensorElements) * 8 else {
            throw ModelFormatError(.malformed, "'\(source)': tensor '\(name)' wants bytes \(offset)+\(length) of '\(location)', which holds \(size). The data file does not belong to this model.")
        }
        try handle.seek(toOffset: offset)
        return try handle.read(upToCount: Int(length)) ?? Data()
    }

    /// Attributes of a node (AttributeProto: name 1, f 2, i 3, s 4, t 5, floats 7, ints 8).
    struct Attributes {
        var map: [String: ProtobufMessage] = [:]
        func int(_ k: String) -> Int? { map[k].flatMap { $0.has(3) ? $0.int(3) : nil } }
        func float(_ k: String) -> Float? { map[k].flatMap { $0.has(2) ? $0.float(2) : nil } }
        func string(_ k: String) -> String? { map[k].flatMap { $0.has(4) ? $0.string(4) : nil } }
        func ints(_ k: String) -> [Int]? { map[k].map { $0.ints(8) } }
        func floats(_ k: String) -> [Float]? { map[k].map { $0.floats(7) } }
    }

    /// Translates one graph.
    struct Builder {
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

        // MARK: nodes

        mutating func node(_ n: ProtobufMessage, index: Int) throws {
            let op = n.string(4)
            let domain = n.string(7)
            let name = n.string(3).isEmpty ? "\(op)_\(index)" : n.string(3)
            let inputs = n.strings(1)
            let outputs = n.strings(2)
            var attributes = Attributes()
            for a in try n.messages(5, what: "the attributes of node '\(name)'", source: source) { attributes.map[a.string(1)] = a }
            opCounts[op, default: 0] += 1
            let context = NodeContext(op: op, name: name, source: source, out: outputs.first ?? "")
            rank = inputs.first.flatMap { modelRanks[$0] } ?? inputRank
            outputRank = nil
            defer {
                for o in outputs where !o.isEmpty && (values[o] != nil || views[o] != nil) && modelRanks[o] == nil {
                    modelRanks[o] = outputRank ?? rank
                }
            }
            guard domain.isEmpty || domain == "ai.onnx" else { throw context.unsupported("is in the custom domain '\(domain)'") }
            guard let out = outputs.first, !out.isEmpty else { throw context.malformed("has no output") }
            // Every op but Constant reads at least its first input.
            guard op == "Constant" || inputs.first.map({ !$0.isEmpty }) == true else { throw context.malformed("has no input") }

            // Constant inputs (initializers, Constant nodes); "" is an omitted optional input.
            func constant(_ i: Int) -> Constant? { self.constant(inputs, i) }
            func runtime(_ i: Int) throws -> Int {
                if i < inputs.count, let view = views[inputs[i]] {
                    throw context.unsupported("reads '\(inputs[i])', an image reshaped to \(view.dims); the engine runs 1×C×H×W images (a reshape–transpose–reshape must be a pixel shuffle)")
                }
                guard i < inputs.count, let v = values[inputs[i]] else {
                    throw context.unsupported("reads '\(i < inputs.count ? inputs[i] : "?")' as a constant where the engine needs an image (or the value is never computed)")
                }
                return v
            }
            func emit(_ operation: Engine.Operation, _ ins: [Int]) { self.emit(operation, ins, context) }
            func alias(_ v: Int) { values[out] = v }

            // Everything computed from constants alone is folded here.
            if op == "Constant" {
                if let t = attributes.map["value"], let m = try t.message(5, what: "the value of node '\(name)'", source: source) {
                    constants[out] = try ONNXImporter.tensor(m, source: source, directory: directory).value
                } else if let f = attributes.float("value_float") {
                    constants[out] = Constant(dims: [], floats: [f], ints: nil)
                } else if let fs = attributes.floats("value_floats") {
                    constants[out] = Constant(dims: [fs.count], floats: fs, ints: nil)
                } else if let i = attributes.int("value_int") {
                    constants[out] = Constant(dims: [], floats: [Float(i)], ints: [Int64(i)])
                } else if let is_ = attributes.ints("value_ints") {
                    constants[out] = Constant(dims: [is_.count], floats: is_.map(Float.init), ints: is_.map(Int64.init))
                } else {
                    throw context.unsupported("holds a kind of constant the engine does not read")
                }
                return
            }
            let runtimeInputs = inputs.filter { values[$0] != nil || views[$0] != nil }
            if runtimeInputs.isEmpty, inputs.contains(where: { !$0.isEmpty }) || op == "ConstantOfShape" {
                do {
                    if let c = try fold(op, attributes, inputs: inputs, context) {
                        constants[out] = c
                        return
                    }
                } catch let e as FoldingError {
                    throw context.unsupported("cannot be worked out from its constant inputs: it \(e.why)")
                }
            }

            switch op {
            case "Identity", "Dropout":
                if op == "Dropout" {
                    // Inference drops nothing; training mode (opset 12's third input) and the mask output are refused.
                    // Training mode with ratio 0 drops nothing either.
                    let ratio = opset >= 12 ? constant(1)?.floats.first ?? 0.5 : attributes.float("ratio") ?? 0.5
                    if let t = constant(2), t.floats.first.map({ $0 != 0 }) ?? false, ratio != 0 {
                        throw context.unsupported("runs in training mode (it drops values at random); export the model for inference")
                    }
                    if inputs.count > 2, !inputs[2].isEmpty, constant(2) == nil { throw context.unsupported("takes its training mode from a computed value") }
                    if outputs.count > 1, !outputs[1].isEmpty { throw context.unsupported("also returns its mask") }
                }
                if let v = views[inputs[0]] { views[out] = v; return }
                alias(try runtime(0))
            case "Cast":
                // Every runtime value is float32 here; a cast to a float type changes nothing.
                guard let to = attributes.int("to"), [1, 10, 11].contains(to) else { throw context.unsupported("casts an image to data type \(attributes.int("to") ?? 0)") }
                alias(try runtime(0))
            case "Conv", "ConvTranspose":
                try convolution(op == "ConvTranspose", attributes, inputs: inputs, context, runtime: runtime(0))
            case "Relu": emit(.activation(.relu), [try runtime(0)])
            case "Sigmoid": emit(.activation(.sigmoid), [try runtime(0)])
            case "Tanh": emit(.activation(.tanh), [try runtime(0)])
            case "Elu": emit(.activation(.elu(alpha: attributes.float("alpha") ?? 1)), [try runtime(0)])
            case "Sqrt": emit(.activation(.sqrt), [try runtime(0)])
            case "Pow":
                let x = try runtime(0)
                guard let e = constant(1) else { throw context.unsupported("raises to a computed power; the engine raises to constants") }
                if e.count == 1 {
                    emit(.activation(.pow(exponent: e.floats[0])), [x])
                } else {
                    // A constant power per element, broadcast against the image.
                    outputRank = max(rank, e.dims.count)
                    let k = try constantNode(e, context)
                    emit(.binary(.pow, coefficients: nil), [x, k])
                }
            case "LeakyRelu": emit(.activation(.leakyRelu(slope: attributes.float("alpha") ?? 0.01)), [try runtime(0)])
            case "PRelu":
                let x = try runtime(0)
                guard let s = constant(1) else { throw context.unsupported("takes its slopes from a computed value") }
                guard !s.floats.isEmpty, s.count <= ModelLimits.maxTensorElements else { throw context.malformed("has \(s.count) slopes") }
                if let perChannel = perChannel(s, context), perChannel.count <= ModelLimits.maxChannels {
                    emit(.activation(.prelu(slopes: perChannel)), [x])
                } else {
                    // Slopes along other axes: relu(x) + slope · min(x, 0).
                    let slopes = try constantNode(s, context)
                    let positive = builder.newValue(out + "/positive"), negative = builder.newValue(out + "/negative")
                    let scaled = builder.newValue(out + "/scaled")
                    builder.append(Node(name: name, op: .activation(.relu), inputs: [x], output: positive))
                    builder.append(Node(name: name, op: .scalar(.min, 0, scalarFirst: false), inputs: [x], output: negative))
                    builder.append(Node(name: name, op: .binary(.mul, coefficients: nil), inputs: [negative, slopes], output: scaled))
                    emit(.binary(.add, coefficients: nil), [positive, scaled])
                }
            case "Clip":
                var lo = -Float.infinity, hi = Float.infinity
                if opset < 11 {
                    lo = attributes.float("min") ?? lo
                    hi = attributes.float("max") ?? hi
                } else {
                    if inputs.count > 1, !inputs[1].isEmpty {
                        guard let c = constant(1), c.count == 1 else { throw context.unsupported("takes its minimum from a computed value") }
                        lo = c.floats[0]
                    }
                    if inputs.count > 2, !inputs[2].isEmpty {
                        guard let c = constant(2), c.count == 1 else { throw context.unsupported("takes its maximum from a computed value") }
                        hi = c.floats[0]
                    }
                }
                emit(.activation(.clip(min: lo, max: hi)), [try runtime(0)])
            case "HardSigmoid":
                let alpha = attributes.float("alpha") ?? 0.2, beta = attributes.float("beta") ?? 0.5
                let x = try runtime(0)
                let scaled = builder.newValue(out + "/scaled"), shifted = builder.newValue(out + "/shifted")
                builder.append(Node(name: name, op: .scalar(.mul, alpha, scalarFirst: false), inputs: [x], output: scaled))
                builder.append(Node(name: name, op: .scalar(.add, beta, scalarFirst: false), inputs: [scaled], output: shifted))
                emit(.activation(.clip(min: 0, max: 1)), [shifted])
            case "Add", "Sub", "Mul", "Div":
                try binary(op, inputs: inputs, context)
            case "Max", "Min":
                // Variadic: one operand is itself, more fold left to right.
                let operands = inputs.filter { !$0.isEmpty }
                if operands.count == 1 { alias(try runtime(0)); return }
                var acc = operands[0]
                for (k, next) in operands.dropFirst().enumerated() {
                    let last = k == operands.count - 2
                    let target = last ? out : out + "/\(k)"
                    try binary(op, inputs: [acc, next], NodeContext(op: op, name: name, source: source, out: target))
                    acc = target
                }
            case "BatchNormalization":
                guard let s = constant(1), let b = constant(2), let m = constant(3), let v = constant(4),
                      s.count == b.count, b.count == m.count, m.count == v.count else {
                    throw context.unsupported("takes its statistics from computed values")
                }
                guard (attributes.int("training_mode") ?? 0) == 0, outputs.filter({ !$0.isEmpty }).count == 1 else {
                    throw context.unsupported("runs in training mode (it updates running statistics); export the model for inference")
                }
                guard s.count > 0, s.count <= ModelLimits.maxChannels else { throw context.malformed("normalises \(s.count) channels") }
                let eps = attributes.float("epsilon") ?? 1e-5
                let scale = (0..<s.count).map { s.floats[$0] / (v.floats[$0] + eps).squareRoot() }
                let bias = (0..<s.count).map { b.floats[$0] - m.floats[$0] * scale[$0] }
                emit(.channelAffine(scale: scale, bias: bias), [try runtime(0)])
            case "InstanceNormalization":
                guard rank == 4 else { throw context.unsupported("normalises a rank-\(rank) tensor; the engine's images are 1×C×H×W") }
                guard let s = constant(1), let b = constant(2), s.count == b.count, s.count > 0, s.count <= ModelLimits.maxChannels else {
                    throw context.unsupported("takes its scale and bias from computed values")
                }
                emit(.instanceNorm(scale: s.floats, bias: b.floats, epsilon: attributes.float("epsilon") ?? 1e-5), [try runtime(0)])
            case "Softmax":
                let x = try runtime(0)
                let axis = try engineAxis(attributes.int("axis") ?? (opset >= 13 ? -1 : 1), context)
                // Before opset 13 the softmax runs over all axes from `axis` on, flattened.
                // Before opset 13 the softmax runs over every axis from `axis` on, flattened: the
                // same as one axis when the axes after it have length 1.
                let later = shape(of: x).map { [1, $0.c, $0.h, $0.w][(axis + 1)...].allSatisfy { $0 == 1 } } ?? false
                guard opset >= 13 || axis == 3 || later else {
                    throw context.unsupported("takes an opset-\(opset) softmax over axes \(attributes.int("axis") ?? 1) and after of a rank-\(rank) input; the engine's runs along one axis")
                }
                switch axis {
                case 1: emit(.softmaxChannels, [x])
                case 2, 3: emit(.softmax(axis: axis), [x])
                default: throw context.unsupported("takes the softmax over the batch")
                }
            case "DepthToSpace":
                guard let bs = attributes.int("blocksize"), (1...ModelLimits.maxScale).contains(bs) else { throw context.malformed("has no valid blocksize") }
                let mode = attributes.string("mode") ?? "DCR"
                guard mode == "DCR" || mode == "CRD" else { throw context.unsupported("has mode '\(mode)'") }
                emit(.pixelShuffle(factor: bs, order: mode == "DCR" ? .dcr : .crd), [try runtime(0)])
            case "SpaceToDepth":
                guard let bs = attributes.int("blocksize"), (1...ModelLimits.maxScale).contains(bs) else { throw context.malformed("has no valid blocksize") }
                emit(.spaceToDepth(factor: bs), [try runtime(0)])
            case "Resize", "Upsample":
                try resize(op, attributes, inputs: inputs, context, runtime: runtime(0))
            case "Pad":
                try pad(attributes, inputs: inputs, context, runtime: runtime(0))
            case "Slice":
                try slice(attributes, inputs: inputs, context, runtime: runtime(0))
            case "Concat":
                let axis = try engineAxis(attributes.int("axis") ?? 1, context)
                guard axis >= 1 else { throw context.unsupported("concatenates along the batch axis") }
                let parts = try inputs.indices.filter { !inputs[$0].isEmpty }.map { i -> Int in
                    if let v = values[inputs[i]] { return v }
                    if let c = constant(i) { return try constantNode(c, context) }
                    return try runtime(i)
                }
                emit(axis == 1 ? .concatChannels : .concat(axis: axis), parts)
            case "Split":
                try split(attributes, inputs: inputs, outputs: outputs, context, runtime: runtime(0))
            case "GlobalAveragePool":
                guard rank == 4 else { throw context.unsupported("pools a rank-\(rank) tensor") }
                emit(.globalAveragePool, [try runtime(0)])
            case "AveragePool", "MaxPool":
                guard outputs.filter({ !$0.isEmpty }).count == 1 else { throw context.unsupported("also returns the indices of the maxima") }
                try pool(op == "MaxPool", attributes, context, runtime: runtime(0))
            case "Shape":
                let dims = try modelDimensions(of: try runtime(0), context)
                let r = dims.count
                var start = attributes.int("start") ?? 0, end = attributes.int("end") ?? r
                if start < 0 { start += r }
                if end < 0 { end += r }
                start = min(max(start, 0), r)
                end = min(max(end, start), r)
                let picked = dims[start..<end].map { Int64($0) }
                constants[out] = Constant(ints: picked, dims: [picked.count])
            case "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Expand":
                try reshape(op, attributes, inputs: inputs, context)
            case "Gemm", "MatMul":
                try fullyConnected(op, attributes, inputs: inputs, context, runtime: runtime(0))
            default:
                throw context.unsupported("is not an op Vivify's engine runs (supported: \(ONNXImporter.supportedOps.joined(separator: ", ")))")
            }
        }

        /// The value of a node whose inputs are all constants; nil when `op` is not folded.
        func fold(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext) throws -> Constant? {
            func c(_ i: Int) throws -> Constant {
                guard let v = constant(inputs, i) else { throw FoldingError(why: "lacks input \(i)") }
                return v
            }
            switch op {
            case "Identity", "Dropout": return try c(0)
            case "Cast":
                var v = try c(0)
                let to = a.int("to") ?? 1
                if [1, 10, 11].contains(to) {
                    v.ints = nil
                } else {
                    v.ints = v.ints ?? v.floats.map { $0.isFinite ? Int64($0.rounded(.towardZero)) : 0 }
                    v.floats = v.ints!.map { Float($0) }
                }
                return v
            case "Add", "Sub", "Mul", "Div", "Pow":
                return try ConstantFolding.binary(op, try c(0), try c(1))
            case "Max", "Min":
                let operands = inputs.indices.filter { !inputs[$0].isEmpty }
                var acc = try c(operands[0])
                for i in operands.dropFirst() { acc = try ConstantFolding.binary(op, acc, try c(i)) }
                return acc
            case "Sqrt":
                let v = try c(0)
                return Constant(floats: v.floats.map { $0.squareRoot() }, dims: v.dims)
            case "Shape":
                let v = try c(0)
                return Constant(ints: v.dims.map { Int64($0) }, dims: [v.dims.count])
            case "Gather":
                return try ConstantFolding.gather(try c(0), try c(1), axis: a.int("axis") ?? 0)
            case "Unsqueeze", "Squeeze":
                let v = try c(0)
                let axes = opset >= 13 ? (constant(inputs, 1)?.ints?.map { Int($0) }) : a.ints("axes")
                var dims = v.dims
                if op == "Unsqueeze" {
                    guard let axes else { throw FoldingError(why: "names no axes") }
                    let r = dims.count + axes.count
                    for ax in try axes.map({ try ConstantFolding.axis($0, rank: r) }).sorted() {
                        guard ax <= dims.count else { throw FoldingError(why: "unsqueezes axes \(axes) of a rank-\(v.dims.count) tensor") }
                        dims.insert(1, at: ax)
                    }
                } else if let axes {
                    let drop = Set(try axes.map { try ConstantFolding.axis($0, rank: dims.count) })
                    guard drop.allSatisfy({ dims[$0] == 1 }) else { throw FoldingError(why: "squeezes an axis longer than 1") }
                    dims = dims.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
                } else {
                    dims = dims.filter { $0 != 1 }
                }
                return Constant(dims: dims, floats: v.floats, ints: v.ints)
            case "Concat":
                return try ConstantFolding.concat(inputs.indices.filter { !inputs[$0].isEmpty }.map { try c($0) }, axis: a.int("axis") ?? 0)
            case "Reshape":
                let v = try c(0)
                guard let spec = try c(1).ints else { throw FoldingError(why: "reshapes to a non-integer shape") }
                return Constant(dims: try ConstantFolding.reshapeDims(v.dims, spec, allowZero: (a.int("allowzero") ?? 0) == 1), floats: v.floats, ints: v.ints)
            case "Flatten":
                let v = try c(0)
                let ax = a.int("axis") ?? 1
                let k = ax < 0 ? ax + v.dims.count : ax
                guard k >= 0, k <= v.dims.count else { throw FoldingError(why: "flattens at axis \(ax)") }
                guard let rows = ModelLimits.elementCount(v.dims[..<k]), let columns = ModelLimits.elementCount(v.dims[k...]) else {
                    throw FoldingError(why: "flattens a tensor of shape \(v.dims)")
                }
                return Constant(dims: [rows, columns], floats: v.floats, ints: v.ints)
            case "Transpose":
                return try ConstantFolding.transpose(try c(0), perm: a.ints("perm"))
            case "ConstantOfShape":
                guard let dims = try c(0).ints?.map({ Int($0) }), dims.allSatisfy({ $0 >= 0 }),
                      let n = ModelLimits.elementCount(dims) else { throw FoldingError(why: "has a shape that is not a list of sizes") }
                var fill = Constant(floats: [0], dims: [1])
                if let t = a.map["value"], let m = try t.message(5, what: "the value of node '\(context.name)'", source: source) {
                    fill = try ONNXImporter.tensor(m, source: source, directory: directory).value
                }
                guard fill.count == 1 else { throw FoldingError(why: "fills with \(fill.count) values") }
                return Constant(dims: dims, floats: [Float](repeating: fill.floats[0], count: n), ints: fill.ints.map { [Int64](repeating: $0[0], count: n) })
            case "Expand":
                let v = try c(0)
                guard let spec = try c(1).ints?.map({ Int($0) }) else { throw FoldingError(why: "expands to a non-integer shape") }
                let dims = try ConstantFolding.broadcast(v.dims, spec)
                guard ModelLimits.elementCount(dims) != nil else { throw FoldingError(why: "expands to \(dims), beyond the model limits") }
                return try ConstantFolding.expand(v, to: dims)
            case "Slice":
                let v = try c(0)
                if opset < 10 {
                    return try ConstantFolding.slice(v, starts: (a.ints("starts") ?? []).map(Int64.init), ends: (a.ints("ends") ?? []).map(Int64.init),
                                                     axes: a.ints("axes")?.map(Int64.init), steps: nil)
                }
                guard let st = try c(1).ints, let en = try c(2).ints else { throw FoldingError(why: "has non-integer bounds") }
                return try ConstantFolding.slice(v, starts: st, ends: en, axes: constant(inputs, 3)?.ints, steps: constant(inputs, 4)?.ints)
            default:
                return nil
            }
        }

        /// A constant with one value per channel of a runtime value (shape C, C×1×1 or 1×C×1×1 at
        /// rank 4; a lower-rank model's trailing dims lined up NumPy's way), or nil.
        func perChannel(_ c: Constant, _ context: NodeContext) -> [Float]? {
            if c.count == 1 { return c.floats }
            // Line the constant's dims up with the lifted 1×C×H×W (NumPy aligns trailing axes).
            let own = c.dims.count > rank ? c.dims : [Int](repeating: 1, count: rank - c.dims.count) + c.dims
            let lifted = [Int](repeating: 1, count: max(0, 4 - own.count)) + own
            guard lifted.count == 4, lifted[0] == 1, lifted[2] == 1, lifted[3] == 1 else { return nil }
            return c.floats
        }

        /// A node making constant `c` as an engine tensor (lined up with the lifted 1×C×H×W).
        mutating func constantNode(_ c: Constant, _ context: NodeContext) throws -> Int {
            let own = c.dims.count >= rank ? c.dims : [Int](repeating: 1, count: rank - c.dims.count) + c.dims
            let lifted = [Int](repeating: 1, count: max(0, 4 - own.count)) + own
            guard lifted.count == 4, lifted[0] == 1, c.count > 0 else {
                throw context.unsupported("combines an image with a constant of shape \(c.dims), which does not line up with 1×C×H×W")
            }
            let v = builder.newValue(context.out + "/constant")
            builder.append(Node(name: context.name, op: .constant(Shape(c: lifted[1], h: lifted[2], w: lifted[3]), values: c.floats), inputs: [], output: v))
            return v
        }

        /// Split into the node's outputs: channel slices, or crops of rows or columns.
        mutating func split(_ a: Attributes, inputs: [String], outputs: [String], _ context: NodeContext, runtime x: Int) throws {
            let axis = try engineAxis(a.int("axis") ?? 0, context)
            guard axis >= 1 else { throw context.unsupported("splits the batch") }
            guard let size = shape(of: x) else { throw context.unsupported("splits a value whose size is not known before running") }
            let n = [1, size.c, size.h, size.w][axis]
            if axis >= 2, options.inputShape == nil, liftedDimensions[2] == nil || liftedDimensions[3] == nil { shapeDependent = true }
            var parts: [Int]
            if let given = opset >= 13 ? constant(inputs, 1)?.ints.map({ $0.map { Int($0) } }) : a.ints("split") {
                parts = given
            } else {
                let count = a.int("num_outputs") ?? outputs.count
                guard count > 0 else { throw context.malformed("splits into no parts") }
                let part = (n + count - 1) / count
                parts = (0..<count).map { min(part, max(0, n - $0 * part)) }
            }
            guard parts.count == outputs.count, parts.reduce(0, +) == n else {
                throw context.malformed("splits \(n) into \(parts) for \(outputs.count) outputs")
            }
            guard parts.allSatisfy({ $0 > 0 }) else { throw context.unsupported("splits off an empty part (\(parts)); the engine's tensors are never empty") }
            var start = 0
            for (k, name) in outputs.enumerated() {
                let v = builder.newValue(name)
                let end = start + parts[k]
                let op: Engine.Operation
                switch axis {
                case 1: op = .sliceChannels(start: start, end: end)
                case 2: op = .crop(top: start, left: 0, bottom: n - end, right: 0)
                default: op = .crop(top: 0, left: start, bottom: 0, right: n - end)
                }
                builder.append(Node(name: context.name, op: op, inputs: [x], output: v))
                values[name] = v
                start = end
            }
        }

        /// Max pooling, and average pooling the general way (a depthwise convolution where that is the same).
        mutating func pool(_ isMax: Bool, _ a: Attributes, _ context: NodeContext, runtime x: Int) throws {
            guard rank == 4 else { throw context.unsupported("pools a rank-\(rank) tensor; the engine pools 2-D images") }
            guard let k = a.ints("kernel_shape"), k.count == 2 else { throw context.unsupported("has no 2-D kernel_shape") }
            let strides = a.ints("strides") ?? [1, 1], dilations = a.ints("dilations") ?? [1, 1]
            var pads = a.ints("pads") ?? [0, 0, 0, 0]
            guard k.allSatisfy({ (1...ModelLimits.maxKernel).contains($0) }), strides.count == 2, pads.count == 4, dilations.count == 2,
                  strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }), pads.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }),
                  dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }) else {
                throw context.malformed("has kernel \(k), strides \(strides), dilations \(dilations) or pads \(pads) beyond the model limits")
            }
            let ceil = (a.int("ceil_mode") ?? 0) != 0
            switch a.string("auto_pad") ?? "NOTSET" {
            case "NOTSET", "": break
            case "VALID": pads = [0, 0, 0, 0]
            case let mode where mode == "SAME_UPPER" || mode == "SAME_LOWER":
                // Output ceil(n / stride): the padding depends on the size unless the stride is 1.
                let dims = strides == [1, 1] ? [1, 1, 1, 1] : try modelDimensions(of: x, context)
                var p = [0, 0, 0, 0]
                for axis in 0..<2 {
                    let n = strides == [1, 1] ? 1 : dims[2 + axis]
                    let out = (n + strides[axis] - 1) / strides[axis]
                    let total = max((out - 1) * strides[axis] + dilations[axis] * (k[axis] - 1) + 1 - n, 0)
                    let small = total / 2
                    p[axis] = mode == "SAME_UPPER" ? small : total - small
                    p[axis + 2] = total - p[axis]
                }
                pads = p
            case let mode: throw context.unsupported("has auto_pad '\(mode)'")
            }
            let countPadding = (a.int("count_include_pad") ?? 0) != 0
            if !isMax, !ceil, dilations == [1, 1], countPadding || pads.allSatisfy({ $0 == 0 }), let c = channelCount(of: x), c <= ModelLimits.maxChannels {
                // A depthwise convolution with equal weights is the same average (oneDNN's fast path).
                let w = [Float](repeating: 1 / Float(k[0] * k[1]), count: c * k[0] * k[1])
                emit(.convolution(ConvolutionParameters(outChannels: c, inChannels: c, kernelH: k[0], kernelW: k[1], strideH: strides[0], strideW: strides[1],
                                                        padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3], groups: c, weights: w)), [x], context)
                return
            }
            emit(.pool(PoolParameters(kind: isMax ? .max : .average(countPadding: countPadding), kernelH: k[0], kernelW: k[1],
                                      strideH: strides[0], strideW: strides[1], dilationH: dilations[0], dilationW: dilations[1],
                                      padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3], ceilMode: ceil)), [x], context)
        }

        /// Flatten, Reshape, Transpose, Squeeze, Unsqueeze and Expand of an image: the same values
        /// (a pooled vector, an unchanged shape), or the Reshape → Transpose → Reshape of a pixel
        /// shuffle; anything else is refused.
        mutating func reshape(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext) throws {
            if let view = views[inputs[0]] {
                try reshapeView(op, view, a, inputs: inputs, context)
                return
            }
            guard let x = values[inputs[0]] else { throw context.unsupported("reads a value that is never computed") }
            if producesVector(x), ["Flatten", "Reshape", "Squeeze"].contains(op), shape(of: x) == nil {
                // A pooled 1×C×1×1 map and a 1×C vector are the same values, whatever C is.
                values[context.out] = x
                outputRank = 2
                return
            }
            let dims = try modelDimensions(of: x, context)
            var target: [Int] = []
            switch op {
            case "Reshape":
                guard let spec = constant(inputs, 1)?.ints else { throw context.unsupported("reshapes to a computed shape") }
                do { target = try ConstantFolding.reshapeDims(dims, spec, allowZero: (a.int("allowzero") ?? 0) == 1) } catch let e as FoldingError {
                    throw context.unsupported("cannot reshape: it \(e.why)")
                }
            case "Flatten":
                let ax = a.int("axis") ?? 1
                let k = ax < 0 ? ax + dims.count : ax
                guard k >= 0, k <= dims.count else { throw context.malformed("flattens at axis \(ax) of a rank-\(dims.count) value") }
                guard let rows = ModelLimits.elementCount(dims[..<k]), let columns = ModelLimits.elementCount(dims[k...]) else {
                    throw context.malformed("flattens a value of shape \(dims), beyond \(ModelLimits.maxTensorElements) values")
                }
                target = [rows, columns]
            case "Squeeze", "Unsqueeze":
                let axes = opset >= 13 ? constant(inputs, 1)?.ints?.map { Int($0) } : a.ints("axes")
                if op == "Unsqueeze" {
                    guard let axes else { throw context.malformed("names no axes") }
                    let r = dims.count + axes.count
                    target = dims
                    for ax in axes.map({ $0 < 0 ? $0 + r : $0 }).sorted() {
                        guard ax >= 0, ax <= target.count else { throw context.malformed("unsqueezes axis \(ax)") }
                        target.insert(1, at: ax)
                    }
                } else if let axes {
                    let drop = Set(axes.map { $0 < 0 ? $0 + dims.count : $0 })
                    guard drop.allSatisfy({ $0 >= 0 && $0 < dims.count && dims[$0] == 1 }) else { throw context.malformed("squeezes axes \(axes) of \(dims)") }
                    target = dims.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
                } else {
                    target = dims.filter { $0 != 1 }
                }
            case "Transpose":
                let perm = a.ints("perm") ?? Array((0..<dims.count).reversed())
                guard perm.sorted() == Array(0..<dims.count) else { throw context.malformed("has permutation \(perm) for rank \(dims.count)") }
                // Only axes of length 1 may move: the values stay in the same order.
                let kept = perm.filter { dims[$0] != 1 }
                target = perm.map { dims[$0] }
                if kept != kept.sorted() {
                    // Axes move: a permutation of channels, rows and columns (the batch stays first).
                    let lift = 4 - dims.count
                    let full = Array(0..<lift) + perm.map { $0 + lift }
                    guard full[0] == 0 else { throw context.unsupported("moves the batch axis (perm \(perm))") }
                    outputRank = target.count
                    emit(.transpose(perm: full.dropFirst().map { $0 - 1 }), [x], context)
                    return
                }
            default:  // Expand
                guard let spec = constant(inputs, 1)?.ints?.map({ Int($0) }) else { throw context.unsupported("expands to a computed shape") }
                target = (try? ConstantFolding.broadcast(dims, spec)) ?? []
                if ModelLimits.elementCount(target) != ModelLimits.elementCount(dims) {
                    // x + zeros of the target shape: the engine's element-wise broadcast.
                    guard !target.isEmpty, target.count <= 4, ([Int](repeating: 1, count: 4 - target.count) + target)[0] == 1,
                          let n = ModelLimits.elementCount(target) else {
                        throw context.unsupported("expands an image of shape \(dims) to \(spec), which is not 1×C×H×W")
                    }
                    outputRank = target.count
                    let zeros = try constantNode(Constant(floats: [Float](repeating: 0, count: n), dims: target), context)
                    emit(.binary(.add, coefficients: nil), [x, zeros], context)
                    return
                }
            }
            if op == "Reshape" && target.count > 4 {
                views[context.out] = View(source: x, dims: target, perm: nil)
                outputRank = target.count
                return
            }
            // The same values in the same order: fine when the result, lifted to 1×C×H×W with
            // leading ones, is the same image (or a pooled vector flattened).
            func lifted(_ d: [Int]) -> [Int]? { d.count <= 4 ? [Int](repeating: 1, count: 4 - d.count) + d : nil }
            let vector = producesVector(x) && ModelLimits.elementCount(target) == ModelLimits.elementCount(dims) && target.filter({ $0 != 1 }).count <= 1
            outputRank = target.count
            let engineShape = shape(of: x).map { [1, $0.c, $0.h, $0.w] }
            if vector || (lifted(target) != nil && (lifted(target) == lifted(dims) || lifted(target) == engineShape)) {
                values[context.out] = x
                return
            }
            // Another 1×C×H×W view of the same values (a whole-frame operation: pixels move between rows).
            guard let t = lifted(target), t[0] == 1, ModelLimits.elementCount(target) != nil, ModelLimits.elementCount(target) == ModelLimits.elementCount(dims) else {
                throw context.unsupported("changes an image of shape \(dims) to \(target); the engine's tensors are 1×C×H×W (it reshapes within that, flattens pooled vectors and turns Reshape–Transpose–Reshape into a pixel shuffle)")
            }
            emit(.reshape(Shape(c: t[1], h: t[2], w: t[3])), [x], context)
        }

        /// A Transpose or the closing Reshape of a pixel shuffle written with reshapes.
        mutating func reshapeView(_ op: String, _ view: View, _ a: Attributes, inputs: [String], _ context: NodeContext) throws {
            let d = view.dims
            // A permutation of the axes, each once (an index past them trapped).
            if op == "Transpose", view.perm == nil, let perm = a.ints("perm"), perm.count == d.count, perm.sorted() == Array(0..<d.count) {
                views[context.out] = View(source: view.source, dims: perm.map { d[$0] }, perm: perm)
                return
            }
            guard op == "Reshape", let perm = view.perm, let spec = constant(inputs, 1)?.ints, d.count == 6 else {
                throw context.unsupported("reshapes an image to \(d.count) dimensions in a way the engine does not run (only the Reshape–Transpose–Reshape of a pixel shuffle)")
            }
            let total = ModelLimits.elementCount(d) ?? -1
            let target = (try? ConstantFolding.reshapeDims(d, spec)) ?? []
            let source = try modelDimensions(of: view.source, context)
            guard source.count == 4, target.count == 4, ModelLimits.elementCount(target) == total else {
                throw context.unsupported("reshapes a transposed image to \(spec)")
            }
            let (c, h, w) = (source[1], source[2], source[3])
            // CRD (PyTorch pixel_shuffle): [1, C', r, r, H, W] → perm [0, 1, 4, 2, 5, 3].
            // DCR (TensorFlow depth_to_space): [1, r, r, C', H, W] → perm [0, 3, 4, 1, 5, 2].
            for (order, pattern) in [(ShuffleOrder.crd, [0, 1, 4, 2, 5, 3]), (.dcr, [0, 3, 4, 1, 5, 2])] where perm == pattern {
                let r = d[3]
                guard r > 0, d[5] == r, d[1] * r * r == c, d[2] == h, d[4] == w,
                      target == [1, c / (r * r), h * r, w * r] else { continue }
                let unshuffled = order == .crd ? [1, c / (r * r), r, r, h, w] : [1, r, r, c / (r * r), h, w]
                guard perm.map({ unshuffled[$0] }) == d else { continue }
                emit(.pixelShuffle(factor: r, order: order), [view.source], context)
                return
            }
            throw context.unsupported("reshapes and transposes an image (perm \(perm)) in a way that is not a pixel shuffle")
        }

        /// Appends a node writing the node's output.
        mutating func emit(_ operation: Engine.Operation, _ ins: [Int], _ context: NodeContext) {
            let v = builder.newValue(context.out)
            builder.append(Node(name: context.name, op: operation, inputs: ins, output: v))
            values[context.out] = v
        }

        /// Input `i` when it is a constant ("" is an omitted optional input).
        func constant(_ inputs: [String], _ i: Int) -> Constant? { i < inputs.count && !inputs[i].isEmpty ? constants[inputs[i]] : nil }

        /// Whether value `v` is a 1×C×1×1 vector (the output of pooling or a fully connected layer).
        func producesVector(_ v: Int) -> Bool {
            guard let n = builder.nodes.last(where: { $0.output == v }) else { return false }
            switch n.op {
            case .globalAveragePool, .fullyConnected: return true
            case .activation, .scalar, .channelAffine: return producesVector(n.inputs[0])
            default: return false
            }
        }

        mutating func convolution(_ transposed: Bool, _ a: Attributes, inputs: [String], _ context: NodeContext, runtime x: Int) throws {
            guard inputs.count > 1, let w = constants[inputs[1]], w.dims.count == 4 else {
                throw context.unsupported("takes its weights from a computed value or is not 2-D")
            }
            let bias = inputs.count > 2 && !inputs[2].isEmpty ? constants[inputs[2]]?.floats : []
            guard let bias else { throw context.unsupported("takes its bias from a computed value") }
            let groups = a.int("group") ?? 1
            let strides = a.ints("strides") ?? [1, 1], dilations = a.ints("dilations") ?? [1, 1]
            var pads = a.ints("pads") ?? [0, 0, 0, 0]
            guard strides.count == 2, dilations.count == 2, pads.count == 4 else { throw context.unsupported("is not a 2-D convolution") }
            // Bounded before any arithmetic (the IR's shape inference checks the rest).
            guard (1...ModelLimits.maxChannels).contains(groups), strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }),
                  dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }), pads.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }),
                  (1...ModelLimits.maxKernel).contains(w.dims[2]), (1...ModelLimits.maxKernel).contains(w.dims[3]),
                  (1...ModelLimits.maxChannels).contains(w.dims[0]), (1...ModelLimits.maxChannels).contains(w.dims[1]),
                  w.dims[1] * groups <= ModelLimits.maxChannels else {
                throw context.malformed("has groups \(groups), strides \(strides), dilations \(dilations), pads \(pads) or weights \(w.dims) beyond the model limits")
            }
            let kh = w.dims[2], kw = w.dims[3]
            let autoPad = a.string("auto_pad") ?? "NOTSET"
            var outPad = a.ints("output_padding") ?? [0, 0]
            guard outPad.count == 2, outPad.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }) else { throw context.malformed("has output_padding \(outPad)") }
            let span = [dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1]
            /// Splits a total padding between the two sides: SAME_UPPER puts the odd one at the end.
            func sides(_ total: [Int], upper: Bool) -> [Int] {
                let begin = (0..<2).map { upper ? total[$0] / 2 : total[$0] - total[$0] / 2 }
                return [begin[0], begin[1], total[0] - begin[0], total[1] - begin[1]]
            }
            if transposed, let shape = a.ints("output_shape") {
                // A fixed output size: the padding (or extra output rows) that gives it.
                let dims = try modelDimensions(of: x, context)
                guard shape.count >= 2, dims.count == 4 else { throw context.malformed("has output_shape \(shape)") }
                let wanted = Array(shape.suffix(2))
                var total = [0, 0]
                for axis in 0..<2 {
                    let full: Int = strides[axis] * (dims[2 + axis] - 1) + outPad[axis] + span[axis]
                    total[axis] = full - wanted[axis]
                }
                for axis in 0..<2 where total[axis] < 0 { outPad[axis] += -total[axis] }
                pads = sides(total.map { max($0, 0) }, upper: autoPad != "SAME_LOWER")
            } else {
                switch autoPad {
                case "NOTSET", "": break
                case "VALID": pads = [0, 0, 0, 0]
                case let mode where mode == "SAME_UPPER" || mode == "SAME_LOWER":
                    // Output n · stride (transposed) or ceil(n / stride): the padding depends on
                    // the size unless the stride is 1.
                    let dims = strides == [1, 1] ? [1, 1, 1, 1] : try modelDimensions(of: x, context)
                    var total = [0, 0]
                    for axis in 0..<2 {
                        let n: Int = dims[2 + axis], st: Int = strides[axis]
                        let full: Int = st * (n - 1) + outPad[axis] + span[axis]
                        let out: Int = (n + st - 1) / st
                        total[axis] = transposed ? max(full - n * st, 0) : max((out - 1) * st + span[axis] - n, 0)
                    }
                    pads = sides(total, upper: mode == "SAME_UPPER")
                case let mode: throw context.unsupported("has auto_pad '\(mode)'")
                }
            }
            if transposed {
                let inC = w.dims[0], outC = w.dims[1] * groups
                emit(.deconvolution(ConvolutionParameters(
                    outChannels: outC, inChannels: inC, kernelH: kh, kernelW: kw, strideH: strides[0], strideW: strides[1],
                    dilationH: dilations[0], dilationW: dilations[1], padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3],
                    outputPadH: outPad.first ?? 0, outputPadW: outPad.count > 1 ? outPad[1] : 0, groups: groups, weights: w.floats, bias: bias)), [x], context)
            } else {
                let outC = w.dims[0], inC = w.dims[1] * groups
                emit(.convolution(ConvolutionParameters(
                    outChannels: outC, inChannels: inC, kernelH: kh, kernelW: kw, strideH: strides[0], strideW: strides[1],
                    dilationH: dilations[0], dilationW: dilations[1], padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3],
                    groups: groups, weights: w.floats, bias: bias)), [x], context)
            }
        }

        mutating func binary(_ op: String, inputs: [String], _ context: NodeContext) throws {
            let kind: BinaryKind = ["Add": .add, "Sub": .sub, "Mul": .mul, "Div": .div, "Max": .max, "Min": .min][op]!
            guard inputs.count == 2 else { throw context.unsupported("has \(inputs.count) operands; the engine takes two") }
            let a = values[inputs[0]], b = values[inputs[1]]
            if let a, let b {
                emit(.binary(kind, coefficients: nil), [a, b], context)
                return
            }
            guard let x = a ?? b, let c = constant(inputs, a == nil ? 0 : 1) else { throw context.unsupported("reads a value that is never computed") }
            let constantFirst = a == nil
            if c.count == 1 {
                emit(.scalar(kind, c.floats[0], scalarFirst: constantFirst), [x], context)
                return
            }
            // A per-channel constant (C×1×1 or 1×C×1×1) becomes a channel affine.
            if let v = perChannel(c, context), [.add, .sub, .mul, .div].contains(kind), !(kind == .div && constantFirst),
               channelCount(of: x).map({ $0 == v.count }) ?? (c.dims.count >= 3) {
                let ones = [Float](repeating: 1, count: v.count), zeros = [Float](repeating: 0, count: v.count)
                switch (kind, constantFirst) {
                case (.add, _): emit(.channelAffine(scale: ones, bias: v), [x], context)
                case (.mul, _): emit(.channelAffine(scale: v, bias: zeros), [x], context)
                case (.sub, false): emit(.channelAffine(scale: ones, bias: v.map { -$0 }), [x], context)
                case (.sub, true): emit(.channelAffine(scale: ones.map { -$0 }, bias: v), [x], context)
                default: emit(.channelAffine(scale: v.map { 1 / $0 }, bias: zeros), [x], context)
                }
                return
            }
            // Any other constant is a tensor the engine broadcasts against the image.
            outputRank = max(rank, c.dims.count)
            let k = try constantNode(c, context)
            emit(.binary(kind, coefficients: nil), constantFirst ? [k, x] : [x, k], context)
        }

        mutating func resize(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext,
                             runtime x: Int) throws {
            var scales: [Float]?
            var sizes: [Int64]?
            if op == "Upsample" && opset < 9 {
                scales = a.floats("scales")
            } else if op == "Upsample" || opset < 11 {
                scales = constant(inputs, 1)?.floats
            } else {
                if let s = constant(inputs, 2), s.count > 0 { scales = s.floats }
                if let z = constant(inputs, 3), z.count > 0 { sizes = z.ints }
                if scales == nil, sizes == nil, inputs.count > 2, !inputs[2].isEmpty || (inputs.count > 3 && !inputs[3].isEmpty) {
                    throw context.unsupported("takes its scales or sizes from a computed value")
                }
            }
            guard a.ints("axes") == nil else { throw context.unsupported("resizes only some axes") }
            let modeName = a.string("mode") ?? "nearest"
            let mode: ResizeMode
            switch modeName {
            case "nearest": mode = .nearest
            case "linear", "bilinear": mode = .bilinear
            case "cubic": mode = .bicubic
            default: throw context.unsupported("has mode '\(modeName)'")
            }
            let legacy = op == "Upsample" || opset < 11
            let transform = legacy ? "asymmetric" : (a.string("coordinate_transformation_mode") ?? "half_pixel")
            guard let coordinates = ResampleParameters.Coordinates(rawValue: transform) else {
                throw context.unsupported("uses the '\(transform)' coordinate mode, which ONNX does not define")
            }
            // Opset 10 and Upsample round nearest neighbours down when enlarging.
            let roundingName = legacy ? "floor" : (a.string("nearest_mode") ?? "round_prefer_floor")
            guard let rounding = ResampleParameters.Rounding(rawValue: roundingName) else { throw context.unsupported("rounds nearest neighbours by '\(roundingName)'") }
            let cubicA = a.float("cubic_coeff_a") ?? -0.75
            let excludeOutside = (a.int("exclude_outside") ?? 0) != 0
            guard (a.int("antialias") ?? 0) == 0 else { throw context.unsupported("antialiases") }
            guard (a.string("keep_aspect_ratio_policy") ?? "stretch") == "stretch" else { throw context.unsupported("keeps the aspect ratio") }

            func lifted<T>(_ v: [T], _ one: T) -> [T]? {
                guard v.count == rank else { return nil }
                return [T](repeating: one, count: 4 - rank) + v
            }
            var params = ResampleParameters(mode: mode, coordinates: coordinates, rounding: rounding, cubicA: cubicA, excludeOutside: excludeOutside)
            if coordinates == .tfCropAndResize {
                // The region: starts then ends of every axis, as fractions; batch and channels whole.
                guard let roi = constant(inputs, 1)?.floats, roi.count == 2 * rank else {
                    throw context.unsupported("crops and resizes by a computed region of interest")
                }
                let starts = [Float](repeating: 0, count: 4 - rank) + roi[..<rank], ends = [Float](repeating: 1, count: 4 - rank) + roi[rank...]
                guard starts[0] == 0, starts[1] == 0, ends[0] == 1, ends[1] == 1, (starts + ends).allSatisfy({ $0.isFinite }) else {
                    throw context.unsupported("crops the batch or channels (roi \(roi))")
                }
                params.roi = [starts[2], ends[2], starts[3], ends[3]]
                params.extrapolation = a.float("extrapolation_value") ?? 0
            }
            if let given = sizes {
                let dims = try modelDimensions(of: x, context)
                guard let z = lifted(given, 1), let d = lifted(dims.map { Int64($0) }, 1), z[0] == d[0], z[1] == d[1],
                      let h = Int(exactly: z[2]), let w = Int(exactly: z[3]),
                      (1...ModelLimits.maxDimension).contains(h), (1...ModelLimits.maxDimension).contains(w) else { throw context.malformed("has sizes \(given)") }
                params.outH = h
                params.outW = w
            } else {
                guard let given = scales, let sc = lifted(given, Float(1)), sc[0] == 1, sc[1] == 1, sc[2].isFinite, sc[3].isFinite, sc[2] > 0, sc[3] > 0 else {
                    throw context.unsupported("takes its scales from a computed value, or scales the batch or channels")
                }
                params.scaleH = sc[2]
                params.scaleW = sc[3]
            }
            // The engine's own resize (fast paths) where it samples exactly as asked: whole
            // factors or given sizes, and the modes it implements.
            let whole = params.outH == 0 && [params.scaleH, params.scaleW].allSatisfy { $0 >= 1 && $0 == $0.rounded() }
            let sized = params.outH > 0
            var align: Bool?
            switch (mode, coordinates) {
            case (.nearest, .asymmetric) where whole && rounding == .floor,
                 (.nearest, .halfPixel) where whole && rounding == .roundPreferFloor:
                align = false
            case (.bilinear, .halfPixel), (.bilinear, .pytorchHalfPixel), (.bicubic, .halfPixel), (.bicubic, .pytorchHalfPixel):
                if (whole || sized) && !excludeOutside && (mode == .bilinear || cubicA == -0.75) && !(sized && (params.outH == 1 || params.outW == 1)) { align = false }
            case (.bilinear, .alignCorners), (.bicubic, .alignCorners):
                if (whole || sized) && !excludeOutside && (mode == .bilinear || cubicA == -0.75) { align = true }
            default:
                break
            }
            if let align {
                emit(.resize(mode, scaleH: params.scaleH, scaleW: params.scaleW, outH: params.outH, outW: params.outW, alignCorners: align), [x], context)
            } else {
                emit(.resample(params), [x], context)
            }
        }

        mutating func pad(_ a: Attributes, inputs: [String], _ context: NodeContext,
                          runtime x: Int) throws {
            var pads: [Int]
            var value: Float = 0
            if opset < 11 {
                pads = a.ints("pads") ?? []
                value = a.float("value") ?? 0
            } else {
                guard let p = constant(inputs, 1), let ints = p.ints else { throw context.unsupported("takes its pads from a computed value") }
                pads = ints.map { Int(clamping: $0) }
                if let c = constant(inputs, 2), c.count == 1 { value = c.floats[0] }
                if inputs.count > 3, !inputs[3].isEmpty { throw context.unsupported("pads only some axes") }
            }
            guard pads.allSatisfy({ (-ModelLimits.maxPad...ModelLimits.maxPad).contains($0) }) else { throw context.malformed("pads \(pads), beyond the limit of \(ModelLimits.maxPad)") }
            guard pads.count == 2 * rank else { throw context.malformed("has \(pads.count) pads for a rank-\(rank) input") }
            let zeros = [Int](repeating: 0, count: 4 - rank)
            pads = zeros + pads[..<rank] + zeros + pads[rank...]
            guard pads[0] == 0, pads[1] == 0, pads[4] == 0, pads[5] == 0 else {
                throw context.unsupported("pads \(pads); the engine pads height and width only")
            }
            let modeName = a.string("mode") ?? "constant"
            let mode: PaddingMode
            switch modeName {
            case "constant": mode = .constant(value)
            case "reflect": mode = .reflect
            case "edge": mode = .replicate
            default: throw context.unsupported("has mode '\(modeName)'")
            }
            let (t, l, b, r) = (pads[2], pads[3], pads[6], pads[7])
            if [t, l, b, r].allSatisfy({ $0 >= 0 }) {
                emit(.pad(top: t, left: l, bottom: b, right: r, mode: mode), [x], context)
            } else if [t, l, b, r].allSatisfy({ $0 <= 0 }) {
                emit(.crop(top: -t, left: -l, bottom: -b, right: -r), [x], context)
            } else {
                throw context.unsupported("pads some sides and crops others")
            }
        }

        mutating func slice(_ a: Attributes, inputs: [String], _ context: NodeContext,
                            runtime x: Int) throws {
            var starts: [Int64], ends: [Int64], axes: [Int64]?, steps: [Int64]?
            if opset < 10 {
                starts = (a.ints("starts") ?? []).map(Int64.init)
                ends = (a.ints("ends") ?? []).map(Int64.init)
                axes = a.ints("axes")?.map(Int64.init)
            } else {
                guard let s = constant(inputs, 1)?.ints, let e = constant(inputs, 2)?.ints else { throw context.unsupported("takes its bounds from a computed value") }
                starts = s
                ends = e
                axes = constant(inputs, 3)?.ints
                steps = constant(inputs, 4)?.ints
            }
            let axisList = axes ?? (0..<Int64(starts.count)).map { $0 }
            guard starts.count == ends.count, axisList.count == starts.count, (steps?.count ?? starts.count) == starts.count else {
                throw context.malformed("has \(starts.count) starts, \(ends.count) ends and \(axisList.count) axes")
            }
            guard (steps ?? []).allSatisfy({ $0 == 1 }) else { throw context.unsupported("slices with a step other than 1") }
            var top = 0, left = 0, bottom = 0, right = 0
            var channels: (Int, Int)?
            let endless = Int64(Int32.max)
            let size = shape(of: x)
            for (i, given) in axisList.enumerated() {
                let axis = try engineAxis(Int(given), context)
                let s = starts[i], e = ends[i]
                // Bounds counted from the start and from the far side fit an image of any size.
                let anySize = s >= 0 && s <= Int64(ModelLimits.maxPad) && (e >= endless || (e < 0 && e >= -Int64(ModelLimits.maxPad)))
                guard let size else { throw context.unsupported("slices a value whose size is not known before running") }
                let n = Int64([1, size.c, size.h, size.w][axis])
                let lo = min(max(s < 0 ? s + n : s, 0), n), hi = min(max(e < 0 ? e + n : e, 0), n)
                guard hi > lo else { throw context.unsupported("slices axis \(given) to nothing (\(s)..<\(e) of \(n)); the engine's tensors are never empty") }
                switch axis {
                case 0:
                    guard lo == 0, hi == n else { throw context.unsupported("slices the batch") }
                case 1:
                    channels = (Int(lo), Int(hi))
                default:
                    if !anySize && options.inputShape == nil && (liftedDimensions[2] == nil || liftedDimensions[3] == nil) { shapeDependent = true }
                    if axis == 2 { top = Int(lo); bottom = Int(n - hi) } else { left = Int(lo); right = Int(n - hi) }
                }
            }
            var v = x
            if let (c0, c1) = channels {
                if top == 0 && left == 0 && bottom == 0 && right == 0 {
                    emit(.sliceChannels(start: c0, end: c1), [v], context)
                    return
                }
                let mid = builder.newValue(context.name + "/channels")
                builder.append(Node(name: context.name, op: .sliceChannels(start: c0, end: c1), inputs: [v], output: mid))
                v = mid
            }
            if top == 0 && left == 0 && bottom == 0 && right == 0 {
                values[context.out] = v
                return
            }
            emit(.crop(top: top, left: left, bottom: bottom, right: right), [v], context)
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

        mutating func fullyConnected(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext,
                                     runtime x: Int) throws {
            guard producesVector(x) else { return try rowMatMul(op, a, inputs: inputs, context, runtime: x) }
            guard let w = constant(inputs, 1), w.dims.count == 2 else { throw context.unsupported("takes its weights from a computed value") }
            let transB = op == "Gemm" && (a.int("transB") ?? 0) == 1
            guard op == "MatMul" || ((a.int("transA") ?? 0) == 0 && (a.float("alpha") ?? 1) == 1 && (a.float("beta") ?? 1) == 1) else {
                throw context.unsupported("scales or transposes its input (alpha, beta, transA)")
            }
            // The engine's weights are [out][in].
            let (k, n) = transB ? (w.dims[1], w.dims[0]) : (w.dims[0], w.dims[1])
            guard k > 0, n > 0 else { throw context.malformed("has weights of shape \(w.dims)") }
            var weights = w.floats
            if !transB {
                weights = [Float](repeating: 0, count: k * n)
                for i in 0..<k { for j in 0..<n { weights[j * k + i] = w.floats[i * n + j] } }
            }
            var bias: [Float] = []
            if op == "Gemm", let c = constant(inputs, 2) {
                guard c.count == 1 || c.count == n else { throw context.malformed("has \(c.count) biases for \(n) outputs") }
                bias = c.count == 1 ? [Float](repeating: c.floats[0], count: n) : c.floats
            }
            emit(.fullyConnected(outFeatures: n, weights: weights, bias: bias, activation: .identity), [x], context)
        }
        /// MatMul or Gemm of a runtime matrix (its last axis) by a constant 2-D matrix.
        mutating func rowMatMul(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext, runtime x: Int) throws {
            guard let b = constant(inputs, 1) else { throw context.unsupported("multiplies by a computed matrix; the engine multiplies by constant weights") }
            guard b.dims.count == 2 else { throw context.unsupported("multiplies by a batch of matrices (\(b.dims)); the engine takes one 2-D weight matrix") }
            guard rank >= 2 || op == "MatMul" else { throw context.malformed("multiplies a rank-\(rank) value") }
            guard (a.int("transA") ?? 0) == 0 else { throw context.unsupported("transposes its input (transA)") }
            let transB = op == "Gemm" && (a.int("transB") ?? 0) == 1
            let alpha = op == "Gemm" ? a.float("alpha") ?? 1 : 1, beta = op == "Gemm" ? a.float("beta") ?? 1 : 1
            let (k, n) = transB ? (b.dims[1], b.dims[0]) : (b.dims[0], b.dims[1])
            guard k > 0, n > 0, let inner = shape(of: x)?.w, inner == k else {
                throw context.unsupported("multiplies rows of \(shape(of: x).map { String($0.w) } ?? "?") values by a \(k)×\(n) matrix")
            }
            var weights = [Float](repeating: 0, count: k * n)
            for i in 0..<k { for j in 0..<n { weights[i * n + j] = alpha * (transB ? b.floats[j * k + i] : b.floats[i * n + j]) } }
            var bias: [Float] = []
            var matrixBias: Constant?
            if op == "Gemm", let c = constant(inputs, 2) {
                if c.count == 1 || (c.count == n && c.dims.last == n) {
                    bias = c.count == 1 ? [Float](repeating: beta * c.floats[0], count: n) : c.floats.map { beta * $0 }
                } else {
                    matrixBias = Constant(floats: c.floats.map { beta * $0 }, dims: c.dims)
                }
            }
            guard let bias2 = matrixBias else {
                emit(.rowMatMul(inFeatures: k, outFeatures: n, weights: weights, bias: bias), [x], context)
                return
            }
            let product = builder.newValue(context.out + "/product")
            builder.append(Node(name: context.name, op: .rowMatMul(inFeatures: k, outFeatures: n, weights: weights, bias: bias), inputs: [x], output: product))
            let c = try constantNode(bias2, context)
            emit(.binary(.add, coefficients: nil), [product, c], context)
        }
    }

    /// Names a node in messages.
    struct NodeContext {
        let op: String, name: String, source: String, out: String
        func unsupported(_ what: String) -> ModelFormatError {
            ModelFormatError(.unsupported, "'\(source)': node '\(name)' (\(op)) \(what). Vivify cannot run this model; see the README's ONNX section for what the importer takes.")
        }
        func malformed(_ what: String) -> ModelFormatError {
            ModelFormatError(.malformed, "'\(source)': node '\(name)' (\(op)) \(what). The file is damaged; export it again.")
        }
    }
}
