internal import Compute
internal import Engine
import Foundation

/// Colour from references by correspondence of meaning (Deep Exemplar-style, no training):
///
///     target L features ─┐   cosine similarity per level (28², 14², 7² grids, one GEMM each),
///     reference features ┴─▶ summed on the 28×28 grid, minus a lightness term ─▶ top k per
///                            target cell ─▶ softmax(·/T) ─▶ on the 112×112 grid: each pixel
///                            takes ab from the same offset in its cell's matches (±radius),
///                            weighted by lightness and distance ─▶ ab + confidence (best score)
///
/// The constants were chosen on the colour clips in ../shared/media/videos (each clip's frame
/// 0 as the reference, every 6th frame after it as targets; see the README's "Colour from
/// references").
struct ReferenceMatcher {
    /// Softmax temperature over cosine scores.
    var temperature: Float = 0.02
    /// Weight of the lightness difference (in L* / 100) subtracted from a score.
    var lightnessWeight: Float = 1
    /// Matches kept per target cell.
    var topK = 4
    /// Fine search radius around each match on the 112 grid.
    var radius = 1
    /// Lightness tolerance of the fine transfer (L* units).
    var sigmaL: Float = 5
    /// Spatial tolerance of the fine transfer (fine-grid pixels).
    var sigmaS: Float = 1.5
    /// Scores at or below `lowConfidence` keep the automatic colour, at or above
    /// `highConfidence` the reference's; linear between.
    var lowConfidence: Float = 0.3
    var highConfidence: Float = 0.7

    let multiplier: MatrixMultiplier
    /// How many threads the per-cell loops split over (the run's `--threads`).
    var threads: Int = ComputeThreads.allCores

    /// A reference with the log of its weight (keyframes nearer in time weigh more).
    struct Weighted {
        var reference: ColourReference
        var logWeight: Float
    }

    /// The transferred colour and how much of it to use, on the fine grid.
    struct Transfer {
        /// a then b, 112×112 each.
        var ab: [Float]
        /// 0 (keep the automatic colour) … 1 (take the reference's), 112×112.
        var weight: [Float]
        /// Per fine pixel, the sample that weighed most: reference index × 112² + its fine-grid
        /// offset, or −1 where nothing matched (where the fine detail is taken from).
        var match: [Int32]
    }

    private static let grid = ReferenceEncoder.gridSide
    private static let fine = ColourReference.fineSide

    /// Matches `target` (its features and L on both grids) against `references`.
    func transfer(features target: EncodedFeatures, lGrid: [Float], lFine: [Float], references: [Weighted]) throws -> Transfer {
        precondition(!references.isEmpty)
        let g = Self.grid, cells = g * g, fine = Self.fine
        let k = min(topK, cells * references.count)
        // Scores: per reference, per level, every target location against every reference location.
        var similarity: [[[Float]]] = []
        for r in references {
            var perLevel: [[Float]] = []
            for level in 0..<target.levels.count {
                let n = target.sides[level] * target.sides[level], c = target.channels[level]
                var s = [Float](repeating: 0, count: n * n)
                try target.levels[level].withUnsafeBufferPointer { a in
                    try r.reference.features.levels[level].withUnsafeBufferPointer { b in
                        try s.withUnsafeMutableBufferPointer { try multiplier.multiplyTransposed(a, b, into: $0, m: n, n: n, k: c) }
                    }
                }
                perLevel.append(s)
            }
            similarity.append(perLevel)
        }
        let scores = similarity
        // Each grid cell's cell on the coarser levels.
        let sides = target.sides
        precondition(sides.count == 3 && sides[0] == g, "the matcher takes three levels, the finest on the 28×28 grid")
        let coarse: [[Int32]] = sides.map { side in
            (0..<cells).map { i in Int32((i / g) * side / g * side + (i % g) * side / g) }
        }
        let levelCount = Float(sides.count)
        // The coarse levels' scores of every level-1 (and level-2) target cell against every
        // reference cell, gathered once per reference: the target cells under one coarse cell
        // share them, so each target's scores are then contiguous rows added to its finest
        // row (in the order the sum always had), where gathering both per target and reference
        // cell took 3.5 ms of a frame's 2-thread colour stage with a reference and a shot
        // anchor.
        func expanded(_ level: Int) -> [[Float]] {
            let n = sides[level] * sides[level]
            return scores.map { levels in
                var rows = [Float](repeating: 0, count: n * cells)
                rows.withUnsafeMutableBufferPointer { out in levels[level].withUnsafeBufferPointer { sl in coarse[level].withUnsafeBufferPointer { cl in
                    nonisolated(unsafe) let (out, sl, cl) = (out.baseAddress!, sl.baseAddress!, cl.baseAddress!)
                    let chunks = max(1, min(threads, n))
                    DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                        for p in (n * chunk / chunks)..<(n * (chunk + 1) / chunks) {
                            let o = out + p * cells, src = sl + p * n
                            for r in 0..<cells { o[r] = src[Int(cl[r])] }
                        }
                    }
                } } }
                return rows
            }
        }
        let coarse1 = expanded(1), coarse2 = expanded(2)
        var topIndex = [Int32](repeating: 0, count: cells * k), topP = [Float](repeating: 0, count: cells * k)
        var confidence = [Float](repeating: 0, count: cells)
        let temperature = self.temperature, lightnessWeight = self.lightnessWeight / 100
        let logWeights = references.map(\.logWeight)
        let refL = references.map(\.reference.lGrid)
        // Top k per target cell (rows split over `threads`).
        topIndex.withUnsafeMutableBufferPointer { ti in topP.withUnsafeMutableBufferPointer { tp in confidence.withUnsafeMutableBufferPointer { cf in
            nonisolated(unsafe) let (ti, tp, cf) = (ti.baseAddress!, tp.baseAddress!, cf.baseAddress!)
            let chunks = max(1, min(threads, g))
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                var bestS = [Float](repeating: 0, count: k), bestL = [Float](repeating: 0, count: k), bestI = [Int32](repeating: 0, count: k)
                var row = [Float](repeating: 0, count: cells)
                for t in (cells * chunk / chunks)..<(cells * (chunk + 1) / chunks) {
                    for j in 0..<k { bestL[j] = -.infinity; bestS[j] = -.infinity; bestI[j] = 0 }
                    let lt = lGrid[t], p1 = Int(coarse[1][t]), p2 = Int(coarse[2][t])
                    for (ri, levels) in scores.enumerated() {
                        let lw = logWeights[ri] * temperature
                        // This target's scores against every reference cell, in one pass.
                        levels[0].withUnsafeBufferPointer { s0 in coarse1[ri].withUnsafeBufferPointer { e1 in coarse2[ri].withUnsafeBufferPointer { e2 in
                        refL[ri].withUnsafeBufferPointer { rl in row.withUnsafeMutableBufferPointer { row in
                            let f = s0.baseAddress! + t * cells, a = e1.baseAddress! + p1 * cells, b = e2.baseAddress! + p2 * cells
                            let l = rl.baseAddress!
                            for r in 0..<cells { row[r] = (f[r] + a[r] + b[r]) / levelCount - lightnessWeight * abs(lt - l[r]) }
                        } } } } }
                        for r in 0..<cells {
                            let score = row[r], logit = score + lw
                            if logit > bestL[k - 1] {
                                var j = k - 1
                                while j > 0 && bestL[j - 1] < logit {
                                    bestL[j] = bestL[j - 1]; bestS[j] = bestS[j - 1]; bestI[j] = bestI[j - 1]; j -= 1
                                }
                                bestL[j] = logit; bestS[j] = score; bestI[j] = Int32(ri * cells + r)
                            }
                        }
                    }
                    var sum: Float = 0
                    for j in 0..<k { let p = exp((bestL[j] - bestL[0]) / temperature); bestL[j] = p; sum += p }
                    var best: Float = -.infinity
                    for j in 0..<k {
                        ti[t * k + j] = bestI[j]
                        tp[t * k + j] = bestL[j] / sum
                        best = max(best, bestS[j])
                    }
                    cf[t] = best
                }
            }
        } } }

        let (topP2, topIndex2, confidence2) = (topP, topIndex, confidence)
        // The fine transfer: each 112-grid pixel looks at the same offset within its cell's
        // matches, ±radius, weighted by lightness likeness and distance.
        let cellSide = fine / g
        var ab = [Float](repeating: 0, count: 2 * fine * fine), weight = [Float](repeating: 0, count: fine * fine)
        var match = [Int32](repeating: -1, count: fine * fine)
        let radius = self.radius
        // exp(−ΔL² / 2σL²) from a table (ΔL in steps of 1/8 L*), exp(−d² / 2σS²) per offset.
        let lutStep: Float = 8, lutSize = 100 * 8 + 2
        let invL = -1 / (2 * sigmaL * sigmaL), invS = -1 / (2 * sigmaS * sigmaS)
        let lightnessLUT = (0..<lutSize).map { exp(Float($0) / lutStep * Float($0) / lutStep * invL) }
        let side = 2 * radius + 1
        let spatial = (0..<(side * side)).map { i -> Float in
            let dy = i / side - radius, dx = i % side - radius
            return exp(Float(dy * dy + dx * dx) * invS)
        }
        let low = lowConfidence, span = max(highConfidence - lowConfidence, 1e-6)
        let refLF = references.map(\.reference.lFine), refAB = references.map(\.reference.abFine)
        let plane = fine * fine
        ab.withUnsafeMutableBufferPointer { abp in weight.withUnsafeMutableBufferPointer { wp in match.withUnsafeMutableBufferPointer { mp in
            nonisolated(unsafe) let (abp, wp, mp) = (abp.baseAddress!, wp.baseAddress!, mp.baseAddress!)
            let chunks = max(1, min(threads, fine))
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                lightnessLUT.withUnsafeBufferPointer { lut in spatial.withUnsafeBufferPointer { sp in lFine.withUnsafeBufferPointer { lt in
                for y in (fine * chunk / chunks)..<(fine * (chunk + 1) / chunks) {
                    for x in 0..<fine {
                        let t = (y / cellSide) * g + x / cellSide, oy = y % cellSide, ox = x % cellSide
                        let l = lt[y * fine + x]
                        var sa: Float = 0, sb: Float = 0, sw: Float = 0, top: Float = 0, topAt = -1
                        for j in 0..<k {
                            let p = topP2[t * k + j]
                            if p < 1e-4 { continue }
                            let idx = Int(topIndex2[t * k + j]), ri = idx / cells, rc = idx % cells
                            let ry0 = (rc / g) * cellSide + oy, rx0 = (rc % g) * cellSide + ox
                            refLF[ri].withUnsafeBufferPointer { lf in refAB[ri].withUnsafeBufferPointer { abr in
                                var o = 0
                                for dy in -radius...radius {
                                    let ry = min(max(ry0 + dy, 0), fine - 1)
                                    for dx in -radius...radius {
                                        let rx = min(max(rx0 + dx, 0), fine - 1), at = ry * fine + rx
                                        let w = p * sp[o] * lut[min(Int(abs(l - lf[at]) * lutStep + 0.5), lutSize - 1)]
                                        o += 1
                                        sa += w * abr[at]
                                        sb += w * abr[plane + at]
                                        sw += w
                                        if w > top { top = w; topAt = ri * plane + at }
                                    }
                                }
                            } }
                        }
                        let i = y * fine + x
                        if sw > 1e-20 {
                            abp[i] = sa / sw
                            abp[plane + i] = sb / sw
                            wp[i] = min(max((confidence2[t] - low) / span, 0), 1)
                            mp[i] = Int32(topAt)
                        }
                    }
                }
                } } }
            }
        } } }
        return Transfer(ab: ab, weight: weight, match: match)
    }
}
