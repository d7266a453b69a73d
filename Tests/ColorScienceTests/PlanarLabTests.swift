import ColorScience
import XCTest

/// The float hand-over path: planar float sRGB → L, and Lab → planar float sRGB, against the
/// Double reference, without the rounding to 8 bits of the packed path.
final class PlanarLabTests: XCTestCase {
    /// Every 8-bit grey and a seeded sample of colours, as floats k / 255: L agrees with the
    /// packed path (which reads the same values as bytes) within 1e-4.
    func testLightnessOfPlanarFloatMatchesThePackedPath() {
        var rng = SplitMix64(seed: 7)
        let n = 256 + 4000
        var bytes = [UInt8](repeating: 0, count: 3 * n)
        for i in 0..<256 { bytes[3 * i] = UInt8(i); bytes[3 * i + 1] = UInt8(i); bytes[3 * i + 2] = UInt8(i) }
        for i in (3 * 256)..<(3 * n) { bytes[i] = UInt8(truncatingIfNeeded: rng.next()) }
        var planar = [Float](repeating: 0, count: 3 * n)
        for i in 0..<n { for c in 0..<3 { planar[c * n + i] = Float(bytes[3 * i + c]) / 255 } }
        let converter = LabConverter(threads: 2)
        let packed = converter.lightness(of: bytes, width: n, height: 1)
        var l = [Float](repeating: 0, count: n)
        planar.withUnsafeBufferPointer { p in l.withUnsafeMutableBufferPointer { converter.lightness(planarRGB: p, width: n, height: 1, l: $0) } }
        var worst: Float = 0
        for i in 0..<n { worst = max(worst, abs(l[i] - packed[i])) }
        XCTAssertLessThan(worst, 1e-4)
    }

    /// Random Lab (in and out of gamut) → planar float RGB within 2e-5 of the reference's
    /// clipped sRGB, and 1e-6 of clipping, on odd sizes split over threads.
    func testLabToPlanarRGBMatchesTheReference() {
        var rng = SplitMix64(seed: 11)
        let (w, h) = (61, 37)
        let n = w * h
        var l = [Float](repeating: 0, count: n), a = l, b = l
        for i in 0..<n {
            l[i] = Float(rng.next() % 10001) / 100
            a[i] = Float(Int(rng.next() % 2561)) / 10 - 128
            b[i] = Float(Int(rng.next() % 2561)) / 10 - 128
        }
        var rgb = [Float](repeating: -1, count: 3 * n)
        let converter = LabConverter(threads: 3)
        l.withUnsafeBufferPointer { lp in a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in
            rgb.withUnsafeMutableBufferPointer { converter.labToRGB(l: lp, a: ap, b: bp, width: w, height: h, planarRGB: $0) }
        } } }
        var worst = 0.0
        for i in 0..<n {
            let r = LabReference.labToRGB(Double(l[i]), Double(a[i]), Double(b[i]))
            for (c, v) in [r.r, r.g, r.b].enumerated() {
                let got = rgb[c * n + i]
                XCTAssertTrue(got >= 0 && got <= 1, "pixel \(i) channel \(c): \(got) outside [0, 1]")
                worst = max(worst, abs(Double(got) - v))
            }
        }
        XCTAssertLessThan(worst, 2e-5)
    }
}

