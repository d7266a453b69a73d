import Foundation
import XCTest

/// scikit-image's `rgb2lab` / `lab2rgb` results, written by `scripts/lab_fixtures.py`.
struct LabFixtures {
    /// 8-bit RGB triplets (flat r, g, b, …) fed to `rgb2lab` as rgb / 255.
    let rgb: [UInt8]
    /// `rgb2lab` of `rgb` (flat L, a, b, …).
    let labOfRGB: [Double]
    /// Lab triplets fed to `lab2rgb`, out-of-gamut ones included (flat L, a, b, …).
    let lab: [Double]
    /// `lab2rgb` of `lab`, clipped to [0, 1] (flat r, g, b, …).
    let rgbOfLab: [Double]

    private struct File: Decodable {
        struct RGBToLab: Decodable { let rgb: [Int]; let lab: [Double] }
        struct LabToRGB: Decodable { let lab: [Double]; let rgb: [Double] }
        let rgb_to_lab: RGBToLab
        let lab_to_rgb: LabToRGB
    }

    /// Loads `Fixtures/lab_fixtures.json` beside this file.
    static func load() throws -> LabFixtures {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/lab_fixtures.json")
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw XCTSkip("Cannot read '\(url.path)'. Regenerate it with `python3 scripts/lab_fixtures.py`.")
        }
        let file = try JSONDecoder().decode(File.self, from: data)
        let fixtures = LabFixtures(rgb: file.rgb_to_lab.rgb.map { UInt8($0) }, labOfRGB: file.rgb_to_lab.lab,
                                   lab: file.lab_to_rgb.lab, rgbOfLab: file.lab_to_rgb.rgb)
        precondition(fixtures.rgb.count == fixtures.labOfRGB.count && fixtures.lab.count == fixtures.rgbOfLab.count
            && fixtures.rgb.count % 3 == 0 && fixtures.lab.count % 3 == 0, "lab_fixtures.json: sets of unequal length")
        return fixtures
    }
}

/// Largest absolute difference and where it is.
struct MaxError: CustomStringConvertible {
    private(set) var value = 0.0
    private(set) var index = -1

    mutating func add(_ a: Double, _ b: Double, at i: Int) {
        let d = abs(a - b)
        if d > value || index < 0 { (value, index) = (d, i) }
    }

    var description: String { String(format: "%.3g (at #%d)", value, index) }
}

/// The 8-bit code of a [0, 1] value: rounded to nearest, halves up.
func byte(_ v: Double) -> UInt8 { UInt8((min(max(v, 0), 1) * 255).rounded()) }
