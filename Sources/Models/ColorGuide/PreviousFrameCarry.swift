internal import ColorScience
import Foundation

/// A shot's previous frame's colour carried onto the next on the guide's fine grid (issue 29,
/// item 4: colour that holds through a shot), where the next frame shows the same content.
///
/// The shot anchors match by meaning and let the model's colour in wherever the match is not
/// confident; the stabilizer keeps colour per pixel in place and lets its memory fade where L
/// changed, which in a moving shot is almost everywhere there is texture. So in a pan a
/// region's colour still slid with the framing. This follows the content instead:
///
///     previous frame: L and final a, b on the 112×112 grid (the squashed frame)
///     this frame's L there ─▶ block matching, near (`BlockMotion`)
///     each fine pixel ─▶ its displacement (bilinear between blocks) ─▶ the previous frame's
///                        L, a, b there ─▶ confidence from the block's match and the pixel's L
///     ab ─▶ `hold` × confidence of the previous frame's, the rest this frame's guide colour
///     (none where the frame's textured blocks do not find the previous frame's content: a
///     cut the histograms missed)
///
/// On the 112×112 grid it costs about 1.3 ms a frame (Big Buck Bunny at 640×360, 2 threads;
/// matching on the 224×224 planes took 2.3 ms for about the same figures); the stabilizer then
/// works on what it gives.
struct PreviousFrameCarry {
    /// Off only to measure what it adds (`VIVIFY_NO_PREVIOUS_CARRY=1`).
    static let enabled = ProcessInfo.processInfo.environment["VIVIFY_NO_PREVIOUS_CARRY"] != "1"
    /// The most of the previous frame's colour a pixel keeps, where it matched perfectly.
    /// Chosen on the bedroom, plane and Big Buck Bunny clips (`Benchmarks/drift.sh`): 1 let
    /// colour be dragged along by the matching's mistakes (the bedroom's drift 5.20 and its
    /// difference's 5.92, against 4.81 and 4.99 without the carry), 0.8 less so (4.56 / 5.11),
    /// 0.5 lowered both (4.50 / 4.88) and flicker by a sixth. With the sub-pixel drift meter
    /// (2026-12-02, before it closed regions leaving the frame) 0.3 / 0.5 / 0.75 / 1 gave the bedroom 2.75 / 2.87 / 3.28 / 4.69, the plane
    /// 2.25 / 2.22 / 2.28 / 3.25 and Big Buck Bunny 4.26 / 4.24 / 4.29 / 4.36; 0.5 kept.
    static let hold: Float = 0.5
    /// The share of the frame's textured blocks (`KeyframeCarry.sceneShare`) matched well in
    /// the previous frame below which it shows other content (no carry), and above which the
    /// same (the full `hold`); linear between. Consecutive frames of the bedroom, plane and Big
    /// Buck Bunny clips matched 0.36 at least (5% under 0.51); two unrelated textures 0.09
    /// (on these small planes a few of the blocks match anything).
    static let sceneShares: (Float, Float) = (0.15, 0.3)

    /// The previous frame's L on the fine grid (and its matching planes), its final a, b there.
    let pyramid: LightnessPyramid
    let lFine: [Float]
    let ab: [Float]

    /// `lFine`: the frame's L on the fine grid; `ab`: its final a then b there.
    init(lFine: [Float], ab: [Float]) {
        let f = ColourReference.fineSide
        pyramid = LightnessPyramid(l: lFine, width: f, height: f)
        self.lFine = lFine
        self.ab = ab
    }

    /// Blends the previous frame's colour into `ab` (a then b on the fine grid) of the frame
    /// whose L there is `lFine`. Returns the mean weight the previous frame's colour got.
    @discardableResult
    func apply(lFine: [Float], ab: inout [Float], threads: Int) -> Float {
        let f = ColourReference.fineSide, ff = f * f
        guard lFine.count == ff, ab.count == 2 * ff, self.ab.count == 2 * ff, self.lFine.count == ff else { return 0 }
        let frame = LightnessPyramid(l: lFine, width: f, height: f)
        let motion = BlockMotion(frame: frame, key: pyramid, coarseRadius: KeyframeCarry.keyframeRadius, threads: threads)
        // A cut the histograms missed (two shots of alike lightness): flat regions would match
        // any flat region of their lightness, so the carry applies only as far as the frame's
        // textured blocks find the previous frame's content (`sceneShares`).
        let hold = Self.hold * KeyframeCarry.gate(KeyframeCarry.sceneShare(motion, frame: frame), between: Self.sceneShares)
        guard hold > 0 else { return 0 }
        let cols = motion.columns, rows = motion.rows
        let ib = -1 / (2 * KeyframeCarry.sigmaBlock * KeyframeCarry.sigmaBlock)
        let ip = -1 / (2 * KeyframeCarry.sigmaPixel * KeyframeCarry.sigmaPixel)
        func sample(_ plane: UnsafePointer<Float>, _ x: Float, _ y: Float) -> Float {
            let x0 = Int(x), y0 = Int(y), x1 = min(x0 + 1, f - 1), y1 = min(y0 + 1, f - 1)
            let tx = x - Float(x0), ty = y - Float(y0)
            let top = plane[y0 * f + x0] * (1 - tx) + plane[y0 * f + x1] * tx
            let bottom = plane[y1 * f + x0] * (1 - tx) + plane[y1 * f + x1] * tx
            return top * (1 - ty) + bottom * ty
        }
        let xt = KeyframeCarry.blockTaps(f, 1, cols), yt = KeyframeCarry.blockTaps(f, 1, rows)
        var total: Float = 0
        self.lFine.withUnsafeBufferPointer { pl in self.ab.withUnsafeBufferPointer { pab in
        motion.dx.withUnsafeBufferPointer { mdx in motion.dy.withUnsafeBufferPointer { mdy in motion.cost.withUnsafeBufferPointer { mc in
        lFine.withUnsafeBufferPointer { lf in ab.withUnsafeMutableBufferPointer { out in
            let pl = pl.baseAddress!, pa = pab.baseAddress!, pb = pab.baseAddress! + ff
            for y in 0..<f {
                let (r0, r1, ty) = yt[y]
                let row0 = Int(r0) * cols, row1 = Int(r1) * cols
                for x in 0..<f {
                    let (c0, c1, tx) = xt[x]
                    let i00 = row0 + Int(c0), i01 = row0 + Int(c1), i10 = row1 + Int(c0), i11 = row1 + Int(c1)
                    let w00 = (1 - tx) * (1 - ty), w01 = tx * (1 - ty), w10 = (1 - tx) * ty, w11 = tx * ty
                    func at(_ v: UnsafeBufferPointer<Float>) -> Float { v[i00] * w00 + v[i01] * w01 + v[i10] * w10 + v[i11] * w11 }
                    let sx = min(max(Float(x) + at(mdx), 0), Float(f - 1))
                    let sy = min(max(Float(y) + at(mdy), 0), Float(f - 1))
                    let i = y * f + x
                    let cost = at(mc), dl = lf[i] - sample(pl, sx, sy)
                    let c = hold * exp(cost * cost * ib + dl * dl * ip)
                    out[i] = c * sample(pa, sx, sy) + (1 - c) * out[i]
                    out[ff + i] = c * sample(pb, sx, sy) + (1 - c) * out[ff + i]
                    total += c
                }
            }
        }}}}}}}
        return total / Float(ff)
    }
}
