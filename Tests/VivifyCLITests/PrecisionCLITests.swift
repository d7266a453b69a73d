import Foundation
import Vivify
import XCTest

/// `--precision` on the commands that run models: bench-model reports the precision it ran
/// in (bf16 where the CPU has it, else fp32 with a one-line note), `vivify image` with bf16
/// gives nearly the fp32 picture, and an unknown precision is a usage error.
final class PrecisionCLITests: XCTestCase {
    func testPrecisionReachesTheEngineAndKeepsThePicture() throws {
        let native = PrecisionChoice.bf16.resolved().note == nil
        let r = try CLI.vivify(["bench-model", "--model", "waifu2x-photo-2x", "--size", "64x48", "--pad", "7,7,7,7", "--runs", "1",
                                "--precision", "bf16"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        XCTAssertEqual(json["precision"] as? String, native ? "bf16" : "fp32")
        XCTAssertEqual(r.stderr.contains("runs in fp32"), !native, r.stderr)
        let fp32 = try JSONSerialization.jsonObject(with: try CLI.vivify(["bench-model", "--model", "vivify-fast-2x", "--size", "64x48", "--runs", "1"]).stdout) as? [String: Any]
        XCTAssertEqual(fp32?["precision"] as? String, "fp32", "fp32 unless asked")

        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=1", "-frames:v", "1", picture])
        var outputs: [Data] = []
        for precision in ["fp32", "bf16"] {
            let out = dir + "/\(precision).png"
            let r = try CLI.vivify(["image", picture, out, "--upscale", "--precision", precision, "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            outputs.append(try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout)
        }
        XCTAssertEqual(outputs[0].count, 320 * 192 * 3)
        let differing = zip(outputs[0], outputs[1]).filter { abs(Int($0) - Int($1)) > 1 }.count
        XCTAssertLessThanOrEqual(differing, outputs[0].count / 1000, "bf16 within one 8-bit level almost everywhere")

        let bad = try CLI.vivify(["image", picture, dir + "/bad.png", "--upscale", "--precision", "int4"])
        XCTAssertEqual(bad.code, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("int4"), bad.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/bad.png"))
    }

    /// `vivify image --precision int8` calibrates the model on the picture, keeps the
    /// calibration in the model store (`int8/`), and gives nearly the fp32 picture; bench-model
    /// then runs int8 with that calibration.
    func testInt8CalibratesOnceAndKeepsThePicture() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let dir = try CLI.tempDir()
        let store = ["VIVIFY_MODELS": dir + "/models"]
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=1", "-frames:v", "1", picture])
        var outputs: [Data] = []
        for precision in ["fp32", "int8"] {
            let out = dir + "/\(precision).png"
            let r = try CLI.vivify(["image", picture, out, "--upscale", "waifu2x-photo-2x", "--precision", precision, "--quiet"], environment: store)
            XCTAssertEqual(r.code, 0, r.stderr)
            outputs.append(try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout)
        }
        let calibrations = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/models/int8")) ?? []
        XCTAssertEqual(calibrations.filter { $0.hasSuffix(".json") }.count, 1, "\(calibrations)")
        XCTAssertEqual(outputs[0].count, 320 * 192 * 3)
        let se = zip(outputs[0], outputs[1]).reduce(0.0) { $0 + pow(Double(Int($1.0) - Int($1.1)), 2) }
        let psnr = 10 * log10(255 * 255 / max(se / Double(outputs[0].count), 1e-12))
        XCTAssertGreaterThanOrEqual(psnr, 40, "int8 against fp32 (RGB PSNR)")
        XCTAssertNotEqual(outputs[0], outputs[1], "int8 ran")
        let r = try CLI.vivify(["bench-model", "--model", "waifu2x-photo-2x", "--size", "64x48", "--runs", "1", "--precision", "int8"], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        XCTAssertEqual(json["precision"] as? String, "int8")
    }
}
