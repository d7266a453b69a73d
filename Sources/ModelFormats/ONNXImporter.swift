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
    /// The input's declared dimensions (N, C, H, W); nil where symbolic.
    public let inputDimensions: [Int?]
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
            + (producer.isEmpty ? "" : "; written by \(producer)")
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
        "Add", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Constant", "Conv", "ConvTranspose",
        "DepthToSpace", "Div", "Dropout", "Flatten", "Gemm", "GlobalAveragePool", "HardSigmoid", "Identity",
        "LeakyRelu", "MatMul", "Max", "Min", "Mul", "PRelu", "Pad", "Relu", "Reshape", "Resize", "Sigmoid", "Slice",
        "Softmax", "Sub", "Tanh", "Upsample",
    ]

    /// Loads the `.onnx` file at `path` (external-data tensors are read from beside it).
    public static func load(path: String) throws -> ONNXModel {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the ONNX model '\(path)'. Check the path and its permissions.")
        }
        return try parse(data, source: path, directory: (path as NSString).deletingLastPathComponent)
    }

    /// Parses the bytes of an `.onnx` file; `source` names it in messages, `directory` holds
    /// its external-data files.
    public static func parse(_ data: Data, source: String, directory: String? = nil) throws -> ONNXModel {
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
        var b = Builder(source: source, directory: directory, opset: opset)
        try b.read(graph)
        let producer = [model.string(2), model.string(3)].filter { !$0.isEmpty }.joined(separator: " ")
        return ONNXModel(graph: b.builder.graph(input: b.inputValue, output: b.outputValue, source: source),
                         inputName: b.inputName, outputName: b.outputName, inputDimensions: b.inputDimensions,
                         opsets: opsets, producer: producer,
                         opCounts: b.opCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map { ($0.key, $0.value) })
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
        let path = (directory as NSString).appendingPathComponent(location)
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
        var builder = GraphBuilder()
        var values: [String: Int] = [:]
        var constants: [String: Constant] = [:]
        var opCounts: [String: Int] = [:]
        var inputValue = 0, outputValue = 0
        var inputName = "", outputName = ""
        var inputDimensions: [Int?] = []

        init(source: String, directory: String?, opset: Int) {
            self.source = source
            self.directory = directory
            self.opset = opset
        }

        mutating func read(_ graph: ProtobufMessage) throws {
            for t in try graph.messages(5, what: "the initializers", source: source) {
                let (name, value) = try ONNXImporter.tensor(t, source: source, directory: directory)
                constants[name] = value
            }
            let inputs = try graph.messages(11, what: "the graph inputs", source: source).filter { constants[$0.string(1)] == nil }
            guard inputs.count == 1 else {
                throw ModelFormatError(.unsupported, "'\(source)' has \(inputs.count) runtime inputs (\(inputs.map { $0.string(1) }.joined(separator: ", "))); Vivify runs models with one image input. Export the model with one input.")
            }
            inputName = inputs[0].string(1)
            inputDimensions = try Self.dimensions(inputs[0], source: source)
            guard inputDimensions.count == 4, inputDimensions[0] == nil || inputDimensions[0] == 1 else {
                throw ModelFormatError(.unsupported, "'\(source)': input '\(inputName)' has shape \(inputDimensions.map { $0.map(String.init) ?? "?" }); Vivify feeds images as 1×C×H×W. Export the model with an NCHW image input.")
            }
            inputValue = builder.newValue(inputName)
            values[inputName] = inputValue
            let nodes = try graph.messages(1, what: "the nodes", source: source)
            guard nodes.count <= ModelLimits.maxLayers else {
                throw ModelFormatError(.malformed, "'\(source)' has \(nodes.count) nodes, beyond the limit of \(ModelLimits.maxLayers).")
            }
            for (i, n) in nodes.enumerated() { try node(n, index: i) }
            guard let output = try graph.messages(12, what: "the graph outputs", source: source).first else {
                throw ModelFormatError(.malformed, "'\(source)' declares no graph output. Export it again.")
            }
            outputName = output.string(1)
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
            guard domain.isEmpty || domain == "ai.onnx" else { throw context.unsupported("is in the custom domain '\(domain)'") }
            guard let out = outputs.first, !out.isEmpty else { throw context.malformed("has no output") }

            // Constant inputs (initializers, Constant nodes); "" is an omitted optional input.
            func constant(_ i: Int) -> Constant? { self.constant(inputs, i) }
            func runtime(_ i: Int) throws -> Int {
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
            let runtimeInputs = inputs.filter { values[$0] != nil }
            if runtimeInputs.isEmpty, ["Identity", "Cast", "Dropout"].contains(op), let c = constant(0) {
                constants[out] = c
                return
            }

            switch op {
            case "Identity", "Dropout":
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
            case "LeakyRelu": emit(.activation(.leakyRelu(slope: attributes.float("alpha") ?? 0.01)), [try runtime(0)])
            case "PRelu":
                guard let s = constant(1) else { throw context.unsupported("takes its slopes from a computed value") }
                guard !s.floats.isEmpty, s.count <= ModelLimits.maxChannels else { throw context.malformed("has \(s.count) slopes") }
                emit(.activation(.prelu(slopes: s.floats)), [try runtime(0)])
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
            case "Add", "Sub", "Mul", "Div", "Max", "Min":
                try binary(op, inputs: inputs, context)
            case "BatchNormalization":
                guard let s = constant(1), let b = constant(2), let m = constant(3), let v = constant(4),
                      s.count == b.count, b.count == m.count, m.count == v.count else {
                    throw context.unsupported("takes its statistics from computed values (training mode)")
                }
                guard s.count > 0, s.count <= ModelLimits.maxChannels else { throw context.malformed("normalises \(s.count) channels") }
                let eps = attributes.float("epsilon") ?? 1e-5
                let scale = (0..<s.count).map { s.floats[$0] / (v.floats[$0] + eps).squareRoot() }
                let bias = (0..<s.count).map { b.floats[$0] - m.floats[$0] * scale[$0] }
                emit(.channelAffine(scale: scale, bias: bias), [try runtime(0)])
            case "Softmax":
                let axis = attributes.int("axis") ?? (opset >= 13 ? -1 : 1)
                guard axis == 1 || axis == -3 else { throw context.unsupported("takes the softmax over axis \(axis); the engine's is over channels (axis 1)") }
                emit(.softmaxChannels, [try runtime(0)])
            case "DepthToSpace":
                guard let bs = attributes.int("blocksize"), (1...ModelLimits.maxScale).contains(bs) else { throw context.malformed("has no valid blocksize") }
                let mode = attributes.string("mode") ?? "DCR"
                guard mode == "DCR" || mode == "CRD" else { throw context.unsupported("has mode '\(mode)'") }
                emit(.pixelShuffle(factor: bs, order: mode == "DCR" ? .dcr : .crd), [try runtime(0)])
            case "Resize", "Upsample":
                try resize(op, attributes, inputs: inputs, context, runtime: runtime(0))
            case "Pad":
                try pad(attributes, inputs: inputs, context, runtime: runtime(0))
            case "Slice":
                try slice(attributes, inputs: inputs, context, runtime: runtime(0))
            case "Concat":
                let axis = attributes.int("axis") ?? 1
                guard axis == 1 || axis == -3 else { throw context.unsupported("concatenates along axis \(axis); the engine concatenates channels (axis 1)") }
                emit(.concatChannels, try inputs.indices.map { try runtime($0) })
            case "GlobalAveragePool":
                emit(.globalAveragePool, [try runtime(0)])
            case "AveragePool":
                try averagePool(attributes, context, runtime: runtime(0))
            case "Flatten", "Reshape":
                // After global pooling a 1×C×1×1 map and a 1×C vector are the same values.
                let x = try runtime(0)
                guard producesVector(x) else { throw context.unsupported("reshapes an image; only a pooled 1×C×1×1 value can be flattened here") }
                alias(x)
            case "Gemm", "MatMul":
                try fullyConnected(op, attributes, inputs: inputs, context, runtime: runtime(0))
            default:
                throw context.unsupported("is not an op Vivify's engine runs (supported: \(ONNXImporter.supportedOps.joined(separator: ", ")))")
            }
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
            switch a.string("auto_pad") ?? "NOTSET" {
            case "NOTSET", "": break
            case "VALID": pads = [0, 0, 0, 0]
            case let mode where mode == "SAME_UPPER" || mode == "SAME_LOWER":
                guard strides == [1, 1], !transposed else { throw context.unsupported("uses auto_pad \(mode) with stride \(strides); export with explicit pads") }
                let th = dilations[0] * (kh - 1), tw = dilations[1] * (kw - 1)
                let upper = mode == "SAME_UPPER"
                let top = upper ? th / 2 : th - th / 2, left = upper ? tw / 2 : tw - tw / 2
                pads = [top, left, th - top, tw - left]
            case let mode: throw context.unsupported("has auto_pad '\(mode)'")
            }
            if transposed {
                guard a.ints("output_shape") == nil else { throw context.unsupported("fixes its output_shape; export with pads and output_padding instead") }
                let outPad = a.ints("output_padding") ?? [0, 0]
                guard outPad.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }) else { throw context.malformed("has output_padding \(outPad)") }
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
            // A per-channel constant (C, C×1×1 or 1×C×1×1) becomes a channel affine.
            let perChannel = c.dims.count >= 3 && c.dims.suffix(2) == [1, 1] && c.dims.dropLast(3).allSatisfy { $0 == 1 }
            guard perChannel, [.add, .sub, .mul, .div].contains(kind) else {
                throw context.unsupported("combines an image with a constant of shape \(c.dims); the engine takes a single number or one per channel")
            }
            let v = c.floats
            let ones = [Float](repeating: 1, count: v.count), zeros = [Float](repeating: 0, count: v.count)
            switch (kind, constantFirst) {
            case (.add, _): emit(.channelAffine(scale: ones, bias: v), [x], context)
            case (.mul, _): emit(.channelAffine(scale: v, bias: zeros), [x], context)
            case (.sub, false): emit(.channelAffine(scale: ones, bias: v.map { -$0 }), [x], context)
            case (.sub, true): emit(.channelAffine(scale: ones.map { -$0 }, bias: v), [x], context)
            case (.div, false): emit(.channelAffine(scale: v.map { 1 / $0 }, bias: zeros), [x], context)
            default: throw context.unsupported("divides a per-channel constant by an image")
            }
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
            }
            let modeName = a.string("mode") ?? "nearest"
            let mode: ResizeMode
            switch modeName {
            case "nearest": mode = .nearest
            case "linear", "bilinear": mode = .bilinear
            case "cubic": mode = .bicubic
            default: throw context.unsupported("has mode '\(modeName)'")
            }
            let transform = op == "Upsample" ? "asymmetric" : (a.string("coordinate_transformation_mode") ?? (opset < 11 ? "asymmetric" : "half_pixel"))
            if mode == .bicubic, let coefficient = a.float("cubic_coeff_a"), coefficient != -0.75 {
                throw context.unsupported("uses cubic coefficient \(coefficient); the engine's is -0.75 (PyTorch's)")
            }
            if (a.int("exclude_outside") ?? 0) != 0 { throw context.unsupported("excludes outside pixels") }
            var align = false
            switch transform {
            case "align_corners": align = true
            case "half_pixel", "pytorch_half_pixel": align = false
            case "asymmetric":
                // The same pixels as half_pixel for nearest neighbours at whole factors.
                let whole = (scales ?? []).suffix(2).allSatisfy { $0 >= 1 && $0 == $0.rounded() }
                guard mode == .nearest, whole, sizes == nil else {
                    throw context.unsupported("uses the 'asymmetric' coordinate mode with \(modeName) sampling; the engine samples half_pixel or align_corners (asymmetric only for nearest at whole factors)")
                }
                if let nearestMode = a.string("nearest_mode"), nearestMode != "floor", nearestMode != "round_prefer_floor" {
                    throw context.unsupported("rounds nearest neighbours by '\(nearestMode)'")
                }
            default:
                throw context.unsupported("uses the '\(transform)' coordinate mode; the engine samples half_pixel or align_corners")
            }
            if transform != "asymmetric", mode == .nearest, let nearestMode = a.string("nearest_mode"), nearestMode != "round_prefer_floor" {
                throw context.unsupported("rounds nearest neighbours by '\(nearestMode)'")
            }
            if let sizes {
                guard sizes.count == 4, let h = Int(exactly: sizes[2]), let w = Int(exactly: sizes[3]),
                      (1...ModelLimits.maxDimension).contains(h), (1...ModelLimits.maxDimension).contains(w) else { throw context.malformed("has sizes \(sizes)") }
                emit(.resize(mode, scaleH: 0, scaleW: 0, outH: h, outW: w, alignCorners: align), [x], context)
                return
            }
            guard let scales, scales.count == 4, scales[0] == 1, scales[1] == 1, scales[2].isFinite, scales[3].isFinite else {
                throw context.unsupported("takes its scales from a computed value, or scales the batch or channels")
            }
            emit(.resize(mode, scaleH: scales[2], scaleW: scales[3], outH: 0, outW: 0, alignCorners: align), [x], context)
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
            guard pads.count == 8, pads[0] == 0, pads[1] == 0, pads[4] == 0, pads[5] == 0 else {
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
            guard starts.count == ends.count, axisList.count == starts.count else { throw context.malformed("has \(starts.count) starts, \(ends.count) ends and \(axisList.count) axes") }
            guard (steps ?? []).allSatisfy({ $0 == 1 }) else { throw context.unsupported("slices with a step other than 1") }
            var top = 0, left = 0, bottom = 0, right = 0
            var channels: (Int, Int)?
            let endless = Int64(Int32.max)
            for (i, axis) in axisList.enumerated() {
                let s = starts[i], e = ends[i]
                switch axis < 0 ? axis + 4 : axis {
                case 1:
                    guard s >= 0, e > s, e <= Int64(ModelLimits.maxChannels) else { throw context.unsupported("slices channels \(s)..<\(e); give them as non-negative bounds") }
                    channels = (Int(s), Int(e))
                case 2, 3:
                    guard s >= 0, s <= Int64(ModelLimits.maxPad), e >= endless || (e < 0 && e >= -Int64(ModelLimits.maxPad)) else {
                        throw context.unsupported("cuts rows or columns \(s)..<\(e) of an image of any size; bounds must be a start and an end counted from the far side (negative)")
                    }
                    let far = e >= endless ? 0 : Int(-e)
                    if axis == 2 || axis == -2 { top = Int(s); bottom = far } else { left = Int(s); right = far }
                default:
                    throw context.unsupported("slices axis \(axis)")
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
            emit(.crop(top: top, left: left, bottom: bottom, right: right), [v], context)
        }

        mutating func averagePool(_ a: Attributes, _ context: NodeContext, runtime x: Int) throws {
            guard let k = a.ints("kernel_shape"), k.count == 2 else { throw context.malformed("has no 2-D kernel_shape") }
            let strides = a.ints("strides") ?? [1, 1]
            let pads = a.ints("pads") ?? [0, 0, 0, 0]
            guard k.allSatisfy({ (1...ModelLimits.maxKernel).contains($0) }), strides.count == 2, pads.count == 4,
                  strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }), pads.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }) else {
                throw context.malformed("has kernel \(k), strides \(strides) or pads \(pads) beyond the model limits")
            }
            guard (a.int("ceil_mode") ?? 0) == 0 else { throw context.unsupported("rounds its output size up (ceil_mode)") }
            guard pads.allSatisfy({ $0 == 0 }) || (a.int("count_include_pad") ?? 0) == 1 else {
                throw context.unsupported("pads without counting the padding; export with count_include_pad=1 or without pads")
            }
            guard let c = channelCount(of: x), c <= ModelLimits.maxChannels else { throw context.unsupported("pools a value whose channel count is not known before running") }
            // A depthwise convolution with equal weights is the same average.
            let w = [Float](repeating: 1 / Float(k[0] * k[1]), count: c * k[0] * k[1])
            emit(.convolution(ConvolutionParameters(outChannels: c, inChannels: c, kernelH: k[0], kernelW: k[1], strideH: strides[0], strideW: strides[1],
                                                    padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3], groups: c, weights: w)), [x], context)
        }

        /// The channel count of value `v`, from shape inference on a small probe.
        func channelCount(of v: Int) -> Int? {
            guard let c = inputDimensions[1] else { return nil }
            let probe = builder.graph(input: inputValue, output: v, source: source)
            let h = max(inputDimensions[2] ?? 64, 1), w = max(inputDimensions[3] ?? 64, 1)
            guard let shapes = try? probe.inferShapes(input: Shape(c: c, h: h, w: w)), v < shapes.count else { return nil }
            return shapes[v]?.c
        }

        mutating func fullyConnected(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext,
                                     runtime x: Int) throws {
            guard producesVector(x) else { throw context.unsupported("multiplies an image; only pooled vectors (1×C) can go through a fully connected layer") }
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
