import Foundation

/// The one fp16 decoder of the importers: little-endian IEEE 754 half floats (ncnn weights,
/// Core ML `float16Value`, ML Program blobs), widened to `Float` exactly.
enum HalfFloats {
    /// `count` halves from `raw` starting at byte `offset` (unaligned reads).
    static func decode(_ raw: UnsafeRawBufferPointer, offset: Int = 0, count: Int) -> [Float] {
        precondition(offset >= 0 && offset + 2 * count <= raw.count, "HalfFloats.decode: \(count) halves at \(offset) overrun \(raw.count) bytes")
        return [Float](unsafeUninitializedCapacity: count) { out, initialised in
            for i in 0..<count {
                out[i] = Float(Float16(bitPattern: UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 2 * i, as: UInt16.self))))
            }
            initialised = count
        }
    }

    /// Every half in `data` (an odd last byte is ignored).
    static func decode(_ data: Data) -> [Float] {
        data.withUnsafeBytes { decode($0, count: $0.count / 2) }
    }
}
