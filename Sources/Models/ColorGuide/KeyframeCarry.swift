internal import ColorScience
import Foundation

/// A keyframe's own colour carried onto the other frames of its shot at full resolution
/// (issue 28), where the frame shows what the keyframe shows.
///
/// The matcher transfers colour by meaning on a 112×112 grid: right for content that moved
/// far or changed, but it cannot hold a frame's fine colour (a small red cap, a sign's
/// letters), so even the frame after a keyframe lost half of what the keyframe knew. Frames
/// near a keyframe mostly show the same things a few pixels away; this finds where:
///
///     frame L, keyframe L ─▶ block matching, coarse to fine (`BlockMotion`), on planes of at
///                            most `maxSide` pixels
///     each frame pixel ─▶ its displacement (bilinear between blocks) ─▶ the keyframe's L and
///                         ab there, at the frame's resolution
///     confidence ─▶ from the block's match and the pixel's own L against the keyframe's
///     ab ─▶ the keyframe's where confident, the guide's colour (meaning, model) elsewhere
///
/// With keyframes before and after a frame, each is matched, weighted by nearness in time and
/// by its confidence. The first frame with the hints spread on it is carried as a keyframe. A
/// reference photograph is carried the same way, but only as far as the frame shows its
/// scene (`sceneAgreement`): of 10 pairs of unrelated BSD100 photographs none had more than
/// 0.4% of its textured blocks matched well, of 12 pairs of overlapping crops of one none had
/// fewer than 64%, and frames of one clip 2–5 s apart 15–71%. Every frame is matched to the keyframes directly (never to the frame
/// before it), so a frame's colour does not depend on where a run or a segment began.
enum KeyframeCarry {
    /// Off only to measure what it adds (`VIVIFY_NO_CARRY=1`).
    static let enabled = ProcessInfo.processInfo.environment["VIVIFY_NO_CARRY"] != "1"
    /// Matching works on planes no larger than this per side (a 1080p frame matches at 640×360).
    static let maxSide = 640
    /// Mean L difference of a block's match (L* units) at which its confidence is about e^-½.
    /// (3 and 6 were set before any measuring. On the bedroom clip's 123 frames, 5 and 12 gave
    /// +13.38 over grey and 8 and 12 +13.23, against +13.29: more near the keyframe, less far from it.)
    static let sigmaBlock: Float = 3
    /// A pixel's own L difference to the keyframe's at its match, likewise.
    static let sigmaPixel: Float = 6

    /// How far a keyframe's blocks are searched on the coarsest plane, its pixels.
    static let keyframeRadius = 6

    /// The matching planes' size for frames of `w`×`h`.
    static func workingSize(_ w: Int, _ h: Int) -> (w: Int, h: Int) {
        let r = max(1, Double(max(w, h)) / Double(maxSide))
        return (max(1, Int((Double(w) / r).rounded())), max(1, Int((Double(h) / r).rounded())))
    }

    /// A frame's L on the matching planes.
    static func pyramid(l: [Float], width w: Int, height h: Int) -> LightnessPyramid {
        let (ww, wh) = workingSize(w, h)
        if ww == w && wh == h { return LightnessPyramid(l: l, width: w, height: h) }
        var small = [Float](repeating: 0, count: ww * wh)
        Resample.area(l, w, h, into: &small, ww, wh)
        return LightnessPyramid(l: small, width: ww, height: wh)
    }

    /// A keyframe brought to the frames' size, with its matching planes.
    final class Prepared: Sendable {
        let width: Int, height: Int
        let l: [Float], a: [Float], b: [Float]
        let pyramid: LightnessPyramid

        init(l kl: [Float], a ka: [Float], b kb: [Float], width kw: Int, height kh: Int, frameWidth w: Int, frameHeight h: Int) {
            width = w
            height = h
            func resized(_ p: [Float]) -> [Float] {
                if kw == w && kh == h { return p }
                var out = [Float](repeating: 0, count: w * h)
                Resample.area(p, kw, kh, into: &out, w, h)
                return out
            }
            l = resized(kl)
            a = resized(ka)
            b = resized(kb)
            pyramid = KeyframeCarry.pyramid(l: l, width: w, height: h)
        }

        private init(l: [Float], a: [Float], b: [Float], width w: Int, height h: Int, pyramid: LightnessPyramid) {
            width = w
            height = h
            self.l = l
            self.a = a
            self.b = b
            self.pyramid = pyramid
        }

        /// This keyframe as a camera zoomed by `factor` and moved by `shift` (pixels of the
        /// matching planes) sees it: pixel y shows the keyframe's c + factor × (y − c) + shift,
        /// c the centre (edges clamped). `planes`: its matching planes, as `zoomedPlanes` made them.
        func zoomed(_ factor: Float, shift: (x: Float, y: Float), planes: LightnessPyramid, threads: Int) -> Prepared {
            let (w, h) = (width, height)
            // Area resampling keeps the centres where they are, so only the move scales.
            let full = (x: shift.x * Float(w) / Float(pyramid.width), y: shift.y * Float(h) / Float(pyramid.height))
            func warped(_ p: [Float]) -> [Float] { KeyframeCarry.warp(p, w, h, factor, shift: full, threads: threads) }
            return Prepared(l: warped(l), a: warped(a), b: warped(b), width: w, height: h, pyramid: planes)
        }

        /// Only the matching planes of `zoomed(factor, shift:)`, warped at their own size: what a
        /// zoom is tried on (the full-resolution planes are warped once one is taken). From
        /// `level` 1: the planes without their finest level (as `droppingFinest`), a quarter of
        /// the work, with `shift` in that level's pixels.
        func zoomedPlanes(_ factor: Float, shift: (x: Float, y: Float), from level: Int = 0, threads: Int) -> LightnessPyramid {
            let plane = pyramid.levels[level]
            return LightnessPyramid(l: KeyframeCarry.warp(plane.l, plane.w, plane.h, factor, shift: shift, threads: threads), width: plane.w, height: plane.h,
                                    maxLevels: pyramid.levels.count - level)
        }
    }

    /// A `w`×`h` plane as a camera zoomed by `factor` about its centre and moved by `shift`
    /// sees it (bilinear, edges clamped), rows split over `threads`.
    static func warp(_ p: [Float], _ w: Int, _ h: Int, _ factor: Float, shift: (x: Float, y: Float), threads: Int) -> [Float] {
        let cx = Float(w - 1) / 2, cy = Float(h - 1) / 2, (ox, oy) = shift
        var out = [Float](repeating: 0, count: w * h)
        let chunks = max(1, min(threads, h / 16))
        p.withUnsafeBufferPointer { src in out.withUnsafeMutableBufferPointer { dst in
            nonisolated(unsafe) let (p, o) = (src.baseAddress!, dst.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                for y in (h * chunk / chunks)..<(h * (chunk + 1) / chunks) {
                    let sy = min(max(cy + factor * (Float(y) - cy) + oy, 0), Float(h - 1))
                    let y0 = Int(sy), y1 = min(y0 + 1, h - 1), ty = sy - Float(y0)
                    for x in 0..<w {
                        let sx = min(max(cx + factor * (Float(x) - cx) + ox, 0), Float(w - 1))
                        let x0 = Int(sx), x1 = min(x0 + 1, w - 1), tx = sx - Float(x0)
                        let top = p[y0 * w + x0] * (1 - tx) + p[y0 * w + x1] * tx
                        let bottom = p[y1 * w + x0] * (1 - tx) + p[y1 * w + x1] * tx
                        o[y * w + x] = top * (1 - ty) + bottom * ty
                    }
                }
            }
        }}
        return out
    }

    /// A fitted zoom smaller than this is not tried: blocks follow it well enough. (On ten
    /// clips made from BSD200 training photographs zooming in by 30%, 1% and 4% gave the same
    /// margins, and flicker 0.909 and 0.902 × the truth's, against 1.007 without zooms.)
    static let minimumZoom: Float = 0.04
    /// A zoomed keyframe is taken when it closes at least this share of the gap between the
    /// share of blocks matched well and all of them. (Zooms the fit finds in a still shot of
    /// people walking closed at most 3% of it, and taking any gain made the walk clip's carried
    /// colour flicker: 0.570 against 0.489; a camera zooming in by 8% or more closed 36–90%.)
    static let zoomGain: Float = 0.2
    /// Off only to measure what it adds (`VIVIFY_NO_ZOOM=1`).
    static let zoomEnabled = ProcessInfo.processInfo.environment["VIVIFY_NO_ZOOM"] != "1"
    /// Below this share of blocks matched well (at the keyframe's scale, or at a fitted zoom
    /// if one was taken: it only ever rises), zooms are scanned for.
    static let zoomScanBelow: Float = 0.4
    /// Off only to measure what it adds (`VIVIFY_NO_ZOOM_SCAN=1`).
    static let zoomScanEnabled = ProcessInfo.processInfo.environment["VIVIFY_NO_ZOOM_SCAN"] != "1"
    /// The zooms scanned, outwards from none: steps of 0.87 in, and out, within the half either
    /// way a fit may reach.
    static let zoomSteps: (in: [Float], out: [Float]) = ([0.87, 0.76, 0.66, 0.57], [1.15, 1.32, 1.5])

    /// The zoom of `zoomSteps` under which the frame's textured blocks match the keyframe best,
    /// on the planes without their finest level (a quarter of a full match each), searched all
    /// over. Best: the lowest mean of each block's match cost over its texture (at most 1), as
    /// the share matched well saturates on these smoother planes. The first step in and out
    /// are tried against no zoom, and steps go on the way that fits better while each fits
    /// better than the one before (a still camera pays three such matches). nil: no zoom fits
    /// better than none, or too few textured blocks.
    static func scanZooms(_ key: Prepared, frame: LightnessPyramid, threads: Int) -> Float? {
        guard frame.levels.count > 1 else { return nil }
        let coarse = frame.droppingFinest()
        let textures = blockTextures(coarse)
        func misfit(_ factor: Float) -> Float? {
            let planes = factor == 1 ? key.pyramid.droppingFinest() : key.zoomedPlanes(factor, shift: (0, 0), from: 1, threads: 1)
            let m = BlockMotion(frame: coarse, key: planes, threads: threads)
            var sum: Float = 0, count = 0
            for (i, t) in textures.enumerated() where t >= texturedBlock {
                sum += min(m.cost[i] / t, 1)
                count += 1
            }
            guard count >= 16 else { return nil }
            if debug { FileHandle.standardError.write(Data("carry: zoom \(factor) scanned, misfit \(sum / Float(count))\n".utf8)) }
            return sum / Float(count)
        }
        guard let none = misfit(1), let zoomIn = misfit(zoomSteps.in[0]), let zoomOut = misfit(zoomSteps.out[0]) else { return nil }
        guard min(zoomIn, zoomOut) < none else { return nil }
        let steps = zoomIn <= zoomOut ? zoomSteps.in : zoomSteps.out
        var best = (factor: steps[0], misfit: min(zoomIn, zoomOut))
        for factor in steps.dropFirst() {
            guard let m = misfit(factor), m < best.misfit else { break }
            best = (factor, m)
        }
        return best.factor
    }

    /// The zoom and move of the frame against the picture it was matched to, from the blocks
    /// matched well: their vectors fitted to d = z (p − c) + t by least squares (blocks more
    /// than 2 px or three times the median off the fit dropped, twice); t in pixels of the
    /// matching planes. nil: under 32 such blocks.
    static func fittedZoom(_ motion: BlockMotion, frame: LightnessPyramid, textures given: [Float]? = nil) -> (z: Float, t: (x: Float, y: Float))? {
        let level = frame.levels[0], bs = BlockMotion.block
        let textures = given ?? blockTextures(frame)
        let cx = Float(level.w - 1) / 2, cy = Float(level.h - 1) / 2
        var points: [(u: Float, v: Float, dx: Float, dy: Float)] = []
        for by in 0..<motion.rows {
            for bx in 0..<motion.columns {
                let x0 = bx * bs, y0 = by * bs, bw = min(bs, level.w - x0), bh = min(bs, level.h - y0)
                guard bw == bs, bh == bs else { continue }
                let i = by * motion.columns + bx
                let texture = textures[i]
                guard texture >= texturedBlock, motion.cost[i] <= goodMatchShare * texture else { continue }
                points.append((Float(x0) + Float(bw - 1) / 2 - cx, Float(y0) + Float(bh - 1) / 2 - cy, motion.dx[i], motion.dy[i]))
            }
        }
        var z: Float = 0, t: (x: Float, y: Float) = (0, 0)
        for round in 0..<3 {
            guard points.count >= 32 else { return nil }
            let n = Float(points.count)
            let mu = points.reduce(0) { $0 + $1.u } / n, mv = points.reduce(0) { $0 + $1.v } / n
            let mdx = points.reduce(0) { $0 + $1.dx } / n, mdy = points.reduce(0) { $0 + $1.dy } / n
            var num: Float = 0, den: Float = 0
            for p in points {
                num += (p.u - mu) * (p.dx - mdx) + (p.v - mv) * (p.dy - mdy)
                den += (p.u - mu) * (p.u - mu) + (p.v - mv) * (p.v - mv)
            }
            guard den > 0 else { return nil }
            z = num / den
            let tx = mdx - z * mu, ty = mdy - z * mv
            t = (tx, ty)
            if round == 2 { break }
            let residuals = points.map { p in hypot(p.dx - z * p.u - tx, p.dy - z * p.v - ty) }
            let median = residuals.sorted()[residuals.count / 2]
            let limit = max(2, 3 * median)
            points = zip(points, residuals).filter { $0.1 <= limit }.map(\.0)
        }
        return (z, t)
    }

    /// Per block of `BlockMotion`'s grid on the frame's finest plane: mean |L − the block's
    /// mean L| (L* units). The same for every match of the frame, so `apply` computes it once.
    static func blockTextures(_ frame: LightnessPyramid) -> [Float] {
        let level = frame.levels[0], bs = BlockMotion.block
        let cols = (level.w + bs - 1) / bs, rows = (level.h + bs - 1) / bs
        var out = [Float](repeating: 0, count: cols * rows)
        for by in 0..<rows {
            for bx in 0..<cols {
                let x0 = bx * bs, y0 = by * bs, bw = min(bs, level.w - x0), bh = min(bs, level.h - y0)
                var mean: Float = 0
                for y in y0..<(y0 + bh) { for x in x0..<(x0 + bw) { mean += level.l[y * level.w + x] } }
                mean /= Float(bw * bh)
                var texture: Float = 0
                for y in y0..<(y0 + bh) { for x in x0..<(x0 + bw) { texture += abs(level.l[y * level.w + x] - mean) } }
                out[by * cols + bx] = texture / Float(bw * bh)
            }
        }
        return out
    }

    /// One picture whose colour is carried: a keyframe (or the hinted frame, or a reference
    /// photograph) at the frame's size, its weight in time, and whether it applies only as far
    /// as the frame shows its scene (`sceneAgreement`: references, which may show anything).
    struct Source {
        var keyframe: Prepared
        var weight: Float
        var gated = false
    }

    /// Whether a `w`×`h` picture has the shape of `fw`×`fh` frames, up to rounding a side of the
    /// smaller to whole pixels.
    static func sameAspect(_ w: Int, _ h: Int, _ fw: Int, _ fh: Int) -> Bool {
        2 * abs(w * fh - h * fw) <= max(fw + fh, w + h)
    }

    /// A block counts as textured (telling where it is) when its pixels' mean absolute
    /// difference from its mean L is at least this (L* units).
    static let texturedBlock: Float = 2
    /// A textured block's match is good when its mean L difference is at most this share of
    /// its texture: in the same scene the match is a fraction of the block's own contrast, in
    /// another scene the best of a search's candidates is about as far off as the block varies.
    static let goodMatchShare: Float = 0.5
    /// The share of textured blocks matched well below which a reference is not this scene
    /// (gate 0), and above which it is (gate 1); linear between.
    static let sceneShares: (Float, Float) = (0.05, 0.15)

    /// How far the frame shows the same scene as the picture it was matched to: from the share
    /// of the frame's textured blocks whose match is good, 0 (another scene: a flat wall would
    /// otherwise take the colour of any flat region of its lightness) to 1.
    static func sceneAgreement(_ motion: BlockMotion, frame: LightnessPyramid) -> Float {
        gate(sceneShare(motion, frame: frame))
    }

    /// The gate for a share of textured blocks matched well (nil, a frame with hardly any
    /// texture, tells nothing: no carry from a photograph).
    static func gate(_ share: Float?, between shares: (Float, Float) = sceneShares) -> Float {
        guard let share else { return 0 }
        return min(max((share - shares.0) / (shares.1 - shares.0), 0), 1)
    }

    /// The share of the frame's textured blocks matched well (nil: fewer than 16 textured blocks).
    static func sceneShare(_ motion: BlockMotion, frame: LightnessPyramid, textures given: [Float]? = nil) -> Float? {
        let level = frame.levels[0], bs = BlockMotion.block
        let textures = given ?? blockTextures(frame)
        var textured = 0, good = 0
        for by in 0..<motion.rows {
            for bx in 0..<motion.columns {
                let x0 = bx * bs, y0 = by * bs, bw = min(bs, level.w - x0), bh = min(bs, level.h - y0)
                guard bw > 0, bh > 0 else { continue }
                let texture = textures[by * motion.columns + bx]
                guard texture >= texturedBlock else { continue }
                textured += 1
                if motion.cost[by * motion.columns + bx] <= goodMatchShare * texture { good += 1 }
            }
        }
        guard textured >= 16 else { return nil }
        let share = Float(good) / Float(textured)
        if debug { FileHandle.standardError.write(Data("carry: \(good) of \(textured) textured blocks of \(level.w)x\(level.h) matched well (\(share))\n".utf8)) }
        return share
    }

    /// Whether a photograph clearly shows another scene, from a match of the pyramids without
    /// their finest level (a quarter of the work): under half the share that opens the gate
    /// there. Such a photograph is not matched in full (with one unrelated reference a
    /// 640×360 frame's colorize stage took 13 ms more on a 2-core AVX2 machine, for nothing).
    static func clearlyAnotherScene(frame: LightnessPyramid, key: LightnessPyramid, threads: Int) -> Bool {
        guard frame.levels.count > 1 else { return false }
        let f = frame.droppingFinest()
        guard let share = sceneShare(BlockMotion(frame: f, key: key.droppingFinest(), threads: threads), frame: f) else { return false }
        return share < sceneShares.0 / 2
    }

    private static let debug = ProcessInfo.processInfo.environment["VIVIFY_CARRY_DEBUG"] == "1"

    /// Blends the keyframes' colour into `a` and `b` (`w`×`h`, the frame's L `l` and its
    /// matching planes `frame`), each keyframe weighted by `weight` (nearness in time), a
    /// gated one also by how far the frame shows its scene.
    static func apply(_ sources: [Source], frame: LightnessPyramid, l: [Float],
                      a: inout [Float], b: inout [Float], width w: Int, height h: Int, threads: Int, zooms: Bool = zoomEnabled,
                      zoomScan: Bool = zoomScanEnabled) {
        let usable = sources.filter { $0.keyframe.width == w && $0.keyframe.height == h && $0.weight > 0 }
        guard !usable.isEmpty, l.count == w * h, a.count == w * h, b.count == w * h else { return }
        let n = w * h
        // Per pixel, over the keyframes: Σ weight × confidence, Σ of that × a and × b, and the
        // highest confidence (made when a first source applies).
        var sums: [Float] = []
        let chunks = max(1, min(threads, h))
        // Which of the frame's blocks tell where they are: the same for every match below, made
        // when a first source gets that far.
        var frameTextures: [Float]?
        for source in usable {
            if source.gated && clearlyAnotherScene(frame: frame, key: source.keyframe.pyramid, threads: threads) { continue }
            let textures = frameTextures ?? blockTextures(frame)
            frameTextures = textures
            // A keyframe is of the frame's own shot: its content is near, within 6 pixels of the
            // coarsest plane (about 100 at 640 px). A photograph may show it anywhere: all of
            // the coarsest plane is searched. (Searching all of it for every keyframe match
            // gained 0.6 points on the bedroom pan, but a keyframe coloured with its L* off the
            // grey frame's, as hand colouring leaves it, then matched wrong places at a lower
            // cost than its own: so a keyframe searches far only when little matched near, and
            // takes the far match only where it finds the keyframe's scene, below.)
            var motion = BlockMotion(frame: frame, key: source.keyframe.pyramid, coarseRadius: source.gated ? nil : keyframeRadius, threads: threads)
            var share = sceneShare(motion, frame: frame, textures: textures)
            var gate = source.gated ? Self.gate(share) : 1
            var searchAll = source.gated
            if !source.gated, let near = share, near < sceneShares.1 {
                // Few of the frame's blocks found the keyframe's content near (the camera has
                // moved far along, or the keyframe's L* is off the frame's): searched all over
                // and taken, gated as a photograph is, if that finds the keyframe's scene.
                let far = BlockMotion(frame: frame, key: source.keyframe.pyramid, threads: threads)
                if let farShare = sceneShare(far, frame: frame, textures: textures), farShare > max(sceneShares.1, 2 * near) {
                    motion = far
                    gate = Self.gate(farShare)
                    share = farShare
                    searchAll = true
                }
            }
            guard gate > 0 else { continue }
            // A camera that zoomed since the keyframe: blocks of fixed size match its content
            // less and less well as it grows or shrinks. The zoom fitted to the vectors of the
            // blocks that did match is taken out of the keyframe (matched again, zoomed), twice,
            // and kept where more of the frame's blocks then match well.
            var keyframe = source.keyframe
            if zooms, var share {
                // The frame's pixel p shows the matched keyframe's c + factor (p − c) + shift (on
                // the matching planes).
                var factor: Float = 1, shift: (x: Float, y: Float) = (0, 0)
                var planes: LightnessPyramid?
                let unzoomed = share
                func refine(gain: Float, anyZoom: Bool) {
                    for round in 0..<2 {
                        guard let fit = fittedZoom(motion, frame: frame, textures: textures) else { break }
                        // The zoomed keyframe's pixel p + z (p − c) + t shows the keyframe's
                        // c + factor (1 + z)(p − c) + shift + factor t: both taken out, the
                        // blocks are left what the fit missed, near where they are.
                        let next = factor * (1 + fit.z)
                        let moved = (x: shift.x + factor * fit.t.x, y: shift.y + factor * fit.t.y)
                        if debug { FileHandle.standardError.write(Data("carry: fitted zoom \(next), shift \(moved) from \(factor)\n".utf8)) }
                        guard abs(next - factor) >= minimumZoom || (anyZoom && round == 0), abs(next - 1) <= 0.5 else { break }
                        let candidate = source.keyframe.zoomedPlanes(next, shift: moved, threads: threads)
                        let m = BlockMotion(frame: frame, key: candidate, coarseRadius: keyframeRadius, threads: threads)
                        guard let s = sceneShare(m, frame: frame, textures: textures), s - share >= gain * (1 - share) else { break }
                        (factor, shift, share, motion, planes) = (next, moved, s, m, candidate)
                        if searchAll { gate = Self.gate(s) }
                    }
                }
                refine(gain: zoomGain, anyZoom: false)
                // Zoomed so far since the keyframe that few blocks match, at its scale and at
                // any fitted zoom: the zooms of `zoomSteps` tried on the coarser planes,
                // searched all over, and the best taken as above, then fitted from there (its
                // move too, so that the zoomed keyframe keeps what the frame shows in view).
                if zoomScan, share < zoomScanBelow, let tried = scanZooms(source.keyframe, frame: frame, threads: threads),
                   abs(tried - factor) >= minimumZoom {
                    let candidate = source.keyframe.zoomedPlanes(tried, shift: (0, 0), threads: threads)
                    let m = BlockMotion(frame: frame, key: candidate, threads: threads)
                    if let s = sceneShare(m, frame: frame, textures: textures), s - share >= zoomGain * (1 - share) {
                        (factor, shift, share, motion, planes) = (tried, (0, 0), s, m, candidate)
                        searchAll = true
                        gate = Self.gate(s)
                        // Any gain: the scan's steps are coarse.
                        refine(gain: 0.01, anyZoom: true)
                    }
                }
                if let planes { keyframe = source.keyframe.zoomed(factor, shift: shift, planes: planes, threads: threads) }
                if debug && factor != 1 { FileHandle.standardError.write(Data("carry: zoom \(factor), share \(unzoomed) -> \(share)\n".utf8)) }
            }
            if sums.isEmpty { sums = [Float](repeating: 0, count: 4 * n) }
            accumulate(keyframe, weight: source.weight, gate: gate, motion: motion, frame: frame, l: l, into: &sums, width: w, height: h, chunks: chunks)
        }
        guard !sums.isEmpty else { return }
        l.withUnsafeBufferPointer { lp in a.withUnsafeMutableBufferPointer { ap in b.withUnsafeMutableBufferPointer { bp in sums.withUnsafeBufferPointer { sp in
            nonisolated(unsafe) let (lp, ap, bp, sp) = (lp.baseAddress!, ap.baseAddress!, bp.baseAddress!, sp.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                for i in (n * chunk / chunks)..<(n * (chunk + 1) / chunks) {
                    let sumW = sp[i]
                    guard sumW > 1e-6 else { continue }
                    let t = sp[3 * n + i]
                    var na = t * sp[n + i] / sumW + (1 - t) * ap[i], nb = t * sp[2 * n + i] / sumW + (1 - t) * bp[i]
                    GamutFit.fit(l: lp[i], a: &na, b: &nb)
                    ap[i] = na
                    bp[i] = nb
                }
            }
        }}}}
    }

    /// Per column (or row) of `count` pixels whose matching plane is `toWork` times as wide:
    /// the two `BlockMotion` blocks of the `blocks` across around it and the weight of the
    /// second (what a pixel's displacement is interpolated from).
    static func blockTaps(_ count: Int, _ toWork: Float, _ blocks: Int) -> [(Int32, Int32, Float)] {
        let bs = Float(BlockMotion.block)
        return (0..<count).map { x in
            let f = min(max((Float(x) + 0.5) * toWork / bs - 0.5, 0), Float(blocks - 1))
            let i0 = Int(f)
            return (Int32(i0), Int32(min(i0 + 1, blocks - 1)), f - Float(i0))
        }
    }

    /// One keyframe's share: each frame pixel's displacement (bilinear between the blocks'),
    /// the keyframe's L, a and b there (bilinear), its confidence, added into `sums`.
    private static func accumulate(_ k: Prepared, weight: Float, gate: Float, motion: BlockMotion, frame: LightnessPyramid, l: [Float],
                                   into sums: inout [Float], width w: Int, height h: Int, chunks: Int) {
        let n = w * h
        let ww = Float(frame.width), wh = Float(frame.height)
        let toFullX = Float(w) / ww, toFullY = Float(h) / wh
        let ib = -1 / (2 * sigmaBlock * sigmaBlock), ip = -1 / (2 * sigmaPixel * sigmaPixel)
        let cols = motion.columns, rows = motion.rows
        let xt = blockTaps(w, ww / Float(w), cols), yt = blockTaps(h, wh / Float(h), rows)
        l.withUnsafeBufferPointer { lp in sums.withUnsafeMutableBufferPointer { sp in
        k.l.withUnsafeBufferPointer { kl in k.a.withUnsafeBufferPointer { ka in k.b.withUnsafeBufferPointer { kb in
        motion.dx.withUnsafeBufferPointer { mdx in motion.dy.withUnsafeBufferPointer { mdy in motion.cost.withUnsafeBufferPointer { mc in
        xt.withUnsafeBufferPointer { xt in yt.withUnsafeBufferPointer { yt in
            nonisolated(unsafe) let (lp, sp, kl, ka, kb, mdx, mdy, mc, xt, yt) = (lp.baseAddress!, sp.baseAddress!, kl.baseAddress!, ka.baseAddress!, kb.baseAddress!,
                                                                               mdx.baseAddress!, mdy.baseAddress!, mc.baseAddress!, xt.baseAddress!, yt.baseAddress!)
            DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                for y in (h * chunk / chunks)..<(h * (chunk + 1) / chunks) {
                    let (r0, r1, ty) = yt[y]
                    let row0 = Int(r0) * cols, row1 = Int(r1) * cols
                    for x in 0..<w {
                        let (c0, c1, tx) = xt[x]
                        let i00 = row0 + Int(c0), i01 = row0 + Int(c1), i10 = row1 + Int(c0), i11 = row1 + Int(c1)
                        let w00 = (1 - tx) * (1 - ty), w01 = tx * (1 - ty), w10 = (1 - tx) * ty, w11 = tx * ty
                        let dx = mdx[i00] * w00 + mdx[i01] * w01 + mdx[i10] * w10 + mdx[i11] * w11
                        let dy = mdy[i00] * w00 + mdy[i01] * w01 + mdy[i10] * w10 + mdy[i11] * w11
                        let cost = mc[i00] * w00 + mc[i01] * w01 + mc[i10] * w10 + mc[i11] * w11
                        let sx = min(max(Float(x) + dx * toFullX, 0), Float(w - 1))
                        let sy = min(max(Float(y) + dy * toFullY, 0), Float(h - 1))
                        let x0 = Int(sx), y0 = Int(sy), x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1)
                        let fx = sx - Float(x0), fy = sy - Float(y0)
                        let j00 = y0 * w + x0, j01 = y0 * w + x1, j10 = y1 * w + x0, j11 = y1 * w + x1
                        let v00 = (1 - fx) * (1 - fy), v01 = fx * (1 - fy), v10 = (1 - fx) * fy, v11 = fx * fy
                        let kL = kl[j00] * v00 + kl[j01] * v01 + kl[j10] * v10 + kl[j11] * v11
                        let i = y * w + x
                        let dl = lp[i] - kL
                        // About e^-q (1 over e^q's first four terms): exp itself took a third of this loop.
                        let q = -(cost * cost * ib + dl * dl * ip)
                        let c = gate / (1 + q * (1 + q * (0.5 + q * 0.16666667)))
                        let wgt = weight * c
                        sp[i] += wgt
                        sp[n + i] += wgt * (ka[j00] * v00 + ka[j01] * v01 + ka[j10] * v10 + ka[j11] * v11)
                        sp[2 * n + i] += wgt * (kb[j00] * v00 + kb[j01] * v01 + kb[j10] * v10 + kb[j11] * v11)
                        sp[3 * n + i] = max(sp[3 * n + i], c)
                    }
                }
            }
        }}}}}}}}}}
    }
}
