import Dispatch
import Foundation

/// Fast sRGB ↔ CIE Lab conversion of whole 8-bit frames (D65, 2° observer, scikit-image's
/// constants), within 1e-3 of ``LabReference`` in L, a and b.
///
/// ```
///  rgb24 ──▶ 256-entry decode table ──▶ SIMD matrix ──▶ SIMD f(t) ──▶ planar L, a, b (Float)
///  planar L, a, b ──▶ SIMD f⁻¹ ──▶ SIMD matrix ──▶ clip, SIMD encode, round ──▶ rgb24
/// ```
///
/// Each call splits the frame by rows into `threads` chunks (`DispatchQueue.concurrentPerform`)
/// and works through each chunk in blocks of 512 pixels, in loops that LLVM vectorizes. The result of a pixel does not depend on the split, so every
/// thread count gives bit-identical output. The converter holds only tables made in `init`:
/// a call allocates nothing, and one converter may serve several threads at once.
///
/// Accuracy (see `Tests/ColorScienceTests`): L, a, b within 1e-3 of ``LabReference``; 8-bit
/// output within 1 level of the reference rounded to nearest; every 8-bit colour survives
/// `rgbToLab` then `labToRGB` exactly.
public final class LabConverter: @unchecked Sendable {
    /// How many chunks a frame is split into (at least 1).
    public let threads: Int
    /// sRGB code 0…255 → linear light, computed in `Double` as ``LabReference`` does.
    private let decode: UnsafeMutablePointer<Float>
    /// 9 forward then 9 backward matrix coefficients (see `LabKernelConstants`).
    private let matrices: UnsafeMutablePointer<Float>

    /// Makes a converter.
    ///
    /// - Parameter threads: How many chunks each frame is split into; values below 1 count
    ///   as 1. Defaults to the number of active processors.
    public init(threads: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.threads = max(1, threads)
        decode = .allocate(capacity: 256)
        for code in 0..<256 { decode[code] = Float(LabReference.decode(Double(code) / 255)) }
        let constants = LabKernelConstants()
        matrices = .allocate(capacity: 18)
        for i in 0..<9 {
            matrices[i] = constants.forward[i]
            matrices[9 + i] = constants.backward[i]
        }
    }

    deinit {
        decode.deallocate()
        matrices.deallocate()
    }

    /// Packed 8-bit RGB (rgb24, width*height*3 bytes) → planar L, a, b (Float, width*height each).
    ///
    /// L is in [0, 100], a and b roughly in [-128, 127], as `skimage.color.rgb2lab` of the
    /// image divided by 255.
    ///
    /// - Complexity: O(width × height), split over `threads`.
    public func rgbToLab(rgb: UnsafeBufferPointer<UInt8>, width: Int, height: Int,
                         l: UnsafeMutableBufferPointer<Float>, a: UnsafeMutableBufferPointer<Float>, b: UnsafeMutableBufferPointer<Float>)
    {
        let count = Self.pixelCount(width, height, "rgbToLab")
        Self.check(rgb.count, atLeast: 3 * count, "rgbToLab", "rgb", "3 × width × height bytes")
        for (plane, name) in [(l.count, "l"), (a.count, "a"), (b.count, "b")] {
            Self.check(plane, atLeast: count, "rgbToLab", name, "width × height floats")
        }
        guard count > 0, let src = rgb.baseAddress, let lp = l.baseAddress, let ap = a.baseAddress, let bp = b.baseAddress else { return }
        split(width: width, height: height) { start, end in
            self.rgbToLabRange(src, lp, ap, bp, start, end)
        }
    }

    /// Planar L, a, b → packed 8-bit RGB (rounded to nearest, clipped as skimage does).
    ///
    /// Any finite Lab is accepted: as in `skimage.color.lab2rgb`, a negative z is set to 0
    /// and the sRGB result is clipped to [0, 1] before it becomes 0…255.
    ///
    /// - Complexity: O(width × height), split over `threads`.
    public func labToRGB(l: UnsafeBufferPointer<Float>, a: UnsafeBufferPointer<Float>, b: UnsafeBufferPointer<Float>,
                         width: Int, height: Int, rgb: UnsafeMutableBufferPointer<UInt8>)
    {
        let count = Self.pixelCount(width, height, "labToRGB")
        for (plane, name) in [(l.count, "l"), (a.count, "a"), (b.count, "b")] {
            Self.check(plane, atLeast: count, "labToRGB", name, "width × height floats")
        }
        Self.check(rgb.count, atLeast: 3 * count, "labToRGB", "rgb", "3 × width × height bytes")
        guard count > 0, let dst = rgb.baseAddress, let lp = l.baseAddress, let ap = a.baseAddress, let bp = b.baseAddress else { return }
        split(width: width, height: height) { start, end in
            self.labToRGBRange(lp, ap, bp, dst, start, end)
        }
    }

    /// Only the lightness L of packed 8-bit RGB (what a colorizer reads).
    ///
    /// Bit-identical to the L plane of ``rgbToLab(rgb:width:height:l:a:b:)``, at about a third
    /// of the cost.
    ///
    /// - Complexity: O(width × height), split over `threads`.
    public func lightness(rgb: UnsafeBufferPointer<UInt8>, width: Int, height: Int, l: UnsafeMutableBufferPointer<Float>) {
        let count = Self.pixelCount(width, height, "lightness")
        Self.check(rgb.count, atLeast: 3 * count, "lightness", "rgb", "3 × width × height bytes")
        Self.check(l.count, atLeast: count, "lightness", "l", "width × height floats")
        guard count > 0, let src = rgb.baseAddress, let lp = l.baseAddress else { return }
        split(width: width, height: height) { start, end in
            self.lightnessRange(src, lp, start, end)
        }
    }

    // MARK: - Splitting and checks

    /// Runs `body` on pixel ranges made of whole rows, one per chunk.
    private func split(width: Int, height: Int, _ body: (Int, Int) -> Void) {
        let chunks = min(threads, height)
        if chunks <= 1 { return body(0, width * height) }
        // The chunks touch disjoint rows of the caller's buffers, which outlive this call.
        withoutActuallyEscaping(body) { body in
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: chunks) { i in
                body(height * i / chunks * width, height * (i + 1) / chunks * width)
            }
        }
    }

    // `precondition` is compiled out under -Ounchecked, so the checks call fatalError.
    private static func pixelCount(_ width: Int, _ height: Int, _ function: String) -> Int {
        if width < 0 || height < 0 {
            fatalError("LabConverter.\(function): size \(width)×\(height) is negative. Pass a width and height of at least 0.")
        }
        return width * height
    }

    private static func check(_ count: Int, atLeast needed: Int, _ function: String, _ name: String, _ what: String) {
        if count < needed {
            fatalError("LabConverter.\(function): '\(name)' holds \(count) elements but the frame needs \(needed) (\(what)). Pass a larger buffer.")
        }
    }

    // MARK: - Row ranges

    /// Pixels per block: the planes of a block stay in L1 between the two loops over it.
    static let block = 512

    private func rgbToLabRange(_ src: UnsafePointer<UInt8>, _ l: UnsafeMutablePointer<Float>, _ a: UnsafeMutablePointer<Float>,
                               _ b: UnsafeMutablePointer<Float>, _ start: Int, _ end: Int)
    {
        let m = Matrix3F(matrices)
        var p = start
        while p < end {
            let n = min(Self.block, end - p)
            // The table lookups do not vectorize (no gather in SSE2), so they get their own
            // loop, writing linear light into the output planes; the arithmetic runs in place.
            decodeBlock(src + 3 * p, decode, n, l + p, a + p, b + p)
            labBlockInPlace(l + p, a + p, b + p, n, m)
            p += n
        }
    }

    private func lightnessRange(_ src: UnsafePointer<UInt8>, _ l: UnsafeMutablePointer<Float>, _ start: Int, _ end: Int) {
        let m = Matrix3F(matrices)
        var p = start
        while p < end {
            let n = min(Self.block, end - p)
            linearYBlock(src + 3 * p, decode, n, l + p, m)
            lightnessBlockInPlace(l + p, n)
            p += n
        }
    }

    private func labToRGBRange(_ l: UnsafePointer<Float>, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                               _ dst: UnsafeMutablePointer<UInt8>, _ start: Int, _ end: Int)
    {
        let m = Matrix3F(matrices + 9)
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: Self.block) { packed in
            let words = packed.baseAddress!
            var p = start
            while p < end {
                let n = min(Self.block, end - p)
                packedBlock(l + p, a + p, b + p, n, words, m)
                // Each pixel is written as 4 bytes (its fourth, 0, lands on the next pixel's red
                // and is overwritten next), except the range's last pixel: its fourth byte
                // belongs to the next chunk, which another thread may already have written.
                let out = UnsafeMutableRawPointer(dst + 3 * p)
                let whole = p + n < end ? n : n - 1
                for k in 0..<whole { out.storeBytes(of: words[k], toByteOffset: 3 * k, as: UInt32.self) }
                if whole < n {
                    let v = words[n - 1], o = dst + 3 * (p + n - 1)
                    o[0] = UInt8(truncatingIfNeeded: v)
                    o[1] = UInt8(truncatingIfNeeded: v &>> 8)
                    o[2] = UInt8(truncatingIfNeeded: v &>> 16)
                }
                p += n
            }
        }
    }
}
