import Foundation
@testable import ModelFormats
import XCTest

/// Tensor/IO's pixel formulas (shared/specs/tensorio-image-data.md), against values worked
/// out by hand:
///
///     normalize:   scale * value + bias
///     denormalize: (value + bias) * scale      (bias first: not the same formula reversed)
final class WifmNormalizationTests: XCTestCase {
    private let tolerance: Float = 1e-5

    func testStandardZeroToOne() {
        let n = PixelNormalization.zeroToOne
        XCTAssertEqual(n.normalize(0, channel: 0), 0)
        XCTAssertEqual(n.normalize(255, channel: 1), 1, accuracy: tolerance)
        XCTAssertEqual(n.normalize(51, channel: 2), 0.2, accuracy: tolerance) // 51 / 255
        let d = PixelDenormalization.zeroToOne
        XCTAssertEqual(d.denormalize(0.5, channel: 0), 127.5)
        XCTAssertEqual(d.denormalize(1, channel: 2), 255)
        XCTAssertEqual(d.denormalizeToByte(0.5, channel: 0), 127) // C's float → uint8_t truncates
        XCTAssertEqual(d.denormalizeToByte(1, channel: 0), 255)
    }

    func testStandardNegativeOneToOne() {
        let n = PixelNormalization.negativeOneToOne
        XCTAssertEqual(n.normalize(0, channel: 0), -1)
        XCTAssertEqual(n.normalize(255, channel: 0), 1, accuracy: tolerance)
        XCTAssertEqual(n.normalize(127.5, channel: 1), 0, accuracy: tolerance)
        let d = PixelDenormalization.negativeOneToOne
        XCTAssertEqual(d.scale, 127.5)
        XCTAssertEqual(d.redBias, 1)
        XCTAssertEqual(d.denormalize(-1, channel: 0), 0) // (−1 + 1) · 127.5
        XCTAssertEqual(d.denormalize(0, channel: 1), 127.5) // (0 + 1) · 127.5
        XCTAssertEqual(d.denormalize(1, channel: 2), 255) // (1 + 1) · 127.5
        XCTAssertEqual(d.denormalizeToByte(0, channel: 0), 127)
    }

    /// The spec's example: scale 0.004 with ImageNet-like per-channel biases.
    func testScaleAndPerChannelBias() {
        let n = PixelNormalization(scale: 0.004, redBias: -0.485, greenBias: -0.457, blueBias: -0.408)
        XCTAssertEqual(n.normalize(100, channel: 0), -0.085, accuracy: tolerance) // 0.4 − 0.485
        XCTAssertEqual(n.normalize(200, channel: 1), 0.343, accuracy: tolerance) // 0.8 − 0.457
        XCTAssertEqual(n.normalize(255, channel: 2), 0.612, accuracy: tolerance) // 1.02 − 0.408
    }

    /// Denormalize adds the bias before scaling: with scale 2 and bias 1, 3 becomes
    /// (3 + 1) · 2 = 8, where normalize's order would give 3 · 2 + 1 = 7.
    func testDenormalizeIsAsymmetric() {
        let d = PixelDenormalization(scale: 2, redBias: 1, greenBias: 10, blueBias: -3)
        XCTAssertEqual(d.denormalize(3, channel: 0), 8)
        XCTAssertEqual(d.denormalize(3, channel: 1), 26) // (3 + 10) · 2
        XCTAssertEqual(d.denormalize(3, channel: 2), 0) // (3 − 3) · 2
        let n = PixelNormalization(scale: 2, redBias: 1)
        XCTAssertEqual(n.normalize(3, channel: 0), 7)
    }

    /// Tensor/IO's standard pairs are inverses: every byte survives normalize then denormalize.
    func testStandardPairsRoundTripEveryByte() {
        for (n, d) in [(PixelNormalization.zeroToOne, PixelDenormalization.zeroToOne),
                       (.negativeOneToOne, .negativeOneToOne)] {
            for v in 0...255 {
                let back = d.denormalize(n.normalize(Float(v), channel: v % 3), channel: v % 3)
                XCTAssertEqual(back, Float(v), accuracy: 1e-3)
            }
        }
    }

    func testByteConversionClamps() {
        let d = PixelDenormalization.zeroToOne
        XCTAssertEqual(d.denormalizeToByte(-0.1, channel: 0), 0)
        XCTAssertEqual(d.denormalizeToByte(1.5, channel: 0), 255)
        XCTAssertEqual(d.denormalizeToByte(.nan, channel: 0), 0)
        XCTAssertEqual(d.denormalizeToByte(0.999, channel: 0), 254) // 254.745 truncates
    }

    func testEmptyObjectIsNoneAndMissingBiasIsZero() throws {
        let json = Fixture.json(Fixture.v1([
            "inputs": [["name": "input", "normalize": [String: Any]()]],
            "outputs": [["name": "conv7", "denormalize": ["scale": 255, "bias": ["r": 0.5]]]],
        ]))
        let (m, warnings) = try WifmManifest.read(json: Data(json.utf8), entries: nil)
        XCTAssertEqual(m.input(for: m.main).normalize, PixelNormalization.none)
        XCTAssertEqual(m.output(for: m.main).denormalize, PixelDenormalization(scale: 255, redBias: 0.5))
        XCTAssertEqual(warnings.count, 2, "missing g and b each warn: \(warnings)")
    }

    func testStandardOverridesScaleAndBias() throws {
        let json = Fixture.json(Fixture.v1(["inputs": [["name": "input", "normalize": ["standard": "[-1,1]", "scale": 9]]]]))
        let (m, warnings) = try WifmManifest.read(json: Data(json.utf8), entries: nil)
        XCTAssertEqual(m.input(for: m.main).normalize, .negativeOneToOne)
        XCTAssertEqual(warnings.count, 1)
    }

    func testDefaultsWhenNoTensorEntries() throws {
        let (m, _) = try WifmManifest.read(json: Data(Fixture.json(Fixture.v1()).utf8), entries: nil)
        XCTAssertEqual(m.input(for: m.main), WifmManifest.Tensor(name: "input", normalize: .zeroToOne))
        XCTAssertEqual(m.output(for: m.main), WifmManifest.Tensor(name: "conv7", denormalize: .zeroToOne))
    }
}
