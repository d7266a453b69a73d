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