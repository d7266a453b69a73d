import Engine
import Foundation

// Constant tensors of an ML Program: values written in the program (TensorValue), blobs in
// the package's weight file, and the compile-time decompression ops (constexpr_*) that turn
// quantized or palettized blobs back into floats.
//
// Weight file (MILBlob storage, apple/coremltools mlmodel/src/MILBlob/Blob/StorageFormat.hpp),
// all little-endian and every record 64-byte aligned:
//
//   storage_header  u32 count, u32 version (2), 56 reserved bytes
//   blob_metadata   u32 sentinel 0xDEADBEEF, u32 mil_dtype, u64 sizeInBytes, u64 offset of the
//                   data in the file, 40 reserved bytes; the data follows
//
// A program's `blobFileValue.offset` points at a blob_metadata record. Sub-byte types (uint1…
// uint6, int4) are packed least significant bit first, as are the iOS 16 LUT indices.

extension CoreMLProgramImporter {
    /// A constant tensor, widened to the types the importer computes with.
    struct Constant {
        /// Values in row-major order.
        enum Payload {
            case floats([Float])
            case ints([Int])
            case bools([Bool])
            case strings([String])
        }

        var dataType: DataType
        var shape: [Int]
        var payload: Payload

        /// Number of elements (1 for a scalar).
        var count: Int { ModelLimits.elementCount(shape) ?? 0 }

        /// The values as floats (nil for strings).
        var floats: [Float]? {
            switch payload {
            case .floats(let v): return v
            case .ints(let v): return v.map(Float.init)
            case .bools(let v): return v.map { $0 ? 1 : 0 }
            case .strings: return nil
            }
        }

        /// The values as integers (nil for strings and for floats with a fraction).
        var ints: [Int]? {
            switch payload {
            case .ints(let v): return v
            case .floats(let v): return v.allSatisfy { $0 == $0.rounded() && abs($0) < 1e15 } ? v.map { Int($0) } : nil
            case .bools(let v): return v.map { $0 ? 1 : 0 }
            case .strings: return nil
            }
        }

        /// The one string of a string scalar.
        var string: String? {
            if case .strings(let s) = payload, s.count == 1 { return s[0] }
            return nil
        }

        /// Short text for messages: "fp16[64,3,3,3]".
        var summary: String { "\(dataType.name)[\(shape.map(String.init).joined(separator: ","))]" }
    }

    /// Decodes `count` elements of type `t` stored little-endian (sub-byte types packed least
    /// significant bit first) from `raw`.
    static func decodeRaw(_ raw: UnsafeRawBufferPointer, as t: DataType, count: Int) throws -> Constant.Payload {
        func need(_ bytes: Int) throws {
            guard raw.count >= bytes else { throw DecodeFailure("holds \(raw.count) bytes, \(t.name) × \(count) needs \(bytes)") }
        }
        func load<T: FixedWidthInteger>(_: T.Type) throws -> [Int] {
            let w = MemoryLayout<T>.size
            try need(count * w)
            return (0..<count).map { Int(T(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * w, as: T.self))) }
        }
        if let bits = t.subByteBits {
            try need((count * bits + 7) / 8)
            var out = [Int](repeating: 0, count: count)
            for i in 0..<count {
                var v = 0
                for b in 0..<bits {
                    let bit = i * bits + b
                    v |= Int(raw[bit >> 3] >> UInt8(bit & 7) & 1) << b
                }
                out[i] = t == .int4 && v >= 8 ? v - 16 : v
            }
            return .ints(out)
        }
        switch t {
        case .float16:
            try need(count * 2)
            return .floats(HalfFloats.decode(raw, count: count))
        case .bfloat16:
            try need(count * 2)
            return .floats((0..<count).map { Float(bitPattern: UInt32(UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 2, as: UInt16.self))) << 16) })
        case .float32:
            try need(count * 4)
            return .floats((0..<count).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) })
        case .float64:
            try need(count * 8)
            return .floats((0..<count).map { Float(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)))) })
        case .int8: return .ints(try load(Int8.self))
        case .uint8: return .ints(try load(UInt8.self))
        case .int16: return .ints(try load(Int16.self))
        case .uint16: return .ints(try load(UInt16.self))
        case .int32: return .ints(try load(Int32.self))
        case .uint32: return .ints(try load(UInt32.self))
        case .int64: return .ints(try load(Int64.self))
        case .uint64: return .ints(try load(UInt64.self))
        case .bool:
            try need(count)
            return .bools((0..<count).map { raw[$0] != 0 })
        default:
            throw DecodeFailure("has element type \(t.name), which Vivify cannot read")
        }
    }

    /// A problem with one constant, completed into a `ModelFormatError` by the caller (which knows
    /// the op and the file).
    struct DecodeFailure: Error {
        let why: String
        init(_ why: String) { self.why = why }
    }

    /// Decodes an immediate TensorValue of the declared type `type`.
    static func decodeImmediate(_ m: Message, type: TensorType, source: String) throws -> Constant {
        guard let count = type.count else { throw DecodeFailure("is a constant of unknown or oversized shape \(type) (at most \(ModelLimits.maxTensorElements) elements)") }
        let shape = type.shape.map { $0! }
        let payload: Constant.Payload
        if let f = try m.message(1, what: "float values", source: source) {
            payload = .floats(f.fixedBytes(1, width: 4).withUnsafeBytes { raw in
                (0..<(raw.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) }
            })
        } else if let i = try m.message(2, what: "int values", source: source) {
            payload = .ints(try i.varints(1).map { Int(Int32(truncatingIfNeeded: $0)) })
        } else if let b = try m.message(3, what: "bool values", source: source) {
            payload = .bools(try b.varints(1).map { $0 != 0 })
        } else if let s = try m.message(4, what: "string values", source: source) {
            payload = .strings(s.values(1).compactMap(\.string))
        } else if let l = try m.message(5, what: "long int values", source: source) {
            payload = .ints(try l.varints(1).map { Int(Int64(bitPattern: $0)) })
        } else if let d = try m.message(6, what: "double values", source: source) {
            payload = .floats(d.fixedBytes(1, width: 8).withUnsafeBytes { raw in
                (0..<(raw.count / 8)).map { Float(Double(bitPattern: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)))) }
            })
        } else if let b = try m.message(7, what: "byte values", source: source) {
            let bytes = b.value(1)?.data ?? Data()
            payload = try bytes.withUnsafeBytes { try decodeRaw($0, as: type.dataType, count: count) }
        } else {
            payload = type.dataType == .string ? .strings([]) : .floats([])
        }
        let c = Constant(dataType: type.dataType, shape: shape, payload: payload)
        let n: Int
        switch payload {
        case .floats(let v): n = v.count
        case .ints(let v): n = v.count
        case .bools(let v): n = v.count
        case .strings(let v): n = v.count
        }
        guard n == count else { throw DecodeFailure("holds \(n) values for shape \(type)") }
        return c
    }

    /// The weight files of one package, each read once (memory-mapped).
    final class BlobFiles {
        /// The directory `@model_path` stands for: the one holding model.mlmodel.
        let modelDirectory: String
        /// The folder every weight file must lie in (the package).
        let root: String
        let source: String
        private var files: [String: Data] = [:]

        init(modelDirectory: String, root: String, source: String) {
            self.modelDirectory = modelDirectory
            self.root = root
            self.source = source
        }

        /// The blob at `offset` of `file` (as named in the program), read as `type`.
        func constant(file: String, offset: Int, type: TensorType) throws -> Constant {
            let data: Data
            let path = file
            if let d = files[file] {
                data = d
            } else {
                // Only "@model_path/…" names a file, and it stays inside the package.
                guard file.hasPrefix("@model_path/") else {
                    throw DecodeFailure("lies in '\(file)', which is not inside the package (@model_path/…); refused")
                }
                let relative = String(file.dropFirst("@model_path/".count))
                guard !relative.split(separator: "/").contains("..") else {
                    throw DecodeFailure("lies in '\(file)', outside the package; refused")
                }
                let resolved: String
                do {
                    resolved = try ContainedPath.check(modelDirectory + "/" + relative, named: file, inside: root, what: "the weight file", source: source)
                } catch let e as ModelFormatError {
                    throw DecodeFailure("lies in '\(file)': \(e.message)")
                }
                guard let d = try? Data(contentsOf: URL(fileURLWithPath: resolved), options: .alwaysMapped) else {
                    throw DecodeFailure("lies in the weight file '\(path)', which cannot be read. Keep the .mlpackage directory complete (Data/com.apple.CoreML/weights/)")
                }
                files[file] = d
                data = d
            }
            guard let count = type.count else { throw DecodeFailure("is a blob of unknown or oversized shape \(type) (at most \(ModelLimits.maxTensorElements) elements)") }
            return try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Constant in
                guard offset >= 0, raw.count >= 64, offset <= raw.count - 64 else {
                    throw DecodeFailure("points at offset \(offset) of '\(path)', past its end (\(raw.count) bytes); the weight file does not belong to this model")
                }
                let sentinel = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
                guard sentinel == 0xDEAD_BEEF else {
                    throw DecodeFailure("points at offset \(offset) of '\(path)', where no blob record starts; the weight file does not belong to this model")
                }
                let code = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)))
                // Size and start are compared as unsigned before they become Ints.
                let size64 = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
                let start64 = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self))
                guard size64 <= UInt64(raw.count), start64 <= UInt64(raw.count) - size64 else {
                    throw DecodeFailure("has a blob of \(size64) bytes at \(start64), past the end of '\(path)' (\(raw.count) bytes)")
                }
                let size = Int(size64), start = Int(start64)
                let blobTypes: [Int: DataType] = [1: .float16, 2: .float32, 3: .uint8, 4: .int8, 5: .bfloat16, 6: .int16, 7: .uint16,
                                                  8: .int4, 9: .uint1, 10: .uint2, 11: .uint4, 12: .uint3, 13: .uint6, 14: .int32,
                                                  15: .uint32, 16: .float8e4m3fn, 17: .float8e5m2]
                guard let stored = blobTypes[code] else { throw DecodeFailure("is a blob of unknown element type \(code) in '\(path)'") }
                guard stored == type.dataType else {
                    throw DecodeFailure("is declared \(type) but its blob in '\(path)' holds \(stored.name) values")
                }
                guard start >= 0, size >= 0, start + size <= raw.count else {
                    throw DecodeFailure("has a blob of \(size) bytes at \(start), past the end of '\(path)' (\(raw.count) bytes)")
                }
                let needed = (count * (stored.subByteBits ?? 8 * Self.byteWidth(stored)) + 7) / 8
                guard size >= needed else {
                    throw DecodeFailure("is declared \(type) (\(needed) bytes) but its blob at offset \(offset) of '\(path)' holds \(size) bytes; the weight file does not belong to this model")
                }
                let payload = try decodeRaw(UnsafeRawBufferPointer(rebasing: raw[start..<(start + size)]), as: stored, count: count)
                return Constant(dataType: stored, shape: type.shape.map { $0! }, payload: payload)
            }
        }

        /// Bytes per element of a whole-byte type.
        static func byteWidth(_ t: DataType) -> Int {
            switch t {
            case .float16, .bfloat16, .int16, .uint16: return 2
            case .float32, .int32, .uint32: return 4
            case .float64, .int64, .uint64: return 8
            default: return 1
            }
        }
    }

    // MARK: constexpr decompression

    /// For each element of a tensor of `shape`, the index into a parameter of `paramShape`
    /// (same rank) that covers it: dimension k of the parameter splits dimension k of the
    /// tensor into `paramShape[k]` equal blocks (1 = one value for the whole dimension).
    static func blockIndices(shape: [Int], paramShape: [Int]) throws -> [Int] {
        guard shape.count == paramShape.count else {
            throw DecodeFailure("has a parameter of rank \(paramShape.count) for a tensor of rank \(shape.count)")
        }
        for (d, p) in zip(shape, paramShape) where p <= 0 || d % p != 0 {
            throw DecodeFailure("has a parameter of shape \(paramShape) that does not divide shape \(shape) into blocks")
        }
        guard let count = ModelLimits.elementCount(shape) else {
            throw DecodeFailure("has shape \(shape), beyond \(ModelLimits.maxTensorElements) values")
        }
        var out = [Int](repeating: 0, count: count)
        var index = [Int](repeating: 0, count: shape.count)
        let block = zip(shape, paramShape).map { $0 / $1 }
        for i in 0..<count {
            var p = 0
            for k in 0..<shape.count { p = p * paramShape[k] + index[k] / block[k] }
            out[i] = p
            var k = shape.count - 1
            while k >= 0 {
                index[k] += 1
                if index[k] < shape[k] { break }
                index[k] = 0
                k -= 1
            }
        }
        return out
    }

    /// `scale · (data − zero_point)`, with scale and zero point scalars or vectors along
    /// `axis` (iOS 16 `constexpr_affine_dequantize`).
    static func affineDequantize(data: Constant, zeroPoint: Constant, scale: Constant, axis: Int) throws -> Constant {
        let rank = data.shape.count
        let a = axis < 0 ? axis + rank : axis
        guard a >= 0, a < rank else { throw DecodeFailure("has axis \(axis) for rank \(rank)") }
        func perAxis(_ c: Constant, _ what: String) throws -> [Int] {
            if c.count == 1 { return [Int](repeating: 1, count: rank) }
            guard c.shape.count == 1, c.count == data.shape[a] else {
                throw DecodeFailure("has a \(what) of shape \(c.shape) for axis \(a) of shape \(data.shape)")
            }
            var s = [Int](repeating: 1, count: rank)
            s[a] = c.count
            return s
        }
        return try shiftScale(data: data, scale: scale, scaleShape: perAxis(scale, "scale"), offset: zeroPoint,
                              offsetShape: perAxis(zeroPoint, "zero point"))
    }

    /// `scale · (data − offset)` with block-wise parameters of the same rank as the data
    /// (iOS 18 `constexpr_blockwise_shift_scale`; iOS 16 affine dequantization via shapes).
    static func shiftScale(data: Constant, scale: Constant, scaleShape: [Int]? = nil, offset: Constant?,
                           offsetShape: [Int]? = nil) throws -> Constant {
        guard let q = data.floats, let s = scale.floats else { throw DecodeFailure("has non-numeric quantized data or scales") }
        let si = try blockIndices(shape: data.shape, paramShape: scaleShape ?? scale.shape)
        var out = [Float](repeating: 0, count: q.count)
        if let offset {
            guard let z = offset.floats else { throw DecodeFailure("has a non-numeric offset") }
            let zi = try blockIndices(shape: data.shape, paramShape: offsetShape ?? offset.shape)
            for i in 0..<q.count { out[i] = s[si[i]] * (q[i] - z[zi[i]]) }
        } else {
            for i in 0..<q.count { out[i] = s[si[i]] * q[i] }
        }
        return Constant(dataType: scale.dataType, shape: data.shape, payload: .floats(out))
    }

    /// Unpacks `count` n-bit codes stored least significant bit first in `bytes`.
    static func unpackBits(_ bytes: [Int], bits: Int, count: Int) throws -> [Int] {
        guard bytes.count * 8 >= bits * count else {
            throw DecodeFailure("has \(bytes.count) bytes of \(bits)-bit indices, too few for \(count) values")
        }
        return (0..<count).map { i in
            var v = 0
            for b in 0..<bits {
                let bit = i * bits + b
                v |= (bytes[bit >> 3] >> (bit & 7) & 1) << b
            }
            return v
        }
    }

    /// iOS 16 `constexpr_lut_to_dense`: one table of 2ⁿ values, n-bit indices packed into bytes.
    static func lutToDense(indices: Constant, lut: Constant, shape: [Int]) throws -> Constant {
        guard let table = lut.floats, let bytes = indices.ints else { throw DecodeFailure("has a non-numeric table or indices") }
        let bits = table.count.trailingZeroBitCount
        guard table.count > 1, 1 << bits == table.count, bits <= 8 else {
            throw DecodeFailure("has a table of \(table.count) entries; 2, 4, 16, 64 or 256 are allowed")
        }
        guard let count = ModelLimits.elementCount(shape) else {
            throw DecodeFailure("has shape \(shape), beyond \(ModelLimits.maxTensorElements) values")
        }
        let codes = try unpackBits(bytes, bits: bits, count: count)
        return Constant(dataType: lut.dataType, shape: shape, payload: .floats(codes.map { table[$0] }))
    }

    /// iOS 18 `constexpr_lut_to_dense`: indices of the output's shape (uint1…uint8), tables
    /// `[blocks…, palettes, vector size]` chosen block-wise. Only scalar palettes (vector size 1).
    static func lutToDenseBlockwise(indices: Constant, lut: Constant) throws -> Constant {
        guard let table = lut.floats, let codes = indices.ints else { throw DecodeFailure("has a non-numeric table or indices") }
        let rank = indices.shape.count
        guard lut.shape.count == rank + 2 else {
            throw DecodeFailure("has a table of rank \(lut.shape.count) for indices of rank \(rank) (expected \(rank + 2))")
        }
        let palettes = lut.shape[rank], vector = lut.shape[rank + 1]
        guard vector == 1 else { throw DecodeFailure("uses vector palettization (vector size \(vector)), which Vivify does not support") }
        let blocks = try blockIndices(shape: indices.shape, paramShape: Array(lut.shape.prefix(rank)))
        var out = [Float](repeating: 0, count: codes.count)
        for i in 0..<codes.count {
            guard codes[i] >= 0, codes[i] < palettes else { throw DecodeFailure("has index \(codes[i]) outside a table of \(palettes)") }
            out[i] = table[blocks[i] * palettes + codes[i]]
        }
        return Constant(dataType: lut.dataType, shape: indices.shape, payload: .floats(out))
    }

    /// `constexpr_sparse_to_dense`: a bit mask (iOS 16: packed uint8 bytes; iOS 18: a uint1
    /// tensor of the output's shape) chooses which elements take the next non-zero value.
    static func sparseToDense(nonzero: Constant, mask: Constant, shape: [Int], packed: Bool) throws -> Constant {
        guard let values = nonzero.floats, let m = mask.ints else { throw DecodeFailure("has non-numeric data or mask") }
        guard let count = ModelLimits.elementCount(shape) else {
            throw DecodeFailure("has shape \(shape), beyond \(ModelLimits.maxTensorElements) values")
        }
        let bits = packed ? try unpackBits(m, bits: 1, count: count) : m
        guard bits.count == count else { throw DecodeFailure("has a mask of \(bits.count) bits for \(count) values") }
        var out = [Float](repeating: 0, count: count)
        var next = 0
        for i in 0..<count where bits[i] != 0 {
            guard next < values.count else { throw DecodeFailure("has more mask bits set than the \(values.count) non-zero values") }
            out[i] = values[next]
            next += 1
        }
        return Constant(dataType: nonzero.dataType, shape: shape, payload: .floats(out))
    }
}
