import Foundation
import XCTest

/// Live network I/O end to end on 127.0.0.1 (issue 14, item 6): ffmpeg streams MPEG-TS over
/// UDP into vivify, vivify streams MPEG-TS over UDP to an ffmpeg reader, and a silent source
/// times out with a clear error.
final class NetworkLiveTests: XCTestCase {
    /// A UDP port free right now.
    func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        addr.sin_port = 0
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        return Int(UInt16(bigEndian: addr.sin_port))
    }

    /// Waits (at most 10 s) until something on this machine listens on `port`: a bound UDP
    /// socket, or a TCP socket in the LISTEN state. A fixed sleep was not enough for a debug
    /// build starting on a loaded machine (the sender began before vivify listened and the
    /// stream's first keyframe was lost).
    func waitForListener(on port: Int, udp: Bool) {
        let hex = String(format: ":%04X", port)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let table = (try? String(contentsOfFile: udp ? "/proc/net/udp" : "/proc/net/tcp", encoding: .utf8)) ?? ""
            let listening = table.split(separator: "\n").dropFirst().contains { line in
                let f = line.split(separator: " ")
                return f.count > 3 && f[1].hasSuffix(hex) && (udp || f[3] == "0A")
            }
            if listening { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("nothing listens on port \(port) after 10 s")
    }

    func start(_ executable: String, _ args: [String]) throws -> (Process, Pipe) { try CLI.start(executable, args) }

    func finish(_ p: Process, _ err: Pipe, within seconds: Double) -> (Int32, String) {
        let deadline = Date().addingTimeInterval(seconds)
        while p.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        if p.isRunning { XCTFail("still running after \(seconds) s"); kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        return (p.terminationStatus, String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }

    func testUDPStreamIntoVivify() throws {
        let dir = try CLI.tempDir()
        let port = freePort()
        let url = "udp://127.0.0.1:\(port)"
        let out = dir + "/live.mp4"
        let (vivify, err) = try start(CLI.binary, ["run", url, out, "--mode", "live", "--timeout", "2"])
        waitForListener(on: port, udp: true)
        // 2 s of 25 fps video at its own pace (-re), as a live sender would.
        try CLI.ffmpeg(["-re", "-f", "lavfi", "-i", "testsrc=s=160x120:r=25:d=2", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", "-f", "mpegts", url])
        let (code, stderr) = finish(vivify, err, within: 20)
        XCTAssertEqual(code, 0, stderr)
        XCTAssertTrue(stderr.contains("no data for 2 s"), "the quiet source ends the run: \(stderr)")
        let frames = CLI.decodedFrames(try CLI.probe(out)) ?? 0
        XCTAssertGreaterThanOrEqual(frames, 45, "frames received over UDP")
        XCTAssertLessThanOrEqual(frames, 50)
    }

    func testVivifyStreamsOutOverUDP() throws {
        let dir = try CLI.tempDir()
        let port = freePort()
        let url = "udp://127.0.0.1:\(port)"
        let received = dir + "/received.ts"
        let (reader, readerErr) = try start("/usr/bin/ffmpeg", ["-v", "error", "-i", url + "?timeout=4000000", "-c", "copy", "-f", "mpegts", received])
        waitForListener(on: port, udp: true)
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let sent = try CLI.vivify(["run", clip, url, "--quiet"])
        XCTAssertEqual(sent.code, 0, sent.stderr)
        _ = finish(reader, readerErr, within: 20)
        let probe = try CLI.probe(received)
        let video = CLI.streams(probe, "video").first
        XCTAssertEqual(CLI.int(video?["width"]), 320)
        XCTAssertEqual(CLI.decodedFrames(probe), CLI.decodedFrames(try CLI.probe(clip)), "every frame arrived")
        XCTAssertFalse(CLI.streams(probe, "audio").isEmpty, "the audio went along")
    }

    func testTCPInAndHTTPOut() throws {
        let dir = try CLI.tempDir()
        // vivify listens on TCP; ffmpeg connects and sends 2 s of video.
        let tcpPort = freePort()
        let tcp = "tcp://127.0.0.1:\(tcpPort)"
        let out = dir + "/tcp.mp4"
        let (vivify, err) = try start(CLI.binary, ["run", tcp + "?listen=1", out, "--mode", "live", "--timeout", "3"])
        waitForListener(on: tcpPort, udp: false)
        try CLI.ffmpeg(["-re", "-f", "lavfi", "-i", "testsrc=s=160x120:r=25:d=2", "-c:v", "libx264", "-preset", "ultrafast", "-f", "mpegts", tcp])
        let (code, stderr) = finish(vivify, err, within: 20)
        XCTAssertEqual(code, 0, stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 50, "TCP loses nothing")
        // ffmpeg serves HTTP; vivify POSTs the processed clip to it (the muxer from the name).
        let httpPort = freePort()
        let http = "http://127.0.0.1:\(httpPort)/live.ts"
        let received = dir + "/http.ts"
        let (server, serverErr) = try start("/usr/bin/ffmpeg", ["-v", "error", "-listen", "1", "-i", http, "-c", "copy", received])
        waitForListener(on: httpPort, udp: false)
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let sent = try CLI.vivify(["run", clip, http, "--quiet"])
        XCTAssertEqual(sent.code, 0, sent.stderr)
        _ = finish(server, serverErr, within: 20)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(received)), CLI.decodedFrames(try CLI.probe(clip)))
    }

    func testSilentSourceTimesOutAndSignalEndsTheWait() throws {
        let dir = try CLI.tempDir()
        let url = "udp://127.0.0.1:\(freePort())"
        let started = Date()
        let r = try CLI.vivify(["run", url, dir + "/out.mp4", "--mode", "live", "--timeout", "1"])
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertTrue(r.stderr.contains(url) && r.stderr.contains("--timeout"), r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 8)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
        // Waiting with a long timeout, a SIGINT ends it at once.
        let (vivify, err) = try start(CLI.binary, ["run", url, dir + "/out.mp4", "--mode", "live", "--timeout", "60"])
        waitForListener(on: Int(url.split(separator: ":").last!)!, udp: true)
        let signalled = Date()
        kill(vivify.processIdentifier, SIGINT)
        let (code, stderr) = finish(vivify, err, within: 10)
        XCTAssertEqual(code, 130, stderr)
        XCTAssertLessThan(Date().timeIntervalSince(signalled), 3)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
    }
}
