import Foundation

/// A minimal reader of the protobuf wire format (our own; no generated code): walks the fields
/// of one message, handing out varints, fixed-width numbers and length-delimited payloads
/// (sub-messages, strings, packed arrays) by field number. Importers (Core ML) describe their
/// schema in code by the field numbers they read.
public struct ProtobufReader {
    /// One field as it appears on the wire.
    public enum Value {
        case varint(UInt64)
        case fixed64(UInt64)
        case fixed32(UInt32)
        case bytes(Data)

        /// The value as an unsigned integer (varint or fixed).
        public var uint: UInt64? {
            switch self {
            case .varint(let v), .fixed64(let v): return v
            case .fixed32(let v): return UInt64(v)
            case .bytes: return nil
            }
        }

        /// As a signed int (two's complement varint, as int32/int64 fields are written).
        public var int: Int? { uint.map { Int(Int64(bitPattern: $0)) } }

        /// As a bool.
        public var bool: Bool? { uint.map { $0 != 0 } }

        /// As a float (a fixed32 field).
        public var float: Float? {
            if case .fixed32(let v) = self { return Float(bitPattern: v) }
            return nil
        }

        /// As a double (a fixed64 field).
        public var double: Double? {
            if case .fixed64(let v) = self { return Double(bitPattern: v) }
            return nil
        }

        /// The payload of a length-delimited field.
        public var data: Data? {
            if case .bytes(let d) = self { return d }
            return nil
        }

        /// The payload as UTF-8 text.
        public var string: String? { data.map { String(decoding: $0, as: UTF8.self) } }

        /// The payload as a nested message.
        public var message: ProtobufReader? { data.map { ProtobufReader($0) } }
    }

    /// A malformed message.
    public struct DecodeError: Error, CustomStringConvertible {
        public let description: String
    }

    private let data: Data

    /// Reads `data` (one serialized message).
    public init(_ data: Data) { self.data = data }

    /// Every field in wire order, as (field number, value).
    public func fields() throws -> [(Int, Value)] {
        var out: [(Int, Value)] = []
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var i = 0
            func varint() throws -> UInt64 {
                var result: UInt64 = 0, shift: UInt64 = 0
                while true {
                    guard i < raw.count else { throw DecodeError(description: "truncated varint") }
                    let byte = raw[i]
                    i += 1
                    result |= UInt64(byte & 0x7F) << shift
                    if byte & 0x80 == 0 { return result }
                    shift += 7
                    if shift > 63 { throw DecodeError(description: "varint longer than 10 bytes") }
                }
            }
            while i < raw.count {
                let key = try varint()
                let field = Int(truncatingIfNeeded: key >> 3)
                switch key & 7 {
                case 0:
                    out.append((field, .varint(try varint())))
                case 1:
                    guard i + 8 <= raw.count else { throw DecodeError(description: "truncated fixed64 in field \(field)") }
                    out.append((field, .fixed64(raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))))
                    i += 8
                case 2:
                    // Compared as unsigned before any conversion: a length near 2^64 is damage,
                    // not a number to convert or add.
                    let length = try varint()
                    guard length <= UInt64(raw.count - i) else {
                        throw DecodeError(description: "field \(field) claims \(length) bytes, but only \(raw.count - i) remain")
                    }
                    let n = Int(length)
                    out.append((field, .bytes(Data(raw[i..<(i + n)]))))
                    i += n
                case 5:
                    guard i + 4 <= raw.count else { throw DecodeError(description: "truncated fixed32 in field \(field)") }
                    out.append((field, .fixed32(raw.loadUnaligned(fromByteOffset: i, as: UInt32.self))))
                    i += 4
                case let t:
                    throw DecodeError(description: "unsupported wire type \(t) in field \(field)")
                }
            }
        }
        return out
    }

    /// The last value of `field` (proto3 semantics for singular fields), if present.
    public func first(_ field: Int) throws -> Value? { try fields().last { $0.0 == field }?.1 }

    /// Every value of a repeated `field`.
    public func all(_ field: Int) throws -> [Value] { try fields().filter { $0.0 == field }.map(\.1) }

    /// A repeated float field, packed or not.
    public func floats(_ field: Int) throws -> [Float] {
        var out: [Float] = []
        for v in try all(field) {
            switch v {
            case .fixed32(let bits): out.append(Float(bitPattern: bits))
            case .bytes(let d):
                d.withUnsafeBytes { raw in
                    for k in 0..<(raw.count / 4) { out.append(Float(bitPattern: raw.loadUnaligned(fromByteOffset: k * 4, as: UInt32.self))) }
                }
            default: throw DecodeError(description: "field \(field) is not a float array")
            }
        }
        return out
    }

    /// A repeated integer field (varints), packed or not.
    public func ints(_ field: Int) throws -> [Int] {
        var out: [Int] = []
        for v in try all(field) {
            switch v {
            case .varint(let x): out.append(Int(Int64(bitPattern: x)))
            case .bytes(let d):
                try ProtobufReader.packedVarints(d).forEach { out.append(Int(Int64(bitPattern: $0))) }
            default: throw DecodeError(description: "field \(field) is not an integer array")
            }
        }
        return out
    }

    static func packedVarints(_ d: Data) throws -> [UInt64] {
        var out: [UInt64] = []
        var result: UInt64 = 0, shift: UInt64 = 0
        for byte in d {
            result |= UInt64(byte & 0x7F) << shift
            if byte & 0x80 == 0 {
                out.append(result)
                result = 0
                shift = 0
            } else {
                shift += 7
                if shift > 63 { throw DecodeError(description: "packed varint longer than 10 bytes") }
            }
        }
        if shift != 0 { throw DecodeError(description: "truncated packed varint") }
        return out
    }
}
