internal import ColorScience
import Foundation

/// Keeps predicted colour steady across video frames without ghosting: each pixel's ab is an
/// exponential moving average whose memory fades where the lightness changed (something
/// moved), and is reset entirely at scene cuts, found by comparing L histograms.
package final class TemporalStabilizer {
    /// Weight of the history where L did not change at all (0…1).
    package var strength: Float
    /// L change (in L* units) at which the history weight falls to 1/e of `strength`.
    package var lSigma: Float
    /// L1 distance between consecutive 32-bin L histograms (each summing to 1) that counts
    /// as a scene cut.
    package var cutThreshold: Float
    /// Scene cuts seen so far.
    package private(set) var cuts = 0
    private var previousL: [Float] = []
    private var previousAB: [Float] = []
    private var previousHistogram: [Float] = []
    /// Off only to measure what it adds (`VIVIFY_NO_FINAL_STABILIZE=1`).
    package static let finalEnabled = ProcessInfo.processInfo.environment["VIVIFY_NO_FINAL_STABILIZE"] != "1"
    /// Frames given to `apply` or `restart` since the last `reset`.
    private var frames = 0
    /// The last guided frame's final colour at full resolution (`applyFinal`) and the frame it
    /// belongs to (history only when that is the frame before).
    private var finalL: [Float] = [], finalA: [Float] = [], finalB: [Float] = []
    private var finalFrame = -1
    /// Whether the latest `apply` found a cut.
    private var lastCut = false
    /// Weight of the previous frame's final colour where L did not change (`applyFinal`), and
    /// the L change at which it falls to 1/e of that: stricter than the grid's, so that only
    /// content that stands still keeps its colour. Set on six clips made from BSD200 training
    /// photographs as `training/guided_pans.py` makes its held-out ones, and on Big Buck Bunny
    /// (frame 0 as keyframe): off, 0.6/6, 0.6/2, 0.8/2 gave a mean rebalanced margin over grey of
    /// +18.05, +17.73, +17.96, +17.89 on the six at flicker 0.91, 0.66, 0.72, 0.65 × the truth's
    /// (the highest 1.03, 0.79, 0.84, 0.78), and Big Buck Bunny's flicker 1.14, 0.83, 0.88,
    /// 0.78 × the truth's at +5.20 … +5.21. `VIVIFY_FINAL_STRENGTH` and `VIVIFY_FINAL_SIGMA`
    /// set others to measure them.
    package var finalStrength: Float = Float(ProcessInfo.processInfo.environment["VIVIFY_FINAL_STRENGTH"] ?? "") ?? 0.6
    package var finalLSigma: Float = Float(ProcessInfo.processInfo.environment["VIVIFY_FINAL_SIGMA"] ?? "") ?? 2

    /// Makes a stabilizer.
    /// The histogram distance that counts as a cut unless told otherwise.
    package static let defaultCutThreshold: Float = ShotHistogram.cutThreshold

    package init(strength: Float = 0.92, lSigma: Float = 6, cutThreshold: Float = defaultCutThreshold) {
        self.strength = strength
        self.lSigma = lSigma
        self.cutThreshold = cutThreshold
    }

    /// Forgets the history (the next frame starts fresh).
    package func reset() {
        previousL = []
        previousAB = []
        previousHistogram = []
        finalL = []
        finalA = []
        finalB = []
        finalFrame = -1
        frames = 0
    }

    /// Starts the history afresh from a frame whose colour is given, not predicted (a
    /// keyframe): the next frames blend from it.
    /// `final`: the frame's colour at full resolution too, what `applyFinal` blends the next
    /// frame with.
    package func restart(l: [Float], ab: [Float], final: (l: [Float], a: [Float], b: [Float])? = nil) {
        previousL = l
        previousAB = ab
        previousHistogram = Self.histogram(l)
        frames += 1
        lastCut = false
        if let final {
            (finalL, finalA, finalB) = final
            finalFrame = frames
        }
    }

    /// L1 distance between two `histogram`s: above `cutThreshold`, a scene cut.
    static func distance(_ x: [Float], _ y: [Float]) -> Float { ShotHistogram.distance(x, y) }

    static func histogram(_ l: [Float]) -> [Float] { ShotHistogram.of(l) }

    /// Stabilizes `ab` (planar a then b, `width`×`height` each) given the frame's L at the same
    /// size. Returns true when a scene cut reset the history.
    @discardableResult
    package func apply(l: [Float], ab: inout [Float], width: Int, height: Int) -> Bool {
        let n = width * height
        let hist = Self.histogram(l)
        var cut = false
        if previousL.count != n {
            cut = true
        } else {
            if Self.distance(hist, previousHistogram) > cutThreshold {
                cut = true
                cuts += 1
            }
        }
        if !cut {
            let k = -1 / lSigma
            for i in 0..<n {
                let w = strength * exp(abs(l[i] - previousL[i]) * k)
                ab[i] = w * previousAB[i] + (1 - w) * ab[i]
                ab[n + i] = w * previousAB[n + i] + (1 - w) * ab[n + i]
            }
        }
        previousL = l
        previousAB = ab
        previousHistogram = hist
        frames += 1
        lastCut = cut
        return cut
    }

    /// A guided frame's final colour at full resolution, after `apply` stabilized it on the
    /// matching grid: what is added after that grid (the colour's fit to the full-resolution
    /// L, the keyframes' detail and their colour carried pixel by pixel, `KeyframeCarry`) is
    /// matched afresh every frame and shimmers where the content moves fast. Each pixel's a
    /// and b are blended with the previous frame's output at the same pixel (`finalStrength`),
    /// weighted down by the change of the pixel's own L (`finalLSigma`); not where the blend
    /// leaves the gamut. Only when the previous frame's final colour was kept here too (a guided frame or
    /// an exact keyframe) and no cut came between: a frame coloured automatically, a cut or a
    /// new size starts it afresh.
    package func applyFinal(l: [Float], a: inout [Float], b: inout [Float], threads: Int) {
        let n = l.count
        guard a.count == n, b.count == n else { return }
        if finalFrame == frames - 1, !lastCut, finalL.count == n, finalStrength > 0 {
            let k = -1 / finalLSigma, strength = finalStrength, cutoff = 5 * finalLSigma
            let chunks = max(1, min(threads, n / 4096))
            l.withUnsafeBufferPointer { lp in a.withUnsafeMutableBufferPointer { ap in b.withUnsafeMutableBufferPointer { bp in
            finalL.withUnsafeBufferPointer { fl in finalA.withUnsafeBufferPointer { fa in finalB.withUnsafeBufferPointer { fb in
                nonisolated(unsafe) let (lp, ap, bp, fl, fa, fb) = (lp.baseAddress!, ap.baseAddress!, bp.baseAddress!, fl.baseAddress!, fa.baseAddress!, fb.baseAddress!)
                DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                    for i in (n * chunk / chunks)..<(n * (chunk + 1) / chunks) {
                        // Past 5 σ the weight is under 1%: the pixel keeps its own colour.
                        let d = abs(lp[i] - fl[i])
                        if d > cutoff { continue }
                        // Both colours are in the gamut, the history at its own L. Where that L is
                        // within 1 of this one, their blend is taken as it is (it can leave the
                        // gamut only by a hair, which the output's RGB clipping takes); otherwise a
                        // blend that is not in the gamut at this L gives way to this frame's own
                        // colour (checking every pixel cost 3 ms a 640×360 frame on one core).
                        let w = strength * exp(d * k)
                        let na = w * fa[i] + (1 - w) * ap[i], nb = w * fb[i] + (1 - w) * bp[i]
                        if d < 1 || GamutFit.contains(l: lp[i], a: na, b: nb) {
                            ap[i] = na
                            bp[i] = nb
                        }
                    }
                }
            }}}}}}
        }
        finalL = l
        finalA = a
        finalB = b
        finalFrame = frames
    }
}
