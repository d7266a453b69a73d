import Foundation
import ColorScience
import XCTest

/// The colorizer's resampling: area shrinking, and colour brought back to full resolution
/// bilinearly or by the guided filter.
final class ResampleTests: XCTestCase {
    func testAreaShrinkAveragesBlocks() {
        let w = 8, h = 6
        let src = (0..<(w * h)).map { Float(($0 * 37) % 11) }
        var dst: [Float] = []
        Resample.area(src, w, h, into: &dst, 4, 3)
        for y in 0..<3 {
            for x in 0..<4 {
                let block = [src[2 * y * w + 2 * x], src[2 * y * w + 2 * x + 1], src[(2 * y + 1) * w + 2 * x], src[(2 * y + 1) * w + 2 * x + 1]]
                XCTAssertEqual(dst[y * 4 + x], block.reduce(0, +) / 4, accuracy: 1e-5)
            }
        }
        // A fractional factor keeps the mean and a constant plane.
        Resample.area([Float](repeating: 42, count: 640 * 360), 640, 360, into: &dst, 224, 224)
        XCTAssertTrue(dst.allSatisfy { abs($0 - 42) < 1e-3 })
        Resample.area(src, w, h, into: &dst, 3, 5)
        XCTAssertEqual(dst.reduce(0, +) / 15, src.reduce(0, +) / Float(w * h), accuracy: 1e-4)
    }

    /// Zero slopes give exactly the bilinear colour (then the gamut fit): the old path.
    func testBilinearModelIsBilinear() {
        let sw = 5, sh = 4, dw = 17, dh = 9
        let ab = (0..<(2 * sw * sh)).map { Float(($0 * 13) % 41) - 20 }
        let l = [Float](repeating: 60, count: dw * dh)
        var coefficients: [Float] = [], a: [Float] = [], b: [Float] = []
        Resample.bilinearModel(ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: l, a: &a, b: &b, dw, dh)
        var ea: [Float] = [], eb: [Float] = []
        Resample.bilinear(Array(ab[0..<(sw * sh)]), sw, sh, into: &ea, dw, dh)
        Resample.bilinear(Array(ab[(sw * sh)...]), sw, sh, into: &eb, dw, dh)
        for i in 0..<(dw * dh) {
            var x = ea[i], y = eb[i]
            GamutFit.fit(l: 60, a: &x, b: &y)
            XCTAssertEqual(a[i], x)
            XCTAssertEqual(b[i], y)
        }
    }

    /// A red object on a blue background, its edge a step in L at full resolution; the model
    /// sees it at 1/8 size, where the colours blur into each other across a few pixels.
    /// Bilinear upsampling bleeds colour across the edge; the guided filter puts the change
    /// where L changes.
    func testGuidedColourFollowsTheEdge() {
        let fw = 256, fh = 64, sw = 32, sh = 8, edge = 131
        let fullL = (0..<(fw * fh)).map { Float($0 % fw < edge ? 40 : 70) }
        var lowL: [Float] = []
        Resample.area(fullL, fw, fh, into: &lowL, sw, sh)
        // The model's colour: a* +40 left, −30 right, b* −40 / +20, smeared over 3 pixels.
        var ab = [Float](repeating: 0, count: 2 * sw * sh)
        for y in 0..<sh {
            for x in 0..<sw {
                let t = min(max((Float(x) + 0.5 - Float(edge) / 8 + 1.5) / 3, 0), 1)
                ab[y * sw + x] = 40 * (1 - t) - 30 * t
                ab[sw * sh + y * sw + x] = -40 * (1 - t) + 20 * t
            }
        }
        var coefficients: [Float] = [], a: [Float] = [], b: [Float] = []
        GuidedFilter.coefficients(guide: lowL, ab: ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: fullL, a: &a, b: &b, fw, fh)
        var ba: [Float] = [], bb: [Float] = []
        Resample.bilinearModel(ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: fullL, a: &ba, b: &bb, fw, fh)
        // Mean error against the two true colours within 12 px of the edge, row 32.
        func bleed(_ a: [Float], _ b: [Float]) -> Float {
            var sum: Float = 0
            for x in (edge - 12)..<(edge + 12) {
                let (ta, tb): (Float, Float) = x < edge ? (40, -40) : (-30, 20)
                sum += ((a[32 * fw + x] - ta) * (a[32 * fw + x] - ta) + (b[32 * fw + x] - tb) * (b[32 * fw + x] - tb)).squareRoot()
            }
            return sum / 24
        }
        let guided = bleed(a, b), bilinear = bleed(ba, bb)
        print(String(format: "colour error within 12 px of an L edge: guided %.1f, bilinear %.1f (ab units)", guided, bilinear))
        XCTAssertLessThan(guided, 0.5 * bilinear)
        // Three model pixels away from the edge, the guided colour is flat: its halo stays
        // within 3 a* units (about one just-noticeable difference).
        let left = (8..<(edge - 24)).map { a[32 * fw + $0] }
        XCTAssertLessThan(left.max()! - left.min()!, 3)
    }

    /// Where L is flat, blotchy model colour (noise at the model's size) comes out smoother
    /// than bilinear upsampling makes it, and its mean is kept.
    func testGuidedSmoothsFlatAreas() {
        let sw = 32, sh = 32, fw = 256, fh = 256
        var state: UInt64 = 12345
        func noise() -> Float {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int((state >> 33) % 2001) - 1000) / 100
        }
        let ab = (0..<(2 * sw * sh)).map { i in (i < sw * sh ? 20 : -10) + noise() }
        let fullL = [Float](repeating: 55, count: fw * fh)
        var lowL: [Float] = []
        Resample.area(fullL, fw, fh, into: &lowL, sw, sh)
        var coefficients: [Float] = [], a: [Float] = [], b: [Float] = [], ba: [Float] = [], bb: [Float] = []
        GuidedFilter.coefficients(guide: lowL, ab: ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: fullL, a: &a, b: &b, fw, fh)
        Resample.bilinearModel(ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: fullL, a: &ba, b: &bb, fw, fh)
        func std(_ v: [Float]) -> Float {
            let m = v.reduce(0, +) / Float(v.count)
            return (v.map { ($0 - m) * ($0 - m) }.reduce(0, +) / Float(v.count)).squareRoot()
        }
        XCTAssertLessThan(std(a), 0.5 * std(ba), "flat L: guided colour is smoother")
        XCTAssertEqual(a.reduce(0, +) / Float(a.count), 20, accuracy: 1)
    }

    func testSaturationScalesChroma() {
        let ab: [Float] = [10, 10, 10, 10, -20, -20, -20, -20]
        var coefficients: [Float] = [], a: [Float] = [], b: [Float] = []
        Resample.bilinearModel(ab, 2, 2, into: &coefficients)
        Resample.linearModelAB(coefficients, 2, 2, fittedTo: [Float](repeating: 50, count: 16), saturation: 1.5, a: &a, b: &b, 4, 4)
        XCTAssertTrue(a.allSatisfy { abs($0 - 15) < 1e-4 } && b.allSatisfy { abs($0 + 30) < 1e-4 })
        Resample.linearModelAB(coefficients, 2, 2, fittedTo: [Float](repeating: 50, count: 16), saturation: 0, a: &a, b: &b, 4, 4)
        XCTAssertTrue(a.allSatisfy { $0 == 0 } && b.allSatisfy { $0 == 0 })
        // Far past the gamut: the chroma is reduced to fit, L never changes.
        Resample.linearModelAB(coefficients, 2, 2, fittedTo: [Float](repeating: 50, count: 16), saturation: 4, a: &a, b: &b, 4, 4)
        XCTAssertTrue(a.allSatisfy { $0 > 10 && $0 <= 40 })
    }
}
