import Foundation
@testable import EngineDNNL
import MediaIO
import ModelCatalog
import Models
import Vivify
import XCTest

/// `--precision bf16` and `int8` against fp32 on real models and photos: every upscaler of the
/// catalog on Set5 and Set14 (each photo shrunk by the model's scale with bicubic, then
/// upscaled by the model in each precision). Issue 16's bars: luma PSNR of the reduced picture
/// against the fp32 one ≥ 45 dB (bf16) / ≥ 40 dB (int8) on every photo, and the gain over
/// bicubic (against the original) drops by at most 0.1 dB (bf16) / 0.3 dB (int8) per set.
/// int8 runs with the calibration shipped for each catalog model (`Models/make-int8-calibrations.sh`:
/// twelve BSD200 training photos), never one taken on the sets it is judged on.
final class PrecisionTests: XCTestCase {
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
        // bf16 (needs no calibration): one model per file set and scale, since the denoise
        // variants share the architecture. int8: every model with a shipped calibration, since
        // `auto` runs exactly those in int8 (the built-in vivify-fast-2x among them).
        var seen = Set<String>()
        let perFamily = Catalog.builtIn.entries.filter { $0.task == .upscale && seen.insert("\($0.family)-\($0.scale)").inserted }.map(\.name) + ["vivify-fast-2x"]
        let shipped = Int8Calibrator.shippedModels
        XCTAssertGreaterThanOrEqual(perFamily.count, 7)
        XCTAssertGreaterThanOrEqual(shipped.count, 20)
        var lines: [String] = []
        for model in perFamily + shipped.filter({ !perFamily.contains($0) }) {
            let fp32 = try Upscaler(model: model, settings: ComputeSettings(precision: .fp32), store: store)
            let checked = precisions.filter { $0.choice == .int8 ? shipped.contains(model) : perFamily.contains(model) }
            let reduced = try checked.map { p -> Upscaler in
                let u = try Upscaler(model: model, settings: ComputeSettings(precision: p.choice), store: store)
                if p.choice == .int8 {
                    XCTAssertEqual(u.int8CalibrationOrigin, "shipped", "\(model) runs int8 with its shipped calibration from the first picture")
                }
                return u
            }
            let s = fp32.scale
            for set in sets {
                var worst = [Double](repeating: .infinity, count: checked.count)
                var drops = [[Double]](repeating: [], count: checked.count)
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
                    try UpscaleQualityTests.upscale(fp32, small, into: &a)
                    let gain = UpscaleQualityTests.lumaPSNR(a, truth, shave: s)
                    for (k, u) in reduced.enumerated() {
                        var b = VideoFrame(format: .rgb24, width: w, height: h)
                        try UpscaleQualityTests.upscale(u, small, into: &b)
                        worst[k] = min(worst[k], UpscaleQualityTests.lumaPSNR(b, a, shave: s))
                        drops[k].append(gain - UpscaleQualityTests.lumaPSNR(b, truth, shave: s))
                    }
                }
                for (k, p) in checked.enumerated() {
                    let drop = drops[k].reduce(0, +) / Double(drops[k].count)
                    let label = "\(model) \((set as NSString).lastPathComponent) \(p.choice.rawValue)"
                    // Photos run in int8: a tile that clips is run again in fp32, which a
                    // photo seldom needs (at most one photo in five of the two sets).
                    let fallbacks = reduced[k].int8Fallbacks
                    XCTAssertLessThanOrEqual(fallbacks, 4, "\(label): tiles run again in fp32")
                    lines.append(String(format: "%@ vs fp32: luma PSNR ≥ %.1f dB, gain over bicubic drops %.3f dB (%d fp32 tile runs so far)", label, worst[k], drop, fallbacks))
                    XCTAssertGreaterThanOrEqual(worst[k], p.minPSNR, label)
                    XCTAssertLessThanOrEqual(drop, p.maxDrop, label)
                }
            }
        }
        print(lines.joined(separator: "\n"))
    }

    /// waifu2x-photo-2x's files with one weight changed by one ulp: a model no calibration was
    /// shipped for (its files' SHA-256 differs), tiled like the catalog model (same .param).
    static func unmeasuredModel(in dir: URL) throws -> String {
        let source = UpscaleQualityTests.shared.appendingPathComponent("models/ncnn/waifu2x-upconv7-photo/scale2.0x_model")
        let param = dir.appendingPathComponent("tweaked.param")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: source.appendingPathExtension("param"), to: param)
        var weights = try Data(contentsOf: source.appendingPathExtension("bin"))
        weights[weights.count - 4] ^= 1  // the last bias's lowest mantissa bit (little-endian fp32)
        try weights.write(to: dir.appendingPathComponent("tweaked.bin"))
        return param.path
    }

    /// A temporary folder `prefix`-pid holding `unmeasuredModel` and an empty model store
    /// (the catalog mirror from ../shared).
    static func unmeasuredModelAndStore(_ prefix: String) throws -> (dir: URL, model: String, store: ModelStore) {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("\(prefix)-\(getpid())")
        let model = try unmeasuredModel(in: dir.appendingPathComponent("model"))
        let store = ModelStore(directory: dir.appendingPathComponent("store"), mirror: UpscaleQualityTests.shared.appendingPathComponent("models"))
        return (dir, model, store)
    }

    /// An int8 model without a shipped calibration calibrates on its first picture with
    /// detail and keeps that in the model store: the next Upscaler of it runs int8 from its
    /// first picture, with the same result.
    func testInt8CalibrationIsKeptBesideTheModelStore() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let (dir, model, store) = try Self.unmeasuredModelAndStore("vivify-int8-cache")
        defer { try? FileManager.default.removeItem(at: dir) }
        let int8 = ComputeSettings(precision: .int8)
        let first = try Upscaler(model: model, settings: int8, store: store)
        XCTAssertFalse(first.runsInt8, "nothing calibrated yet")
        XCTAssertNil(first.int8CalibrationOrigin)
        let photos = try Self.calibrationPhotos()
        var a = FloatPlanarImage(channels: 3, width: 1, height: 1)
        var blank = photos[0]
        for i in blank.data.indices { blank.data[i] = 0.1 }
        try first.upscale(blank, into: &a)
        XCTAssertFalse(first.runsInt8, "a blank picture (a black lead-in, a warm-up frame) does not calibrate")
        try first.upscale(photos[0], into: &a)
        XCTAssertTrue(first.runsInt8, "the first picture calibrates the model")
        XCTAssertEqual(first.int8CalibrationOrigin, "first picture")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("store/int8").path)
        XCTAssertEqual(files.filter { $0.hasSuffix(".json") }.count, 1, "one calibration file: \(files)")
        let second = try Upscaler(model: model, settings: int8, store: store)
        XCTAssertTrue(second.runsInt8, "the stored calibration is used")
        XCTAssertEqual(second.int8CalibrationOrigin, "model store")
        var b = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try second.upscale(photos[0], into: &b)
        XCTAssertEqual(a.data, b.data, "same calibration, same result")
        let fp32 = try Upscaler(model: model, settings: ComputeSettings(precision: .fp32), store: store)
        var c = FloatPlanarImage(channels: 3, width: 1, height: 1)
        try fp32.upscale(photos[0], into: &c)
        XCTAssertNotEqual(a.data, c.data, "int8 computes differently from fp32")
    }

    /// `auto` runs a model in int8 only where its int8 quality is
    /// measured: every catalog upscaler (by name, or its files by path) has a shipped
    /// calibration and runs exactly as `int8` does; a model with other weights runs exactly as
    /// fp32 does, even after it was calibrated.
    func testAutoRunsMeasuredModelsInInt8AndOthersInFP32() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let (dir, tweaked, store) = try Self.unmeasuredModelAndStore("vivify-auto")
        defer { try? FileManager.default.removeItem(at: dir) }
        let photo = try Self.calibrationPhotos()[1]
        func upscaled(_ model: String, _ choice: PrecisionChoice) throws -> (precision: String, origin: String?, data: [Float]) {
            let u = try Upscaler(model: model, settings: ComputeSettings(precision: choice), store: store)
            var out = FloatPlanarImage(channels: 3, width: 1, height: 1)
            try u.upscale(photo, into: &out)
            return (u.computePrecision, u.int8CalibrationOrigin, out.data)
        }
        let byPath = UpscaleQualityTests.shared.appendingPathComponent("models/ncnn/waifu2x-upconv7-photo/scale2.0x_model.param").path
        let auto = try upscaled("waifu2x-photo-2x", .auto), int8 = try upscaled("waifu2x-photo-2x", .int8)
        let autoByPath = try upscaled(byPath, .auto), fp32 = try upscaled("waifu2x-photo-2x", .fp32)
        XCTAssertEqual(auto.precision, "int8")
        XCTAssertEqual(auto.origin, "shipped")
        XCTAssertEqual(auto.data, int8.data, "auto is int8 with the shipped calibration")
        XCTAssertEqual(autoByPath.precision, "int8", "the same files by path are the same model")
        XCTAssertEqual(autoByPath.data, auto.data)
        XCTAssertNotEqual(auto.data, fp32.data)

        _ = try upscaled(tweaked, .int8)  // calibrates it on the photo and keeps that
        let other = try upscaled(tweaked, .auto), otherFP32 = try upscaled(tweaked, .fp32)
        XCTAssertEqual(other.precision, "fp32", "nobody measured this model's int8 quality")
        XCTAssertEqual(other.data, otherFP32.data)

        // Every catalog upscaler has its calibration but the two whose int8 misses the bars
        // (Models/make-int8-calibrations.sh): a change of weights without running it would
        // leave another without, or ship one nobody measured.
        let catalogStore = try UpscaleQualityTests.store()
        var missing: [String] = []
        for model in Catalog.builtIn.entries.filter({ $0.task == .upscale }).map(\.name) + ["vivify-fast-2x"] {
            if try Upscaler(model: model, settings: ComputeSettings(precision: .int8), store: catalogStore).int8CalibrationOrigin != "shipped" { missing.append(model) }
        }
        XCTAssertEqual(missing, ["waifu2x-photo-2x-denoise0", "waifu2x-photo-2x-denoise1"], "catalog upscalers without a shipped int8 calibration")
    }

    /// Saturated synthetic colours drive int8 layers far past ranges calibrated on photos
    /// (testsrc2 came out at 21.8 dB against fp32 through waifu2x-photo-2x): such tiles are
    /// run again in fp32, so the picture is fp32's; a photo runs in int8 throughout.
    func testClippingInt8TilesAreRunAgainInFP32() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let store = try UpscaleQualityTests.store()
        // Colour bars of pure primaries and secondaries, with a black and white checker below.
        var bars = FloatPlanarImage(channels: 3, width: 160, height: 96)
        let colours: [[Float]] = [[1, 1, 1], [1, 1, 0], [0, 1, 1], [0, 1, 0], [1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]
        for y in 0..<96 {
            for x in 0..<160 {
                let c = y < 64 ? colours[x / 20] : Array(repeating: Float((x / 8 + y / 8) % 2), count: 3)
                for k in 0..<3 { bars.data[(k * 96 + y) * 160 + x] = c[k] }
            }
        }
        let photo = try Self.calibrationPhotos()[2]
        for model in ["waifu2x-photo-2x", "realesr-animevideov3-2x"] {
            let fp32 = try Upscaler(model: model, settings: ComputeSettings(precision: .fp32), store: store)
            let int8 = try Upscaler(model: model, settings: ComputeSettings(precision: .int8), store: store)
            var a = FloatPlanarImage(channels: 3, width: 1, height: 1), b = a
            try fp32.upscale(photo, into: &a)
            try int8.upscale(photo, into: &b)
            XCTAssertEqual(int8.int8Fallbacks, 0, "\(model): a photo runs in int8")
            XCTAssertNotEqual(a.data, b.data, model)
            try fp32.upscale(bars, into: &a)
            try int8.upscale(bars, into: &b)
            XCTAssertGreaterThan(int8.int8Fallbacks, 0, "\(model): the bars clip")
            XCTAssertEqual(a.data, b.data, "\(model): clipped tiles are fp32's")
        }
    }

    /// In a picture whose tiles keep clipping (three of four runs of a tile shape), the next
    /// tiles go straight to fp32 instead of paying int8 and fp32 each; every picture starts
    /// afresh, so a picture's result never depends on what ran before it.
    func testTilesThatKeepClippingGoStraightToFP32WithinAPicture() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let store = try UpscaleQualityTests.store()
        // Primary and secondary bars with a checker, 480×288: many tiles that all clip.
        let (w, h) = (480, 288)
        var bars = FloatPlanarImage(channels: 3, width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                for k in 0..<3 { bars.data[(k * h + y) * w + x] = y % 96 < 64 ? Float((x / 20 >> k) & 1) : Float((x / 8 + y / 8) % 2) }
            }
        }
        // A photo of the same size, so that its tiles run on the same graphs as the bars'.
        let dir = UpscaleQualityTests.shared.appendingPathComponent("datasets/train/BSD200").path
        let name = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()[2]
        var full = FloatPlanarImage(channels: 3, width: 1, height: 1)
        full.load(from: UpscaleQualityTests.frame(try ImageIO.read(path: "\(dir)/\(name)").color))
        XCTAssertGreaterThanOrEqual(full.width, w)
        XCTAssertGreaterThanOrEqual(full.height, h)
        var photo = FloatPlanarImage(channels: 3, width: w, height: h)
        for k in 0..<3 {
            for y in 0..<h {
                for x in 0..<w { photo.data[(k * h + y) * w + x] = full.data[(k * full.height + y) * full.width + x] }
            }
        }
        let fp32 = try Upscaler(model: "waifu2x-photo-2x", tile: 64, settings: ComputeSettings(precision: .fp32), store: store)
        let int8 = try Upscaler(model: "waifu2x-photo-2x", tile: 64, settings: ComputeSettings(precision: .int8), store: store)
        let alone = try Upscaler(model: "waifu2x-photo-2x", tile: 64, settings: ComputeSettings(precision: .int8), store: store)
        var reference = FloatPlanarImage(channels: 3, width: 1, height: 1), first = reference
        try fp32.upscale(bars, into: &reference)
        try int8.upscale(bars, into: &first)
        XCTAssertTrue(first.data == reference.data, "every tile of the bars is fp32's")
        let tiles = int8.int8Fallbacks, skips = int8.int8Skips
        XCTAssertGreaterThan(tiles, 2 * ClipHistory.window, "the bars make many tiles")
        XCTAssertGreaterThan(tiles - skips, 0, "the first tiles tried int8")
        XCTAssertLessThan(tiles - skips, tiles / 2, "most tiles went straight to fp32")
        // The photo right after the bars runs in int8 from its first tile, as on its own.
        var photoAlone = reference, photoAfter = reference, photoFP32 = reference
        try alone.upscale(photo, into: &photoAlone)
        XCTAssertEqual(alone.int8Fallbacks, 0, "the photo does not clip")
        try int8.upscale(photo, into: &photoAfter)
        XCTAssertEqual(int8.int8Skips, skips, "no tile of the photo skipped int8")
        XCTAssertTrue(photoAfter.data == photoAlone.data, "a picture's result is its own")
        try fp32.upscale(photo, into: &photoFP32)
        XCTAssertFalse(photoAfter.data == photoFP32.data, "the photo runs in int8")
        // The bars again: the same tiles skip.
        var again = reference
        try int8.upscale(bars, into: &again)
        XCTAssertTrue(again.data == first.data, "the bars again: the same result")
        XCTAssertEqual(int8.int8Skips - skips, skips, "each picture's history starts afresh")
    }

    /// bf16 runs as asked on a CPU that has it, else falls back to fp32 with a note; fp32 and
    /// auto never need a note.
    func testPrecisionFallsBackWithANoteOnlyWithoutHardware() throws {
        XCTAssertNil(PrecisionChoice.fp32.resolved().note)
        XCTAssertEqual(PrecisionChoice.fp32.resolved().precision, "fp32")
        let bf16 = PrecisionChoice.bf16.resolved()
        XCTAssertEqual(bf16.note == nil, bf16.precision == "bf16", "bf16 runs as asked, or falls back with a note")
        XCTAssertEqual(PrecisionChoice.auto.resolved().note, nil)
        // A model that decides nothing for itself, loaded under bf16, computes in what bf16
        // resolves to on this CPU.
        let backend = try BackendChoice.onednn.make(precision: .bf16)
        XCTAssertEqual((backend as? DNNLBackend)?.precision.rawValue, bf16.precision)
        XCTAssertEqual(PrecisionChoice.bf16.unmeasured, bf16.precision)
    }
}
