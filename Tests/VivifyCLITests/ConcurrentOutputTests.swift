import Foundation
import XCTest

/// Two runs without -y to the same new output (issue 33): both passed the check at the start
/// and one silently replaced the other. Now the first to finish writes it and the other
/// fails (73) saying so, keeping its own frames beside; with -y the last one wins.
final class ConcurrentOutputTests: XCTestCase {
    func testTwoRunsToOneNewOutputNeverSilentlyReplace() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/in.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=3", "-c:v", "ffv1", source])
        let out = dir + "/out.mkv"
        let runs = try (0..<2).map { k -> (Process, Pipe) in
            let p = Process(), err = Pipe()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            p.arguments = ["run", source, out, "--upscale", "--codec", "ffv1", "--segment-seconds", "0", "--quiet", "--resize", k == 0 ? "640x360" : "320x180"]
            p.standardError = err
            try p.run()
            return (p, err)
        }
        var codes: [Int32] = [], messages: [String] = []
        for (p, err) in runs {
            p.waitUntilExit()
            codes.append(p.terminationStatus)
            messages.append(String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
        }
        XCTAssertEqual(codes.sorted(), [0, 73], "one wins, the other says so: \(messages)")
        if let loser = codes.firstIndex(of: 73) {
            XCTAssertTrue(messages[loser].contains("appeared"), messages[loser])
            // The winner's file is the one in place, whole.
            let v = CLI.streams(try CLI.probe(out), "video")[0]
            XCTAssertEqual(CLI.int(v["width"]), loser == 0 ? 320 : 640)
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 90)
            // The loser's frames are kept beside it, whole (the message said they were "still
            // at" a temporary file that was then deleted).
            let kept = dir + "/out.incomplete.mkv"
            XCTAssertTrue(messages[loser].contains(kept), messages[loser])
            guard FileManager.default.fileExists(atPath: kept) else { return XCTFail("no \(kept)") }
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(kept)), 90)
            XCTAssertEqual(CLI.int(CLI.streams(try CLI.probe(kept), "video")[0]["width"]), loser == 0 ? 640 : 320)
        }
    }
}
