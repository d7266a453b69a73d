import Foundation

/// A streaming SHA-256 (FIPS 180-4) hasher: feed bytes in any number of `update` calls, then
/// `finalize()`. Used to verify model files, so it never needs the whole file in memory.
///
/// ```swift
/// var h = SHA256()
/// h.update(Data("abc".utf8))
/// h.finalize().hex  // "ba7816bf…"
/// ```
public struct SHA256: Sendable {
    /// A finished 32-byte SHA-256 digest.
    public struct Digest: Sendable, Hashable, CustomStringConvertible {
        /// The 32 digest bytes, big-endian as FIPS 180-4 writes them.
        public let bytes: [UInt8]

        /// The digest as 64 lowercase hexadecimal characters, as `sha256sum` prints it.
        public var hex: String {
            let digits = Array("0123456789abcdef".utf8)
            var out = [UInt8]()
            out.reserveCapacity(64)
            for b in bytes {
                out.append(digits[Int(b >> 4)])
                out.append(digits[Int(b & 0x0f)])
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// The digest in hexadecimal, as `hex`.
        public var description: String { hex }
    }

    /// The chunk size `hash(fileAt:)` reads with.
    public static let defaultChunkSize = 1 << 20

    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    /// Bytes of an unfinished 64-byte block, carried between `update` calls.
    private var pending: [UInt8] = []
    private var totalBytes: UInt64 = 0

    /// Makes a hasher with the FIPS 180-4 initial state.
    public init() {
        pending.reserveCapacity(64)
    }

    /// Adds `buffer`'s bytes to the message.
    ///
    /// Complexity: O(n) in the number of bytes.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        guard var p = buffer.baseAddress, buffer.count > 0 else { return }
        var remaining = buffer.count
        totalBytes &+= UInt64(remaining)
        if !pending.isEmpty {
            let take = min(64 - pending.count, remaining)
            pending.append(contentsOf: UnsafeRawBufferPointer(start: p, count: take))
            p += take
            remaining -= take
            if pending.count == 64 {
                pending.withUnsafeBytes { compress(blocks: $0.baseAddress!, count: 1) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        let whole = remaining / 64
        if whole > 0 {
            compress(blocks: p, count: whole)
            p += whole * 64
            remaining -= whole * 64
        }
        if remaining > 0 {
            pending.append(contentsOf: UnsafeRawBufferPointer(start: p, count: remaining))
        }
    }

    /// Adds `data`'s bytes to the message.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Adds `bytes` to the message.
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// Pads the message, processes the last block(s) and returns the digest. The hasher should
    /// not be used afterwards.
    public mutating func finalize() -> Digest {
        let bitLength = totalBytes &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift)))
        }
        tail.withUnsafeBytes { compress(blocks: $0.baseAddress!, count: tail.count / 64) }
        pending.removeAll()
        var out = [UInt8]()
        out.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            out.append(UInt8(truncatingIfNeeded: word >> 24))
            out.append(UInt8(truncatingIfNeeded: word >> 16))
            out.append(UInt8(truncatingIfNeeded: word >> 8))
            out.append(UInt8(truncatingIfNeeded: word))
        }
        return Digest(bytes: out)
    }

    /// The SHA-256 of `data`.
    public static func hash(_ data: Data) -> Digest {
        var h = SHA256()
        h.update(data)
        return h.finalize()
    }

    /// The SHA-256 of the file at `url`, read in chunks of `chunkSize` bytes.
    ///
    /// - Throws: `CatalogError` of kind `.notFound` when the file does not exist, `.io` when it
    ///   cannot be read.
    public static func hash(fileAt url: URL, chunkSize: Int = defaultChunkSize) throws -> Digest {
        let reader = try FileReader(url)
        defer { reader.close() }
        var h = SHA256()
        var buffer = [UInt8](repeating: 0, count: max(64, chunkSize))
        while true {
            let n = try reader.read(into: &buffer)
            if n == 0 { break }
            buffer.withUnsafeBytes { h.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
        }
        return h.finalize()
    }

    // MARK: - Compression function (FIPS 180-4 §6.2.2)

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    @inline(__always)
    private static func rotr(_ x: UInt32, _ n: UInt32) -> UInt32 { (x >> n) | (x << (32 &- n)) }

    /// Runs the compression function over `count` consecutive 64-byte blocks at `blocks`.
    private mutating func compress(blocks: UnsafeRawPointer, count: Int) {
        var (h0, h1, h2, h3, h4, h5, h6, h7) = state
        // One schedule buffer for all blocks: this loop runs for every byte of every model file.
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            SHA256.k.withUnsafeBufferPointer { k in
                for block in 0..<count {
                    let base = blocks + block * 64
                    for t in 0..<16 {
                        let b = base + t * 4
                        w[t] = UInt32(b.load(fromByteOffset: 0, as: UInt8.self)) << 24
                            | UInt32(b.load(fromByteOffset: 1, as: UInt8.self)) << 16
                            | UInt32(b.load(fromByteOffset: 2, as: UInt8.self)) << 8
                            | UInt32(b.load(fromByteOffset: 3, as: UInt8.self))
                    }
                    for t in 16..<64 {
                        let x = w[t - 15], y = w[t - 2]
                        let s0 = SHA256.rotr(x, 7) ^ SHA256.rotr(x, 18) ^ (x >> 3)
                        let s1 = SHA256.rotr(y, 17) ^ SHA256.rotr(y, 19) ^ (y >> 10)
                        w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
                    }
                    var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                    for t in 0..<64 {
                        let s1 = SHA256.rotr(e, 6) ^ SHA256.rotr(e, 11) ^ SHA256.rotr(e, 25)
                        let ch = (e & f) ^ (~e & g)
                        let t1 = h &+ s1 &+ ch &+ k[t] &+ w[t]
                        let s0 = SHA256.rotr(a, 2) ^ SHA256.rotr(a, 13) ^ SHA256.rotr(a, 22)
                        let maj = (a & b) ^ (a & c) ^ (b & c)
                        let t2 = s0 &+ maj
                        h = g; g = f; f = e; e = d &+ t1
                        d = c; c = b; b = a; a = t1 &+ t2
                    }
                    h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                    h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                }
            }
        }
        state = (h0, h1, h2, h3, h4, h5, h6, h7)
    }
}
