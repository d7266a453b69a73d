import ColorScience
import Foundation
import XCTest

/// The fast path against the reference (and scikit-image), on fixtures, seeded random
/// input and every 8-bit colour; thread counts and odd sizes.
final class LabConverterTests: XCTestCase {
    // MARK: - Accuracy

    func testFastRGBToLabMatchesReferenceAndScikitImageOnFixtures() throws {
        let f = try LabFixtures.load()
        let n = f.rgb.count / 3
        let lab = LabConverter().lab(of: f.rgb, width: n, height: 1)
        var ref = (MaxError(), MaxError(), MaxError()), sk = (MaxError(), MaxError(), MaxError())
        for i in 0..<n {
            let r = LabReference.rgbToLab(Double(f.rgb[3 * i]) / 255, Double(f.rgb[3 * i + 1]) / 255, Double(f.rgb[3 * i + 2]) / 255)
            ref.0.add(Double(lab.l[i]), r.l, at: i)
            ref.1.add(Double(lab.a[i]), r.a, at: i)
            ref.2.add(Double(lab.b[i]), r.b, at: i)
            sk.0.add(Double(lab.l[i]), f.labOfRGB[3 * i], at: i)
            sk.1.add(Double(lab.a[i]), f.labOfRGB[3 * i + 1], at: i)
            sk.2.add(Double(lab.b[i]), f.labOfRGB[3 * i + 2], at: i)
        }
        let message = "fast rgbToLab over \(n) fixture colours: vs reference max |ΔL| \(ref.0), |Δa| \(ref.1), |Δb| \(ref.2); "
            + "vs skimage |ΔL| \(sk.0), |Δa| \(sk.1), |Δb| \(sk.2)"
        print(message)
        XCTAssertLessThanOrEqual(max(ref.0.value, ref.1.value, ref.2.value), 1e-3, message)
        XCTAssertLessThanOrEqual(max(sk.0.value, sk.1.value, sk.2.value), 1e-3, message)
    }

    /// Every 8-bit colour whose index is a multiple of 5 (3.4 million, all of R, G and B's
    /// values taking part) against the reference.
    func testFastRGBToLabMatchesReferenceAcrossTheCube() {
        let stride = 5, n = ((1 << 24) + stride - 1) / stride
        var rgb = [UInt8](repeating: 0, count: 3 * n)
        for i in 0..<n { rgb.setPixel(i, colour: i * stride) }
        let lab = LabConverter().lab(of: rgb, width: n, height: 1)
        var dl = MaxError(), da = MaxError(), db = MaxError()
        rgb.withUnsafeBufferPointer { rgb in
            for i in 0..<n {
                let r = LabReference.rgbToLab(Double(rgb[3 * i]) / 255, Double(rgb[3 * i + 1]) / 255, Double(rgb[3 * i + 2]) / 255)
                dl.add(Double(lab.l[i]), r.l, at: i * stride)
                da.add(Double(lab.a[i]), r.a, at: i * stride)
                db.add(Double(lab.b[i]), r.b, at: i * stride)
            }
        }
        let message = "fast rgbToLab vs reference over \(n) colours (every 5th of the cube): max |ΔL| \(dl), |Δa| \(da), |Δb| \(db) (# = colour 0xRRGGBB)"
        print(message)
        XCTAssertLessThanOrEqual(max(dl.value, da.value, db.value), 1e-3, message)
    }

    func testFastLabToRGBMatchesReferenceAndScikitImageOnFixtures() throws {
        let f = try LabFixtures.load()
        let n = f.lab.count / 3
        let (l, a, b) = planes(f.lab)
        let rgb = LabConverter().rgb(l: l, a: a, b: b, width: n, height: 1)
        var ref = LevelStats(), sk = LevelStats()
        for i in 0..<n {
            let r = LabReference.labToRGB(Double(l[i]), Double(a[i]), Double(b[i]))
            ref.add(rgb[3 * i], byte(r.r)); ref.add(rgb[3 * i + 1], byte(r.g)); ref.add(rgb[3 * i + 2], byte(r.b))
            for c in 0..<3 { sk.add(rgb[3 * i + c], byte(f.rgbOfLab[3 * i + c])) }
        }
        let message = "fast labToRGB over \(n) fixture Lab values (out of gamut included): vs reference \(ref); vs skimage \(sk)"
        print(message)
        XCTAssertLessThanOrEqual(ref.maxLevels, 1, message)
        XCTAssertLessThanOrEqual(sk.maxLevels, 1, message)
    }

    /// Seeded random Lab, most of it out of gamut (L in [-20, 120], a and b in [-160, 160]).
    func testFastLabToRGBMatchesReferenceOnRandomLab() {
        let n = 1 << 20
        var rng = SplitMix64(seed: 42)
        var l = [Float](repeating: 0, count: n), a = l, b = l
        for i in 0..<n {
            l[i] = Float(rng.unit() * 140 - 20)
            a[i] = Float(rng.unit() * 320 - 160)
            b[i] = Float(rng.unit() * 320 - 160)
        }
        let rgb = LabConverter().rgb(l: l, a: a, b: b, width: 1024, height: 1024)
        var ref = LevelStats()
        for i in 0..<n {
            let r = LabReference.labToRGB(Double(l[i]), Double(a[i]), Double(b[i]))
            ref.add(rgb[3 * i], byte(r.r)); ref.add(rgb[3 * i + 1], byte(r.g)); ref.add(rgb[3 * i + 2], byte(r.b))
        }
        let message = "fast labToRGB vs reference over \(n) seeded random Lab values: \(ref)"
        print(message)
        XCTAssertLessThanOrEqual(ref.maxLevels, 1, message)
    }

    /// All 16,777,216 colours through rgbToLab then labToRGB (a 4096×4096 frame).
    func testRoundTripOfEveryEightBitColour() {
        let side = 4096, n = side * side
        var rgb = [UInt8](repeating: 0, count: 3 * n)
        for i in 0..<n { rgb.setPixel(i, colour: i) }
        let converter = LabConverter()
        let lab = converter.lab(of: rgb, width: side, height: side)
        let back = converter.rgb(l: lab.l, a: lab.a, b: lab.b, width: side, height: side)
        var notExact = 0, maxLevels = 0
        if back != rgb {
            back.withUnsafeBufferPointer { back in
                rgb.withUnsafeBufferPointer { rgb in
                    for i in 0..<n where back[3 * i] != rgb[3 * i] || back[3 * i + 1] != rgb[3 * i + 1] || back[3 * i + 2] != rgb[3 * i + 2] {
                        notExact += 1
                        for c in 0..<3 { maxLevels = max(maxLevels, abs(Int(back[3 * i + c]) - Int(rgb[3 * i + c]))) }
                    }
                }
            }
        }
        let message = "round trip of all \(n) 8-bit colours: \(notExact) not exact, max error \(maxLevels) levels"
        print(message)
        XCTAssertLessThanOrEqual(maxLevels, 1, message)
        XCTAssertEqual(notExact, 0, message)
    }

    // MARK: - Threads, sizes, buffers

    func testThreadCountsGiveIdenticalOutput() {
        let (w, h) = (641, 363)
        let rgb = randomRGB(w * h, seed: 7)
        var rng = SplitMix64(seed: 8)
        var l = [Float](repeating: 0, count: w * h), a = l, b = l
        for i in 0..<w * h {
            l[i] = Float(rng.unit() * 140 - 20)
            a[i] = Float(rng.unit() * 320 - 160)
            b[i] = Float(rng.unit() * 320 - 160)
        }
        let one = LabConverter(threads: 1)
        let lab1 = one.lab(of: rgb, width: w, height: h)
        let rgb1 = one.rgb(l: l, a: a, b: b, width: w, height: h)
        let light1 = one.lightness(of: rgb, width: w, height: h)
        for threads in [2, 3, 7, 64, 1000] {
            let c = LabConverter(threads: threads)
            let lab = c.lab(of: rgb, width: w, height: h)
            XCTAssert(lab.l == lab1.l && lab.a == lab1.a && lab.b == lab1.b, "rgbToLab with \(threads) threads differs from 1 thread")
            XCTAssert(c.rgb(l: l, a: a, b: b, width: w, height: h) == rgb1, "labToRGB with \(threads) threads differs from 1 thread")
            XCTAssert(c.lightness(of: rgb, width: w, height: h) == light1, "lightness with \(threads) threads differs from 1 thread")
        }
    }

    func testOddSizesMatchThePerPixelReference() {
        for (w, h) in [(7, 5), (1, 1), (1, 13), (13, 1), (3, 2), (9, 17), (517, 3)] {
            for threads in [1, 2, 4] {
                let c = LabConverter(threads: threads)
                let rgb = randomRGB(w * h, seed: UInt64(w * 100 + h))
                let lab = c.lab(of: rgb, width: w, height: h)
                let back = c.rgb(l: lab.l, a: lab.a, b: lab.b, width: w, height: h)
                XCTAssertEqual(back, rgb, "\(w)×\(h), \(threads) threads: round trip not exact")
                for i in 0..<w * h {
                    let r = LabReference.rgbToLab(Double(rgb[3 * i]) / 255, Double(rgb[3 * i + 1]) / 255, Double(rgb[3 * i + 2]) / 255)
                    let d = max(abs(Double(lab.l[i]) - r.l), abs(Double(lab.a[i]) - r.a), abs(Double(lab.b[i]) - r.b))
                    XCTAssertLessThanOrEqual(d, 1e-3, "\(w)×\(h), \(threads) threads, pixel \(i)")
                }
            }
        }
    }

    func testEmptyFrameIsANoOp() {
        let c = LabConverter()
        XCTAssertEqual(c.lab(of: [], width: 0, height: 0).l, [])
        XCTAssertEqual(c.rgb(l: [], a: [], b: [], width: 0, height: 7), [])
        XCTAssertEqual(c.lightness(of: [], width: 5, height: 0), [])
    }

    func testLightnessIsBitIdenticalToTheLPlane() {
        let (w, h) = (333, 77)
        let rgb = randomRGB(w * h, seed: 11)
        let c = LabConverter()
        XCTAssert(c.lightness(of: rgb, width: w, height: h) == c.lab(of: rgb, width: w, height: h).l)
    }

    /// Buffers may be larger than the frame: nothing past the frame is written (the last
    /// pixel of each chunk is stored byte by byte for that reason).
    func testNothingPastTheFrameIsWritten() {
        let (w, h) = (5, 3), n = w * h
        let c = LabConverter(threads: 3)
        var rgb = [UInt8](repeating: 0xAB, count: 3 * n + 8)
        let l = [Float](repeating: 50, count: n), a = [Float](repeating: 10, count: n), b = [Float](repeating: -10, count: n)
        l.withUnsafeBufferPointer { l in a.withUnsafeBufferPointer { a in b.withUnsafeBufferPointer { b in
            rgb.withUnsafeMutableBufferPointer { c.labToRGB(l: l, a: a, b: b, width: w, height: h, rgb: $0) }
        } } }
        XCTAssertEqual(Array(rgb[(3 * n)...]), [UInt8](repeating: 0xAB, count: 8))
        var planes = [Float](repeating: -1, count: n + 4)
        let src = randomRGB(n, seed: 3)
        src.withUnsafeBufferPointer { src in
            planes.withUnsafeMutableBufferPointer { c.lightness(rgb: src, width: w, height: h, l: $0) }
        }
        XCTAssertEqual(Array(planes[n...]), [-1, -1, -1, -1])
    }

    // MARK: - Helpers

    private func planes(_ flat: [Double]) -> ([Float], [Float], [Float]) {
        let n = flat.count / 3
        return ((0..<n).map { Float(flat[3 * $0]) }, (0..<n).map { Float(flat[3 * $0 + 1]) }, (0..<n).map { Float(flat[3 * $0 + 2]) })
    }

    private func randomRGB(_ pixels: Int, seed: UInt64) -> [UInt8] {
        var rng = SplitMix64(seed: seed)
        return (0..<3 * pixels).map { _ in UInt8(truncatingIfNeeded: rng.next() >> 56) }
    }
}

/// How far 8-bit results are from expected ones.
struct LevelStats: CustomStringConvertible {
    private(set) var maxLevels = 0
    private(set) var notExact = 0
    private(set) var count = 0

    mutating func add(_ got: UInt8, _ expected: UInt8) {
        count += 1
        let d = abs(Int(got) - Int(expected))
        if d > 0 { notExact += 1 }
        maxLevels = max(maxLevels, d)
    }

    var description: String { "max \(maxLevels) level(s), \(notExact) of \(count) channel values not exact" }
}

/// A small seeded generator (SplitMix64), so that every run sees the same input.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

extension [UInt8] {
    /// Writes colour index `c` (0 … 2^24 − 1, as 0xRRGGBB) at pixel `i`.
    mutating func setPixel(_ i: Int, colour c: Int) {
        self[3 * i] = UInt8(truncatingIfNeeded: c >> 16)
        self[3 * i + 1] = UInt8(truncatingIfNeeded: c >> 8)
        self[3 * i + 2] = UInt8(truncatingIfNeeded: c)
    }
}
