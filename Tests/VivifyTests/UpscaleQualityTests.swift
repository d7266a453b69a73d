import Foundation
import MediaIO
import ModelCatalog
import Models
import Vivify
import XCTest

/// Quality on ../shared/datasets/val (Set5, Set14): downscale ×2 with bicubic, upscale with the
/// model, compare luma PSNR (BT.601 Y, 2-pixel border shaved, as SR papers do) with plain
/// bicubic upscaling of the same small image.
final class UpscaleQualityTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let shared = root.deletingLastPathComponent().appendingPathComponent("shared")

    static func store() throws -> ModelStore {
        let dir = NSTemporaryDirectory() + "vivify-quality-models"
        return ModelStore(directory: URL(fileURLWithPath: dir), mirror: shared.appendingPathComponent("models"))
    }

    /// `upscaler` on an rgb24 frame as `vivify` runs it: the upscale stage's planar float
    /// result, rounded to rgb24 once at the end (the chain's output conversion).
    static func upscale(_ upscaler: Upscaler, _ frame: VideoFrame, into output: inout VideoFrame) throws {
        var planar = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try upscaler.upscale(frame, into: &planar)
        planar.store(into: &output)
    }

    /// rgb24 frame from a float image (grey expands to RGB).
    static func frame(_ image: FloatPlanarImage) -> VideoFrame {
        var rgb = image
        if image.channels == 1 {
            rgb = FloatPlanarImage(channels: 3, width: image.width, height: image.height)
            let n = image.width * image.height
            for k in 0..<3 { rgb.data.replaceSubrange(k * n..<(k + 1) * n, with: image.data) }
        }
        var f = VideoFrame(format: .rgb24, width: 1, height: 1)
        rgb.store(into: &f)
        f.color = .bt709
        return f
    }

    static func resize(_ f: VideoFrame, _ w: Int, _ h: Int) throws -> VideoFrame {
        var out = VideoFrame(format: .rgb24, width: w, height: h)
        try FrameConverter(filter: .bicubic).convert(f, into: &out)
        return out
    }

    static func lumaPSNR(_ a: VideoFrame, _ b: VideoFrame, shave: Int) -> Double {
        var se = 0.0, n = 0
        for y in shave..<(a.height - shave) {
            for x in shave..<(a.width - shave) {
                let i = (y * a.width + x) * 3
                func luma(_ f: VideoFrame) -> Double {
                    (16 + 65.481 * Double(f.planes[0][i]) / 255 + 128.553 * Double(f.planes[0][i + 1]) / 255 + 24.966 * Double(f.planes[0][i + 2]) / 255)
                }
                let d = luma(a) - luma(b)
                se += d * d
                n += 1
            }
        }
        return 10 * log10(255 * 255 / (se / Double(n)))
    }

    /// The built-in vivify-fast-2x (`--upscale 2`, our own compact model) must beat bicubic by
    /// 0.8 dB of luma PSNR on both sets (issue 7's bar).
    func testBuiltinFast2xBeatsBicubic() throws {
        let dir = NSTemporaryDirectory() + "vivify-builtin-\(getpid())"
        let store = ModelStore(directory: URL(fileURLWithPath: dir))
        guard let path = try BuiltinModels.path(for: BuiltinModels.fast2x, store: store) else { return XCTFail("no built-in fast 2x") }
        try gains(Upscaler(model: path, store: store), minimum: 0.8)
    }

    func testWaifu2xPhotoBeatsBicubicByOneDecibel() throws {
        try gains(Upscaler(model: "waifu2x-photo-2x", store: try Self.store()), minimum: 1.0)
    }

    func gains(_ upscaler: Upscaler, minimum: Double) throws {
        let sets = ["Set5", "Set14"].map { Self.shared.appendingPathComponent("datasets/val/\($0)").path }
        guard FileManager.default.fileExists(atPath: sets[0]) else { throw XCTSkip("../shared/datasets/val is not present") }
        var lines: [String] = []
        for set in sets {
            var gains: [Double] = []
            for name in try FileManager.default.contentsOfDirectory(atPath: set).sorted() where name.hasSuffix(".png") {
                let image = try ImageIO.read(path: "\(set)/\(name)")
                // Crop to even sides so ×2 down and up lands on the same grid.
                let full = Self.frame(image.color)
                let w = full.width / 2 * 2, h = full.height / 2 * 2
                var truth = VideoFrame(format: .rgb24, width: w, height: h)
                for y in 0..<h { truth.planes[0].replaceSubrange(y * w * 3..<(y + 1) * w * 3, with: full.planes[0][y * full.width * 3..<(y * full.width + w) * 3]) }
                truth.color = .bt709
                let small = try Self.resize(truth, w / 2, h / 2)
                let bicubic = try Self.resize(small, w, h)
                var ours = VideoFrame(format: .rgb24, width: w, height: h)
                try Self.upscale(upscaler, small, into: &ours)
                let gain = Self.lumaPSNR(ours, truth, shave: 2) - Self.lumaPSNR(bicubic, truth, shave: 2)
                gains.append(gain)
            }
            let mean = gains.reduce(0, +) / Double(gains.count)
            lines.append(String(format: "%@ %@: mean luma PSNR gain over bicubic %.2f dB over %d images (min %.2f)",
                                upscaler.name, (set as NSString).lastPathComponent, mean, gains.count, gains.min()!))
            XCTAssertGreaterThanOrEqual(mean, minimum, "\(set): \(upscaler.name) must beat bicubic by ≥ \(minimum) dB")
        }
        print(lines.joined(separator: "\n"))
    }
}
