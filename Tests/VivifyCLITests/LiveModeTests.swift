import Foundation
import XCTest

/// Live mode end to end: a file paced at its native rate through a deliberately slow model.
final class LiveModeTests: XCTestCase {
    func testLiveRunDropsStaleFramesAndHoldsTheRate() throws {
        let dir = try CLI.tempDir()
        let mirror = UpscaleCLITests.mirror
        guard FileManager.default.fileExists(atPath: mirror) else { throw XCTSkip("../shared/models is not present") }
        let out = dir + "/live.mp4", stats = dir + "/stats.json", trace = dir + "/trace.json", plot = dir + "/plot.svg"
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        // cunet takes far longer than a 33 ms frame interval on 2 cores: most frames go stale.
        p.arguments = ["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), out, "--upscale", "waifu2x-cunet-2x", "--mode", "live",
                       "--realtime", "--live-output", "hold", "--stats", stats, "--trace", trace, "--plot", plot, "--preset", "ultrafast"]
        var env = ProcessInfo.processInfo.environment
        env["VIVIFY_MODELS"] = dir + "/models"
        env["VIVIFY_MODEL_MIRROR"] = mirror
        p.environment = env
        let err = Pipe()
        p.standardError = err
        try p.run()
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, stderr)
        XCTAssertTrue(stderr.contains("frame timing"), "live mode prints the summary: \(stderr)")

        let s = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        let framesIn = s["frames_in"] as! Int, processed = s["frames_processed"] as! Int, dropped = s["frames_dropped"] as! Int
        XCTAssertEqual(framesIn, 60)
        XCTAssertEqual(processed + dropped, framesIn, "every frame is processed or counted as dropped")
        XCTAssertGreaterThan(dropped, 0)
        XCTAssertGreaterThan(processed, 0)
        XCTAssertEqual(s["bottleneck_stage"] as? String, "upscale")

        // No two model spans overlap: one prediction in flight.
        let t = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: trace))) as? [String: Any])
        let events = t["traceEvents"] as! [[String: Any]]
        let modelTrack = events.first { $0["ph"] as? String == "M" && ($0["args"] as? [String: Any])?["name"] as? String == "upscale" }!["tid"] as! Int
        let spans = events.filter { $0["ph"] as? String == "X" && $0["tid"] as? Int == modelTrack }
            .map { e -> (Double, Double) in
                let ts = e["ts"] as! Double, dur = e["dur"] as! Double
                return (ts, ts + dur)
            }.sorted { $0.0 < $1.0 }
        XCTAssertEqual(spans.count, processed)
        for (a, b) in zip(spans, spans.dropFirst()) { XCTAssertLessThanOrEqual(a.1, b.0, "model spans overlap") }
        XCTAssertEqual(events.filter { $0["ph"] as? String == "i" }.count, dropped)
        XCTAssertTrue(try String(contentsOfFile: plot, encoding: .utf8).hasPrefix("<?xml"))

        // hold: every source timestamp is written, so the duration is the source's.
        let probe = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(probe), 60)
        XCTAssertEqual(CLI.double(CLI.streams(probe, "video")[0]["duration"])!, 2.0, accuracy: 1.0 / 30)
        XCTAssertEqual(CLI.int(CLI.streams(probe, "video")[0]["width"]), 640)
        XCTAssertEqual(CLI.streams(probe, "audio").count, 1, "audio copied in live mode too")
    }

    func testOfflineRunReportsStatsWithoutDrops() throws {
        let dir = try CLI.tempDir()
        let stats = dir + "/stats.json"
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o.mkv", "--resize", "160x90", "--stats", stats,
                                "--summary", "--preset", "ultrafast"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("frame timing"), r.stderr)
        let s = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        XCTAssertEqual(s["frames_in"] as? Int, 60)
        XCTAssertEqual(s["frames_processed"] as? Int, 60)
        XCTAssertEqual(s["frames_dropped"] as? Int, 0)
        let names = (s["stages"] as! [[String: Any]]).map { $0["name"] as! String }
        XCTAssertEqual(names, ["decode", "finish", "encode"])
        XCTAssertEqual((s["target_fps"] as? NSNumber)?.doubleValue, 30, "the source's own rate")
        // The stats say what ran: the input, output and every setting.
        let run = try XCTUnwrap(s["run"] as? [String: Any])
        XCTAssertEqual(run["input"] as? String, CLI.clip("testsrc-320x180-30fps-audio.mp4"))
        XCTAssertEqual((run["settings"] as? [String: String])?["resize"], "160x90")
        XCTAssertEqual((run["settings"] as? [String: String])?["preset"], "ultrafast")
        // A 25 fps source is measured against 25 fps, not 30, unless --target-fps says otherwise.
        for (extra, rate) in [([String](), 25.0), (["--target-fps", "60"], 60.0)] {
            let r25 = try CLI.vivify(["run", CLI.clip("odd-161x91-25fps.webm"), dir + "/o25.mkv", "--stats", stats, "--quiet", "-y"] + extra)
            XCTAssertEqual(r25.code, 0, r25.stderr)
            let s25 = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
            XCTAssertEqual((s25["target_fps"] as? NSNumber)?.doubleValue, rate, "\(extra)")
        }
    }

    func testBenchReportsTheTarget() throws {
        let dir = try CLI.tempDir()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = ["bench", "--upscale", "waifu2x-photo-2x", "--size", "160x90", "--frames", "6", "--target-fps", "1000"]
        var env = ProcessInfo.processInfo.environment
        env["VIVIFY_MODELS"] = dir + "/models"
        env["VIVIFY_MODEL_MIRROR"] = UpscaleCLITests.mirror
        p.environment = env
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertTrue(text.contains("does NOT meet 1000 fps"), text)
        XCTAssertTrue(text.contains("limiting stage: upscale"), text)
        XCTAssertTrue(text.contains("GFLOP per frame"), text)
        XCTAssertTrue(text.contains("frames in 6, processed 6, dropped 0"), text)
    }
}
