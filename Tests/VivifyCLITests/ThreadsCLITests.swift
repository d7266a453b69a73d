import Foundation
import XCTest

/// `--threads N` on the commands that run a model: the count reaches oneDNN's OpenMP runtime
/// (read back from it), the pictures do not depend on it, and a count out of range is a
/// usage error.
final class ThreadsCLITests: XCTestCase {
    func testThreadCountReachesOpenMPAndLeavesPicturesAlone() throws {
        func bench(_ extra: [String]) throws -> [String: Any] {
            let r = try CLI.vivify(["bench-model", "--model", "vivify-fast-2x", "--size", "64x48", "--runs", "1"] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            return try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any] ?? [:]
        }
        let one = try bench(["--threads", "1"])
        XCTAssertEqual(one["threads"] as? Int, 1)
        XCTAssertEqual(one["openmp_threads"] as? Int, 1, "oneDNN ran with the count asked for")
        let three = try bench(["--threads", "3"])
        XCTAssertEqual(three["openmp_threads"] as? Int, 3)
        let all = try bench([])
        XCTAssertEqual(all["threads"] as? Int, ProcessInfo.processInfo.activeProcessorCount, "default: all cores")
        XCTAssertEqual(all["openmp_threads"] as? Int, ProcessInfo.processInfo.activeProcessorCount)

        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x96:rate=1", "-frames:v", "1", "-vf", "format=gray", picture])
        var outputs: [Data] = []
        for threads in ["1", "2"] {
            let out = dir + "/t\(threads).png"
            let r = try CLI.vivify(["image", picture, out, "--colorize", "--upscale", "--threads", threads, "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            outputs.append(try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout)
        }
        XCTAssertEqual(outputs[0].count, 320 * 192 * 3)
        let worst = zip(outputs[0], outputs[1]).map { abs(Int($0) - Int($1)) }.max() ?? 255
        XCTAssertLessThanOrEqual(worst, 1, "1 and 2 threads give the same picture (8-bit levels)")

        for bad in ["0", "5000"] {
            let r = try CLI.vivify(["image", picture, dir + "/bad.png", "--upscale", "--threads", bad])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("--threads \(bad)"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/bad.png"))
        }
    }
}
