import Foundation
import XCTest

/// One signal policy for every command (issue 33): `image` (like `infer`, `join`, `models`)
/// had no handler and died with 143/129. Now SIGINT and SIGTERM during the work exit 130, the
/// documented code, and leave no temporary file and no output; they say so on stderr (a batch
/// stopped part way used to end silently).
final class SignalEveryCommandTests: XCTestCase {
    func testImageStoppedBySignalExits130AndLeavesNothing() throws {
        let dir = try CLI.tempDir()
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=1920x1080", "-frames:v", "1", dir + "/in.png"])
        for sig in [SIGINT, SIGTERM] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            // The reference backend on a 1920x1080 picture makes the work last long enough to be
            // interrupted (a 640x480 one is done within 1.5 s since its convolutions use every core).
            p.arguments = ["image", dir + "/in.png", dir + "/out.png", "--upscale", "--backend", "reference"]
            let stderr = Pipe()
            p.standardError = stderr
            try p.run()
            Thread.sleep(forTimeInterval: 1.5)
            XCTAssertTrue(p.isRunning, "still working when the signal comes")
            kill(p.processIdentifier, sig)
            let said = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            XCTAssertTrue(said.contains("interrupted (\(sig == SIGINT ? "SIGINT" : "SIGTERM"))") && said.contains("not written"), "says so: \(said)")
            XCTAssertEqual(p.terminationReason, .exit, "exited, not killed by signal \(sig)")
            XCTAssertEqual(p.terminationStatus, 130, "signal \(sig)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains("partial") }, [], "no temporary file left")
        }
    }
}

/// The first signal to `run` stops feeding the models: the frames still queued are not run
/// through a slow model (issue 33: 9–32 s), only the one in flight finishes; the file is
/// closed playable and the exit is 130.
final class PromptInterruptTests: XCTestCase {
    func testFirstSignalEndsASlowRunWithinTwoSeconds() throws {
        let mirror = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models").path
        guard FileManager.default.fileExists(atPath: mirror) else { throw XCTSkip("../shared/models is not beside the checkout") }
        let dir = try CLI.tempDir()
        let source = dir + "/in.mkv", out = dir + "/out.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30:duration=20", "-c:v", "ffv1", source])
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        // realesr-animevideov3-4x: about half a second a frame on two AVX-512 cores, several
        // seconds on two older or busy ones.
        p.arguments = ["run", source, out, "--upscale", "realesr-animevideov3-4x", "--codec", "ffv1", "--segment-seconds", "0", "--quiet"]
        p.environment = ProcessInfo.processInfo.environment.merging(["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": mirror]) { $1 }
        p.standardError = FileHandle.nullDevice
        let launched = Date()
        try p.run()
        Thread.sleep(forTimeInterval: 6)
        XCTAssertTrue(p.isRunning)
        let start = Date()
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        let took = Date().timeIntervalSince(start)
        XCTAssertEqual(p.terminationStatus, 130)
        let frames = CLI.decodedFrames(try CLI.probe(out)) ?? 0
        XCTAssertGreaterThan(frames, 0, "a playable file with the frames done")
        // Only the frame in flight finishes: at most two of this machine's frame times (the
        // whole run over the frames it wrote, model loading included, so an overestimate),
        // and never more than 2.5 s where frames are fast. The queued frames (three or more)
        // would take longer than that on any machine.
        let frameTime = Date().timeIntervalSince(launched) / Double(max(frames, 1))
        print("first signal to exit: \(took) s; \(frames) frames written, \(frameTime) s a frame")
        XCTAssertLessThanOrEqual(took, max(2.5, 2 * frameTime), "only the frame in flight finishes")
    }
}
