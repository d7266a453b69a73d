@testable import ColorScience
import XCTest

/// The drift metric on made-up shots whose drift is known: a textured picture panning one
/// pixel a frame, its colour fixed or sliding at a known rate, with a cut, and against a truth.
final class DriftMeterTests: XCTestCase {
    let w = 160, h = 96

    /// A w×h plane of `value(x, y)`.
    func plane(_ value: (Int, Int) -> Float) -> [Float] {
        var p = [Float](repeating: 0, count: w * h)
        for y in 0..<h { for x in 0..<w { p[y * w + x] = value(x, y) } }
        return p
    }

    /// The drift over `frames` frames of L and a* from `frame(t)` (b* 0), followed with
    /// `tracking`; at least `atLeast` regions must have been followed.
    func drift(_ tracking: DriftMeter.Tracking, frames: Int, atLeast tracks: Int, _ frame: (Int) -> (l: [Float], a: [Float])) -> Double {
        var meter = DriftMeter()
        meter.tracking = tracking
        let b = [Float](repeating: 0, count: w * h)
        for t in 0..<frames {
            let (l, a) = frame(t)
            meter.add(l: l, a: a, b: b, width: w, height: h)
        }
        meter.finish()
        XCTAssertGreaterThanOrEqual(meter.tracksCounted, tracks)
        return meter.value
    }

    /// Lightness texture (smooth noise, 20…80) shifted `shift` pixels to the left.
    func texture(shift: Int, seed: UInt64) -> [Float] { texture(shift: Float(shift), seed: seed) }

    /// The same texture shifted by any amount, whole pixels or not.
    func texture(shift: Float, seed: UInt64) -> [Float] {
        var state = seed
        func next() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24)
        }
        // Coarse random grid, bilinear: structure at every block's scale.
        let gw = (w + 64) / 8 + 2, gh = h / 8 + 2
        let grid = (0..<(gw * gh)).map { _ in 20 + 60 * next() }
        var l = [Float](repeating: 0, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                let sx = (Float(x) + shift) / 8, sy = Float(y) / 8
                let x0 = Int(sx), y0 = Int(sy), tx = sx - Float(x0), ty = sy - Float(y0)
                let g = { (i: Int, j: Int) in grid[j * gw + i] }
                l[y * w + x] = (g(x0, y0) * (1 - tx) + g(x0 + 1, y0) * tx) * (1 - ty) + (g(x0, y0 + 1) * (1 - tx) + g(x0 + 1, y0 + 1) * tx) * ty
            }
        }
        return l
    }

    func testFixedColourThroughAPanHasNoDrift() {
        var meter = DriftMeter()
        let a = [Float](repeating: 12, count: w * h), b = [Float](repeating: -7, count: w * h)
        for t in 0..<40 { meter.add(l: texture(shift: t, seed: 1), a: a, b: b, width: w, height: h) }
        meter.finish()
        XCTAssertGreaterThan(meter.tracksCounted, 100)
        XCTAssertLessThan(meter.value, 1e-4)
    }

    /// Every pixel's a rises 0.5 a frame: a track begun at frame s has drifted 0.5·(t − s) at
    /// frame t; the seeds are all at frame 0 (the pan keeps most blocks), so the mean over
    /// frames 1…39 is 0.5 · 20 = 10.
    func testSlidingColourDriftsAtItsRate() {
        var meter = DriftMeter()
        let b = [Float](repeating: 0, count: w * h)
        for t in 0..<40 {
            let a = [Float](repeating: 0.5 * Float(t), count: w * h)
            meter.add(l: texture(shift: t, seed: 2), a: a, b: b, width: w, height: h)
        }
        meter.finish()
        XCTAssertEqual(meter.value, 10, accuracy: 1)
    }

    /// Colour that changes only at a cut is no drift: each shot is measured on its own.
    func testACutIsNotDrift() {
        var meter = DriftMeter()
        for t in 0..<40 {
            let shot = t < 20
            // The second shot is a different, much brighter picture.
            let l = texture(shift: t, seed: shot ? 3 : 4).map { shot ? $0 * 0.5 : 50 + $0 * 0.6 }
            let a = [Float](repeating: shot ? -20 : 30, count: w * h), b = [Float](repeating: shot ? 10 : -25, count: w * h)
            meter.add(l: l, a: a, b: b, width: w, height: h)
        }
        meter.finish()
        XCTAssertGreaterThan(meter.tracksCounted, 100)
        XCTAssertLessThan(meter.value, 1e-4)
    }

    /// Against a truth: the truth's own drift over the same regions, and the difference's.
    func testTruthAndDifference() {
        var meter = DriftMeter()
        for t in 0..<40 {
            let l = texture(shift: t, seed: 5)
            // Ours slides in a at 0.5 a frame; the truth slides in b at 0.5 a frame.
            let ours = (a: [Float](repeating: 0.5 * Float(t), count: w * h), b: [Float](repeating: 0, count: w * h))
            let truth = (a: [Float](repeating: 0, count: w * h), b: [Float](repeating: 0.5 * Float(t), count: w * h))
            meter.add(l: l, a: ours.a, b: ours.b, width: w, height: h, truth: truth)
        }
        meter.finish()
        XCTAssertEqual(meter.value, 10, accuracy: 1)
        XCTAssertEqual(meter.truthValue, meter.value, accuracy: 1e-3)
        // The difference moves along (+0.5, −0.5) a frame: √2 times as far.
        XCTAssertEqual(meter.differenceValue, meter.value * 2.squareRoot(), accuracy: 1e-2)
    }

    /// Colour that belongs to its content (a* follows the lightness texture) in a pan of 0.4 px
    /// a frame: no drift when the regions follow the content. Matched at whole pixels, each
    /// frame's 0.4 px rounded to 0, so the blocks stayed put and slid 16 px over their colour
    /// in 40 frames.
    func testColourThatMovesWithItsContentAtSubpixelSpeedHasLittleDrift() {
        let run = { (tracking: DriftMeter.Tracking) in
            self.drift(tracking, frames: 40, atLeast: 100) { t in
                let l = self.texture(shift: 0.4 * Float(t), seed: 6)
                return (l, l.map { ($0 - 50) * 0.6 })
            }
        }
        let subpixel = run(.subpixel), integer = run(.integer)
        print("0.4 px a frame: drift \(subpixel) sub-pixel, \(integer) at whole pixels")
        XCTAssertLessThan(subpixel, 0.6)
        XCTAssertLessThan(subpixel, 0.2 * integer)
    }

    /// A pan of 2 px a frame to the left over smooth content (a ceiling's shading: L changes
    /// little from pixel to pixel), colour moving with it: the regions on the left leave the
    /// frame and are closed. Kept inside the frame by the search, they were held at its border,
    /// where the content next to what left matched well enough, and measured the colour of
    /// whatever passed there.
    func testRegionsThatLeaveTheFrameAreClosed() {
        let value = drift(.subpixel, frames: 40, atLeast: 150) { t in
            let l = self.plane { x, y in 50 + 20 * sin(2 * .pi * Float(x + 2 * t) / 64) + 12 * sin(2 * .pi * Float(y) / 40) }
            return (l, l.map { ($0 - 50) * 0.6 })
        }
        print("2 px a frame out of the frame: drift \(value)")
        XCTAssertLessThan(value, 0.1)
    }

    /// A flat band along the top of the frame (a plain ceiling) above texture, panning: the
    /// band's blocks are matched with the window around them, which reaches out of the frame
    /// (that part left out), and follow the texture below; colour moving with the content
    /// does not drift.
    func testFlatBlocksAtTheEdgeFollowTheTextureBesideThem() {
        let value = drift(.subpixel, frames: 30, atLeast: 100) { t in
            let textured = self.texture(shift: Float(t) * 1.3, seed: 9)
            let l = self.plane { x, y in y < 10 ? 50 : textured[y * self.w + x] }
            return (l, self.plane { x, y in y < 10 ? 5 : (textured[y * self.w + x] - 50) * 0.6 })
        }
        print("flat band at the top edge: drift \(value)")
        XCTAssertLessThan(value, 0.5)
    }

    /// Flat walls in a pan: lightness constant over bands 20 px wide (every 40 px), each band's
    /// colour a gradient that moves with it (as a colorizer's colour on a wall does). A block
    /// inside a band matches everywhere equally well; it moves as the textured window around it
    /// does, instead of staying put and sliding along the gradient.
    func testFlatWallsMoveWithTheTextureAroundThem() {
        let run = { (tracking: DriftMeter.Tracking) in
            self.drift(tracking, frames: 30, atLeast: 50) { t in
                let band = { (x: Int) in (x + t) % 40 < 20 }
                let textured = self.texture(shift: t, seed: 7)
                return (self.plane { x, y in band(x) ? 50 : textured[y * self.w + x] }, self.plane { x, _ in band(x) ? Float((x + t) % 40) : 0 })
            }
        }
        let subpixel = run(.subpixel), integer = run(.integer)
        print("flat bands: drift \(subpixel) following the texture around them, \(integer) each block on its own")
        XCTAssertLessThan(subpixel, 1.2)
        XCTAssertLessThan(subpixel, 0.5 * integer)
    }

    /// Frames of another size, or planes shorter than their sides say, are not read past.
    func testShortPlanesAreIgnored() {
        var meter = DriftMeter()
        meter.add(l: [1, 2, 3], a: [0], b: [0], width: 2, height: 2)
        meter.add(l: [Float](repeating: 50, count: 4), a: [Float](repeating: 0, count: 4), b: [Float](repeating: 0, count: 4), width: 2, height: 2,
                  truth: (a: [0], b: [0]))
        meter.finish()
        XCTAssertEqual(meter.tracksCounted, 0)
        XCTAssertEqual(meter.value, 0)
    }
}
