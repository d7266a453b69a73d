import Foundation
import XCTest

/// Each kind of bad input gives one clear message naming the input, a documented exit code,
/// and leaves no half-written file behind.
final class BadInputTests: XCTestCase {
    private func expectFailure(_ args: [String], code: Int32, mentions: [String], stdinFile: String? = nil,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try CLI.vivify(args, stdinFile: stdinFile)
        XCTAssertEqual(r.code, code, r.stderr, file: file, line: line)
        for m in mentions { XCTAssertTrue(r.stderr.contains(m), "stderr lacks '\(m)': \(r.stderr)", file: file, line: line) }
    }

    func testMissingInput() throws {
        let dir = try CLI.tempDir()
        try expectFailure(["run", dir + "/nope.mp4", dir + "/o.mp4"], code: 66, mentions: ["nope.mp4", "no such file"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mp4"))
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testNotAMediaFile() throws {
        let dir = try CLI.tempDir()
        try expectFailure(["run", CLI.clip("make-media.sh"), dir + "/o.mp4"], code: 66, mentions: ["make-media.sh", "not a media file"])
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testNoVideoStream() throws {
        let dir = try CLI.tempDir()
        let audio = dir + "/tone.m4a"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "sine=duration=0.5", "-c:a", "aac", audio])
        try expectFailure(["run", audio, dir + "/o.mp4"], code: 69, mentions: ["tone.m4a", "no video stream"])
    }

    func testUnsupportedCodec() throws {
        // A Matroska file whose video stream uses a codec id this FFmpeg has no decoder for.
        let dir = try CLI.tempDir()
        let path = dir + "/unknown.mkv"
        try CLI.ffmpeg(["-i", CLI.clip("untagged-240x136-24fps.avi"), "-c:v", "copy", path])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let id = Array("V_MPEG4/ISO/ASP".utf8)
        guard let at = (0..<(bytes.count - id.count)).first(where: { Array(bytes[$0..<$0 + id.count]) == id }) else {
            return XCTFail("codec id not found in the fixture")
        }
        let replacement = Array("V_VIVIFY/NOPE!!".utf8)
        bytes.replaceSubrange(at..<at + id.count, with: replacement)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        try expectFailure(["run", path, dir + "/o.mp4"], code: 69, mentions: ["unknown.mkv", "decoder"])
    }

    func testUnknownEncoder() throws {
        let dir = try CLI.tempDir()
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mp4", "--codec", "vivid9000"],
                          code: 69, mentions: ["vivid9000", "libx264"])
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testUnwritableOutputDirectory() throws {
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), "/nonexistent-vivify-dir/o.mp4"],
                          code: 73, mentions: ["/nonexistent-vivify-dir", "does not exist"])
        // /proc refuses new files even to root.
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), "/proc/vivify-test.mp4"], code: 73, mentions: ["/proc/vivify-test.mp4"])
    }

    func testTruncatedY4MNamesTheFrame() throws {
        let dir = try CLI.tempDir()
        let y4m = dir + "/in.y4m"
        try CLI.ffmpeg(["-i", CLI.clip("untagged-240x136-24fps.avi"), "-f", "yuv4mpegpipe", y4m])
        let data = try Data(contentsOf: URL(fileURLWithPath: y4m))
        let frameBytes = 6 + 240 * 136 * 3 / 2
        let headerBytes = data.count - 24 * frameBytes
        let cut = dir + "/cut.y4m"
        try data.prefix(headerBytes + 5 * frameBytes + 1000).write(to: URL(fileURLWithPath: cut))
        let out = dir + "/o.mkv"
        // An older complete output is kept: a failed run never replaces it.
        try Data("an older complete output".utf8).write(to: URL(fileURLWithPath: out))
        try expectFailure(["run", "-", out, "--quiet", "-y"], code: 65, mentions: ["standard input", "truncated", "frame 5", "o.incomplete.mkv"], stdinFile: cut)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "an older complete output")
        // Nothing lost: the five whole frames were saved beside it, and the file plays.
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/o.incomplete.mkv")), 5)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testRawLengthThatDoesNotFitSize() throws {
        let dir = try CLI.tempDir()
        let raw = dir + "/in.rgb"
        try Data(repeating: 7, count: 100 * 50 * 3 * 4 + 10).write(to: URL(fileURLWithPath: raw))
        try expectFailure(["run", raw, dir + "/o.mp4", "--input-format", "rgb24", "--size", "100x50", "--rate", "25"],
                          code: 65, mentions: ["in.rgb", "--size", "60010 bytes"])
        // On a pipe the length is known only at the end: the error names the short frame.
        let piped = try CLI.run("/bin/sh", ["-c", "cat '\(raw)' | '\(CLI.binary)' run - - --input-format rgb24 --size 100x50 --rate 25 --output-format rgb24"])
        XCTAssertEqual(piped.code, 65, piped.stderr)
        XCTAssertTrue(piped.stderr.contains("frame 4") && piped.stderr.contains("--size 100x50"), piped.stderr)
        XCTAssertEqual(piped.stdout.count, 4 * 15000, "the four whole frames still went out")
        try expectFailure(["run", "-", "-", "--input-format", "rgb24", "--rate", "25"], code: 64, mentions: ["--size"], stdinFile: raw)
    }

    func testBadOptionValues() throws {
        try expectFailure(["run", "-", "-", "--size", "12"], code: 64, mentions: ["--size 12", "WxH"])
        try expectFailure(["run", "-", "-", "--rate", "fast"], code: 64, mentions: ["--rate fast"])
        let dir = try CLI.tempDir()
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.unknownext"], code: 64, mentions: ["o.unknownext", "extension"])
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mp4", "--codec", "libx264", "--preset", "warp"],
                          code: 64, mentions: ["--preset", "warp", "ultrafast", "veryslow"])
        let r = try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o2.mp4", "--preset", "fastest"])
        XCTAssertFalse(r.stderr.contains("x264 [error]"), "the encoder's own log line does not leak: \(r.stderr)")
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mp4", "--assume-matrix", "bt999"], code: 64, mentions: ["bt999"])
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testCorruptPacketsAreCountedOrFatalWithStrict() throws {
        let dir = try CLI.tempDir()
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: CLI.clip("untagged-240x136-24fps.avi"))))
        for i in stride(from: bytes.count / 2, to: bytes.count / 2 + 300, by: 5) { bytes[i] ^= 0x55 }
        let damaged = dir + "/damaged.avi"
        try Data(bytes).write(to: URL(fileURLWithPath: damaged))
        let out = dir + "/o.mkv"
        let lenient = try CLI.vivify(["run", damaged, out, "--preset", "ultrafast"])
        XCTAssertEqual(lenient.code, 0, lenient.stderr)
        XCTAssertTrue(lenient.stderr.contains("damaged"), lenient.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 24)
        try expectFailure(["run", damaged, dir + "/strict.mkv", "--strict"], code: 65, mentions: ["damaged.avi", "--strict"])
    }

    /// The output guard through the binary: a device, the input under another name, an
    /// existing file without -y; -n skips with exit 0; -y replaces.
    func testOutputsThatWouldDestroyAFileAreRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.avi"
        try FileManager.default.copyItem(atPath: CLI.clip("untagged-240x136-24fps.avi"), toPath: clip)
        try FileManager.default.createSymbolicLink(atPath: dir + "/alias.avi", withDestinationPath: clip)
        try expectFailure(["run", clip, "/dev/null"], code: 64, mentions: ["/dev/null", "character device"])
        try expectFailure(["run", clip, dir + "/alias.avi", "-y"], code: 64, mentions: ["is the input"])
        let photo = dir + "/p.png"
        try CLI.ffmpeg(["-i", clip, "-frames:v", "1", photo])
        let before = try Data(contentsOf: URL(fileURLWithPath: photo))
        try expectFailure(["image", photo, photo, "--upscale", "-y"], code: 64, mentions: ["is the input"])
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: photo)), before)
        let out = dir + "/o.mkv"
        try Data("older".utf8).write(to: URL(fileURLWithPath: out))
        try expectFailure(["run", clip, out, "--max-frames", "2"], code: 73, mentions: ["already exists", "-y", "-n"])
        let skip = try CLI.vivify(["run", clip, out, "--max-frames", "2", "-n"])
        XCTAssertEqual(skip.code, 0, skip.stderr)
        XCTAssertEqual(try String(contentsOfFile: out, encoding: .utf8), "older")
        let replace = try CLI.vivify(["run", clip, out, "--max-frames", "2", "-y", "--quiet"])
        XCTAssertEqual(replace.code, 0, replace.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 2)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    /// A picture given to `run` would become a one-frame video: refused, pointing to `image`.
    func testAStillImageGivenToRunPointsToImage() throws {
        let dir = try CLI.tempDir()
        let photo = dir + "/p.jpg"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", photo])
        try expectFailure(["run", photo, dir + "/o.mp4"], code: 64, mentions: ["p.jpg", "still image", "vivify image"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mp4"))
    }

    func testInputEqualToOutputIsRefused() throws {
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), CLI.clip("untagged-240x136-24fps.avi")],
                          code: 64, mentions: ["is the input"])
    }

    /// SIGINT mid-run: the encoder is flushed, the trailer written, the file plays, exit 130.
    func testInterruptLeavesAPlayableFile() throws {
        // SIGHUP (a closed terminal or ssh session) ends a run as SIGINT does.
        for sig in [SIGINT, SIGHUP] {
            let dir = try CLI.tempDir()
            let out = dir + "/interrupted.mkv"
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            p.arguments = ["run", "-", out, "--quiet", "--preset", "ultrafast"]
            let input = Pipe()
            p.standardInput = input
            p.standardError = FileHandle.nullDevice
            try p.run()
            // An endless y4m stream: vivify can only stop because of the signal.
            let w = 64, h = 48
            let writer = input.fileHandleForWriting
            signal(SIGPIPE, SIG_IGN)
            writer.write(Data("YUV4MPEG2 W\(w) H\(h) F25:1 Ip A1:1 C420jpeg\n".utf8))
            var frame = Data("FRAME\n".utf8)
            frame.append(Data(repeating: 128, count: w * h * 3 / 2))
            for _ in 0..<40 { writer.write(frame) }
            kill(p.processIdentifier, sig)
            // Keep feeding so the blocked read returns and the loop sees the flag.
            var fed = 0
            while p.isRunning && fed < 10_000 {
                do { try writer.write(contentsOf: frame) } catch { break }
                fed += 1
            }
            try? writer.close()
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 130, "signal \(sig)")
            let frames = CLI.decodedFrames(try CLI.probe(out)) ?? 0
            XCTAssertGreaterThanOrEqual(frames, 1, "frames done so far are in a playable file")
            XCTAssertEqual(CLI.leftovers(dir), [])
        }
    }

    /// A model whose weights hold NaN gives an error naming it (65), not a black picture and 0.
    func testNonFiniteModelOutputIsAnError() throws {
        let dir = try CLI.tempDir()
        // One 3×3 convolution, 3 → 3 channels, "same" padded, one NaN weight (fp32, tag 0).
        try "7767517\n2 2\nInput data 0 1 data\nConvolution conv 1 1 data out 0=3 1=3 4=1 5=1 6=81\n"
            .write(toFile: dir + "/nan.param", atomically: true, encoding: .utf8)
        var weights = [Float](repeating: 0, count: 81)
        weights[40] = .nan
        var bin = Data(count: 4)
        for v in weights + [0, 0, 0] { withUnsafeBytes(of: v.bitPattern.littleEndian) { bin.append(contentsOf: $0) } }
        try bin.write(to: URL(fileURLWithPath: dir + "/nan.bin"))
        let photo = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", photo])
        try expectFailure(["image", photo, dir + "/out.png", "--upscale", dir + "/nan.param"], code: 65, mentions: ["nan.param", "NaN"])
        try expectFailure(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mkv", "--upscale", dir + "/nan.param"], code: 65, mentions: ["nan.param", "NaN"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mkv"))
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    /// A y4m header with no frames: an error (65) and no output, not an empty file and exit 0.
    func testAnInputWithNoFramesIsAnError() throws {
        let dir = try CLI.tempDir()
        let empty = dir + "/empty.y4m"
        try Data("YUV4MPEG2 W64 H48 F25:1 Ip A1:1 C420jpeg\n".utf8).write(to: URL(fileURLWithPath: empty))
        try expectFailure(["run", empty, dir + "/o.mkv"], code: 65, mentions: ["empty.y4m", "no frames"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mkv"))
        XCTAssertEqual(CLI.leftovers(dir), [])
    }
}
