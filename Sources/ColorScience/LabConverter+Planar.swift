import Foundation

// The float hand-over between model stages: planar sRGB values in [0, 1] (one plane per
// channel, as the engine reads them) to L, and Lab back to planar sRGB without rounding to
// 8 bits. The sRGB curves are tables with linear interpolation (`PlanarCurves`), within
// 2e-7 of the reference curves: far below one 8-bit step (3.9e-3), so the one rounding left
// is the sink's.
//
//   r, g, b planes ─▶ decode (lerp table) ─▶ y/Yn ‖ ─▶ f (table) ─▶ L
//   L, a, b planes ─▶ f⁻¹ ‖ ─▶ matrix ‖ ─▶ clip, √ ‖ ─▶ encode (lerp table over √x) ─▶ r, g, b planes

/// The sRGB curves as piecewise-linear tables for `Float` input (immutable, built once).
final class PlanarCurves: @unchecked Sendable {
    static let shared = PlanarCurves()
    /// Cells of both tables over [0, 1].
    static let cells = 4096
    /// decode(i / 4096) for i in 0…4096 (the curve is smooth: a uniform grid is enough).
    let decode: UnsafeMutablePointer<Float>
    /// encode(s²) at s = i / 4096: over √x the encoding's infinite slope at 0 becomes finite,
    /// so a uniform grid in s keeps the error at 2e-7 down to black.
    let encodeOverRoot: UnsafeMutablePointer<Float>

    private init() {
        let n = Self.cells
        decode = .allocate(capacity: n + 2)
        encodeOverRoot = .allocate(capacity: n + 2)
        for i in 0...(n + 1) {
            let t = min(Double(i) / Double(n), 1)
            decode[i] = Float(LabReference.decode(t))
            encodeOverRoot[i] = Float(min(max(LabReference.encode(t * t), 0), 1))
        }
    }
}

/// Linear interpolation in a table of `PlanarCurves.cells + 1` points over [0, 1] (clamped;
/// NaN gives the first point).
@inline(__always) func lerpCurve(_ table: UnsafePointer<Float>, _ t: Float) -> Float {
    let x = t > 0 ? (t < 1 ? t : 1) : 0
    let pos = x * 4096
    let i = Int(pos)
    let frac = pos - Float(i)
    return table[i] + (table[i + 1] - table[i]) * frac
}

extension LabConverter {
    /// Only the lightness L of planar float RGB (`rgb`: the R plane, then G, then B, each
    /// width × height values of sRGB in [0, 1]; values outside are clipped).
    ///
    /// Agrees with ``lightness(rgb:width:height:l:)`` within 1e-4 on 8-bit values k / 255.
    public func lightness(planarRGB rgb: UnsafeBufferPointer<Float>, width: Int, height: Int, l: UnsafeMutableBufferPointer<Float>) {
        let count = width * height
        precondition(rgb.count >= 3 * count && l.count >= count, "lightness(planarRGB:): buffers smaller than the frame")
        guard count > 0, let src = rgb.baseAddress, let lp = l.baseAddress else { return }
        let curves = PlanarCurves.shared, m = Matrix3F.forward, tables = LabTables.shared
        let pixels = PixelChunks(src, lp)
        forEachChunk(width: width, height: height) { start, end in
            let (src, l) = pixels.pointers
            let decode = curves.decode, labF = tables.labF
            var p = start
            while p < end {
                let n = min(LabConverter.block, end - p)
                let r = src + p, g = src + count + p, b = src + 2 * count + p, y = l + p
                for i in 0..<n {
                    y[i] = m.m3 * lerpCurve(decode, r[i]) + m.m4 * lerpCurve(decode, g[i]) + m.m5 * lerpCurve(decode, b[i])
                }
                for i in 0..<n {
                    let k = Int(labFCell(y[i]))
                    y[i] = 116 * (labF[2 * k] + labF[2 * k + 1] * y[i]) - 16
                }
                p += n
            }
        }
    }

    /// Planar L, a, b → planar float sRGB in [0, 1] (R plane, then G, then B), clipped as
    /// ``labToRGB(l:a:b:width:height:rgb:)`` clips, but not rounded to 8 bits.
    ///
    /// Within 2e-6 of ``LabReference/labToRGB(_:_:_:)`` (scaled to [0, 1]).
    public func labToRGB(l: UnsafeBufferPointer<Float>, a: UnsafeBufferPointer<Float>, b: UnsafeBufferPointer<Float>,
                         width: Int, height: Int, planarRGB rgb: UnsafeMutableBufferPointer<Float>) {
        let count = width * height
        precondition(l.count >= count && a.count >= count && b.count >= count && rgb.count >= 3 * count,
                     "labToRGB(planarRGB:): buffers smaller than the frame")
        guard count > 0, let lp = l.baseAddress, let ap = a.baseAddress, let bp = b.baseAddress, let dst = rgb.baseAddress else { return }
        let curves = PlanarCurves.shared, m = Matrix3F.backward
        let pixels = PixelChunks((lp, ap, bp), dst)
        forEachChunk(width: width, height: height) { start, end in
            let ((l, a, b), dst) = pixels.pointers
            let r = dst, g = dst + count, bl = dst + 2 * count, encode = curves.encodeOverRoot
            for i in start..<end {
                let fy = (l[i] + 16) * Float(1.0 / 116.0)
                let fx = a[i] * Float(1.0 / 500.0) + fy
                let fz = fy - b[i] * Float(1.0 / 200.0)
                let x = labFInverse(fx), y = labFInverse(fy), z = labFInverse(fz < 0 ? 0 : fz)
                r[i] = (m.m0 * x + m.m1 * y + m.m2 * z)
                g[i] = (m.m3 * x + m.m4 * y + m.m5 * z)
                bl[i] = (m.m6 * x + m.m7 * y + m.m8 * z)
            }
            for plane in [r, g, bl] {
                for i in start..<end { plane[i] = clippedLinear(plane[i]).squareRoot() }
                for i in start..<end { plane[i] = lerpCurve(encode, plane[i]) }
            }
        }
    }

    /// Runs `body` on row-aligned pixel ranges, one per chunk, as the 8-bit paths split.
    private func forEachChunk(width: Int, height: Int, _ body: @Sendable (Int, Int) -> Void) {
        let chunks = min(threads, height)
        if chunks <= 1 { return body(0, width * height) }
        DispatchQueue.concurrentPerform(iterations: chunks) { i in
            body(height * i / chunks * width, height * (i + 1) / chunks * width)
        }
    }
}

/// Caller's pointers shared by the chunks of one call (each chunk touches only its own rows).
private struct PixelChunks<Source, Destination>: @unchecked Sendable {
    let pointers: (Source, Destination)
    init(_ source: Source, _ destination: Destination) { pointers = (source, destination) }
}

