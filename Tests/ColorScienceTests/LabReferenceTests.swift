import ColorScience
import XCTest

/// The Double reference against scikit-image's own numbers (scripts/lab_fixtures.py).
final class LabReferenceTests: XCTestCase {
    func testRGBToLabMatchesScikitImage() throws {
        let f = try LabFixtures.load()
        var dl = MaxError(), da = MaxError(), db = MaxError()
        for i in 0..<f.rgb.count / 3 {
            let lab = LabReference.rgbToLab(Double(f.rgb[3 * i]) / 255, Double(f.rgb[3 * i + 1]) / 255, Double(f.rgb[3 * i + 2]) / 255)
            dl.add(lab.l, f.labOfRGB[3 * i], at: i)
            da.add(lab.a, f.labOfRGB[3 * i + 1], at: i)
            db.add(lab.b, f.labOfRGB[3 * i + 2], at: i)
        }
        let message = "reference vs skimage rgb2lab over \(f.rgb.count / 3) colours: max |ΔL| \(dl), |Δa| \(da), |Δb| \(db)"
        print(message)
        XCTAssertLessThanOrEqual(max(dl.value, da.value, db.value), 1e-3, message)
    }

    func testLabToRGBMatchesScikitImageIncludingOutOfGamut() throws {
        let f = try LabFixtures.load()
        var d = MaxError()
        for i in 0..<f.lab.count / 3 {
            let c = LabReference.labToRGB(f.lab[3 * i], f.lab[3 * i + 1], f.lab[3 * i + 2])
            d.add(c.r, f.rgbOfLab[3 * i], at: i)
            d.add(c.g, f.rgbOfLab[3 * i + 1], at: i)
            d.add(c.b, f.rgbOfLab[3 * i + 2], at: i)
        }
        let message = "reference vs skimage lab2rgb over \(f.lab.count / 3) Lab values (clipped ones included): max |ΔRGB| \(d)"
        print(message)
        XCTAssertLessThanOrEqual(d.value, 1e-3, message)
    }

    func testKnownColours() {
        let white = LabReference.rgbToLab(1, 1, 1)
        XCTAssertEqual(white.l, 100, accuracy: 1e-3)
        XCTAssertEqual(white.a, 0, accuracy: 1e-2)  // skimage's rounded matrix leaves a trace of colour
        XCTAssertEqual(white.b, 0, accuracy: 1e-2)
        let black = LabReference.rgbToLab(0, 0, 0)
        XCTAssertEqual(black.l, 0, accuracy: 1e-12)
        // skimage 0.26: rgb2lab([1, 0, 0]) = (53.240588, 80.092308, 67.202751)
        let red = LabReference.rgbToLab(1, 0, 0)
        XCTAssertEqual(red.l, 53.240588, accuracy: 1e-5)
        XCTAssertEqual(red.a, 80.092308, accuracy: 1e-5)
        XCTAssertEqual(red.b, 67.202751, accuracy: 1e-5)
    }

    func testOutOfGamutLabIsClippedLikeScikitImage() {
        // Far outside: every channel lands on 0 or 1, never outside.
        for (l, a, b) in [(-50.0, 0.0, 0.0), (150.0, 0.0, 0.0), (50.0, 300.0, -300.0), (50.0, -300.0, 300.0), (0.0, 0.0, 500.0)] {
            let c = LabReference.labToRGB(l, a, b)
            for v in [c.r, c.g, c.b] { XCTAssert((0...1).contains(v), "labToRGB(\(l), \(a), \(b)) = \(c)") }
        }
        XCTAssertEqual(LabReference.labToRGB(-50, 0, 0).g, 0)
        XCTAssertEqual(LabReference.labToRGB(150, 0, 0).g, 1)
    }
}
