internal import ColorScience
internal import Compute
import Foundation

/// The reference's colour detail brought onto a frame at full resolution (issue 28).
///
/// The matcher transfers colour on a 112×112 grid, which caps what a keyframe can give: a
/// clip's own true colour, shrunk to that grid and enlarged again, scores only +15.5 points of
/// rebalanced AuC over grey on the DAVIS bedroom clip. Each fine pixel also knows which
/// reference pixel it took most from; this follows that correspondence to full resolution:
///
///     frame pixel ─▶ its fine pixel's match, moved by the pixel's sub-cell offset
///                 ─▶ the reference at its own resolution: of the pixels within `radius`, the
///                    one whose L is nearest the frame pixel's
///                 ─▶ that pixel's detail (its ab less its fine-grid ab), weighted by the
///                    match's confidence and the likeness of the two L, added to the frame's ab
///
/// The fine-grid colour (stabilized, mixed with the model's) stays the base; only what the
/// grid cannot hold is added.
struct DetailTransfer {
    /// Per fine pixel, as `ReferenceMatcher.Transfer.match`.
    var match: [Int32]
    /// Per fine pixel, 0 … 1: how much of the reference's colour was taken.
    var weight: [Float]
    /// The references matched, in the order `match` numbers them (nil: no detail kept).
    var details: [ColourDetail?]
    /// How many threads the rows split over (the run's `--threads`; each writes its own rows).
    var threads: Int = ComputeThreads.allCores

    /// Search radius at the reference's resolution. Radius 2 against 1: +0.15 points on the
    /// bedroom clip (the tuning clips of `ColourGuide`), at about twice the cost.
    static let radius = 2
    /// Lightness tolerance (L* units) of the detail taken; 6 and 10 measured alike.
    static let sigmaL: Float = 6
    /// Off only to measure what it adds (`VIVIFY_NO_DETAIL=1`).
    static let enabled = ProcessInfo.processInfo.environment["VIVIFY_NO_DETAIL"] != "1"

    /// Adds the detail to `a` and `b` (`w`×`h`, fitted into the gamut again at `l`).
    func apply(l: [Float], a: inout [Float], b: inout [Float], width w: Int, height h: Int) {
        let f = ColourReference.fineSide, plane = f * f
        guard details.contains(where: { $0 != nil }), l.count == w * h, a.count == w * h, b.count == w * h else { return }
        let radius = Self.radius, inv = -1 / (2 * Self.sigmaL * Self.sigmaL)
        let sx = Float(f) / Float(w), sy = Float(f) / Float(h)
        let chunks = max(1, min(max(1, threads), h))
        match.withUnsafeBufferPointer { mp in weight.withUnsafeBufferPointer { wp in l.withUnsafeBufferPointer { lp in
        a.withUnsafeMutableBufferPointer { ap in b.withUnsafeMutableBufferPointer { bp in
            nonisolated(unsafe) let (mp, wp, lp, ap, bp) = (mp.baseAddress!, wp.baseAddress!, lp.baseAddress!, ap.baseAddress!, bp.baseAddress!)
            // Raw views of the details (kept alive by `self.details` for the whole loop).
            nonisolated(unsafe) let views = details.map { d in d.map { (l: UnsafePointer($0.l.baseAddress!), ab: UnsafePointer($0.ab.baseAddress!),
                                                                       busy: UnsafePointer($0.busy.baseAddress!), width: $0.width, height: $0.height) } }
            // Per column: the nearest fine pixel and the offset from it, in fine pixels.
            let columns = (0..<w).map { x -> (q: Int, offset: Float) in
                let fx = (Float(x) + 0.5) * sx - 0.5
                let q = min(max(Int(fx.rounded()), 0), f - 1)
                return (q, fx - Float(q))
            }
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                columns.withUnsafeBufferPointer { columns in
                for y in (h * chunk / chunks)..<(h * (chunk + 1) / chunks) {
                    let fy = (Float(y) + 0.5) * sy - 0.5
                    let qy = min(max(Int(fy.rounded()), 0), f - 1), oy = fy - Float(qy)
                    for x in 0..<w {
                        let (qx, ox) = columns[x]
                        let q = qy * f + qx
                        let m = Int(mp[q]), wt = wp[q]
                        guard m >= 0, wt > 0, let d = views[m / plane] else { continue }
                        let dw = d.width, dh = d.height
                        let at = m % plane
                        let rfx = Float(at % f) + ox, rfy = Float(at / f) + oy
                        let cx = min(max(Int(((rfx + 0.5) * Float(dw) / Float(f) - 0.5).rounded()), 0), dw - 1)
                        let cy = min(max(Int(((rfy + 0.5) * Float(dh) / Float(f) - 0.5).rounded()), 0), dh - 1)
                        // Nothing within the radius has detail: nothing to add.
                        let centre = cy * dw + cx
                        if d.busy[centre] == 0 { continue }
                        let i = y * w + x, lt = lp[i]
                        // The centre first: a pixel `s` steps away costs 0.25·s more, so a
                        // centre within 0.25 L* cannot be beaten.
                        var best = abs(d.l[centre] - lt), bestAt = centre
                        if best > 0.25 {
                            for ry in max(cy - radius, 0)...min(cy + radius, dh - 1) {
                                let row = ry * dw, sy = abs(ry - cy)
                                for rx in max(cx - radius, 0)...min(cx + radius, dw - 1) {
                                    let diff = abs(d.l[row + rx] - lt) + 0.25 * Float(sy + abs(rx - cx))
                                    if diff < best { best = diff; bestAt = row + rx }
                                }
                            }
                        }
                        let dL = d.l[bestAt] - lt
                        let k = wt * exp(dL * dL * inv)
                        if k < 1e-3 { continue }
                        var va = ap[i] + k * d.ab[bestAt], vb = bp[i] + k * d.ab[dw * dh + bestAt]
                        GamutFit.fit(l: lt, a: &va, b: &vb)
                        ap[i] = va
                        bp[i] = vb
                    }
                }
                }
            }
            withExtendedLifetime(details) {}
        } } } } }
    }
}
