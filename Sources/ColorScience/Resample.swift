import Compute
import Foundation

/// Plane resampling for the colorizer: L down to the model's size, and its colour back up to
/// the frame's, either bilinearly or guided by the frame's own full-resolution L.
public enum Resample {
    /// Bilinear resize of one float plane with half-pixel centres (align_corners = false),
    /// edges clamped.
    public static func bilinear(_ src: [Float], _ sw: Int, _ sh: Int, into dst: inout [Float], _ dw: Int, _ dh: Int) {
        let dw = max(dw, 0), dh = max(dh, 0)
        if dst.count != dw * dh { dst = [Float](repeating: 0, count: dw * dh) }
        // This module is built -Ounchecked: a plane smaller than its sides say is refused here
        // (zeros out), never read past.
        guard sw > 0, sh > 0, src.count >= sw * sh else {
            for i in dst.indices { dst[i] = 0 }
            return
        }
        if sw == dw && sh == dh { dst = src; return }
        let sx = Float(sw) / Float(dw), sy = Float(sh) / Float(dh)
        src.withUnsafeBufferPointer { s in
            dst.withUnsafeMutableBufferPointer { d in
                for y in 0..<dh {
                    let fy = max(0, (Float(y) + 0.5) * sy - 0.5)
                    let y0 = min(Int(fy), sh - 1), y1 = min(y0 + 1, sh - 1)
                    let ty = fy - Float(y0)
                    for x in 0..<dw {
                        let fx = max(0, (Float(x) + 0.5) * sx - 0.5)
                        let x0 = min(Int(fx), sw - 1), x1 = min(x0 + 1, sw - 1)
                        let tx = fx - Float(x0)
                        let top = s[y0 * sw + x0] * (1 - tx) + s[y0 * sw + x1] * tx
                        let bottom = s[y1 * sw + x0] * (1 - tx) + s[y1 * sw + x1] * tx
                        d[y * dw + x] = top * (1 - ty) + bottom * ty
                    }
                }
            }
        }
    }

    /// Shrinks a plane by area averaging (each output pixel is the mean of the source area it
    /// covers, fractional pixels weighted), so that a 1080p frame brought to the model's size
    /// does not alias; an axis that grows is resized bilinearly instead.
    public static func area(_ src: [Float], _ sw: Int, _ sh: Int, into dst: inout [Float], _ dw: Int, _ dh: Int) {
        guard dw <= sw, dh <= sh, dw < sw || dh < sh, dw > 0, dh > 0, src.count >= sw * sh else {
            bilinear(src, sw, sh, into: &dst, dw, dh)
            return
        }
        if dst.count != dw * dh { dst = [Float](repeating: 0, count: dw * dh) }
        let xs = AreaTaps(source: sw, destination: dw), ys = AreaTaps(source: sh, destination: dh)
        var row = [Float](repeating: 0, count: dw)
        src.withUnsafeBufferPointer { s in
            dst.withUnsafeMutableBufferPointer { d in
                for y in 0..<dh {
                    for k in 0..<dw { row[k] = 0 }
                    for t in ys.range(y) {
                        let wy = ys.weight[t], sy = ys.index[t]
                        for x in 0..<dw {
                            var acc: Float = 0
                            for u in xs.range(x) { acc += s[sy * sw + xs.index[u]] * xs.weight[u] }
                            row[x] += acc * wy
                        }
                    }
                    for x in 0..<dw { d[y * dw + x] = row[x] }
                }
            }
        }
    }

    /// Brings the colour back to full resolution through a per-pixel linear model of L:
    /// `coefficients` holds four planes at `sw`×`sh` — slope and offset for a*, then for b* —
    /// each sampled bilinearly at full resolution, so a* = slope·L + offset with the frame's
    /// own L (`fittedTo`). Bilinear upsampling is the case of zero slopes (`bilinearModel`);
    /// the guided filter (`GuidedFilter`) gives slopes that make colour follow L's edges. The
    /// result is multiplied by `saturation` and each pixel fitted into the RGB gamut at its own
    /// lightness (`GamutFit`): one pass over the frame, rows split over `threads` (the run's
    /// `--threads`; all cores by default; each worker writes its own rows, so the split
    /// changes no bit), column taps computed once.
    public static func linearModelAB(_ coefficients: [Float], _ sw: Int, _ sh: Int, fittedTo l: [Float], saturation: Float = 1,
                                     a: inout [Float], b: inout [Float], _ dw: Int, _ dh: Int, threads: Int = ComputeThreads.allCores) {
        let n = dw * dh
        precondition(coefficients.count == 4 * sw * sh && l.count == n)
        if a.count != n { a = [Float](repeating: 0, count: n) }
        if b.count != n { b = [Float](repeating: 0, count: n) }
        let sx = Float(sw) / Float(dw), sy = Float(sh) / Float(dh)
        let same = sw == dw && sh == dh
        var x0s = [Int](repeating: 0, count: dw), x1s = x0s, txs = [Float](repeating: 0, count: dw)
        for x in 0..<dw {
            let fx = same ? Float(x) : max(0, (Float(x) + 0.5) * sx - 0.5)
            x0s[x] = min(Int(fx), sw - 1)
            x1s[x] = min(x0s[x] + 1, sw - 1)
            txs[x] = fx - Float(x0s[x])
        }
        let chunks = min(dh, max(1, threads))
        let plane = sw * sh
        coefficients.withUnsafeBufferPointer { cp in
            l.withUnsafeBufferPointer { lp in
                a.withUnsafeMutableBufferPointer { ap in
                    b.withUnsafeMutableBufferPointer { bp in
                        x0s.withUnsafeBufferPointer { x0p in
                            x1s.withUnsafeBufferPointer { x1p in
                                txs.withUnsafeBufferPointer { txp in
                                    // Each worker writes its own rows of a and b.
                                    nonisolated(unsafe) let (sc, sl, da, db) = (cp.baseAddress!, lp.baseAddress!, ap.baseAddress!, bp.baseAddress!)
                                    nonisolated(unsafe) let (cx0, cx1, ctx) = (x0p.baseAddress!, x1p.baseAddress!, txp.baseAddress!)
                                    DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                                        for y in (dh * chunk / chunks)..<(dh * (chunk + 1) / chunks) {
                                            let fy = same ? Float(y) : max(0, (Float(y) + 0.5) * sy - 0.5)
                                            let y0 = min(Int(fy), sh - 1), y1 = min(y0 + 1, sh - 1)
                                            let ty = fy - Float(y0)
                                            let r0 = y0 * sw, r1 = y1 * sw
                                            for x in 0..<dw {
                                                let x0 = cx0[x], x1 = cx1[x], tx = ctx[x]
                                                @inline(__always) func sample(_ s: UnsafePointer<Float>) -> Float {
                                                    let top = s[r0 + x0] * (1 - tx) + s[r0 + x1] * tx
                                                    let bottom = s[r1 + x0] * (1 - tx) + s[r1 + x1] * tx
                                                    return top * (1 - ty) + bottom * ty
                                                }
                                                let lv = sl[y * dw + x]
                                                var va = (sample(sc) * lv + sample(sc + plane)) * saturation
                                                var vb = (sample(sc + 2 * plane) * lv + sample(sc + 3 * plane)) * saturation
                                                GamutFit.fit(l: lv, a: &va, b: &vb)
                                                da[y * dw + x] = va
                                                db[y * dw + x] = vb
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// The coefficient planes of plain bilinear upsampling for `linearModelAB`: zero slopes,
    /// the colour itself as offsets. `ab` holds a then b, each `w`×`h`.
    public static func bilinearModel(_ ab: [Float], _ w: Int, _ h: Int, into coefficients: inout [Float]) {
        let n = w * h
        if coefficients.count != 4 * n { coefficients = [Float](repeating: 0, count: 4 * n) }
        for i in 0..<n {
            coefficients[i] = 0
            coefficients[n + i] = ab[i]
            coefficients[2 * n + i] = 0
            coefficients[3 * n + i] = ab[n + i]
        }
    }
}

/// Source pixels and weights of each destination pixel when shrinking one axis by area.
struct AreaTaps {
    var start: [Int] = [], index: [Int] = [], weight: [Float] = []

    init(source: Int, destination: Int) {
        let scale = Double(source) / Double(destination)
        for d in 0..<destination {
            start.append(index.count)
            let lo = Double(d) * scale, hi = Double(d + 1) * scale
            var s = Int(lo)
            while Double(s) < hi && s < source {
                let overlap = min(hi, Double(s + 1)) - max(lo, Double(s))
                if overlap > 1e-9 {
                    index.append(s)
                    weight.append(Float(overlap / scale))
                }
                s += 1
            }
        }
        start.append(index.count)
    }

    func range(_ d: Int) -> Range<Int> { start[d]..<start[d + 1] }
}

/// The guided filter (He, Sun and Tang, "Guided Image Filtering", 2013) in its fast form for
/// upsampling (He and Sun, 2015): at the model's resolution, each window fits the colour as a
/// linear function of the lightness, colour = A·L + B (least squares, A damped by `epsilon`);
/// the averaged A and B are then brought to full resolution and applied to the frame's own L
/// (`Resample.linearModelAB`). Where L has an edge inside a window, the colour changes across
/// that edge exactly where L does; where L is flat, A is near 0 and the colour is the smooth
/// window mean, so flat areas get no bands or blotches.
public enum GuidedFilter {
    /// Coefficient planes (slope, offset for a*, then for b*) for `Resample.linearModelAB`.
    /// `guide` is L at the colour's resolution `w`×`h` (area-averaged from the frame), `ab`
    /// the two colour planes there. `radius` is the window half-size in those pixels;
    /// `epsilon` (L* units squared) is how much L must vary in a window before colour follows
    /// it; slopes are limited to ±`maxSlope` a*b* units per L* unit.
    public static func coefficients(guide: [Float], ab: [Float], _ w: Int, _ h: Int, radius: Int = 2, epsilon: Float = 4,
                                    maxSlope: Float = 4, into out: inout [Float]) {
        let n = w * h
        precondition(guide.count == n && ab.count == 2 * n)
        if out.count != 4 * n { out = [Float](repeating: 0, count: 4 * n) }
        let meanI = boxMean(guide, w, h, radius)
        let meanII = boxMean(guide.map { $0 * $0 }, w, h, radius)
        for c in 0..<2 {
            let p = Array(ab[(c * n)..<((c + 1) * n)])
            let meanP = boxMean(p, w, h, radius)
            var ip = [Float](repeating: 0, count: n)
            for i in 0..<n { ip[i] = guide[i] * p[i] }
            let meanIP = boxMean(ip, w, h, radius)
            var slope = [Float](repeating: 0, count: n), offset = slope
            for i in 0..<n {
                let variance = max(meanII[i] - meanI[i] * meanI[i], 0)
                let s = min(max((meanIP[i] - meanI[i] * meanP[i]) / (variance + epsilon), -maxSlope), maxSlope)
                slope[i] = s
                offset[i] = meanP[i] - s * meanI[i]
            }
            let ms = boxMean(slope, w, h, radius), mo = boxMean(offset, w, h, radius)
            for i in 0..<n {
                out[2 * c * n + i] = ms[i]
                out[(2 * c + 1) * n + i] = mo[i]
            }
        }
    }

    /// Mean over the (2r+1)² window around each pixel, the window cut at the borders: a
    /// running sum along the rows, then along the columns.
    static func boxMean(_ src: [Float], _ w: Int, _ h: Int, _ r: Int) -> [Float] {
        var rows = [Float](repeating: 0, count: w * h), out = rows
        for y in 0..<h { boxLine(src, into: &rows, start: y * w, step: 1, length: w, r) }
        for x in 0..<w { boxLine(rows, into: &out, start: x, step: w, length: h, r) }
        return out
    }

    /// The windowed mean along one line of `length` values `step` apart from `start`.
    private static func boxLine(_ src: [Float], into dst: inout [Float], start: Int, step: Int, length: Int, _ r: Int) {
        var acc: Float = 0
        for i in 0...min(r, length - 1) { acc += src[start + i * step] }
        for i in 0..<length {
            dst[start + i * step] = acc / Float(min(length - 1, i + r) - max(0, i - r) + 1)
            if i + r + 1 < length { acc += src[start + (i + r + 1) * step] }
            if i - r >= 0 { acc -= src[start + (i - r) * step] }
        }
    }
}
