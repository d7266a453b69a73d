import Foundation
import XCTest

/// What the seventh round of new-user checks found, each through the binary.
final class SeventhHuntFindingsTests: XCTestCase {
    /// Mean absolute difference of two rgb24 frames, in 8-bit levels.
    private func difference(_ x: [UInt8], _ y: [UInt8]) -> Double {
        zip(x, y).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(max(x.count, 1))
    }

    /// A keyframe never coloured the frames before it: a keyframe after a frame applied only if
    /// the keyframe picture's L* histogram was the grey frame's, which a strongly coloured
    /// picture's is not (a grey video's levels are luma, not L*), so on a still shot frames 0–9
    /// came out exactly as without `--keyframe 10=`. A file is now scanned for where shots
    /// start, and a keyframe colours every frame with no cut between it and them: frames before
    /// it take its colour by meaning (closer to the keyframe frame's than the automatic colour
    /// is by half), frames of an earlier shot stay automatic to the bit, and 0.5 s segments give
    /// the same frames as one run.
    func testAKeyframeColoursTheFramesOfItsShotBeforeIt() throws {
        let dir = try CLI.tempDir()
        let key = dir + "/key.png", grey = dir + "/grey.png", still = dir + "/still.mkv", cut = dir + "/cut.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", "-vf", "format=gray", grey])
        try CLI.ffmpeg(["-loop", "1", "-i", grey, "-r", "10", "-t", "2", "-vf", "format=gray", "-c:v", "ffv1", still])
        // A shot of one second, a cut, another (the keyframe at 15 is in the second).
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1", "-f", "lavfi", "-i", "mandelbrot=size=160x90:rate=10",
                        "-filter_complex", "[1]trim=duration=1,setpts=PTS-STARTPTS[m];[0][m]concat=n=2:v=1,format=gray", "-c:v", "ffv1", cut])
        func run(_ input: String, _ name: String, _ extra: [String]) throws -> [[UInt8]] {
            let out = dir + "/" + name
            let r = try CLI.vivify(["run", input, out, "--colorize", "--codec", "ffv1", "--quiet"] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            return try ColourGuideCLITests.rgbFrames(out).frames
        }
        let automatic = try run(still, "auto.mkv", [])
        let keyed = try run(still, "keyed.mkv", ["--keyframe", "10=\(key)"])
        XCTAssertEqual(keyed.count, 20)
        for i in 0..<10 {
            let fromAutomatic = difference(keyed[i], automatic[i]), toKeyframe = difference(keyed[i], keyed[10])
            XCTAssertGreaterThan(fromAutomatic, 20, "frame \(i) takes the keyframe's colour")
            XCTAssertLessThan(toKeyframe, difference(automatic[i], keyed[10]) / 2, "frame \(i): nearer the keyframe frame's colour")
        }
        let segmented = try run(still, "segmented.mkv", ["--keyframe", "10=\(key)", "--segment-seconds", "0.5"])
        XCTAssertEqual(segmented.count, 20)
        for i in 0..<20 { XCTAssertEqual(segmented[i], keyed[i], "frame \(i): segments colour as one run") }

        let cutAutomatic = try run(cut, "cut-auto.mkv", [])
        let cutKeyed = try run(cut, "cut-keyed.mkv", ["--keyframe", "15=\(key)"])
        for i in 0..<10 { XCTAssertEqual(cutKeyed[i], cutAutomatic[i], "frame \(i) is in the shot before the cut") }
        for i in 10..<15 { XCTAssertGreaterThan(difference(cutKeyed[i], cutAutomatic[i]), 20, "frame \(i) is in the keyframe's shot") }
    }

    /// An output that is a symbolic link to nothing (its target missing, or links in a loop)
    /// was accepted, the whole job run, and then the finished file refused at the end (exit 73
    /// with the frames kept as `NAME.incomplete`, or 70 from segments and `join`). It is now
    /// refused before any work, exit 73, naming the link; the link is left as it was. The same
    /// for a `--stats` file.
    func testAnOutputLinkToNothingIsRefusedBeforeAnyWork() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.packageRoot.appendingPathComponent("Media/testsrc-320x180-30fps-audio.mp4").path
        let dangling = dir + "/out.mkv", loopA = dir + "/a.mkv", loopB = dir + "/b.mkv"
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "missing-target.mkv")
        try FileManager.default.createSymbolicLink(atPath: loopA, withDestinationPath: loopB)
        try FileManager.default.createSymbolicLink(atPath: loopB, withDestinationPath: loopA)
        for (output, extra, says) in [(dangling, [String](), "a symbolic link to 'missing-target.mkv', which does not exist"),
                                      (dangling, ["--segment-seconds", "0.5"], "which does not exist"),
                                      (loopA, [], "a loop of symbolic links")] {
            let r = try CLI.vivify(["run", clip, output, "--upscale", "--max-frames", "30"] + extra)
            XCTAssertEqual(r.code, 73, r.stderr)
            XCTAssertTrue(r.stderr.contains(says), r.stderr)
            XCTAssertFalse(r.stderr.contains("frame 30/30"), "refused before any frame: \(r.stderr)")
        }
        XCTAssertEqual(try FileManager.default.destinationOfSymbolicLink(atPath: dangling), "missing-target.mkv", "the link is left alone")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/missing-target.mkv"))
        let contents = try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
        XCTAssertEqual(contents, ["a.mkv", "b.mkv", "out.mkv"], "nothing written beside them")
        let stats = try CLI.vivify(["run", clip, dir + "/real.mkv", "--max-frames", "3", "--stats", dangling])
        XCTAssertEqual(stats.code, 73, stats.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/real.mkv"), "refused before the output was written")
    }

    /// A keyframe past `--max-frames` was accepted without a word (the stats name it as if it
    /// were used). Its frame is never reached, which is said, as for an input that ends first.
    func testAKeyframePastMaxFramesIsNamed() throws {
        let dir = try CLI.tempDir()
        let key = dir + "/key.png", clip = dir + "/grey.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54", "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10:duration=2", "-vf", "format=gray", "-c:v", "ffv1", clip])
        let r = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize", "--keyframe", "15=\(key)", "--max-frames", "3"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("'--keyframe 15=\(key)' lies past '--max-frames 3'"), r.stderr)
        let reached = try CLI.vivify(["run", clip, dir + "/p.mkv", "--colorize", "--keyframe", "2=\(key)", "--max-frames", "3"])
        XCTAssertEqual(reached.code, 0, reached.stderr)
        XCTAssertFalse(reached.stderr.contains("lies past"), reached.stderr)
    }

    /// Messages the hunt found generic or wrong: guidance without `--colorize` named
    /// "--reference and --hint" whatever was given; a missing `--hints` picture was to be "a
    /// colour PNG or JPEG" (it must be an RGBA PNG); two colours for one pixel were taken
    /// silently (two keyframes for one frame are refused).
    func testGuidanceMessagesNameWhatWasGiven() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.packageRoot.appendingPathComponent("Media/testsrc-320x180-30fps-audio.mp4").path
        let hints = dir + "/hints.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=red@0.0:size=32x18,format=rgba", "-frames:v", "1", hints])
        for (extra, says) in [(["--hints", hints], "--hints guides the colorizer"),
                              (["--reference", hints, "--hint", "1,1=#ff0000"], "--reference and --hint guide the colorizer"),
                              (["--keyframe", "0=\(hints)"], "--keyframe guides the colorizer")] {
            let r = try CLI.vivify(["run", clip, dir + "/o.mkv"] + extra)
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains(says), "\(extra): \(r.stderr)")
        }
        var r = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize", "--hints", dir + "/missing.png"])
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertTrue(r.stderr.contains("an RGBA PNG whose opaque pixels are the hints"), r.stderr)
        r = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize", "--hint", "5,5=#ff0000", "--hint", "5,5=#0000ff"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("colour one pixel"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.mkv"))
    }

    /// A worker that refused its segment before any frame (a keyframe changed since the plan)
    /// left no trace: `status` called the segment "missing" and `join` exited 75 ("not finished
    /// yet") for ever, so a join pod that retries while it exits 75 never stopped. The refusal
    /// is now recorded: `status` lists the segment as failed with the message and exit code,
    /// `join` exits with the worker's 64 naming the segment and the fix, and once the file is
    /// restored the worker does the segment and the record is cleared.
    func testAWorkersRefusalIsRecordedAndEndsTheJoinsWait() throws {
        let dir = try CLI.tempDir()
        let key = dir + "/key.png", other = dir + "/other.png", clip = dir + "/grey.mkv", work = dir + "/work"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54", "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "mandelbrot=size=96x54", "-frames:v", "1", other])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10:duration=2", "-vf", "format=gray", "-c:v", "ffv1", clip])
        var r = try CLI.vivify(["plan", clip, dir + "/out.mkv", "--work", work, "--segment-seconds", "1", "--colorize",
                                "--keyframe", "0=\(key)", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let original = try Data(contentsOf: URL(fileURLWithPath: key))
        try FileManager.default.removeItem(atPath: key)
        try FileManager.default.copyItem(atPath: other, toPath: key)
        r = try CLI.vivify(["work", work, "--index", "0"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("changed since: keyframe 0 "), r.stderr)
        r = try CLI.vivify(["work", work, "--index", "1"])
        XCTAssertEqual(r.code, 64, r.stderr)

        let status = try CLI.vivify(["status", work, "--json"])
        XCTAssertEqual(status.code, 0, status.stderr)
        let report = try XCTUnwrap(JSONSerialization.jsonObject(with: status.stdout) as? [String: Any])
        XCTAssertEqual(report["failed"] as? [Int], [0, 1], "both refusals are recorded")
        XCTAssertEqual(report["missing"] as? [Int], [])
        let states = try XCTUnwrap(report["states"] as? [[String: Any]])
        XCTAssertEqual(states.first?["exit"] as? Int, 64)
        XCTAssertTrue((states.first?["error"] as? String ?? "").contains("changed since"), "\(states)")

        let join = try CLI.vivify(["join", work])
        XCTAssertEqual(join.code, 64, "a refusal that a retry does not change ends the join's wait: \(join.stderr)")
        XCTAssertTrue(join.stderr.contains("Segment 0 in '\(work)' cannot be done as planned"), join.stderr)
        XCTAssertTrue(join.stderr.contains("vivify work \(work) --index 0"), join.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mkv"))

        // Restored: the workers do their segments, the failures are cleared, the join works.
        try original.write(to: URL(fileURLWithPath: key))
        for i in 0..<2 {
            r = try CLI.vivify(["work", work, "--index", String(i)])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        let after = try XCTUnwrap(JSONSerialization.jsonObject(with: try CLI.vivify(["status", work, "--json"]).stdout) as? [String: Any])
        XCTAssertEqual(after["failed"] as? [Int], [])
        XCTAssertEqual(after["done"] as? Int, 2)
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/out.mkv")), 20)
    }

    /// A folder given as a guide picture (`--reference .`) was "Cannot read '.'", without the
    /// option; a batch into the folder its pictures came from, under the same names, loaded
    /// the models and then skipped every picture. Both are refused up front, named.
    func testAFolderAsAPictureAndABatchOntoItselfAreNamed() throws {
        let dir = try CLI.tempDir()
        let pics = dir + "/pics", clip = dir + "/grey.mkv"
        try FileManager.default.createDirectory(atPath: pics, withIntermediateDirectories: true)
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", pics + "/a.png"])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", pics + "/b.png"])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10:duration=1", "-vf", "format=gray", "-c:v", "ffv1", clip])
        for (option, value) in [("--reference", dir), ("--keyframe", "0=\(dir)"), ("--hints", dir)] {
            let r = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize", option, value])
            XCTAssertEqual(r.code, 66, r.stderr)
            XCTAssertTrue(r.stderr.contains("'\(dir)' given to \(option) is a folder, not a picture"), r.stderr)
        }
        let before = try FileManager.default.contentsOfDirectory(atPath: pics).sorted()
        let stamp = try Data(contentsOf: URL(fileURLWithPath: pics + "/a.png"))
        let r = try CLI.vivify(["image", pics, pics, "--upscale"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("is where all 2 pictures came from, under the same names"), r.stderr)
        XCTAssertTrue(r.stderr.contains("--format jpg"), r.stderr)
        XCTAssertFalse(r.stderr.contains("skipped"), "refused as a whole, before any picture: \(r.stderr)")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: pics).sorted(), before)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: pics + "/a.png")), stamp)
        // Beside them in another format is a batch like any other.
        let jpg = try CLI.vivify(["image", pics, pics, "--upscale", "--format", "jpg", "--quiet"])
        XCTAssertEqual(jpg.code, 0, jpg.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: pics + "/a.jpg"))
    }

    /// Keyframes on a variable-rate file were placed at the nominal rate: a frame number's
    /// time was N / rate (frame 20 at 2.0 s where it is shown at 4.0 s, so a keyframe after a
    /// cut counted as before it and coloured the wrong shot), and a time in a gap between two
    /// frames fell on none (refused). Frames are now placed by their own times from a scan of
    /// the file: a number at its frame's time, a time on the nearest frame; segments alike.
    func testKeyframesOnAVariableRateFileFollowTheFramesTimes() throws {
        let dir = try CLI.tempDir()
        let key = dir + "/key.png", clip = dir + "/vfr.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", key])
        // Frames 0–9 every 0.1 s, then every 0.3 s (frame 14 at 2.2 s, 20 at 4.0 s); nominally
        // 10 a second. A cut at frame 15 (2.5 s).
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1.5", "-f", "lavfi", "-i", "mandelbrot=size=160x90:rate=10",
                        "-filter_complex", "[1]trim=duration=1.5,setpts=PTS-STARTPTS[m];[0][m]concat=n=2:v=1,format=gray,setpts='if(lt(N,10),N*0.1,1.0+(N-10)*0.3)/TB'",
                        "-fps_mode", "vfr", "-c:v", "ffv1", clip])
        func run(_ name: String, _ extra: [String]) throws -> [[UInt8]] {
            let out = dir + "/" + name
            let r = try CLI.vivify(["run", clip, out, "--colorize", "--codec", "ffv1", "--quiet"] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            return try ColourGuideCLITests.rgbFrames(out, passthrough: true).frames
        }
        let automatic = try run("auto.mkv", [])
        XCTAssertEqual(automatic.count, 30)
        // Frame 20 (4.0 s) is in the second shot: it colours frames 15–19 before it, not the first shot.
        let keyed = try run("keyed.mkv", ["--keyframe", "20=\(key)"])
        for i in 0..<15 { XCTAssertTrue(keyed[i] == automatic[i], "frame \(i) is in the shot before the cut") }
        for i in 15..<20 { XCTAssertGreaterThan(difference(keyed[i], automatic[i]), 20, "frame \(i) is in the keyframe's shot") }
        let segmented = try run("segmented.mkv", ["--keyframe", "20=\(key)", "--segment-seconds", "1"])
        XCTAssertEqual(segmented.count, 30)
        for i in 0..<30 { XCTAssertTrue(segmented[i] == keyed[i], "frame \(i): segments colour as one run") }
        // 2.1 s lies between frames 13 (1.9 s) and 14 (2.2 s): the nearer, 14.
        let byTime = try run("time.mkv", ["--keyframe", "2.1s=\(key)"])
        let byNumber = try run("number.mkv", ["--keyframe", "14=\(key)"])
        XCTAssertTrue(byTime == byNumber, "a time in a gap takes the nearest frame")
        XCTAssertGreaterThan(difference(byTime[14], automatic[14]), 20)
        let past = try CLI.vivify(["run", clip, dir + "/p.mkv", "--colorize", "--keyframe", "6.9s=\(key)"])
        XCTAssertEqual(past.code, 64, past.stderr)
        XCTAssertTrue(past.stderr.contains("past the end"), past.stderr)
    }

    /// A keyframe whose own EXIF orientation turns it (a JPEG from a phone's editor: the
    /// frame's pixels, tagged to be shown turned) was refused as if the video were stored
    /// turned, sending the user to re-extract a frame that was right. The message now names the
    /// picture's orientation tag and how to drop it; the same picture untagged is taken.
    func testAKeyframeTurnedByItsOwnEXIFIsNamedSo() throws {
        let dir = try CLI.tempDir()
        let plain = dir + "/plain.jpg", tagged = dir + "/tagged.jpg", clip = dir + "/grey.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", "-q:v", "2", plain])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10:duration=1", "-vf", "format=gray", "-c:v", "ffv1", clip])
        // An EXIF APP1 holding only Orientation 6 (turn a quarter clockwise), after the SOI marker.
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: plain))
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8, 0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, 6, 0, 0, 0, 0, 0, 0]
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        var out = Data(jpeg.prefix(2))
        out.append(contentsOf: [0xFF, 0xE1, UInt8((payload.count + 2) >> 8), UInt8((payload.count + 2) & 0xFF)] + payload)
        out.append(jpeg.dropFirst(2))
        try out.write(to: URL(fileURLWithPath: tagged))
        let r = try CLI.vivify(["run", clip, dir + "/a.mkv", "--colorize", "--keyframe", "0=" + tagged])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("by the picture's own EXIF orientation (6"), r.stderr)
        XCTAssertFalse(r.stderr.contains("the video is stored turned"), r.stderr)
        let ok = try CLI.vivify(["run", clip, dir + "/b.mkv", "--colorize", "--keyframe", "0=" + plain, "--max-frames", "2", "--quiet"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
        // Hints' coordinates are of the frame as stored, which the refusal says.
        let hint = try CLI.vivify(["run", clip, dir + "/c.mkv", "--colorize", "--hint", "100,120=#FF0000"])
        XCTAssertEqual(hint.code, 64, hint.stderr)
        XCTAssertTrue(hint.stderr.contains("of the first frame as stored"), hint.stderr)
    }
}
