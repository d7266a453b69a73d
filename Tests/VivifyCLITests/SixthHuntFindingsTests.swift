import Foundation
import MediaIO
import Vivify
@testable import vivify
import XCTest

/// What the sixth round of new-user checks found, each through the binary.
final class SixthHuntFindingsTests: XCTestCase {
    /// `vivify image in/ out/` with a FIFO named `fifo.png` in the folder blocked for ever
    /// opening it (a folder named `sub.png` was already skipped). A FIFO, a link to one and a
    /// socket are named and skipped like any unreadable picture, without being opened; the
    /// good picture is written and the batch exits 66.
    func testABatchSkipsAFIFOAndOtherFilesThatAreNotPictures() throws {
        let dir = try CLI.tempDir()
        let input = dir + "/in"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", input + "/p1.png"])
        XCTAssertEqual(mkfifo(input + "/fifo.png", 0o644), 0)
        try FileManager.default.createSymbolicLink(atPath: input + "/link.png", withDestinationPath: input + "/fifo.png")
        try FileManager.default.createDirectory(atPath: input + "/sub.png", withIntermediateDirectories: true)
        // A socket, bound by this process (closed again: the file stays).
        let socketPath = input + "/sock.png"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(socketPath.utf8)
            XCTAssertLessThan(bytes.count, raw.count)
            raw.copyBytes(from: bytes.prefix(raw.count - 1))
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        XCTAssertEqual(bound, 0, String(cString: strerror(errno)))
        close(fd)

        let out = dir + "/out"
        let r = try CLI.vivify(["image", input, out, "--upscale"], within: 60)
        XCTAssertEqual(r.code, 66, "unreadable pictures, not a hang (137): \(r.stderr)")
        for (name, kind) in [("fifo.png", "a FIFO"), ("link.png", "a FIFO"), ("sock.png", "a socket"), ("sub.png", "a directory")] {
            XCTAssertTrue(r.stderr.contains("skipped '\(input)/\(name)': Cannot read '\(input)/\(name)': it is not a regular file (\(kind))"), r.stderr)
        }
        XCTAssertTrue(r.stderr.contains("1 of 5 pictures written"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out), ["p1.png"])

        // One FIFO as the only input of a single-picture run: refused at once too.
        let single = try CLI.vivify(["image", input + "/fifo.png", dir + "/one.png", "--upscale"], within: 60)
        XCTAssertEqual(single.code, 66, single.stderr)
        XCTAssertTrue(single.stderr.contains("not a regular file (a FIFO)"), single.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/one.png"))
    }

    /// `vivify image q/ out/ --quiet` with a file that is not a picture exited 66 with nothing
    /// on stderr. --quiet silences progress and warnings, not failures: the failed file, why
    /// and the fix are printed, and the one-line summary that names it. A batch without
    /// failures stays silent.
    func testQuietBatchStillNamesItsFailures() throws {
        let dir = try CLI.tempDir()
        let input = dir + "/q"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", input + "/good.png"])
        try "garbage".write(toFile: input + "/bad.png", atomically: true, encoding: .utf8)
        let r = try CLI.vivify(["image", input, dir + "/qout", "--upscale", "--quiet"], within: 60)
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertTrue(r.stderr.contains("skipped '\(input)/bad.png'") && r.stderr.contains("Pass a picture in one of those formats"), r.stderr)
        XCTAssertTrue(r.stderr.contains("1 of 2 pictures written") && r.stderr.contains("1 failed: '\(input)/bad.png'"), r.stderr)
        XCTAssertFalse(r.stderr.contains("image 2/2"), "no progress under --quiet: \(r.stderr)")
        XCTAssertEqual(r.stderr.split(separator: "\n").count, 2, "the failure and the summary only: \(r.stderr)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/qout"), ["good.png"])

        try FileManager.default.removeItem(atPath: input + "/bad.png")
        let clean = try CLI.vivify(["image", input, dir + "/clean", "--upscale", "--quiet"], within: 60)
        XCTAssertEqual(clean.code, 0, clean.stderr)
        XCTAssertEqual(clean.stderr, "")
    }

    /// The `--stats` JSON's `run.settings`, which the README says holds every option, left out
    /// `--filter-strength` and `--segment-seconds` (and the network timeout, --no-resume and
    /// --custom-layers). Two runs that differ only in the strength now differ in the settings.
    func testStatsSettingsHoldTheFilterStrengthAndTheSegmentLength() throws {
        let dir = try CLI.tempDir()
        let (picture, model) = try FilterCLITests.setUp(dir)
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-i", picture, "-pix_fmt", "yuv420p", clip])
        func settings(_ name: String, _ extra: [String]) throws -> [String: String] {
            let stats = dir + "/\(name).json"
            let r = try CLI.vivify(["run", clip, dir + "/\(name).y4m", "--filter", model, "--quiet", "--stats", stats] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any]
            return try XCTUnwrap((json?["run"] as? [String: Any])?["settings"] as? [String: String])
        }
        let none = try settings("s0", ["--filter-strength", "0", "--segment-seconds", "7.5"])
        let full = try settings("s1", ["--filter-strength", "1", "--no-resume"])
        XCTAssertEqual(none["filter_strength"], "0.0")
        XCTAssertEqual(full["filter_strength"], "1.0")
        XCTAssertNotEqual(none, full)
        XCTAssertEqual(none["segment_seconds"], "7.5")
        XCTAssertEqual(full["segment_seconds"], "30.0", "the default, as it was given")
        XCTAssertEqual(none["resume"], "true")
        XCTAssertEqual(full["resume"], "false")
        // The option as given, and that the run went in one pass all the same (--stats needs one).
        XCTAssertEqual(none["one_pass_for"], "--stats")
        XCTAssertEqual(none["timeout"], "10.0")
        XCTAssertEqual(none["sequential"], "false")
        // One strength per filter, in order.
        let two = try settings("two", ["--filter", model, "--filter-strength", "0.25", "--filter-strength", "0.75"])
        XCTAssertEqual(two["filter_strength"], "0.25 0.75")
    }

    /// `vivify run in f.tif --max-frames 1 --codec png` wrote PNG data into f.tif, and
    /// `--codec mjpeg` JPEG into a .png (exit 0). A codec that is not the picture's own is
    /// refused (64) before any work, naming the codec, the extension and the fix; nothing is
    /// written. A .tif frame was 4:2:0 YCbCr even after --colorize: it is RGB, as a .png is,
    /// unless --pix-fmt asks otherwise.
    func testAPictureOutputIsWrittenInItsOwnFormat() throws {
        let dir = try CLI.tempDir()
        let grey = dir + "/grey.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=5", "-frames:v", "2", "-vf", "format=gray,format=yuv420p", grey])
        for (name, codec, own) in [("f.tif", "png", "tiff"), ("f.png", "mjpeg", "png"), ("f.jpg", "bmp", "mjpeg"), ("f.bmp", "libx264", "bmp")] {
            let r = try CLI.vivify(["run", grey, dir + "/" + name, "--max-frames", "1", "--codec", codec])
            XCTAssertEqual(r.code, 64, "\(name) with \(codec): \(r.stderr)")
            let ext = (name as NSString).pathExtension
            XCTAssertTrue(r.stderr.contains("'--codec \(codec)' does not write .\(ext) pictures"), r.stderr)
            XCTAssertTrue(r.stderr.contains("Leave --codec out (a .\(ext) is written with \(own))"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/" + name), "nothing written for \(name)")
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["grey.mp4"])

        // The picture's own codec, named or not, is taken; a TIFF is RGB by default.
        for (name, args) in [("own.tif", ["--codec", "tiff"]), ("colour.tif", ["--colorize"]), ("plain.tiff", [])] {
            let r = try CLI.vivify(["run", grey, dir + "/" + name, "--max-frames", "1", "--quiet"] + args)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            let v = try XCTUnwrap(CLI.streams(try CLI.probe(dir + "/" + name), "video").first)
            XCTAssertEqual(v["codec_name"] as? String, "tiff", name)
            XCTAssertEqual(v["pix_fmt"] as? String, "rgb24", name)
        }
        let asked = try CLI.vivify(["run", grey, dir + "/asked.tif", "--max-frames", "1", "--pix-fmt", "yuv444p", "--quiet"])
        XCTAssertEqual(asked.code, 0, asked.stderr)
        XCTAssertEqual(CLI.streams(try CLI.probe(dir + "/asked.tif"), "video").first?["pix_fmt"] as? String, "yuv444p")
    }

    /// Two MPEG-TS files joined with `cat`: the second half's timestamps start again, and the
    /// output squeezed its 30 frames into 0.3 ms, exit 0, without a word. The run now says so
    /// and how to mend it; the remuxed file (FFmpeg mends the jump) runs without the warning.
    func testTimestampsThatJumpBackAreNamed() throws {
        let dir = try CLI.tempDir()
        let mp4 = dir + "/g.mp4", ts = dir + "/g.ts", joined = dir + "/joined.ts", mended = dir + "/mended.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10", "-frames:v", "30", "-c:v", "libx264", "-g", "5", mp4])
        try CLI.ffmpeg(["-i", mp4, "-c", "copy", "-f", "mpegts", ts])
        var data = try Data(contentsOf: URL(fileURLWithPath: ts))
        data.append(data)
        try data.write(to: URL(fileURLWithPath: joined))
        var r = try CLI.vivify(["run", joined, dir + "/out.mkv", "--segment-seconds", "0"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("timestamps jump back") && r.stderr.contains("-c copy OUT.mkv"), r.stderr)
        try CLI.ffmpeg(["-i", joined, "-c", "copy", mended])
        r = try CLI.vivify(["run", mended, dir + "/mended-out.mkv", "--segment-seconds", "0"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("jump back"), r.stderr)
        let duration = try XCTUnwrap(Double(String(decoding: try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", dir + "/mended-out.mkv"]).stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertEqual(duration, 6.0, accuracy: 0.15, "the remuxed file's 60 frames keep their 6 s")
    }

    /// An MP4 cut with `ffmpeg -ss … -c copy` starts with packets marked to be discarded
    /// (before its edit list's start, stamped from −1.3 s): the frame index counted them, so
    /// keyframe times counted from the first of them, 1.3 s early, and a segmented job's frame
    /// numbers were off by as many. `0.5s` is the frame shown 0.5 s in, as `5` is.
    func testDiscardedPacketsAreNotFrames() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/src.mp4", cut = dir + "/cut.mp4", key = dir + "/key.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "40", "-vf", "format=gray", "-c:v", "libx264", "-g", "20", source])
        try CLI.ffmpeg(["-ss", "1.3", "-i", source, "-c", "copy", cut])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", "-vf", "hue=h=90", key])
        func run(_ name: String, _ extra: [String]) throws -> Data {
            let out = dir + "/" + name + ".mkv"
            let r = try CLI.vivify(["run", cut, out, "--colorize", "--codec", "ffv1", "--pix-fmt", "yuv444p", "--segment-seconds", "0", "--quiet"] + extra)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            return try PrecisionCLITests.pixels(out)
        }
        XCTAssertEqual(try run("time", ["--keyframe", "0.5s=\(key)"]), try run("number", ["--keyframe", "5=\(key)"]))
        // Only the frames shown are counted: 27 of them, so 2.7 s is past the end.
        let r = try CLI.vivify(["run", cut, dir + "/past.mkv", "--colorize", "--keyframe", "27=\(key)"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("past the end"), r.stderr)
    }

    /// Review: the plan's scan for shot starts (keyframes or hints in segments) decodes the
    /// whole input and did not look for a signal, so Ctrl-C on `vivify run --segment-seconds`
    /// waited for every frame of a long film. The scan stops before the next frame once asked,
    /// with the interrupted error (exit 130); left alone it finds both shots.
    func testTheShotScanStopsWhenInterrupted() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/two-shots.mkv", key = dir + "/key.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=30:duration=1", "-f", "lavfi", "-i", "color=c=navy:size=96x54:rate=30:duration=1",
                        "-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]", "-c:v", "ffv1", clip])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54", "-frames:v", "1", key])
        let c = try Run.parse([clip, dir + "/out.mkv", "--colorize", "vivify-color", "--keyframe", "0=\(key)", "--segment-seconds", "0.5"]).runConfiguration
        XCTAssertEqual(try SegmentedJob.scanShotStarts(c, frames: 60, throughFrame: 59).map(\.index), [0, 30], "the scan itself finds the cut")
        var asked = 0
        XCTAssertThrowsError(try SegmentedJob.scanShotStarts(c, frames: 60, throughFrame: 59, stop: { asked += 1; return asked > 10 })) { error in
            guard let e = error as? MediaError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .interrupted)
            XCTAssertTrue(e.message.contains("frame 10 of 60"), e.message)
        }
        XCTAssertEqual(asked, 11, "stopped at the first frame after the signal")
    }

    /// Hunt finding 8, five small slips of the command line, each said now:
    /// - `vivify flicker` on a file that is not media advised `--input-format`, which only
    ///   `run` takes;
    /// - `bench --size 100000x100000` called a well-formed size "not a frame size", and
    ///   `models verify --size 0x0` printed the top-level usage, not its own;
    /// - `models calibrate` calibrated on a 1x1 picture (its three channels passed the
    ///   blankness test);
    /// - `--colorize-after` with one stage or none was accepted and did nothing.
    func testSmallCommandLineSlipsAreNamed() throws {
        let dir = try CLI.tempDir()
        let text = dir + "/notes.txt", dot = dir + "/dot.png"
        try Data("not a video\n".utf8).write(to: URL(fileURLWithPath: text))
        var r = try CLI.vivify(["flicker", text])
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertFalse(r.stderr.contains("--input-format"), r.stderr)
        XCTAssertTrue(r.stderr.contains("takes no raw frames"), r.stderr)

        r = try CLI.vivify(["bench", "--size", "100000x100000"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("larger than Vivify's largest frame, 16384 pixels a side"), r.stderr)
        r = try CLI.vivify(["bench", "--size", "0x360"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("a frame is at least 1 pixel a side"), r.stderr)
        r = try CLI.vivify(["models", "verify", "vivify-fast-2x", "--size", "0x0"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("at least 1 pixel a side"), r.stderr)
        XCTAssertTrue(r.stderr.contains("vivify models verify"), "its own usage: \(r.stderr)")
        r = try CLI.vivify(["run", "in.mkv", "out.mkv", "--resize", "20000x10"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("'--resize 20000x10' is larger"), r.stderr)

        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=2x2", "-vf", "scale=1:1", "-frames:v", "1", dot])
        r = try CLI.vivify(["models", "calibrate", "vivify-fast-2x", dot])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("is 1x1: too small to calibrate on"), r.stderr)

        let clip = CLI.packageRoot.appendingPathComponent("Media/testsrc-320x180-30fps-audio.mp4").path
        for stages in [["--upscale"], ["--colorize"], []] {
            r = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize-after", "--max-frames", "1"] + stages)
            XCTAssertEqual(r.code, 64, "\(stages): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--colorize-after orders the colorizer after the upscaler"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mkv"))
        }
    }
}
