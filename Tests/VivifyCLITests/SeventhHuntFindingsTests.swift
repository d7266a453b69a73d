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
}
