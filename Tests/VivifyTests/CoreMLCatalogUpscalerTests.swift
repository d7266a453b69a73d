import Foundation
import MediaIO
import ModelCatalog
import Models
import Vivify
import XCTest

/// The Core ML catalog entries through `Upscaler(model:store:)` in process: fetched on first
/// use into a private model directory, loaded through `ModelResolver` with the catalog's tiling.
final class CoreMLCatalogUpscalerTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let mirror = root.deletingLastPathComponent().appendingPathComponent("shared/models")

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-coreml-upscaler-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    /// A small picture with gradients and a hard edge, [0, 1].
    static func picture(width: Int, height: Int) -> FloatPlanarImage {
        var image = FloatPlanarImage(channels: 3, width: width, height: height)
        let n = width * height
        for y in 0..<height {
            for x in 0..<width {
                image.data[y * width + x] = Float(x) / Float(width - 1)
                image.data[n + y * width + x] = Float(y) / Float(height - 1)
                image.data[2 * n + y * width + x] = x > width / 2 ? 0.8 : 0.2
            }
        }
        return image
    }

    /// The mean absolute difference between `big` and a nearest-neighbour 2× of `small`.
    static func differenceFromNearest(_ big: FloatPlanarImage, _ small: FloatPlanarImage) -> Float {
        var sum: Float = 0
        for c in 0..<3 {
            for y in 0..<big.height {
                for x in 0..<big.width {
                    let a = big.data[(c * big.height + y) * big.width + x]
                    let b = small.data[(c * small.height + y / 2) * small.width + x / 2]
                    sum += abs(a - b)
                }
            }
        }
        return sum / Float(big.data.count)
    }

    func testWaifu2xCoreMLFromTheMirrorUpscales2x() throws {
        guard FileManager.default.fileExists(atPath: Self.mirror.appendingPathComponent("coreml").path) else {
            throw XCTSkip("\(Self.mirror.path) is not present")
        }
        let store = ModelStore(directory: try temporaryDirectory(), mirror: Self.mirror)
        var logged: [String] = []
        let upscaler = try Upscaler(model: "waifu2x-photo-2x-coreml", tile: 24, store: store, log: { logged.append($0) })
        XCTAssertTrue(logged.contains { $0.contains("fetched model waifu2x-photo-2x-coreml") }, "\(logged)")
        XCTAssertEqual(upscaler.scale, 2)
        XCTAssertEqual(upscaler.spec.padding, 7)
        let small = Self.picture(width: 37, height: 22)
        let big = try upscaler.upscale(small)
        XCTAssertEqual([big.width, big.height, big.channels], [74, 44, 3])
        XCTAssertLessThan(Self.differenceFromNearest(big, small), 0.05, "the output is the picture, enlarged")

        // The ncnn twin (same weights in fp16) gives nearly the same picture.
        let ncnn = try Upscaler(model: "waifu2x-photo-2x", tile: 24, store: store).upscale(small)
        let worst = zip(big.data, ncnn.data).map { abs($0 - $1) }.max()!
        XCTAssertLessThan(worst, 2 / 255, "Core ML and ncnn copies of waifu2x photo 2× agree")
    }

    func testPiperSRThroughPipUpscales2x() throws {
        let store = ModelStore(directory: try temporaryDirectory(), mirror: nil)
        let upscaler: Upscaler
        do {
            upscaler = try Upscaler(model: "pipersr-2x", store: store)
        } catch let e as CatalogError where e.message.contains("failed with status") || e.message.contains("no pip module")
                                          || e.message.contains("with pip, which is not installed") {
            throw XCTSkip("PiperSR could not be fetched through pip: \(e.message)")
        }
        XCTAssertEqual(upscaler.scale, 2)
        XCTAssertEqual(upscaler.spec.padding, 14)
        let small = Self.picture(width: 30, height: 20)
        let big = try upscaler.upscale(small)
        XCTAssertEqual([big.width, big.height, big.channels], [60, 40, 3])
        XCTAssertLessThan(Self.differenceFromNearest(big, small), 0.05, "the output is the picture, enlarged")
    }
}
