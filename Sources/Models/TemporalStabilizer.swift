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
    }

    /// Starts the history afresh from a frame whose colour is given, not predicted (a
    /// keyframe): the next frames blend from it.
    package func restart(l: [Float], ab: [Float]) {
        previousL = l
        previousAB = ab
        previousHistogram = Self.histogram(l)
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
        return cut
    }
}
