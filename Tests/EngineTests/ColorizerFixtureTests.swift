import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The published colorizer architectures of richzhang/colorization (ECCV16 and SIGGRAPH17 with
/// user hints), at 1/16 width with seeded random weights, exported to ncnn by
/// `scripts/colorizer_fixtures.py` (its own writer), run by both backends against PyTorch's
/// output of the same graph: max abs diff ≤ 1e-3 in the graph's ab/110 units.
///
/// Inside the graphs: everything from the first convolution to the ab output (ECCV16: softmax
/// over 313 bins, the 313→2 expectation and the ×4 bilinear upsampling; SIGGRAPH17: the U-Net
/// with shortcut additions, transposed convolutions and tanh). Outside: (L − 50)/100 (and for
/// SIGGRAPH17 ab hints/110 and mask − 0.5 as channels 1–3), and ×110 on the output.
/// `Fixtures/colorizers/manifest.json` records shapes, seeds, sizes and the licence.
final class ColorizerFixtureTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/colorizers").path

    struct Entry: Decodable {
        var arch: String
        var param: String
        var input: String
        var output: String
        var input_blob: String
        var output_blob: String
        var input_shape: [Int]
        var output_shape: [Int]
    }

    struct Manifest: Decodable { var models: [Entry] }

    static func readFloats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: URL(fileURLWithPath: fixtures + "/manifest.json")))
    }

    /// The imported graph keeps the layer types of the original architecture.
    func testGraphsKeepTheArchitecture() throws {
        for e in try Self.manifest().models {
            let graph = try NCNNImporter.load(paramPath: "\(Self.fixtures)/\(e.param)", inputName: e.input_blob, outputName: e.output_blob)
            var dilated = 0, strided = 0, deconvolutions = 0, softmax = 0, bilinear = 0, adds = 0, tanh = 0, affine = 0, leaky = 0
            for node in graph.nodes {
                switch node.op {
                case .convolution(let p):
                    if p.dilationH == 2 { dilated += 1 }
                    if p.strideH == 2 { strided += 1 }
                    if case .leakyRelu(let s) = p.activation, s == 0.2 { leaky += 1 }
                case .deconvolution(let p):
                    XCTAssertEqual([p.kernelH, p.strideH, p.padTop], [4, 2, 1], e.arch)
                    deconvolutions += 1
                case .softmaxChannels: softmax += 1
                case .resize(.bilinear, 4, 4, _, _, false): bilinear += 1
                case .binary(.add, _): adds += 1
                case .activation(.tanh): tanh += 1
                case .channelAffine: affine += 1
                default: break
                }
            }
            if e.arch == "eccv16" {
                // 3 stride-2 convolutions, 6 dilated (blocks 5–6), 1 transposed, 7 batch norms,
                // softmax over the 313 bins, ×4 bilinear.
                XCTAssertEqual([strided, dilated, deconvolutions, affine, softmax, bilinear, adds, tanh], [3, 6, 1, 7, 1, 1, 0, 0])
            } else {
                // 3 subsamplings (x[:, :, ::2, ::2] as stride-2 depthwise 1×1), 6 dilated, 3
                // transposed, 3 shortcut additions, 9 batch norms, leaky ReLU 0.2, tanh.
                XCTAssertEqual([strided, dilated, deconvolutions, affine, adds, tanh, leaky, softmax, bilinear], [3, 6, 3, 9, 3, 1, 1, 0, 0])
            }
        }
    }

    /// Both backends reproduce PyTorch's output of the exported graph.
    func testBothBackendsMatchPyTorch() throws {
        let manifest = try Self.manifest()
        XCTAssertEqual(manifest.models.map(\.arch), ["eccv16", "siggraph17"])
        let backends: [InferenceBackend] = [ReferenceBackend(), try DNNLBackend()]
        var report: [String] = []
        for e in manifest.models {
            let graph = try NCNNImporter.load(paramPath: "\(Self.fixtures)/\(e.param)", inputName: e.input_blob, outputName: e.output_blob)
            let shape = Shape(c: e.input_shape[0], h: e.input_shape[1], w: e.input_shape[2])
            let input = Tensor(shape: shape, data: try Self.readFloats("\(Self.fixtures)/\(e.input)"))
            let expected = try Self.readFloats("\(Self.fixtures)/\(e.output)")
            XCTAssertEqual(expected.count, e.output_shape.reduce(1, *), e.arch)
            var line: [String] = []
            for backend in backends {
                let prepared = try backend.prepare(graph, input: shape)
                XCTAssertEqual([prepared.outputShape.c, prepared.outputShape.h, prepared.outputShape.w], e.output_shape, "\(e.arch) on \(backend.name)")
                let out = try prepared.run(input)
                guard out.data.count == expected.count else { continue }
                let diff = zip(out.data, expected).map { abs($0 - $1) }.max() ?? .infinity
                XCTAssertLessThanOrEqual(diff, 1e-3, "\(e.arch) on \(backend.name)")
                XCTAssertTrue(out.data.allSatisfy(\.isFinite), "\(e.arch) on \(backend.name)")
                line.append(String(format: "%@ %.2e", backend.name, diff))
            }
            report.append("\(e.arch) \(e.input_shape) -> \(e.output_shape): \(line.joined(separator: ", "))")
        }
        print("colorizer fixtures vs PyTorch (max abs diff, ab/110 units):\n" + report.joined(separator: "\n"))
    }
}
