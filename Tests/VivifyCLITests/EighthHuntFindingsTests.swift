import Foundation
import XCTest

/// What the eighth round of new-user checks found, each through the binary (the live
/// `hold` output's first frames: `HoldingWriterTests`).
final class EighthHuntFindingsTests: XCTestCase {
    /// A keyframe time in the half frame after the last frame: on an MP4, 1.95 s (the end of
    /// frame 19's half of a 10 fps 2 s clip) was applied to frame 19 and then called "never
    /// reached", while the same clip as y4m refused it, and 1.96 s was "past the end" of a video
    /// said to last 2.00 s. One rule now, the frame shown nearest, a time halfway going to the
    /// later frame: 1.94 s is frame 19 in every form, 1.95 s is refused in every form, and the
    /// refusal names the last frame's time and the bound.
    func testAKeyframeTimeAfterTheLastFrameFollowsOneRule() throws {
        let dir = try CLI.tempDir()
        let key = dir + "/key.png", mp4 = dir + "/grey.mp4", y4m = dir + "/grey.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54", "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10:duration=2", "-vf", "format=gray", "-pix_fmt", "yuv420p", mp4])
        try CLI.ffmpeg(["-i", mp4, "-f", "yuv4mpegpipe", y4m])
        func run(_ input: String, _ name: String, _ keyframe: String) throws -> (frames: [[UInt8]], stderr: String) {
            let out = dir + "/" + name + ".mkv"
            let r = try CLI.vivify(["run", input, out, "--colorize", "--codec", "ffv1", "--keyframe", keyframe])
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            return (try ColourGuideCLITests.rgbFrames(out).frames, r.stderr)
        }
        let byNumber = try run(mp4, "number", "19=\(key)")
        for (input, name) in [(mp4, "mp4"), (y4m, "y4m")] {
            let byTime = try run(input, name, "1.94s=\(key)")
            XCTAssertFalse(byTime.stderr.contains("never reached"), "\(name): \(byTime.stderr)")
            XCTAssertEqual(byTime.frames.count, 20)
            XCTAssertTrue(byTime.frames.last == byNumber.frames.last, "\(name): 1.94 s is frame 19")
            for time in ["1.95s", "1.96s"] {
                let past = try CLI.vivify(["run", input, dir + "/past.mkv", "--colorize", "--keyframe", "\(time)=\(key)"])
                XCTAssertEqual(past.code, 64, "\(name) \(time): \(past.stderr)")
                XCTAssertTrue(past.stderr.contains("last frame is shown at 1.900 s"), past.stderr)
                XCTAssertTrue(past.stderr.contains("must be below 1.950 s"), past.stderr)
                XCTAssertFalse(past.stderr.contains("''"), "one pair of quotes: \(past.stderr)")
            }
        }
    }

    /// An MP4 cut by stream copy (`ffmpeg -ss 0.55 -i in.mp4 -c copy`) keeps in its header the
    /// frames its edit list hides: `run` called the clean file "truncated or damaged" and
    /// `probe --count-frames` counted 30 frames where 24 are shown. Both now count the 24.
    func testAStreamCopiedCutIsNotCalledDamaged() throws {
        let dir = try CLI.tempDir()
        let gop = dir + "/gop.mp4", cut = dir + "/cut.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10:duration=3", "-pix_fmt", "yuv420p", "-g", "10", "-bf", "2", gop])
        try CLI.ffmpeg(["-ss", "0.55", "-i", gop, "-c", "copy", cut])
        let shown = try XCTUnwrap(CLI.decodedFrames(try CLI.probe(cut)))
        XCTAssertLessThan(shown, 30, "the edit list hides the frames before the cut")
        let r = try CLI.vivify(["run", cut, dir + "/out.mkv", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("truncated or damaged"), r.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/out.mkv")), shown)
        let probe = try CLI.vivify(["probe", cut, "--count-frames"])
        XCTAssertEqual(probe.code, 0, probe.stderr)
        XCTAssertTrue(String(decoding: probe.stdout, as: UTF8.self).contains("frames: \(shown)\n"), String(decoding: probe.stdout, as: UTF8.self))
        // A file truly cut short is still called so.
        let short = dir + "/short.mp4"
        try CLI.ffmpeg(["-i", gop, "-c", "copy", "-movflags", "+faststart", short])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: short))
        try bytes.prefix(bytes.count * 6 / 10).write(to: URL(fileURLWithPath: short))
        let truncated = try CLI.vivify(["run", short, dir + "/short-out.mkv", "--codec", "ffv1"])
        XCTAssertTrue(truncated.stderr.contains("truncated or damaged"), truncated.stderr)
    }

    /// Messages that named the wrong thing: a report that is a hard link of the hints picture
    /// was "the output … is the input file"; a picture that cannot be created named the hidden
    /// temporary file; a folder that cannot be made read "…read only.." (two stops).
    func testMessagesNameWhatTheUserGave() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/grey.mkv", hints = dir + "/hints.png", link = dir + "/stats.json", picture = dir + "/p.png", second = dir + "/q.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10:duration=1", "-vf", "format=gray", "-c:v", "ffv1", clip])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=red@1.0:size=64x36", "-frames:v", "1", "-pix_fmt", "rgba", hints])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", picture])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", second])
        XCTAssertEqual(link.withCString { l in hints.withCString { h in Foundation.link(h, l) } }, 0)
        let stats = try CLI.vivify(["run", clip, dir + "/o.mkv", "--colorize", "--hints", hints, "--stats", link])
        XCTAssertEqual(stats.code, 64, stats.stderr)
        XCTAssertTrue(stats.stderr.contains("'--stats \(link)' is '\(hints)' (the same file on disk)"), stats.stderr)
        let unwritable = try CLI.vivify(["image", picture, "/proc/vivify-test.png", "--upscale"])
        XCTAssertEqual(unwritable.code, 73, unwritable.stderr)
        XCTAssertFalse(unwritable.stderr.contains(".partial"), "names the output, not its temporary file: \(unwritable.stderr)")
        XCTAssertTrue(unwritable.stderr.contains("/proc/vivify-test.png"), unwritable.stderr)
        let folder = try CLI.vivify(["image", picture, second, "/proc/vivify-test-folder/", "--upscale"])
        XCTAssertEqual(folder.code, 73, folder.stderr)
        XCTAssertTrue(folder.stderr.contains("Cannot create the output directory '/proc/vivify-test-folder/'"), folder.stderr)
        XCTAssertFalse(folder.stderr.contains(".."), folder.stderr)
    }
}
