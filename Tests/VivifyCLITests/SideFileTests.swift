import Foundation
import XCTest

/// The stats, trace and plot files (issue 14, item 3): checked before the work like the output,
/// a failed write (a full disk, a file-size limit) is a clear error that leaves no temporary
/// file, and an existing report is replaced by the next run.
final class SideFileTests: XCTestCase {
    func testAFailedSideFileWriteLeavesNoPartial() throws {
        let dir = try CLI.tempDir()
        for option in ["--stats", "--trace", "--plot"] {
            let target = dir + "/report" + (option == "--plot" ? ".svg" : ".json")
            // A 512-byte file-size limit makes the write fail with EFBIG, as a full disk would.
            let script = "trap '' XFSZ; ulimit -f 1; exec \"$0\" bench --size 64x48 --frames 300 \(option) \"$1\""
            let r = try CLI.run("/bin/sh", ["-c", script, CLI.binary, target])
            XCTAssertEqual(r.code, 73, "\(option): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("report") && r.stderr.contains("File too large"), r.stderr)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "\(option): nothing left behind")
        }
    }

    func testSideFilesAreCheckedBeforeTheWork() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:d=1", clip])
        let missing = try CLI.vivify(["run", clip, dir + "/out.mp4", "--stats", dir + "/nowhere/stats.json"])
        XCTAssertEqual(missing.code, 73, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("nowhere"), missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mp4"), "refused before the output was made")
        let input = try CLI.vivify(["run", clip, dir + "/out.mp4", "--plot", clip])
        XCTAssertEqual(input.code, 64, input.stderr)
        XCTAssertEqual(try CLI.vivify(["run", clip, dir + "/out.mp4", "--trace", "/dev/null"]).code, 64)
        // A report from an earlier run is replaced (no -y needed: reports are rewritten every run).
        try Data("old".utf8).write(to: URL(fileURLWithPath: dir + "/stats.json"))
        let again = try CLI.vivify(["run", clip, dir + "/out.mp4", "--stats", dir + "/stats.json", "--quiet"])
        XCTAssertEqual(again.code, 0, again.stderr)
        let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/stats.json"))) as? [String: Any]
        XCTAssertNotNil(stats?["run"], "the report was rewritten")
    }
}
