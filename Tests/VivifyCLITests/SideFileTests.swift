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

    /// A report never replaces the run's own output, another report or a model file (issue 33:
    /// `--stats out.mkv` replaced the video; `--plot` named as the model's .bin replaced it).
    func testReportsNeverReplaceOutputsOrModels() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:d=1", clip])
        let fixtures = CLI.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers")
        for ext in ["param", "bin", "json"] {
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("eccv16-tiny.\(ext)").path, toPath: dir + "/m.\(ext)")
        }
        let bin = try Data(contentsOf: URL(fileURLWithPath: dir + "/m.bin"))
        try Data("earlier video".utf8).write(to: URL(fileURLWithPath: dir + "/out.mkv"))
        let cases: [[String]] = [
            ["run", clip, dir + "/out.mkv", "-y", "--stats", dir + "/out.mkv"],
            ["run", clip, dir + "/new.mkv", "--stats", dir + "/r.json", "--trace", dir + "/./r.json"],
            ["run", clip, dir + "/new.mkv", "--colorize", dir + "/m.param", "--plot", dir + "/m.bin"],
            ["run", clip, dir + "/new.mkv", "--colorize", dir + "/m.param", "--stats", dir + "/m.json"],
        ]
        for args in cases {
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("of its own"), r.stderr)
        }
        XCTAssertEqual(try String(contentsOfFile: dir + "/out.mkv", encoding: .utf8), "earlier video")
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/m.bin")), bin)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/new.mkv"))
    }

    /// `--stats` says how each model ran (backend and number format) and records the threads,
    /// the precision asked, the pixel limit and the memory budget beside the other settings (issue 33).
    func testStatsSayHowEachModelRan() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:d=0.2", clip])
        let r = try CLI.vivify(["run", clip, dir + "/out.mkv", "--upscale", "--colorize", "--precision", "fp32", "--threads", "1",
                                "--max-memory", "512M", "--stats", dir + "/s.json", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/s.json"))) as? [String: Any]
        let run = stats?["run"] as? [String: Any] ?? [:]
        let models = run["models"] as? [[String: Any]] ?? []
        XCTAssertEqual(models.map { $0["task"] as? String }, ["colorize", "upscale"])
        for m in models {
            XCTAssertEqual(m["backend"] as? String, "onednn")
            XCTAssertEqual(m["precision"] as? String, "fp32")
        }
        let settings = run["settings"] as? [String: String] ?? [:]
        XCTAssertEqual(settings["threads"], "1")
        XCTAssertEqual(settings["precision"], "fp32")
        XCTAssertEqual(settings["max_pixels"], "40000000")
        XCTAssertEqual(settings["max_memory"], "536870912")
        // Without --max-memory, the budget the tiles had: oneDNN's 1 GiB (a discrete GPU's is a
        // quarter of its memory: `BackendChoice.standardTileMemoryBudget`).
        let plain = try CLI.vivify(["run", clip, dir + "/out2.mkv", "--upscale", "--backend", "onednn", "--threads", "1", "--stats", dir + "/s2.json", "--quiet"])
        XCTAssertEqual(plain.code, 0, plain.stderr)
        let second = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/s2.json"))) as? [String: Any]
        XCTAssertEqual(((second?["run"] as? [String: Any])?["settings"] as? [String: String])?["max_memory"], String(1 << 30))
    }
}
