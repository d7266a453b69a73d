import Foundation
import Vivify
import XCTest

/// `--precision` on the commands that run models: bench-model reports the precision it ran
/// in (bf16 where the CPU has it, else fp32 with a one-line note; by default `auto`), `vivify
/// image` with bf16 gives nearly the fp32 picture, and an unknown precision is a usage error.
final class PrecisionCLITests: XCTestCase {
    /// waifu2x-photo-2x's files with one weight changed by one ulp: a model without a shipped
    /// int8 calibration.
    static func unmeasuredModel(in dir: String) throws -> String {
        let source = CLI.sharedVideos.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("models/ncnn/waifu2x-upconv7-photo/scale2.0x_model")
        try FileManager.default.copyItem(atPath: source.path + ".param", toPath: dir + "/tweaked.param")
        var weights = try Data(contentsOf: source.appendingPathExtension("bin"))
        weights[weights.count - 4] ^= 1  // the last bias's lowest mantissa bit (little-endian fp32)
        try weights.write(to: URL(fileURLWithPath: dir + "/tweaked.bin"))
        return dir + "/tweaked.param"
    }

    func testPrecisionReachesTheEngineAndKeepsThePicture() throws {
        let native = PrecisionChoice.bf16.resolved().note == nil
        let r = try CLI.vivify(["bench-model", "--model", "waifu2x-photo-2x", "--size", "64x48", "--pad", "7,7,7,7", "--runs", "1",
                                "--precision", "bf16"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        XCTAssertEqual(json["precision"] as? String, native ? "bf16" : "fp32")
        XCTAssertEqual(r.stderr.contains("runs in fp32"), !native, r.stderr)
        let dir = try CLI.tempDir()
        // The default, auto: a catalog model in what auto picks on this CPU (int8 with VNNI), a
        // model whose reduced-precision quality nobody measured in fp32.
        let tweaked = try Self.unmeasuredModel(in: dir)
        for (model, precision, expected) in [("waifu2x-photo-2x", [], PrecisionChoice.auto.resolved().precision), ("waifu2x-photo-2x", ["--precision", "fp32"], "fp32"),
                                             (tweaked, [], "fp32")] {
            let r = try CLI.vivify(["bench-model", "--model", model, "--size", "64x48", "--runs", "1"] + precision)
            XCTAssertEqual(r.code, 0, r.stderr)
            let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
            XCTAssertEqual(json?["precision"] as? String, expected, "\(model) \(precision)")
        }

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

    /// `vivify image --precision int8` on a model without a shipped calibration calibrates it
    /// on the picture, keeps the calibration in the model store (`int8/`), and gives nearly the
    /// fp32 picture; bench-model then runs int8 with that calibration. A catalog model runs
    /// int8 with its shipped calibration and writes nothing.
    func testInt8CalibratesOnceAndKeepsThePicture() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let dir = try CLI.tempDir()
        let store = ["VIVIFY_MODELS": dir + "/models"]
        let model = try Self.unmeasuredModel(in: dir)
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=1", "-frames:v", "1", picture])
        let r0 = try CLI.vivify(["image", picture, dir + "/catalog.png", "--upscale", "waifu2x-photo-2x", "--precision", "int8", "--quiet"], environment: store)
        XCTAssertEqual(r0.code, 0, r0.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/models/int8"), "the shipped calibration needs nothing kept")
        var outputs: [Data] = []
        for precision in ["fp32", "int8"] {
            let out = dir + "/\(precision).png"
            let r = try CLI.vivify(["image", picture, out, "--upscale", model, "--precision", precision, "--quiet"], environment: store)
            XCTAssertEqual(r.code, 0, r.stderr)
            outputs.append(try Self.pixels(out))
        }
        let calibrations = (try? FileManager.default.contentsOfDirectory(atPath: dir + "/models/int8")) ?? []
        XCTAssertEqual(calibrations.filter { $0.hasSuffix(".json") }.count, 1, "\(calibrations)")
        XCTAssertEqual(outputs[0].count, 320 * 192 * 3)
        XCTAssertGreaterThanOrEqual(Self.psnr(outputs[0], outputs[1]), 40, "int8 against fp32 (RGB PSNR)")
        XCTAssertNotEqual(outputs[0], outputs[1], "int8 ran")
        let r = try CLI.vivify(["bench-model", "--model", model, "--size", "64x48", "--runs", "1", "--precision", "int8"], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        XCTAssertEqual(json["precision"] as? String, "int8")
    }

    /// `vivify models calibrate` measures a model's ranges on chosen pictures, keeps them in the
    /// model store and writes them where asked (with the model's name and files' SHA-256, as
    /// Models/make-int8-calibrations.sh embeds them); `--precision int8` then uses them and
    /// `auto` still leaves the unmeasured model in fp32. A blank picture or none is refused
    /// (64) and nothing is kept.
    func testModelsCalibrateKeepsTheRangesForInt8() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let dir = try CLI.tempDir()
        let store = ["VIVIFY_MODELS": dir + "/models"]
        let model = try Self.unmeasuredModel(in: dir)
        let picture = dir + "/in.png", blank = dir + "/blank.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=1", "-frames:v", "1", picture])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:size=64x48", "-frames:v", "1", blank])
        for bad in [[model, picture, blank], [model]] {
            let r = try CLI.vivify(["models", "calibrate"] + bad, environment: store)
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains(bad.count > 1 ? "blank.png" : "pictures"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/models/int8"), "nothing kept from a refused calibration")
        var r = try CLI.vivify(["models", "calibrate", model, picture, "--output", dir + "/ranges.json"], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(String(decoding: r.stdout, as: UTF8.self).contains("7 layers"), String(decoding: r.stdout, as: UTF8.self))
        let written = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/ranges.json"))) as? [String: Any] ?? [:]
        XCTAssertEqual(written["model"] as? String, "tweaked")
        XCTAssertEqual((written["digest"] as? String)?.count, 64)
        XCTAssertEqual((written["inputRanges"] as? [String: Any])?.count, 7)
        XCTAssertEqual(((try? FileManager.default.contentsOfDirectory(atPath: dir + "/models/int8")) ?? []).count, 1)
        // --output follows the rules of every output (issue 33): never its own picture or model,
        // an existing file only with -y.
        let pictureBytes = try Data(contentsOf: URL(fileURLWithPath: picture))
        for (target, code) in [(picture, Int32(64)), (model, 64), (dir + "/ranges.json", 73)] {
            r = try CLI.vivify(["models", "calibrate", model, picture, "--output", target], environment: store)
            XCTAssertEqual(r.code, code, "\(target): \(r.stderr)")
        }
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: picture)), pictureBytes, "the picture is untouched")
        r = try CLI.vivify(["models", "calibrate", model, picture, "--output", dir + "/ranges.json", "-y"], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        var outputs: [Data] = []
        for precision in ["int8", "auto", "fp32"] {
            let out = dir + "/\(precision).png"
            r = try CLI.vivify(["image", picture, out, "--upscale", model, "--precision", precision, "--quiet"], environment: store)
            XCTAssertEqual(r.code, 0, r.stderr)
            outputs.append(try Self.pixels(out))
        }
        XCTAssertNotEqual(outputs[0], outputs[2], "int8 ran with the kept ranges")
        XCTAssertGreaterThanOrEqual(Self.psnr(outputs[0], outputs[2]), 40)
        XCTAssertEqual(outputs[1], outputs[2], "auto: fp32 for a model nobody measured")

        // A catalog model's shipped ranges come from photos: a saturated test pattern clips
        // with them, so int8 runs it again in fp32 (the same picture). Calibrated on such
        // pictures, the model runs them in int8 (the kept calibration comes first).
        var catalog: [Data] = []
        for (name, precision) in [("shipped", "int8"), ("fp32", "fp32")] {
            r = try CLI.vivify(["image", picture, dir + "/w-\(name).png", "--upscale", "waifu2x-photo-2x", "--precision", precision, "--quiet"], environment: store)
            XCTAssertEqual(r.code, 0, r.stderr)
            catalog.append(try Self.pixels(dir + "/w-\(name).png"))
        }
        XCTAssertEqual(catalog[0], catalog[1], "clipped int8 tiles are run in fp32")
        r = try CLI.vivify(["models", "calibrate", "waifu2x-photo-2x", picture], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        r = try CLI.vivify(["image", picture, dir + "/w-kept.png", "--upscale", "waifu2x-photo-2x", "--precision", "int8", "--quiet"], environment: store)
        XCTAssertEqual(r.code, 0, r.stderr)
        let kept = try Self.pixels(dir + "/w-kept.png")
        XCTAssertNotEqual(kept, catalog[1], "calibrated on the pattern, int8 runs it")
        XCTAssertGreaterThanOrEqual(Self.psnr(kept, catalog[1]), 40, "int8 calibrated on the pattern, against fp32")
    }

    static func pixels(_ path: String) throws -> Data {
        try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout
    }

    /// RGB PSNR of two equal-sized 8-bit pictures.
    static func psnr(_ a: Data, _ b: Data) -> Double {
        let se = zip(a, b).reduce(0.0) { $0 + pow(Double(Int($1.0) - Int($1.1)), 2) }
        return 10 * log10(255 * 255 / max(se / Double(a.count), 1e-12))
    }
}
