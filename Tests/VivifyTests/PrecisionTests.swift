import Foundation
import MediaIO
import ModelCatalog
import Vivify
import XCTest

/// `--precision bf16` against fp32 on real models and photos: every upscaler of the catalog on
/// Set5 and Set14 (each photo shrunk by the model's scale with bicubic, then upscaled by the
/// model in both precisions). Issue 16's bars: luma PSNR of the bf16 picture against the fp32
/// one ≥ 45 dB on every photo, and the gain over bicubic (against the original) drops by at
/// most 0.1 dB per set.
final class PrecisionTests: XCTestCase {
    override func tearDown() {
        PrecisionChoice.fp32.apply()
    }

    func testBF16KeepsTheQualityBarsOnEveryCatalogUpscaler() throws {
        guard PrecisionChoice.bf16.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 BF16 or AMX") }
        let sets = ["Set5", "Set14"].map { UpscaleQualityTests.shared.appendingPathComponent("datasets/val/\($0)").path }
        guard FileManager.default.fileExists(atPath: sets[0]) else { throw XCTSkip("../shared/datasets/val is not present") }
        let store = try UpscaleQualityTests.store()
        // One model per file set and scale: the denoise variants share the architecture.
        var seen = Set<String>()
        let models = Catalog.builtIn.entries.filter { $0.task == .upscale && seen.insert("\($0.family)-\($0.scale)").inserted }
        XCTAssertGreaterThanOrEqual(models.count, 6)
        var lines: [String] = []
        for entry in models {
            PrecisionChoice.fp32.apply()
            let fp32 = try Upscaler(model: entry.name, store: store)
            PrecisionChoice.bf16.apply()
            let bf16 = try Upscaler(model: entry.name, store: store)
            let s = entry.scale
            for set in sets {
                var worst = Double.infinity, drops: [Double] = []
                for name in try FileManager.default.contentsOfDirectory(atPath: set).sorted() where name.hasSuffix(".png") {
                    let full = UpscaleQualityTests.frame(try ImageIO.read(path: "\(set)/\(name)").color)
                    let w = full.width / s * s, h = full.height / s * s
                    var truth = VideoFrame(format: .rgb24, width: w, height: h)
                    for y in 0..<h {
                        truth.planes[0].replaceSubrange(y * w * 3..<(y + 1) * w * 3, with: full.planes[0][y * full.width * 3..<(y * full.width + w) * 3])
                    }
                    truth.color = .bt709
                    let small = try UpscaleQualityTests.resize(truth, w / s, h / s)
                    var a = VideoFrame(format: .rgb24, width: w, height: h), b = a
                    try fp32.upscale(small, into: &a)
                    try bf16.upscale(small, into: &b)
                    worst = min(worst, UpscaleQualityTests.lumaPSNR(b, a, shave: s))
                    drops.append(UpscaleQualityTests.lumaPSNR(a, truth, shave: s) - UpscaleQualityTests.lumaPSNR(b, truth, shave: s))
                }
                let drop = drops.reduce(0, +) / Double(drops.count)
                let label = "\(entry.name) \((set as NSString).lastPathComponent)"
                lines.append(String(format: "%@: bf16 vs fp32 luma PSNR ≥ %.1f dB, gain over bicubic drops %.3f dB", label, worst, drop))
                XCTAssertGreaterThanOrEqual(worst, 45, label)
                XCTAssertLessThanOrEqual(drop, 0.1, label)
            }
        }
        print(lines.joined(separator: "\n"))
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
