import Engine
import EngineVulkan
import Foundation
import ModelFormats
import XCTest

/// Instance normalisation in tiles on the Vulkan backend, which runs the statistics passes'
/// rewritten graphs (frozen norms as channel affines, graphs cut at a norm's input) as it
/// runs any graph: tiles against the whole frame on Vulkan and against the reference backend.
final class VulkanInstanceNormTilingTests: ValidatedVulkanTestCase {
    static func values(_ n: Int, seed: UInt64, amplitude: Float = 0.5) -> [Float] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Float(state >> 40) / Float(1 << 24) * 2 - 1) * amplitude
        }
    }

    /// Reflect pad 3 → conv 3→8 3×3 stride 2 (valid) → IN → leaky ReLU → IN → conv 8→8 (same)
    /// → ReLU → conv 8→12 (valid) → pixel shuffle ×2: 3 channels at the input's size.
    static func stackedNorms() -> Graph {
        func conv(_ i: Int, _ o: Int, stride: Int = 1, pad: Int, seed: UInt64) -> Engine.Operation {
            .convolution(ConvolutionParameters(outChannels: o, inChannels: i, kernelH: 3, kernelW: 3, strideH: stride, strideW: stride,
                                               padTop: pad, padLeft: pad, padBottom: pad, padRight: pad,
                                               weights: values(o * i * 9, seed: seed), bias: values(o, seed: seed + 100, amplitude: 0.2)))
        }
        let ops: [Engine.Operation] = [
            .pad(top: 3, left: 3, bottom: 3, right: 3, mode: .reflect),
            conv(3, 8, stride: 2, pad: 0, seed: 1),
            .instanceNorm(scale: values(8, seed: 7).map { 1 + $0 }, bias: values(8, seed: 8), epsilon: 1e-5),
            .activation(.leakyRelu(slope: 0.1)),
            .instanceNorm(scale: values(8, seed: 9).map { 1 + $0 }, bias: values(8, seed: 10), epsilon: 1e-5),
            conv(8, 8, pad: 1, seed: 2),
            .activation(.relu),
            conv(8, 12, pad: 0, seed: 3),
            .pixelShuffle(factor: 2, order: .crd),
        ]
        let nodes = ops.enumerated().map { Node(name: "n\($0.offset)", op: $0.element, inputs: [$0.offset], output: $0.offset + 1) }
        return Graph(valueNames: (0...ops.count).map { "v\($0)" }, nodes: nodes, input: 0, output: ops.count, source: "stacked-norms")
    }

    /// Real-CUGAN's squeeze-excitation with `wholePicturePooling`: the poolings frozen as
    /// C×1×1 constants that broadcast through its 1×1 layers run on Vulkan as any graph does;
    /// 24-pixel tiles give the whole frame's result there and the reference backend's.
    func testWholePicturePoolingTilesLikeTheWholeFrame() throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/models/ncnn/realcugan-se/up2x-no-denoise.param").standardized.path
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is not here: ../shared/models is needed") }
        let vulkan = try VulkanTesting.backend()
        let graph = try NCNNImporter.load(paramPath: path)
        let spec = TilingSpec(scale: 2, padding: 18, border: .reflect, multiple: 2)
        let (h, w) = (30, 44)
        let input = Self.values(3 * h * w, seed: 5, amplitude: 1).map { $0 * 0.5 + 0.5 }
        func run(_ backend: InferenceBackend, tile: Int) throws -> [Float] {
            let runner = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: tile, wholePicturePooling: true)
            var out = [Float](repeating: .nan, count: input.count * 4)
            try input.withUnsafeBufferPointer { i in try out.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: 3, height: h, width: w, output: $0) } }
            return out
        }
        let tiled = try run(vulkan, tile: 24), whole = try run(vulkan, tile: 4096), reference = try run(ReferenceBackend(), tile: 4096)
        XCTAssertFalse(tiled.contains { $0.isNaN })
        let d = zip(tiled, whole).map { abs($0 - $1) }.max()!, r = zip(tiled, reference).map { abs($0 - $1) }.max()!
        XCTAssertLessThanOrEqual(d, 1e-3, "tiles against the whole frame on Vulkan")
        XCTAssertLessThanOrEqual(r, 1e-3, "Vulkan tiles against the reference's whole frame")
    }

    func testStackedNormsTileLikeTheWholeFrame() throws {
        let vulkan = try VulkanTesting.backend()
        let graph = Self.stackedNorms()
        let spec = TilingSpec(scale: 1, padding: 0, border: .reflect, multiple: 4)
        let (h, w) = (53, 47)
        let input = Self.values(3 * h * w, seed: 11, amplitude: 1).map { $0 * 0.5 + 0.5 }
        func run(_ backend: InferenceBackend, tile: Int) throws -> [Float] {
            let runner = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: tile)
            var out = [Float](repeating: .nan, count: input.count)
            try input.withUnsafeBufferPointer { i in try out.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: 3, height: h, width: w, output: $0) } }
            return out
        }
        let tiled = try run(vulkan, tile: 12), whole = try run(vulkan, tile: 4096), reference = try run(ReferenceBackend(), tile: 4096)
        XCTAssertFalse(tiled.contains { $0.isNaN })
        let scale = max(1, reference.map(abs).max()!)
        let d = zip(tiled, whole).map { abs($0 - $1) }.max()!, r = zip(tiled, reference).map { abs($0 - $1) }.max()!
        XCTAssertLessThanOrEqual(d, 1e-4 * scale, "tiles against the whole frame on Vulkan")
        XCTAssertLessThanOrEqual(r, 1e-4 * scale, "Vulkan tiles against the reference's whole frame")
        print(String(format: "stacked norms on Vulkan, 47x53 in 12-pixel tiles: %.1e against its whole frame, %.1e against the reference (output up to %.1f)", d, r, scale))
    }
}
