import Engine
import Foundation

/// One decoded protobuf message with its fields grouped by number, for both Core ML importers
/// (NeuralNetwork `.mlmodel` and ML Program). `ProtobufReader`'s lookups re-walk the whole
/// message on every call; a layer or op is asked for a dozen fields and a network message
/// holds megabytes of weights, so the fields are walked once here.
struct ProtobufMessage {
    private var fields: [Int: [ProtobufReader.Value]] = [:]
    /// Field numbers present, in first-seen order (to find which `oneof` member is set).
    private(set) var numbers: [Int] = []

    /// Decodes `data`; `what` names the message in the error ("layer 'conv1'", "op 'conv_0'").
    init(_ data: Data, what: @autoclosure () -> String, source: String) throws {
        let all: [(Int, ProtobufReader.Value)]
        do {
            all = try ProtobufReader(data).fields()
        } catch {
            throw ModelFormatError(.malformed, "Cannot read \(what()) in '\(source)': the protobuf data is malformed (\(error)). The file is damaged or not a model of the format its extension names.")
        }
        for (number, value) in all {
            if fields[number] == nil { numbers.append(number) }
            fields[number, default: []].append(value)
        }
    }

    /// Whether `field` is present at all.
    func has(_ field: Int) -> Bool { fields[field] != nil }

    /// The last value of a singular field (proto3: later values win).
    func value(_ field: Int) -> ProtobufReader.Value? { fields[field]?.last }

    /// Every value of a repeated field.
    func values(_ field: Int) -> [ProtobufReader.Value] { fields[field] ?? [] }

    /// A nested message (nil when absent).
    func message(_ field: Int, what: @autoclosure () -> String, source: String) throws -> ProtobufMessage? {
        guard let d = value(field)?.data else { return nil }
        return try ProtobufMessage(d, what: what(), source: source)
    }

    /// Every element of a repeated message field.
    func messages(_ field: Int, what: @autoclosure () -> String, source: String) throws -> [ProtobufMessage] {
        try values(field).compactMap(\.data).map { try ProtobufMessage($0, what: what(), source: source) }
    }

    /// A map<string, message> field (map entries are messages with key 1 and value 2).
    func map(_ field: Int, what: String, source: String) throws -> [(String, ProtobufMessage)] {
        try messages(field, what: what, source: source).map { entry in
            let key = entry.string(1)
            return (key, try entry.message(2, what: "\(what) '\(key)'", source: source) ?? ProtobufMessage(Data(), what: what, source: source))
        }
    }

    /// A string field ("" when absent).
    func string(_ field: Int) -> String { value(field)?.string ?? "" }

    /// A repeated string field.
    func strings(_ field: Int) -> [String] { values(field).compactMap { $0.string } }

    /// An integer or enum field (0 when absent).
    func int(_ field: Int) -> Int { value(field)?.int ?? 0 }

    /// A bool field (false when absent).
    func bool(_ field: Int) -> Bool { value(field)?.bool ?? false }

    /// A float field (0 when absent).
    func float(_ field: Int) -> Float { value(field)?.float ?? 0 }

    /// The payload of a bytes field, if present.
    func bytes(_ field: Int) -> Data? { value(field)?.data }

    /// A repeated varint field, packed or not.
    func varints(_ field: Int) throws -> [UInt64] {
        var out: [UInt64] = []
        for v in values(field) {
            switch v {
            case .bytes(let d): out += try ProtobufReader.packedVarints(d)
            default: if let u = v.uint { out.append(u) }
            }
        }
        return out
    }

    /// A repeated integer field, packed or not (malformed packed data reads as nothing).
    func ints(_ field: Int) -> [Int] {
        var out: [Int] = []
        for v in values(field) {
            switch v {
            case .bytes(let d): out += ((try? ProtobufReader.packedVarints(d)) ?? []).map { Int(Int64(bitPattern: $0)) }
            default: if let i = v.int { out.append(i) }
            }
        }
        return out
    }

    /// A repeated float field, packed or not.
    func floats(_ field: Int) -> [Float] {
        var out: [Float] = []
        for v in values(field) {
            switch v {
            case .fixed32(let bits): out.append(Float(bitPattern: bits))
            case .bytes(let d): out += CoreMLImporter.littleEndianFloats(d)
            default: continue
            }
        }
        return out
    }

    /// A repeated fixed-width field (float, double), packed or not, as raw little-endian bytes.
    func fixedBytes(_ field: Int, width: Int) -> Data {
        var out = Data()
        for v in values(field) {
            switch v {
            case .bytes(let d): out.append(d)
            case .fixed32(var bits) where width == 4: out.append(Data(bytes: &bits, count: 4))
            case .fixed64(var bits) where width == 8: out.append(Data(bytes: &bits, count: 8))
            default: continue
            }
        }
        return out
    }
}
