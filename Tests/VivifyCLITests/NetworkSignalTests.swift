import Foundation
import XCTest

/// SIGINT against network peers that stall (issue 33, *Signals* and *Telling the truth*): a
/// slow HTTP source still being probed, and a TCP output whose reader stopped reading. Both
/// peers are small Python servers on 127.0.0.1.
final class NetworkSignalTests: XCTestCase {
    /// Starts `python3 -c script args…`; returns it once it printed its port.
    func server(_ script: String, _ args: [String]) throws -> (Process, Int) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-u", "-c", script] + args
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        try p.run()
        var line = Data()
        while !line.contains(0x0A) {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            line.append(chunk)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) else {
            p.terminate()
            throw XCTSkip("the test server did not start")
        }
        return (p, port)
    }

    /// Waits at most `seconds` for `p`; kills it if it is still running (a failure).
    func finish(_ p: Process, _ err: Pipe, within seconds: Double) -> (Int32, String, Double) {
        let started = Date()
        while p.isRunning && Date().timeIntervalSince(started) < seconds { Thread.sleep(forTimeInterval: 0.05) }
        let waited = Date().timeIntervalSince(started)
        if p.isRunning { XCTFail("still running \(seconds) s after the signal"); kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self), waited)
    }

    /// An HTTP server that sends the first 16 KB of a file at once and then 512 bytes every
    /// 0.3 s: the stream's type is known at once, its frames only after minutes.
    static let slowHTTP = """
    import socket, sys, time
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0)); s.listen(4); print(s.getsockname()[1])
    data = open(sys.argv[1], "rb").read()
    c, _ = s.accept(); c.recv(65536)
    c.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: video/mp2t\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(data))
    c.sendall(data[:16384])
    for i in range(16384, len(data), 512):
        time.sleep(0.3); c.sendall(data[i:i + 512])
    """

    /// A TCP server that accepts one connection with a small receive buffer and never reads.
    static let deafTCP = """
    import socket, time
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(("127.0.0.1", 0)); s.listen(1); print(s.getsockname()[1])
    c, _ = s.accept(); time.sleep(120)
    """

    /// A slow HTTP source interrupted while its streams are probed: exit 130 and nothing
    /// written, not a complaint about the output container (it said 64, "mkv cannot hold").
    func testSignalWhileASlowHTTPSourceIsProbed() throws {
        let dir = try CLI.tempDir()
        let ts = dir + "/source.ts"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=320x180:r=30:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-g", "30", "-f", "mpegts", ts])
        let (http, port) = try server(Self.slowHTTP, [ts])
        defer { http.terminate() }
        let out = dir + "/out.mkv"
        let (vivify, err) = try CLI.start(CLI.binary, ["run", "http://127.0.0.1:\(port)/source.ts", out, "--mode", "live", "--timeout", "30"])
        Thread.sleep(forTimeInterval: 2)
        XCTAssertTrue(vivify.isRunning, "still probing the slow source")
        kill(vivify.processIdentifier, SIGINT)
        let (code, stderr, waited) = finish(vivify, err, within: 10)
        XCTAssertEqual(code, 130, stderr)
        XCTAssertFalse(stderr.contains("cannot hold"), stderr)
        XCTAssertLessThan(waited, 2.5)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0 != "source.ts" }, [], "nothing written")
    }

    /// A TCP output whose reader stopped reading: the first SIGINT ends the run within
    /// 2 s (its blocked writes are abandoned a moment after the signal) with 130.
    func testSignalWhileATCPOutputIsStuck() throws {
        let dir = try CLI.tempDir()
        // Lossless 640x360 noise: megabytes a second, far beyond the socket buffers.
        let clip = dir + "/noise.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "nullsrc=s=640x360:r=30:d=8,geq=random(1)*255:128:128", "-c:v", "ffv1", clip])
        let (deaf, port) = try server(Self.deafTCP, [])
        defer { deaf.terminate() }
        let (vivify, err) = try CLI.start(CLI.binary, ["run", clip, "tcp://127.0.0.1:\(port)", "--crf", "0", "--quiet"])
        Thread.sleep(forTimeInterval: 4)
        XCTAssertTrue(vivify.isRunning, "blocked on the peer")
        kill(vivify.processIdentifier, SIGINT)
        let (code, stderr, waited) = finish(vivify, err, within: 10)
        XCTAssertEqual(code, 130, stderr)
        XCTAssertLessThan(waited, 2.5, "first signal to exit")
    }
}
