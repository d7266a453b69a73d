import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// Every model in ../shared/models/ncnn, run by both backends, against ncnn itself (PyPI
/// `ncnn`, CPU, fp32) on the same padded input: outputs agree within 2/255.
/// `scripts/ncnn_reference.py` writes the reference; set VIVIFY_NCNN_REFERENCE to its folder
/// (.ci/run does). Without it the test is skipped.
final class NCNNParityTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let models = root.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn").path

    struct Entry: Decodable {
        var family: String
        var model: String
        var param: String
        var input_blob: String
        var output_blob: String
        var input_shape: [Int]
        var output_shape: [Int]
        var files: [String: String]
    }

    struct Manifest: Decodable { var models: [Entry] }

    static func readFloats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    func testEveryModelMatchesNCNN() throws {
        guard let dir = ProcessInfo.processInfo.environment["VIVIFY_NCNN_REFERENCE"] else {
            throw XCTSkip("VIVIFY_NCNN_REFERENCE is not set (run scripts/ncnn_reference.py)")
        }
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: dir + "/manifest.json")))
        XCTAssertEqual(manifest.models.count, 21, "all five families, every file")
        let fast = try DNNLBackend()
        let reference = ReferenceBackend()
        var report: [String] = []
        for e in manifest.models {
            let graph = try NCNNImporter.load(paramPath: "\(Self.models)/\(e.param)", inputName: e.input_blob, outputName: e.output_blob)
            let input = Tensor(shape: Shape(c: e.input_shape[0], h: e.input_shape[1], w: e.input_shape[2]),
                               data: try Self.readFloats("\(dir)/\(e.files["input"]!)"))
            let expected = try Self.readFloats("\(dir)/\(e.files["output"]!)")
            var worst: [String] = []
            for backend in [fast as InferenceBackend, reference] {
                let prepared = try backend.prepare(graph, input: input.shape)
                XCTAssertEqual([prepared.outputShape.c, prepared.outputShape.h, prepared.outputShape.w], e.output_shape, e.model)
                let out = try prepared.run(input)
                let diff = zip(out.data, expected).map { abs($0 - $1) }.max() ?? .infinity
                XCTAssertLessThanOrEqual(diff, 2.0 / 255, "\(e.family)/\(e.model) on \(backend.name)")
                worst.append(String(format: "%@ %.2e", backend.name, diff))
            }
            report.append("\(e.family)/\(e.model): \(worst.joined(separator: ", "))")
        }
        print("ncnn parity (max abs diff, [0,1] units):\n" + report.joined(separator: "\n"))
    }
}
