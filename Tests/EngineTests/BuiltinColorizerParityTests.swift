import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The built-in colorizer's network (Models/vivify-color.param: the MobileNetV2 encoder with
/// depthwise convolutions, ReLU6 clips, asymmetric 'same' padding, residual adds, global
/// pooling broadcast over a map, and the decoder) run by both backends against PyTorch's
/// output of the same fp16-rounded weights on the same test pattern (training/color.py writes
/// Models/vivify-color.reference.bin at export).
final class BuiltinColorizerParityTests: XCTestCase {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Models").path

    /// training/color.py's `reference_input`, as (L − 50) / 50.
    static func referenceInput(size: Int = 224) -> [Float] {
        var out = [Float](repeating: 0, count: size * size)
        for y in 0..<size {
            for x in 0..<size {
                var l = 50 + 30 * sin(Double(x) / 9) * cos(Double(y) / 13) + 12 * sin(Double(x + 2 * y) / 3)
                if (60..<120).contains(y) && (80..<150).contains(x) { l = 85 }
                out[y * size + x] = Float((min(max(l, 0), 100) - 50) / 50)
            }
        }
        return out
    }

    func testBothBackendsMatchPyTorch() throws {
        let graph = try NCNNImporter.load(paramPath: "\(Self.models)/vivify-color.param", inputName: "in0", outputName: "out0")
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(Self.models)/vivify-color.reference.bin"))
        let expected = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let input = Tensor(shape: Shape(c: 1, h: 224, w: 224), data: Self.referenceInput())
        var report: [String] = []
        for backend in [try DNNLBackend() as InferenceBackend, ReferenceBackend()] {
            let prepared = try backend.prepare(graph, input: input.shape)
            XCTAssertEqual([prepared.outputShape.c, prepared.outputShape.h, prepared.outputShape.w], [2, 56, 56])
            let out = try prepared.run(input)
            XCTAssertEqual(out.data.count, expected.count)
            let diffs = zip(out.data, expected).map { abs($0 - $1) * 110 }
            let worst = diffs.max() ?? .infinity, mean = diffs.reduce(0, +) / Float(diffs.count)
            // In CIE a*b* units: fp32 summation order differs (oneDNN's Winograd and blocked
            // kernels), fed through ~60 layers and a softmax over the colour bins.
            XCTAssertLessThanOrEqual(worst, 1.0, "\(backend.name): max |Δab| \(worst)")
            XCTAssertLessThanOrEqual(mean, 0.05, "\(backend.name): mean |Δab| \(mean)")
            report.append(String(format: "%@ max %.2e mean %.2e", backend.name, worst, mean))
        }
        print("vivify-color vs PyTorch (ab units): " + report.joined(separator: ", "))
    }
}
