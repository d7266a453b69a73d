import Foundation
@testable import Models
import XCTest

/// The colour guide's learned fusion (training/fusion.py), embedded in the binary, run by
/// oneDNN and by the reference backend, gives PyTorch's fused colour on the training
/// script's test pattern (Models/vivify-guide.reference.json: every 97th value of a then b,
/// from the fp16-rounded weights the binary carries).
final class GuideFusionTests: XCTestCase {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Models").path

    /// training/fusion.py's `reference_pattern`: L, transferred ab, weight, automatic ab.
    static func pattern() -> (l: [Float], transferred: [Float], weight: [Float], automatic: [Float]) {
        let f = ColourReference.fineSide, n = f * f
        var l = [Float](repeating: 0, count: n), w = l, t = [Float](repeating: 0, count: 2 * n), auto = t
        for y in 0..<f {
            for x in 0..<f {
                let i = y * f + x, fx = Double(x), fy = Double(y)
                l[i] = Float(50 + 40 * sin(0.11 * fx + 0.05 * fy))
                t[i] = Float(30 * sin(0.07 * fx))
                t[n + i] = Float(25 * cos(0.09 * fy))
                w[i] = Float(0.5 + 0.5 * sin(0.13 * (fx + fy)))
                auto[i] = Float(10 * cos(0.05 * fx + 0.03 * fy))
                auto[n + i] = Float(-8 * sin(0.04 * fy))
            }
        }
        return (l, t, w, auto)
    }

    func testEmbeddedFusionMatchesPyTorchOnBothBackends() throws {
        XCTAssertTrue(GuideFusion.isEmbedded, "this binary carries no fusion network: run Models/make-builtin.sh")
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(Self.models)/vivify-guide.reference.json"))) as! [String: Any]
        let indices = (json["indices"] as! [NSNumber]).map(\.intValue), expected = (json["values"] as! [NSNumber]).map(\.floatValue)
        let p = Self.pattern(), n = p.weight.count
        let blend = (0..<(2 * n)).map { i in p.weight[i % n] * p.transferred[i] + (1 - p.weight[i % n]) * p.automatic[i] }
        // The network is trained: its output is not what a zero gate and residual give.
        let untrained = (0..<(2 * n)).map { i -> Float in
            let g = 1 / (1 + exp(-8 * (p.weight[i % n] - 0.5)))
            return g * p.transferred[i] + (1 - g) * p.automatic[i]
        }
        let moved = zip(indices, expected).map { abs($1 - untrained[$0]) }.max() ?? 0
        XCTAssertGreaterThan(moved, 1, "the reference output is what an untrained network gives")
        for backend in [BackendChoice.onednn, .reference] {
            let fusion = try GuideFusion(backend: backend, precision: .fp32, threads: 2)
            var ab = blend
            try fusion.correct(&ab, l: p.l, transferred: p.transferred, weight: p.weight, automatic: p.automatic)
            let worst = zip(indices, expected).map { abs(ab[$0] - $1) }.max() ?? .infinity
            XCTAssertLessThan(worst, 0.02, "\(backend): ab differs from PyTorch's by \(worst)")
        }
    }
}
