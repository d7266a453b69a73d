import Foundation
import XCTest

/// One signal policy for every command (issue 33): `image` (like `infer`, `join`, `models`)
/// had no handler and died with 143/129. Now SIGINT and SIGTERM during the work exit 130, the
/// documented code, and leave no temporary file and no output.
final class SignalEveryCommandTests: XCTestCase {
    func testImageStoppedBySignalExits130AndLeavesNothing() throws {
        let dir = try CLI.tempDir()
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x480", "-frames:v", "1", dir + "/in.png"])
        for sig in [SIGINT, SIGTERM] {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            // The reference backend makes the work last long enough to be interrupted.
            p.arguments = ["image", dir + "/in.png", dir + "/out.png", "--upscale", "--backend", "reference"]
            p.standardError = FileHandle.nullDevice
            try p.run()
            Thread.sleep(forTimeInterval: 1.5)
            XCTAssertTrue(p.isRunning, "still working when the signal comes")
            kill(p.processIdentifier, sig)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationReason, .exit, "exited, not killed by signal \(sig)")
            XCTAssertEqual(p.terminationStatus, 130, "signal \(sig)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains("partial") }, [], "no temporary file left")
        }
    }
}
