import Engine
import Foundation

// The MIL program as plain Swift values, decoded from the protobuf with `ProtobufReader`.
// Field numbers follow apple/coremltools mlmodel/format/MIL.proto:
//
//   Program    1 version, 2 functions (map<string, Function>), 3 docString, 4 attributes
//   Function   1 inputs (NamedValueType), 2 opset, 3 block_specializations (map<string, Block>)
//   Block      1 inputs, 2 outputs (string), 3 operations, 4 attributes
//   Operation  1 type, 2 inputs (map<string, Argument>), 3 outputs (NamedValueType),
//              4 blocks, 5 attributes (map<string, Value>)
//   Argument   1 arguments (Binding: 1 name | 2 value)
//   NamedValueType 1 name, 2 type (ValueType: 1 tensorType)
//   TensorType 1 dataType, 2 rank, 3 dimensions (Dimension: 1 constant {1 size} | 2 unknown)
//   Value      1 docString, 2 type, 3 immediateValue {1 tensor}, 5 blobFileValue {1 fileName, 2 offset}
//   TensorValue 1 floats, 2 ints, 3 bools, 4 strings, 5 longInts, 6 doubles, 7 bytes
//               (each a message whose field 1 holds the values)

extension CoreMLProgramImporter {
    typealias Message = ProtobufMessage

    /// A tensor type: element type and dimensions (nil for a dimension unknown until run time).
    struct TensorType: Equatable, CustomStringConvertible {
        var dataType: DataType
        var shape: [Int?]

        init(dataType: DataType, shape: [Int?]) {
            self.dataType = dataType
            self.shape = shape
        }

        /// Decodes a ValueType message (only tensor types are meaningful to the engine).
        init(valueType m: Message?, source: String) throws {
            guard let m, let t = try m.message(1, what: "a tensor type", source: source) else {
                // Lists, tuples, dictionaries and states never reach an image network.
                self.init(dataType: .unused, shape: [])
                return
            }
            let dims = try t.messages(3, what: "a tensor dimension", source: source).map { d -> Int? in
                guard let c = try d.message(1, what: "a dimension size", source: source) else { return nil }
                return c.int(1)
            }
            self.init(dataType: DataType(rawValue: t.int(1)) ?? .unused, shape: dims)
        }

        /// Number of elements, when every dimension is known.
        var count: Int? {
            var dims: [Int] = []
            for d in shape {
                guard let d else { return nil }
                dims.append(d)
            }
            return ModelLimits.elementCount(dims)
        }

        var description: String {
            "\(dataType.name)[\(shape.map { $0.map(String.init) ?? "?" }.joined(separator: ","))]"
        }
    }

    /// MIL element types (MIL.proto `DataType`).
    enum DataType: Int {
        case unused = 0, bool = 1, string = 2
        case float16 = 10, float32 = 11, float64 = 12, bfloat16 = 13
        case int8 = 21, int16 = 22, int32 = 23, int64 = 24, int4 = 25
        case uint8 = 31, uint16 = 32, uint32 = 33, uint64 = 34, uint4 = 35, uint2 = 36, uint1 = 37, uint6 = 38, uint3 = 39
        case float8e4m3fn = 40, float8e5m2 = 41

        /// The name MIL text uses ("fp16", "uint4").
        var name: String {
            switch self {
            case .unused: return "unknown"
            case .bool: return "bool"
            case .string: return "string"
            case .float16: return "fp16"
            case .float32: return "fp32"
            case .float64: return "fp64"
            case .bfloat16: return "bf16"
            case .float8e4m3fn: return "fp8e4m3fn"
            case .float8e5m2: return "fp8e5m2"
            default: return "\(self)"
            }
        }

        /// Whether values are floating point.
        var isFloat: Bool { [.float16, .float32, .float64, .bfloat16, .float8e4m3fn, .float8e5m2].contains(self) }

        /// Bits per element of an integer type packed below a byte (uint1…uint6, int4), else nil.
        var subByteBits: Int? {
            switch self {
            case .uint1: return 1
            case .uint2: return 2
            case .uint3: return 3
            case .int4, .uint4: return 4
            case .uint6: return 6
            default: return nil
            }
        }
    }

    /// Where a value comes from: a constant written in the op, or a blob in a weight file.
    enum ValueSource {
        case immediate(Message)
        case blob(file: String, offset: Int)
        case none
    }

    /// A MIL `Value`: its type and where its data lies.
    struct Value {
        var type: TensorType
        var source: ValueSource

        init(_ m: Message, source: String) throws {
            type = try TensorType(valueType: m.message(2, what: "a value type", source: source), source: source)
            if let blob = try m.message(5, what: "a blob file value", source: source) {
                self.source = .blob(file: blob.string(1), offset: blob.int(2))
            } else if let imm = try m.message(3, what: "an immediate value", source: source),
                      let tensor = try imm.message(1, what: "an immediate tensor", source: source) {
                self.source = .immediate(tensor)
            } else {
                self.source = .none
            }
        }
    }

    /// One argument of an op: a named value or a value written in place.
    enum Binding {
        case name(String)
        case value(Value)
    }

    /// A MIL operation.
    struct Op {
        var type: String
        var inputs: [String: [Binding]]
        var outputs: [(name: String, type: TensorType)]
        var attributes: [String: Value]
        var hasBlocks: Bool

        init(_ m: Message, source: String) throws {
            type = m.string(1)
            let outs = try m.messages(3, what: "an op output", source: source)
            outputs = try outs.map { ($0.string(1), try TensorType(valueType: $0.message(2, what: "an output type", source: source), source: source)) }
            let label = "the \(type) op '\(outputs.first?.name ?? "?")'"
            inputs = [:]
            for (key, argument) in try m.map(2, what: "an input of \(label)", source: source) {
                inputs[key] = try argument.messages(1, what: "an argument of \(label)", source: source).map { b in
                    if let v = try b.message(2, what: "an argument value of \(label)", source: source) {
                        return .value(try Value(v, source: source))
                    }
                    return .name(b.string(1))
                }
            }
            attributes = [:]
            for (key, v) in try m.map(5, what: "an attribute of \(label)", source: source) {
                attributes[key] = try Value(v, source: source)
            }
            hasBlocks = m.has(4)
        }

        /// The name of the first output (what messages call the op).
        var name: String { outputs.first?.name ?? "?" }
    }

    /// A MIL function's body: the inputs, the block of its opset and the names it returns.
    struct Function {
        var inputs: [(name: String, type: TensorType)]
        var opset: String
        var operations: [Op]
        var outputs: [String]
    }

    /// Decodes the function `name` (or "main", or the only one) of a Program message.
    static func function(program p: Message, named name: String?, source: String) throws -> (String, Function) {
        let functions = try p.map(2, what: "a function", source: source)
        guard !functions.isEmpty else { throw ModelFormatError(.malformed, "The ML Program in '\(source)' has no functions.") }
        let wanted = name.flatMap { n in functions.first { $0.0 == n } }
            ?? functions.first { $0.0 == "main" } ?? (functions.count == 1 ? functions[0] : nil)
        guard let (fname, f) = wanted else {
            throw ModelFormatError(.unsupported, "The ML Program in '\(source)' has functions \(functions.map(\.0).sorted()) and none is 'main'. Vivify runs the main function only.")
        }
        let inputs = try f.messages(1, what: "an input of function '\(fname)'", source: source).map {
            ($0.string(1), try TensorType(valueType: $0.message(2, what: "an input type", source: source), source: source))
        }
        let opset = f.string(2)
        let blocks = try f.map(3, what: "a block of function '\(fname)'", source: source)
        guard let block = blocks.first(where: { $0.0 == opset })?.1 ?? (blocks.count == 1 ? blocks[0].1 : nil) else {
            throw ModelFormatError(.malformed, "Function '\(fname)' of the ML Program in '\(source)' has no block for its opset '\(opset)'.")
        }
        let ops = try block.messages(3, what: "an op of function '\(fname)'", source: source).map { try Op($0, source: source) }
        let outputs = block.values(2).compactMap(\.string)
        return (fname, Function(inputs: inputs, opset: opset, operations: ops, outputs: outputs))
    }
}
