import Compute
import Dispatch
import Foundation

/// Fast sRGB ↔ CIE Lab conversion of whole 8-bit frames (D65, 2° observer, scikit-image's
/// constants), within 1e-3 of ``LabReference`` in L, a and b.
///
/// ```
///  rgb24 ─▶ decode table ─▶ matrix ‖ + f cell ‖ ─▶ f table ─▶ fx,fy,fz → L,a,b ‖ ─▶ L, a, b planes
///  L, a, b planes ─▶ f⁻¹ ‖ ─▶ matrix ‖ ─▶ clip + encode cell ‖ ─▶ encode table ─▶ rgb24
///                                       ‖ = vectorized loop; the table steps are scalar gathers
/// ```
///
/// The tables (`LabTables`, built once per process from the reference curves): sRGB decode
/// for the 256 codes; f(t) as a straight line per 1/256 octave (within 3.4e-7 of the cube
/// root); sRGB encode as a base code plus one threshold per 1/4096 of linear light, which
/// rounds exactly as the reference does for every `Float` input.
///
/// Each call splits the frame by rows into `threads` chunks (`DispatchQueue.concurrentPerform`)
/// and works through each chunk in blocks of 512 pixels whose planes stay in L1 cache between
/// the loops. The result of a pixel does not depend on the split, so every thread count gives
/// bit-identical output. A call makes no heap allocation of its own (block scratch lives on the
/// stack; Dispatch boxes the closure it is given), and one converter may serve several
/// threads at once.
///
/// Accuracy (measured by `Tests/ColorScienceTests`): L, a, b within 2.2e-4 of ``LabReference``;
/// 8-bit output within 1 level of the reference rounded to nearest (equal for all but a few in
/// a million); every one of the 16,777,216 8-bit colours survives `rgbToLab` then `labToRGB`
/// exactly.
public final class LabConverter: @unchecked Sendable {
    /// How many chunks a frame is split into (at least 1).
    public let threads: Int
    private let tables = LabTables.shared
    private let forward = Matrix3F.forward
    private let backward = Matrix3F.backward

    /// Makes a converter.
    ///
    /// - Parameter threads: How many chunks each frame is split into; values below 1 count
    ///   as 1. Defaults to all cores; a run passes its own count (`--threads`).
    public init(threads: Int = ComputeThreads.allCores) {
        self.threads = max(1, threads)
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
        Self.check(l.count, atLeast: count, "rgbToLab", "l", "width × height floats")
        Self.check(a.count, atLeast: count, "rgbToLab", "a", "width × height floats")
        Self.check(b.count, atLeast: count, "rgbToLab", "b", "width × height floats")
        guard count > 0, let src = rgb.baseAddress, let lp = l.baseAddress, let ap = a.baseAddress, let bp = b.baseAddress else { return }
        split(Buffers((src, lp, ap, bp)), width: width, height: height) { buffers, start, end in
            let (src, l, a, b) = buffers.pointers
            self.rgbToLabRange(src, l, a, b, start, end)
        }
    }

    /// Planar L, a, b → packed 8-bit RGB (rounded to nearest, clipped as skimage does).
    ///
    /// Any Lab is accepted: as in `skimage.color.lab2rgb`, a negative z is set to 0 and the
    /// sRGB result is clipped to [0, 1] before it becomes 0…255 (NaN gives 0). Bytes of `rgb`
    /// past the frame are not touched.
    ///
    /// - Complexity: O(width × height), split over `threads`.
    public func labToRGB(l: UnsafeBufferPointer<Float>, a: UnsafeBufferPointer<Float>, b: UnsafeBufferPointer<Float>,
                         width: Int, height: Int, rgb: UnsafeMutableBufferPointer<UInt8>)
    {
        let count = Self.pixelCount(width, height, "labToRGB")
        Self.check(l.count, atLeast: count, "labToRGB", "l", "width × height floats")
        Self.check(a.count, atLeast: count, "labToRGB", "a", "width × height floats")
        Self.check(b.count, atLeast: count, "labToRGB", "b", "width × height floats")
        Self.check(rgb.count, atLeast: 3 * count, "labToRGB", "rgb", "3 × width × height bytes")
        guard count > 0, let dst = rgb.baseAddress, let lp = l.baseAddress, let ap = a.baseAddress, let bp = b.baseAddress else { return }
        split(Buffers((lp, ap, bp, dst)), width: width, height: height) { buffers, start, end in
            let (l, a, b, dst) = buffers.pointers
            self.labToRGBRange(l, a, b, dst, start, end)
        }
    }

    /// Only the lightness L of packed 8-bit RGB (what a colorizer reads).
    ///
    /// Bit-identical to the L plane of ``rgbToLab(rgb:width:height:l:a:b:)``, at under half
    /// the cost.
    ///
    /// - Complexity: O(width × height), split over `threads`.
    public func lightness(rgb: UnsafeBufferPointer<UInt8>, width: Int, height: Int, l: UnsafeMutableBufferPointer<Float>) {
        let count = Self.pixelCount(width, height, "lightness")
        Self.check(rgb.count, atLeast: 3 * count, "lightness", "rgb", "3 × width × height bytes")
        Self.check(l.count, atLeast: count, "lightness", "l", "width × height floats")
        guard count > 0, let src = rgb.baseAddress, let lp = l.baseAddress else { return }
        split(Buffers((src, lp)), width: width, height: height) { buffers, start, end in
            let (src, l) = buffers.pointers
            self.lightnessRange(src, l, start, end)
        }
    }

    // MARK: - Splitting and checks

    /// The caller's buffers, handed to every chunk of one call. Each chunk touches only its
    /// own rows, and the buffers outlive the call, so sharing the pointers is safe.
    private struct Buffers<Pointers>: @unchecked Sendable {
        let pointers: Pointers
        init(_ pointers: Pointers) { self.pointers = pointers }
    }

    /// Runs `body` on pixel ranges made of whole rows, one per chunk. Both closures are
    /// non-escaping, so their contexts live on the stack: a call allocates nothing here.
    private func split<Pointers>(_ buffers: Buffers<Pointers>, width: Int, height: Int,
                                 _ body: @Sendable (Buffers<Pointers>, Int, Int) -> Void)
    {
        let chunks = min(threads, height)
        if chunks <= 1 { return body(buffers, 0, width * height) }
        DispatchQueue.concurrentPerform(iterations: chunks) { i in
            body(buffers, height * i / chunks * width, height * (i + 1) / chunks * width)
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

    /// Pixels per block: a block's planes and scratch stay in L1 cache across its loops.
    /// (The scratch `InlineArray`s below are sized for it.)
    static let block = 512

    private func rgbToLabRange(_ src: UnsafePointer<UInt8>, _ l: UnsafeMutablePointer<Float>, _ a: UnsafeMutablePointer<Float>,
                               _ b: UnsafeMutablePointer<Float>, _ start: Int, _ end: Int)
    {
        let block = Self.block
        // 3 planes of f-table cells, 6 KiB on the stack. (InlineArray rather than
        // withUnsafeTemporaryAllocation, which on Linux takes the heap above 1 KiB.)
        var cellScratch = InlineArray<1536, UInt32>(repeating: 0)  // 3 × block
        var cellSpan = cellScratch.mutableSpan
        cellSpan.withUnsafeMutableBufferPointer { cellPlanes in
            let cx = cellPlanes.baseAddress!, cy = cx + block, cz = cy + block
            var p = start
            while p < end {
                let n = min(block, end - p)
                // Linear light, then x/Xn, y/Yn, z/Zn, then f, then Lab: all in the output planes.
                decodeBlock(src + 3 * p, tables.decode, n, l + p, a + p, b + p)
                matrixCellsBlockInPlace(l + p, a + p, b + p, n, forward, cx, cy, cz)
                labFBlockInPlace(l + p, cx, n, tables.labF)
                labFBlockInPlace(a + p, cy, n, tables.labF)
                labFBlockInPlace(b + p, cz, n, tables.labF)
                labFromFBlockInPlace(l + p, a + p, b + p, n)
                p += n
            }
        }
    }

    private func lightnessRange(_ src: UnsafePointer<UInt8>, _ l: UnsafeMutablePointer<Float>, _ start: Int, _ end: Int) {
        let block = Self.block
        var cellScratch = InlineArray<512, UInt32>(repeating: 0)  // block
        var cellSpan = cellScratch.mutableSpan
        cellSpan.withUnsafeMutableBufferPointer { cellPlane in
            let cells = cellPlane.baseAddress!
            var p = start
            while p < end {
                let n = min(block, end - p)
                decodeYBlock(src + 3 * p, tables.decode, n, l + p, forward)
                labFCellBlock(l + p, cells, n)
                labFBlockInPlace(l + p, cells, n, tables.labF)
                lightnessFromFBlockInPlace(l + p, n)
                p += n
            }
        }
    }

    private func labToRGBRange(_ l: UnsafePointer<Float>, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                               _ dst: UnsafeMutablePointer<UInt8>, _ start: Int, _ end: Int)
    {
        let block = Self.block
        // 3 planes of linear light and 3 of table cells: 12 KiB on the stack.
        var planeScratch = InlineArray<1536, Float>(repeating: 0)  // 3 × block
        var cellScratch = InlineArray<1536, UInt32>(repeating: 0)  // 3 × block
        var planeSpan = planeScratch.mutableSpan, cellSpan = cellScratch.mutableSpan
        planeSpan.withUnsafeMutableBufferPointer { planes in
            cellSpan.withUnsafeMutableBufferPointer { cellPlanes in
                let x = planes.baseAddress!, y = x + block, z = y + block
                let cx = cellPlanes.baseAddress!, cy = cx + block, cz = cy + block
                var p = start
                while p < end {
                    let n = min(block, end - p)
                    xyzFromLabBlock(l + p, a + p, b + p, n, x, y, z)
                    matrixBlockInPlace(x, y, z, n, backward)
                    encodeCellBlock(x, cx, n)
                    encodeCellBlock(y, cy, n)
                    encodeCellBlock(z, cz, n)
                    // Each pixel is written as 4 bytes (its fourth, 0, lands on the next pixel's
                    // red and is overwritten next), except the range's last pixel: its fourth
                    // byte belongs to the next chunk, which another thread may already have written.
                    let out = UnsafeMutableRawPointer(dst + 3 * p)
                    let whole = p + n < end ? n : n - 1
                    for k in 0..<whole {
                        let word = tables.code(x[k], cell: cx[k]) | tables.code(y[k], cell: cy[k]) << 8 | tables.code(z[k], cell: cz[k]) << 16
                        out.storeBytes(of: word, toByteOffset: 3 * k, as: UInt32.self)
                    }
                    if whole < n {
                        let k = n - 1, o = dst + 3 * (p + k)
                        o[0] = UInt8(truncatingIfNeeded: tables.code(x[k], cell: cx[k]))
                        o[1] = UInt8(truncatingIfNeeded: tables.code(y[k], cell: cy[k]))
                        o[2] = UInt8(truncatingIfNeeded: tables.code(z[k], cell: cz[k]))
                    }
                    p += n
                }
            }
        }
    }
}

/// The conversions on arrays, for callers that hold whole planes (metrics, tests).
extension LabConverter {
    /// `rgbToLab` on arrays.
    public func lab(of rgb: [UInt8], width: Int, height: Int) -> (l: [Float], a: [Float], b: [Float]) {
        var l = [Float](repeating: 0, count: width * height), a = l, b = l
        rgb.withUnsafeBufferPointer { src in
            l.withUnsafeMutableBufferPointer { lp in a.withUnsafeMutableBufferPointer { ap in b.withUnsafeMutableBufferPointer { bp in
                rgbToLab(rgb: src, width: width, height: height, l: lp, a: ap, b: bp)
            } } }
        }
        return (l, a, b)
    }

    /// `labToRGB` on arrays.
    public func rgb(l: [Float], a: [Float], b: [Float], width: Int, height: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 3 * width * height)
        l.withUnsafeBufferPointer { lp in a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in
            out.withUnsafeMutableBufferPointer { labToRGB(l: lp, a: ap, b: bp, width: width, height: height, rgb: $0) }
        } } }
        return out
    }

    /// `lightness` on arrays.
    public func lightness(of rgb: [UInt8], width: Int, height: Int) -> [Float] {
        var l = [Float](repeating: 0, count: width * height)
        rgb.withUnsafeBufferPointer { src in l.withUnsafeMutableBufferPointer { lightness(rgb: src, width: width, height: height, l: $0) } }
        return l
    }
}
