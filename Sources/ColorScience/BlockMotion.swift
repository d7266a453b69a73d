import Foundation

/// A lightness plane and its halvings, for coarse-to-fine matching.
public struct LightnessPyramid: Sendable {
    /// Level 0 first (the plane as given), each level half the one before (area-averaged).
    public private(set) var levels: [(w: Int, h: Int, l: [Float])]

    /// Halves until a side would drop below `minSide` or `maxLevels` levels exist.
    public init(l: [Float], width w: Int, height h: Int, minSide: Int = 20, maxLevels: Int = 5) {
        precondition(w > 0 && h > 0 && l.count >= w * h, "a pyramid needs a whole plane")
        levels = [(w, h, Array(l.prefix(w * h)))]
        while levels.count < maxLevels, let last = levels.last, min(last.w, last.h) / 2 >= minSide {
            let nw = (last.w + 1) / 2, nh = (last.h + 1) / 2
            var next = [Float](repeating: 0, count: nw * nh)
            Resample.area(last.l, last.w, last.h, into: &next, nw, nh)
            levels.append((nw, nh, next))
        }
    }

    private init(levels: [(w: Int, h: Int, l: [Float])]) { self.levels = levels }

    /// The same pyramid without its finest level (level 1 becomes level 0); itself when it has
    /// one level only.
    public func droppingFinest() -> LightnessPyramid {
        levels.count > 1 ? LightnessPyramid(levels: Array(levels.dropFirst())) : self
    }

    /// Level 0's size.
    public var width: Int { levels[0].w }
    public var height: Int { levels[0].h }
}

/// Where each block of one frame's lightness lies in another's (issue 28: a keyframe's colour
/// carried to the other frames of its shot at full resolution, where the two show the same
/// content). Hierarchical block matching:
///
///     coarsest level ─▶ every displacement within `coarseRadius` (nil: every one that keeps
///                       the block inside the other plane, and standing still), per block
///     each finer level ─▶ the block's parent vector and its parents' neighbours' (doubled) and
///                         zero, the best refined within `refineRadius`
///     level 0 ─▶ each block also tries its four neighbours' vectors (one pass), which mends
///                blocks that found a wrong match of their own
///
/// The cost is the mean absolute difference of L over the block (edges clamped), plus a small
/// pull towards the vector predicted from the coarser level, so flat regions keep the motion
/// of what surrounds them instead of a random equal match.
public struct BlockMotion: Sendable {
    /// Block side, pixels of level 0.
    public static let block = 8
    /// Blocks per row and column of level 0.
    public let columns: Int, rows: Int
    /// Per block, level-0 pixels: where the block's content lies in the other frame, relative
    /// to the block.
    public var dx: [Float], dy: [Float]
    /// Per block: the mean absolute L difference of the match (L* units).
    public var cost: [Float]

    /// Pull towards the predicted vector, L* units per pixel of difference.
    static let smoothness: Float = 0.03
    /// How much better a moving match must fit than standing still: standing still wins while
    /// its mean L* difference is at most `zeroRatio` times the moving match's plus `zeroBias`
    /// (noise in a still picture fits a small move about as well as none). On the walk clip (a
    /// still camera, people walking) the carried colour's flicker was 0.599 without this, 0.528
    /// with 1.5 and 0.489 with 2 (the truth's 0.499; 0.469 with 2 and a bias of 1), its score
    /// +5.15 / +5.16 / +5.00 over grey; the panning bedroom and calendar clips did not move.
    static let zeroRatio: Float = 2
    static let zeroBias: Float = 0.3

    /// Matches every block of `frame` (level by level) in `key`; both pyramids of the same sizes.
    public init(frame: LightnessPyramid, key: LightnessPyramid, coarseRadius: Int? = nil, refineRadius: Int = 2, threads: Int = 1) {
        precondition(frame.levels.count == key.levels.count && frame.width == key.width && frame.height == key.height,
                     "block matching needs pyramids of the same sizes")
        let b = Self.block
        var prev: (cols: Int, rows: Int, dx: [Int32], dy: [Int32])?
        var result: (cols: Int, rows: Int, dx: [Int32], dy: [Int32], cost: [Float]) = (0, 0, [], [], [])
        for level in stride(from: frame.levels.count - 1, through: 0, by: -1) {
            let f = frame.levels[level], k = key.levels[level]
            let cols = (f.w + b - 1) / b, rows = (f.h + b - 1) / b
            var dx = [Int32](repeating: 0, count: cols * rows), dy = dx
            var cost = [Float](repeating: 0, count: cols * rows)
            let parent = prev
            f.l.withUnsafeBufferPointer { fp in k.l.withUnsafeBufferPointer { kp in
            dx.withUnsafeMutableBufferPointer { dxp in dy.withUnsafeMutableBufferPointer { dyp in cost.withUnsafeMutableBufferPointer { cp in
                nonisolated(unsafe) let (fp, kp, dxp, dyp, cp) = (fp, kp, dxp, dyp, cp)
                let chunks = max(1, min(threads, rows))
                DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                    for by in (rows * chunk / chunks)..<(rows * (chunk + 1) / chunks) {
                        for bx in 0..<cols {
                            let x0 = bx * b, y0 = by * b
                            let bw = min(b, f.w - x0), bh = min(b, f.h - y0)
                            func sad(_ vx: Int, _ vy: Int) -> Float {
                                Self.meanAbsoluteDifference(fp, kp, width: f.w, height: f.h, x0: x0, y0: y0, bw: bw, bh: bh, vx: vx, vy: vy)
                            }
                            var best = (vx: 0, vy: 0, score: Float.infinity, cost: Float.infinity)
                            var predicted = (0, 0)
                            func consider(_ vx: Int, _ vy: Int) {
                                let c = sad(vx, vy)
                                let s = c + Self.smoothness * Float(abs(vx - predicted.0) + abs(vy - predicted.1))
                                if s < best.score { best = (vx, vy, s, c) }
                            }
                            if let p = parent {
                                // The parent block holding this block's centre, and its neighbours.
                                let pcx = min(max(((x0 + bw / 2) / 2) / b, 0), p.cols - 1)
                                let pcy = min(max(((y0 + bh / 2) / 2) / b, 0), p.rows - 1)
                                predicted = (Int(2 * p.dx[pcy * p.cols + pcx]), Int(2 * p.dy[pcy * p.cols + pcx]))
                                consider(predicted.0, predicted.1)
                                for (ox, oy) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
                                    let qx = pcx + ox, qy = pcy + oy
                                    guard qx >= 0, qx < p.cols, qy >= 0, qy < p.rows else { continue }
                                    consider(Int(2 * p.dx[qy * p.cols + qx]), Int(2 * p.dy[qy * p.cols + qx]))
                                }
                                consider(0, 0)
                                let (cx, cy) = (best.vx, best.vy)
                                for vy in (cy - refineRadius)...(cy + refineRadius) {
                                    for vx in (cx - refineRadius)...(cx + refineRadius) where vx != cx || vy != cy { consider(vx, vy) }
                                }
                            } else {
                                if let r = coarseRadius {
                                    for vy in -r...r {
                                        for vx in -r...r { consider(vx, vy) }
                                    }
                                } else {
                                    // The whole plane: a reference photographed from elsewhere,
                                    // a keyframe far along a pan (the coarsest plane is at most
                                    // a few dozen pixels a side, so this is cheap).
                                    consider(0, 0)
                                    for vy in (-y0)...max(-y0, k.h - bh - y0) {
                                        for vx in (-x0)...max(-x0, k.w - bw - x0) where vx != 0 || vy != 0 { consider(vx, vy) }
                                    }
                                }
                            }
                            // Standing still unless moving fits clearly better: a static block
                            // keeps a zero vector from frame to frame (no colour sliding where
                            // nothing moved).
                            if best.vx != 0 || best.vy != 0 {
                                let still = sad(0, 0)
                                if still <= best.cost * Self.zeroRatio + Self.zeroBias { best = (0, 0, still, still) }
                            }
                            let i = by * cols + bx
                            dxp[i] = Int32(best.vx); dyp[i] = Int32(best.vy); cp[i] = best.cost
                        }
                    }
                }
            }}}}}
            if level == 0 {
                // One pass of neighbours' vectors, from the matched field (not the one being mended).
                let (sdx, sdy) = (dx, dy)
                for by in 0..<rows {
                    for bx in 0..<cols {
                        let i = by * cols + bx
                        let x0 = bx * b, y0 = by * b, bw = min(b, f.w - x0), bh = min(b, f.h - y0)
                        for (ox, oy) in [(-1, 0), (1, 0), (0, -1), (0, 1)] {
                            let qx = bx + ox, qy = by + oy
                            guard qx >= 0, qx < cols, qy >= 0, qy < rows else { continue }
                            let q = qy * cols + qx
                            let vx = Int(sdx[q]), vy = Int(sdy[q])
                            if vx == Int(dx[i]) && vy == Int(dy[i]) { continue }
                            let c = f.l.withUnsafeBufferPointer { fp in k.l.withUnsafeBufferPointer { kp in
                                Self.meanAbsoluteDifference(fp, kp, width: f.w, height: f.h, x0: x0, y0: y0, bw: bw, bh: bh, vx: vx, vy: vy)
                            }}
                            if c < cost[i] { dx[i] = Int32(vx); dy[i] = Int32(vy); cost[i] = c }
                        }
                    }
                }
            }
            prev = (cols, rows, dx, dy)
            result = (cols, rows, dx, dy, cost)
        }
        columns = result.cols
        rows = result.rows
        dx = result.dx.map(Float.init)
        dy = result.dy.map(Float.init)
        cost = result.cost
    }

    /// Mean |F(x, y) − K(x + vx, y + vy)| over the block at (`x0`, `y0`), K's edges clamped.
    @inline(__always)
    static func meanAbsoluteDifference(_ f: UnsafeBufferPointer<Float>, _ k: UnsafeBufferPointer<Float>, width w: Int, height h: Int,
                                       x0: Int, y0: Int, bw: Int, bh: Int, vx: Int, vy: Int) -> Float {
        var sum: Float = 0
        let inside = x0 + vx >= 0 && x0 + vx + bw <= w && y0 + vy >= 0 && y0 + vy + bh <= h
        if inside && bw == 8 {
            // A whole block inside both planes: eight lanes a row.
            var acc = SIMD8<Float>(repeating: 0)
            let fb = UnsafeRawPointer(f.baseAddress!), kb = UnsafeRawPointer(k.baseAddress!)
            for y in 0..<bh {
                let fr = (y0 + y) * w + x0, kr = (y0 + y + vy) * w + x0 + vx
                let d = fb.loadUnaligned(fromByteOffset: fr * 4, as: SIMD8<Float>.self) - kb.loadUnaligned(fromByteOffset: kr * 4, as: SIMD8<Float>.self)
                acc += d.replacing(with: -d, where: d .< 0)
            }
            return acc.sum() / Float(8 * bh)
        }
        for y in 0..<bh {
            let fr = (y0 + y) * w + x0
            if inside {
                let kr = (y0 + y + vy) * w + x0 + vx
                for x in 0..<bw { sum += abs(f[fr + x] - k[kr + x]) }
            } else {
                let ky = min(max(y0 + y + vy, 0), h - 1) * w
                for x in 0..<bw {
                    let kx = min(max(x0 + x + vx, 0), w - 1)
                    sum += abs(f[fr + x] - k[ky + kx])
                }
            }
        }
        return sum / Float(bw * bh)
    }
}
