import Engine
import Foundation

// Field-indexed access to Core ML protobuf messages and the decoding of `WeightParams`, for
// the NeuralNetwork importer. Field numbers follow apple/coremltools mlmodel/format/*.proto
// (Model.proto, NeuralNetwork.proto, FeatureTypes.proto, DataStructures.proto).

extension CoreMLImporter {
    typealias Message = ProtobufMessage

    /// Float32 values stored little-endian in `d` (a trailing partial value is ignored).
    static func littleEndianFloats(_ d: Data) -> [Float] {
        var out = [Float](repeating: 0, count: d.count / 4)
        d.withUnsafeBytes { raw in
            for k in 0..<out.count { out[k] = Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: k * 4, as: UInt32.self))) }
        }
        return out
    }

    /// Float16 values stored little-endian in `d`, widened to Float (exactly).
    static func littleEndianHalves(_ d: Data) -> [Float] { HalfFloats.decode(d) }

    /// How a weight tensor's quantization scales map onto its values: the tensor is read as
    /// `[outer][channels][inner]` and a per-channel scale applies along `channels`. Core ML
    /// quantizes convolutions and inner products per output channel (axis 0) and
    /// deconvolutions along axis 1 (`[Cin][Cout/groups][kH][kW]`).
    struct ChannelAxis {
        var outer = 1, channels = 1, inner = 1
    }

    /// Decodes one `WeightParams` (NeuralNetwork.proto): `floatValue` (1, repeated float),
    /// `float16Value` (2, bytes, widened to fp32), `rawValue` (30, bytes: fp32 little-endian,
    /// or n-bit quantized values when `quantization` (40) is set), `int8RawValue` (31, with
    /// linear quantization). `count` is the number of values the layer needs; a mismatch is an
    /// error naming the layer, the parameter and the file.
    static func weights(_ m: Message?, count: Int, axis: ChannelAxis? = nil, param: String,
                        layer: String, type: String, source: String) throws -> [Float] {
        func fail(_ why: String) -> ModelFormatError {
            ModelFormatError(.malformed, "Layer '\(layer)' (\(type)) in \(source): \(param) \(why).")
        }
        guard let m else { throw fail("is missing") }
        var values: [Float]
        var encoding: String
        if let q = try m.message(40, what: "the quantization of \(param) of layer '\(layer)'", source: source),
           let packed = m.bytes(30) ?? m.bytes(31) {
            values = try dequantize(packed, signed: !m.has(30), quantization: q, count: count, axis: axis ?? ChannelAxis(channels: 1, inner: count), fail: fail)
            encoding = "quantized"
        } else if let raw = m.bytes(30), !raw.isEmpty {
            guard raw.count % 4 == 0 else { throw fail("has \(raw.count) raw bytes, not a whole number of fp32 values") }
            values = littleEndianFloats(raw)
            encoding = "raw fp32"
        } else if let half = m.bytes(2), !half.isEmpty {
            guard half.count % 2 == 0 else { throw fail("has \(half.count) fp16 bytes, an odd count") }
            values = littleEndianHalves(half)
            encoding = "fp16"
        } else if m.has(31) {
            throw fail("holds int8 values without linear quantization parameters")
        } else {
            values = m.floats(1)
            encoding = "fp32"
        }
        guard values.count == count else { throw fail("has \(values.count) \(encoding) values, expected \(count)") }
        return values
    }

    /// Expands n-bit quantized weights (`numberOfBits` 1…8, packed most significant bit first,
    /// as coremltools writes them) through linear (`w = q · scale + bias`, per channel or one
    /// for all) or look-up-table quantization. `signed`: int8RawValue.
    static func dequantize(_ packed: Data, signed: Bool, quantization q: Message, count: Int, axis: ChannelAxis,
                           fail: (String) -> ModelFormatError) throws -> [Float] {
        let bits = signed ? 8 : q.int(1)
        guard (1...8).contains(bits) else { throw fail("is quantized to \(bits) bits; only 1 to 8 bits are supported") }
        guard packed.count * 8 >= count * bits else {
            throw fail("has \(packed.count) bytes of \(bits)-bit values, too few for \(count) weights")
        }
        let bytes = [UInt8](packed)
        func code(_ i: Int) -> Int {
            if bits == 8 { return signed ? Int(Int8(bitPattern: bytes[i])) : Int(bytes[i]) }
            var v = 0
            for b in 0..<bits {
                let bit = i * bits + b
                v = v << 1 | Int(bytes[bit >> 3] >> (7 - UInt8(bit & 7)) & 1)
            }
            return v
        }
        var out = [Float](repeating: 0, count: count)
        if let linear = q.value(101)?.data {
            let l = try Message(linear, what: "linear quantization parameters", source: "")
            let scale = l.floats(1), bias = l.floats(2)
            guard !scale.isEmpty else { throw fail("has linear quantization without scales") }
            func pick(_ v: [Float], _ c: Int, _ what: String) throws -> Float {
                if v.isEmpty { return 0 }
                if v.count == 1 { return v[0] }
                guard v.count == axis.channels else { throw fail("has \(v.count) quantization \(what) values for \(axis.channels) channels") }
                return v[c]
            }
            for i in 0..<count {
                let c = (i / axis.inner) % axis.channels
                out[i] = try Float(code(i)) * pick(scale, c, "scale") + pick(bias, c, "bias")
            }
        } else if let lut = q.value(102)?.data {
            let table = try Message(lut, what: "look-up table quantization parameters", source: "").floats(1)
            guard table.count == 1 << bits else { throw fail("has a look-up table of \(table.count) values for \(bits)-bit codes") }
            for i in 0..<count { out[i] = table[code(i)] }
        } else {
            throw fail("is quantized without linear or look-up-table parameters")
        }
        return out
    }
}
