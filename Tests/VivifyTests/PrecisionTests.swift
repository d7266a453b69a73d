import Foundation
import MediaIO
import ModelCatalog
import Vivify
import XCTest

/// `--precision bf16` and `int8` against fp32 on real models and photos: every upscaler of the
/// catalog on Set5 and Set14 (each photo shrunk by the model's scale with bicubic, then
/// upscaled by the model in each precision). Issue 16's bars: luma PSNR of the reduced picture
/// against the fp32 one ≥ 45 dB (bf16) / ≥ 40 dB (int8) on every photo, and the gain over
/// bicubic (against the original) drops by at most 0.1 dB (bf16) / 0.3 dB (int8) per set.
/// int8 is calibrated on twelve training photos (BSD200), never on the sets it is judged on.
final class PrecisionTests: XCTestCase {
    override func tearDown() {
        PrecisionChoice.fp32.apply()
    }

    /// Twelve BSD200 training photos at half size, for int8 calibration.
    static func calibrationPhotos() throws -> [FloatPlanarImage] {
        let dir = UpscaleQualityTests.shared.appendingPathComponent("datasets/train/BSD200").path
        return try FileManager.default.contentsOfDirectory(atPath: dir).sorted().prefix(12).map { name in
            let frame = UpscaleQualityTests.frame(try ImageIO.read(path: "\(dir)/\(name)").color)
            var image = FloatPlanarImage(channels: 3, width: 1, height: 1)
            image.load(from: try UpscaleQualityTests.resize(frame, frame.width / 2, frame.height / 2))
            return image
        }
    }

    func testReducedPrecisionsKeepTheQualityBarsOnEveryCatalogUpscaler() throws {
        let precisions: [(choice: PrecisionChoice, minPSNR: Double, maxDrop: Double)] =
            [(.bf16, 45, 0.1), (.int8, 40, 0.3)].filter { $0.0.resolved().note == nil }
        guard !precisions.isEmpty else { throw XCTSkip("this CPU has neither AVX-512 BF16 nor VNNI") }
        let sets = ["Set5", "Set14"].map { UpscaleQualityTests.shared.appendingPathComponent("datasets/val/\($0)").path }
        guard FileManager.default.fileExists(atPath: sets[0]) else { throw XCTSkip("../shared/datasets/val is not present") }
        let store = try UpscaleQualityTests.store()
        let calibration = try Self.calibrationPhotos()
        // One model per file set and scale: the denoise variants share the architecture.
        var seen = Set<String>()
        let models = Catalog.builtIn.entries.filter { $0.task == .upscale && seen.insert("\($0.family)-\($0.scale)").inserted }
        XCTAssertGreaterThanOrEqual(models.count, 6)
        var lines: [String] = []
        for entry in models {
            PrecisionChoice.fp32.apply()
            let fp32 = try Upscaler(model: entry.name, store: store)
            let reduced = try precisions.map { p -> Upscaler in
                p.choice.apply()
                let u = try Upscaler(model: entry.name, store: store)
                if p.choice == .int8 {
                    try u.calibrateInt8(on: calibration)
                    XCTAssertTrue(u.runsInt8, entry.name)
                }
                return u
            }
            let s = entry.scale
            for set in sets {
                var worst = [Double](repeating: .infinity, count: precisions.count)
                var drops = [[Double]](repeating: [], count: precisions.count)
                for name in try FileManager.default.contentsOfDirectory(atPath: set).sorted() where name.hasSuffix(".png") {
                    let full = UpscaleQualityTests.frame(try ImageIO.read(path: "\(set)/\(name)").color)
                    let w = full.width / s * s, h = full.height / s * s
                    var truth = VideoFrame(format: .rgb24, width: w, height: h)
                    for y in 0..<h {
                        truth.planes[0].replaceSubrange(y * w * 3..<(y + 1) * w * 3, with: full.planes[0][y * full.width * 3..<(y * full.width + w) * 3])
                    }
                    truth.color = .bt709
                    let small = try UpscaleQualityTests.resize(truth, w / s, h / s)
                    var a = VideoFrame(format: .rgb24, width: w, height: h)
                    try fp32.upscale(small, into: &a)
                    let gain = UpscaleQualityTests.lumaPSNR(a, truth, shave: s)
                    for (k, u) in reduced.enumerated() {
                        var b = VideoFrame(format: .rgb24, width: w, height: h)
                        try u.upscale(small, into: &b)
                        worst[k] = min(worst[k], UpscaleQualityTests.lumaPSNR(b, a, shave: s))
                        drops[k].append(gain - UpscaleQualityTests.lumaPSNR(b, truth, shave: s))
                    }
                }
                for (k, p) in precisions.enumerated() {
                    let drop = drops[k].reduce(0, +) / Double(drops[k].count)
                    let label = "\(entry.name) \((set as NSString).lastPathComponent) \(p.choice.rawValue)"
                    lines.append(String(format: "%@ vs fp32: luma PSNR ≥ %.1f dB, gain over bicubic drops %.3f dB", label, worst[k], drop))
                    XCTAssertGreaterThanOrEqual(worst[k], p.minPSNR, label)
                    XCTAssertLessThanOrEqual(drop, p.maxDrop, label)
                }
            }
        }
        print(lines.joined(separator: "\n"))
    }

    /// An int8 model calibrated once loads its calibration from the model store: the next
    /// Upscaler of it runs int8 from its first picture, with the same result.
    func testInt8CalibrationIsKeptBesideTheModelStore() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("vivify-int8-cache-\(getpid())")
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = ModelStore(directory: dir, mirror: UpscaleQualityTests.shared.appendingPathComponent("models"))
        PrecisionChoice.int8.apply()
        let first = try Upscaler(model: "waifu2x-photo-2x", store: store)
        XCTAssertFalse(first.runsInt8, "nothing calibrated yet")
        let photos = try Self.calibrationPhotos()
        var a = FloatPlanarImage(channels: 3, width: 1, height: 1)
        var blank = photos[0]
        for i in blank.data.indices { blank.data[i] = 0.1 }
        try first.upscale(blank, into: &a)
        XCTAssertFalse(first.runsInt8, "a blank picture (a black lead-in, a warm-up frame) does not calibrate")
        try first.upscale(photos[0], into: &a)
        XCTAssertTrue(first.runsInt8, "the first picture calibrates the model")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("int8").path)
        XCTAssertEqual(files.filter { $0.hasSuffix(".json") }.count, 1, "one calibration file: \(files)")
        let second = try Upscaler(model: "waifu2x-photo-2x", store: store)
        XCTAssertTrue(second.runsInt8, "the stored calibration is used")
        var b = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try second.upscale(photos[0], into: &b)
        XCTAssertEqual(a.data, b.data, "same calibration, same result")
        PrecisionChoice.fp32.apply()
        let fp32 = try Upscaler(model: "waifu2x-photo-2x", store: store)
        var c = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try fp32.upscale(photos[0], into: &c)
        XCTAssertNotEqual(a.data, c.data, "int8 computes differently from fp32")
    }

    /// bf16 runs as asked on a CPU that has it, else falls back to fp32 with a note; fp32 and
    /// auto never need a note.
    func testPrecisionFallsBackWithANoteOnlyWithoutHardware() {
        XCTAssertNil(PrecisionChoice.fp32.resolved().note)
        XCTAssertEqual(PrecisionChoice.fp32.resolved().precision, "fp32")
        let bf16 = PrecisionChoice.bf16.resolved()
        XCTAssertEqual(bf16.note == nil, bf16.precision == "bf16", "bf16 runs as asked, or falls back with a note")
        XCTAssertEqual(PrecisionChoice.auto.resolved().note, nil)
        PrecisionChoice.bf16.apply()
        XCTAssertEqual(PrecisionChoice.current, bf16.precision)
    }
}
