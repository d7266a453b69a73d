import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// Tiled runs against whole-frame runs on real models.
final class TilerTests: XCTestCase {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/models/ncnn").path

    /// A deterministic test picture: smooth gradients plus hashed noise, values in [0, 1].
    static func picture(channels: Int, height: Int, width: Int, seed: UInt64 = 1) -> [Float] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15
        var out = [Float](repeating: 0, count: channels * height * width)
        for c in 0..<channels {
            for y in 0..<height {
                for x in 0..<width {
                    state = state &* 6364136223846793005 &+ 1442695040888963407
                    let noise = Float(state >> 40) / Float(1 << 24)
                    let g = (Float(x) / Float(width) + Float(y) / Float(height) + Float(c) / 3) / 3
                    out[(c * height + y) * width + x] = 0.6 * g + 0.4 * noise
                }
            }
        }
        return out
    }

    private func compare(_ param: String, _ spec: TilingSpec, tile: Int, height: Int, width: Int, wholePicturePooling: Bool = false) throws -> Float {
        let path = "\(Self.models)/\(param)"
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) not present") }
        let graph = try NCNNImporter.load(paramPath: path)
        let backend = try DNNLBackend()
        let tiled = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: tile, wholePicturePooling: wholePicturePooling)
        let whole = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: max(height, width) + spec.multiple)
        let input = Self.picture(channels: 3, height: height, width: width)
        let n = 3 * height * width * spec.scale * spec.scale
        var a = [Float](repeating: .nan, count: n), b = [Float](repeating: .nan, count: n)
        try input.withUnsafeBufferPointer { i in
            try a.withUnsafeMutableBufferPointer { try tiled.run(input: i, channels: 3, height: height, width: width, output: $0) }
            try b.withUnsafeMutableBufferPointer { try whole.run(input: i, channels: 3, height: height, width: width, output: $0) }
        }
        XCTAssertFalse(a.contains { $0.isNaN }, "every output pixel written")
        return zip(a, b).map { abs($0 - $1) }.max()!
    }

    func testTiledEqualsWholeFrameForUpconv7() throws {
        // 3×3 tiles with a flush last row and column (70 = 32 + 32 + shifted 32).
        let d = try compare("waifu2x-upconv7-photo/scale2.0x_model.param",
                            TilingSpec(scale: 2, padding: 7, border: .replicate, multiple: 2), tile: 32, height: 70, width: 75)
        XCTAssertLessThanOrEqual(d, 1e-5)
    }

    func testTiledEqualsWholeFrameForRealESRGAN() throws {
        // "Same"-padded model: the overlap hides the zero padding only if it covers the receptive
        // field; 18 layers of 3×3 reach 18 px, so padding 18 makes tiles exact.
        let d = try compare("realesr-animevideov3/realesr-animevideov3-x4.param",
                            TilingSpec(scale: 4, padding: 18, border: .reflect), tile: 24, height: 50, width: 41)
        XCTAssertLessThanOrEqual(d, 1e-5)
    }

    /// cunet pools globally per tile (squeeze-excitation), as waifu2x's own tiler does: tiles
    /// differ from the whole frame, but only slightly.
    func testCunetTilesStayCloseToWholeFrame() throws {
        let d = try compare("waifu2x-cunet/scale2.0x_model.param",
                            TilingSpec(scale: 2, padding: 18, border: .replicate, multiple: 2), tile: 32, height: 64, width: 72)
        XCTAssertLessThanOrEqual(d, 0.08, "32-px tiles: measured 0.055 (14/255) here")
        print("cunet tiled vs whole-frame max abs diff: \(d)")
    }

    /// With `wholePicturePooling` the poolings (cunet's and Real-CUGAN's squeeze-excitation)
    /// take the whole picture's averages in statistics passes, frozen as constants that
    /// broadcast: tiles give the whole frame's result, in a pass per pooling and one for the
    /// output.
    func testWholePicturePoolingTilesEqualTheWholeFrame() throws {
        for (param, spec, h, w, pools) in [("waifu2x-cunet/scale2.0x_model.param", TilingSpec(scale: 2, padding: 18, border: .replicate, multiple: 2), 64, 72, 4),
                                           ("realcugan-se/up2x-no-denoise.param", TilingSpec(scale: 2, padding: 18, border: .reflect, multiple: 2), 70, 58, 4),
                                           ("realcugan-se/up4x-no-denoise.param", TilingSpec(scale: 4, padding: 19, border: .reflect, multiple: 2), 40, 90, 4)] {
            let d = try compare(param, spec, tile: 32, height: h, width: w, wholePicturePooling: true)
            XCTAssertLessThanOrEqual(d, 1e-4, "\(param): 32-px tiles against the whole frame")
            let graph = try NCNNImporter.load(paramPath: "\(Self.models)/\(param)")
            XCTAssertEqual(graph.globalPoolIndices.count, pools, param)
            let exact = try TiledRunner(graph: graph, spec: spec, backend: try DNNLBackend(), tileSize: 32, wholePicturePooling: true)
            XCTAssertEqual(exact.passes(height: h, width: w), pools + 1, param)
            let perTile = try TiledRunner(graph: graph, spec: spec, backend: try DNNLBackend(), tileSize: 32)
            XCTAssertEqual(perTile.passes(height: h, width: w), 1, "\(param): pooled per tile unless asked")
        }
    }

    /// A strip (one side within a tile) gets tiles as long as keep a square tile's bordered
    /// area: fewer tiles and borders, the same memory, and still exactly the whole frame's
    /// result for a model without global pooling. A picture larger than a tile both ways
    /// keeps square tiles.
    func testAStripGetsLongTilesOfTheSameArea() throws {
        let path = "\(Self.models)/waifu2x-upconv7-photo/scale2.0x_model.param"
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) not present") }
        let graph = try NCNNImporter.load(paramPath: path)
        let spec = TilingSpec(scale: 2, padding: 7, border: .replicate, multiple: 2)
        let runner = try TiledRunner(graph: graph, spec: spec, backend: try DNNLBackend(), tileSize: 32)
        let square = (32 + 14) * (32 + 14)
        for (h, w) in [(8, 300), (300, 8), (20, 1000)] {
            let (th, tw) = runner.tileInterior(height: h, width: w)
            XCTAssertEqual(min(th, tw), h < w ? h : w, "\(w)x\(h): the short side whole")
            XCTAssertGreaterThan(max(th, tw), 32, "\(w)x\(h): the long side past the square tile")
            XCTAssertLessThanOrEqual((th + 14) * (tw + 14), square + 2 * (max(th, tw) + 14), "\(w)x\(h): tile \(tw)x\(th) within the area (a grid step over)")
        }
        XCTAssertEqual(runner.tileInterior(height: 70, width: 75).h, 24, "larger both ways: square tiles, evened out")
        XCTAssertEqual(runner.tileInterior(height: 70, width: 75).w, 26)
        XCTAssertLessThanOrEqual(try compare("waifu2x-upconv7-photo/scale2.0x_model.param", spec, tile: 32, height: 8, width: 301), 1e-5)
        XCTAssertLessThanOrEqual(try compare("waifu2x-upconv7-photo/scale2.0x_model.param", spec, tile: 32, height: 301, width: 9), 1e-5)
    }

    func testTileOriginsAreFlushToTheEdge() {
        XCTAssertEqual(TiledRunner.origins(length: 70, tile: 32), [0, 32, 38])
        XCTAssertEqual(TiledRunner.origins(length: 64, tile: 32), [0, 32])
        XCTAssertEqual(TiledRunner.origins(length: 20, tile: 32), [0])
    }

    /// The automatic tile never asks for a tensor beyond the engine's limit, also after the
    /// oneDNN backend's rewrites: waifu2x upconv_7 (a 4×4 stride-2 transposed convolution,
    /// run as a sub-pixel convolution of 4× the channels) once chose 1024 and failed every
    /// picture over 1024 pixels ("gives a 256x1026x1026 output, beyond the limit").
    func testAutomaticTileStaysWithinTheTensorLimit() throws {
        let path = "\(Self.models)/waifu2x-upconv7-photo/scale2.0x_model.param"
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) not present") }
        let graph = try NCNNImporter.load(paramPath: path)
        let spec = TilingSpec(scale: 2, padding: 7, border: .replicate)
        for budget in [3 << 30, 8 << 30] {
            let t = try TiledRunner.automaticTileSize(graph: graph, spec: spec, budget: budget, cap: 1024)
            let side = t + 2 * spec.padding
            for g in [graph, graph.withFoldedChannelAffine().withSubpixelDeconvolutions()] {
                let largest = try g.inferShapes(input: Shape(c: 3, h: side, w: side)).compactMap { $0?.count }.max() ?? 0
                XCTAssertLessThanOrEqual(largest, ModelLimits.maxTensorElements, "tile \(t) under \(budget >> 30) GiB")
            }
        }
        // A backend that binds less per value (a GPU's descriptor range): the largest tensor,
        // as fp32, stays within it, and the tile is smaller than without the limit.
        let free = try TiledRunner.automaticTileSize(graph: graph, spec: spec, budget: 16 << 30, cap: 1024)
        for limit in [64 << 20, 256 << 20] {
            let t = try TiledRunner.automaticTileSize(graph: graph, spec: spec, budget: 16 << 30, cap: 1024, largestValueBytes: limit)
            XCTAssertLessThan(t, free, "\(limit >> 20) MiB")
            let side = t + 2 * spec.padding
            for g in [graph, graph.withFoldedChannelAffine().withSubpixelDeconvolutions()] {
                let largest = try g.inferShapes(input: Shape(c: 3, h: side, w: side)).compactMap { $0?.count }.max() ?? 0
                XCTAssertLessThanOrEqual(largest * 4, limit, "tile \(t) within \(limit >> 20) MiB a value")
            }
        }
    }
}
