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
}
