import Foundation
import XCTest

/// A signal ends a run at once even while it waits on input: a FIFO nobody writes to, an idle
/// standard input (issue 14, item 3). Nothing is left behind when no frame came; the frames
/// that did come are kept as a playable file.
final class BlockedInputSignalTests: XCTestCase {
    /// Starts vivify with `args` (stdin from `stdin`, or nothing), sends `signal` after it has
    /// had time to block, and returns (exit code, stderr, seconds from the signal to the exit).
    func interrupt(_ args: [String], stdin: FileHandle? = nil, signal: Int32, after delay: Double = 0.8) throws -> (Int32, String, Double) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = args
        p.standardInput = stdin ?? FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        Thread.sleep(forTimeInterval: delay)
        // Blocked means the input is open: a descriptor past the standard three on the FIFO
        // (the path) or on standard input's pipe (vivify reopens it non-blocking). Startup
        // takes longer on a loaded machine (and vivify starts itself again once, to set
        // OpenMP's wait policy), so this waits for it rather than trusting the delay alone.
        let fds = "/proc/\(p.processIdentifier)/fd"
        let stdinTarget = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(stdin?.fileDescriptor ?? -1)")
        let deadlineOpen = Date().addingTimeInterval(10)
        func opened() -> Bool {
            let entries = (try? FileManager.default.contentsOfDirectory(atPath: fds)) ?? []
            return entries.compactMap(Int.init).filter { $0 > 2 }.contains { fd in
                guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "\(fds)/\(fd)") else { return false }
                return target.hasSuffix(".fifo") || target == stdinTarget
            }
        }
        while p.isRunning && !opened() && Date() < deadlineOpen { Thread.sleep(forTimeInterval: 0.05) }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertTrue(p.isRunning, "vivify should be blocked on its input, not finished")
        let sent = Date()
        kill(p.processIdentifier, signal)
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        let took = Date().timeIntervalSince(sent)
        if p.isRunning { p.terminate(); kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), took)
    }

    func testSignalWhileWaitingForAFIFOWriterEndsAtOnce() throws {
        let dir = try CLI.tempDir()
        let fifo = dir + "/in.fifo"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        for (sig, args) in [(SIGINT, ["--input-format", "y4m"]), (SIGTERM, ["--input-format", "y4m"]), (SIGHUP, ["--input-format", "y4m"]),
                            (SIGINT, [String]()), (SIGTERM, [String]())] {
            let (code, stderr, took) = try interrupt(["run", fifo, dir + "/out.mp4"] + args, signal: sig)
            XCTAssertEqual(code, 130, "signal \(sig) \(args): \(stderr)")
            XCTAssertLessThan(took, 2, "signal \(sig) \(args) ended the wait in \(took) s")
            XCTAssertTrue(stderr.contains("in.fifo") && stderr.contains("Interrupted"), stderr)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).sorted(), ["in.fifo"], "nothing is left behind")
        }
    }

    func testSignalWhileStandardInputIsIdleEndsAtOnce() throws {
        let dir = try CLI.tempDir()
        for args in [["--input-format", "y4m"], []] {
            let pipe = Pipe()  // the test holds the write end open and writes nothing
            let (code, stderr, took) = try interrupt(["run", "-", dir + "/out.mp4"] + args, stdin: pipe.fileHandleForReading, signal: SIGINT)
            XCTAssertEqual(code, 130, "\(args): \(stderr)")
            XCTAssertLessThan(took, 2)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "nothing is left behind: \(stderr)")
            try pipe.fileHandleForWriting.close()
        }
    }

    func testFramesBeforeAnIdleWaitAreKept() throws {
        let dir = try CLI.tempDir()
        // Five 64x48 frames, then the writer stays silent.
        let y4m = dir + "/five.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:r=25", "-frames:v", "5", "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", y4m])
        let pipe = Pipe()
        pipe.fileHandleForWriting.write(try Data(contentsOf: URL(fileURLWithPath: y4m)))
        let out = dir + "/out.mp4"
        let (code, stderr, took) = try interrupt(["run", "-", out, "--input-format", "y4m"], stdin: pipe.fileHandleForReading, signal: SIGTERM, after: 2)
        XCTAssertEqual(code, 130, stderr)
        XCTAssertLessThan(took, 3)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 5, "the five frames are kept in a playable file")
        try pipe.fileHandleForWriting.close()
    }
}
