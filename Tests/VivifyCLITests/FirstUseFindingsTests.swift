import Foundation
import XCTest

/// What a new user hit on a first afternoon with the CLI (stop 47), each end to end through
/// the binary: a crash, lost work, a documented command that failed, silent grey output, a
/// finished file replaced by a partial one, a progress line that lied.
final class FirstUseFindingsTests: XCTestCase {
    /// The first frame of a video or picture as RGB bytes, decoded by the ffmpeg CLI.
    static func firstFrameRGB(_ path: String) throws -> [UInt8]? {
        let r = try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        return r.code == 0 && !r.stdout.isEmpty ? [UInt8](r.stdout) : nil
    }

    /// `--max-frames -1` trapped in `prefix` (SIGILL, a backtrace); now exit 64 naming the fix,
    /// for `run` and `plan`, segmented or not.
    func testANegativeFrameLimitIsRefusedNotACrash() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        for args in [["run", clip, dir + "/a.mp4", "--max-frames=-1"], ["run", clip, dir + "/b.mp4", "--max-frames", "0", "--segment-seconds", "0"],
                     ["plan", clip, dir + "/c.mp4", "--work", dir + "/w", "--max-frames=-1"]] {
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("must be at least 1"), r.stderr)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [], "nothing written")
    }

    /// The README's way to get a frame out to colour as a keyframe, `vivify run IN frame.png
    /// --max-frames 1`, said the .png container cannot hold libx264. A picture output now gets
    /// its own codec: the first frame, exact in PNG, close in JPEG; more than one frame into a
    /// picture is refused before any work, naming --max-frames 1.
    func testAFrameComesOutAsAPicture() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let first = try XCTUnwrap(Self.firstFrameRGB(clip))
        // PNG holds our RGB conversion of the frame (ffmpeg's own differs by rounding and
        // chroma interpolation, about 2.3 levels here); JPEG adds its loss on testsrc's hard
        // colour edges. Another frame or a grey one is tens of levels off.
        for (name, codec, tolerance) in [("key.png", "png", 4.0), ("key.jpg", "mjpeg", 12.0)] {
            let r = try CLI.vivify(["run", clip, dir + "/" + name, "--max-frames", "1"])
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertFalse(r.stderr.contains("Dropped"), "a picture has no audio to drop: \(r.stderr)")
            let v = try XCTUnwrap(CLI.streams(try CLI.probe(dir + "/" + name), "video").first)
            XCTAssertEqual(v["codec_name"] as? String, codec)
            XCTAssertEqual(v["width"] as? Int, 320)
            let picture = try XCTUnwrap(Self.firstFrameRGB(dir + "/" + name))
            let diff = zip(picture, first).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(first.count)
            XCTAssertLessThanOrEqual(diff, tolerance, "\(name): mean difference \(diff) from the source's first frame")
        }
        // An odd-sized frame (JPEG takes odd sizes in 4:2:0; it is not switched to 4:4:4).
        let odd = try CLI.vivify(["run", CLI.clip("odd-161x91-25fps.webm"), dir + "/odd.jpg", "--max-frames", "1"])
        XCTAssertEqual(odd.code, 0, odd.stderr)
        XCTAssertEqual(CLI.streams(try CLI.probe(dir + "/odd.jpg"), "video").first?["width"] as? Int, 161)
        let r = try CLI.vivify(["run", clip, dir + "/all.png"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("--max-frames 1"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/all.png"))
    }

    /// A palette (pal8) video came out as a grey picture of its palette indices, exit 0. It
    /// now decodes through its palette: the colour of the source.
    func testAPaletteVideoKeepsItsColour() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/pal.avi"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=96x64:rate=10", "-t", "0.5", "-c:v", "rawvideo", "-pix_fmt", "pal8", source])
        let out = dir + "/out.mkv"
        let r = try CLI.vivify(["run", source, out, "--codec", "ffv1", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let want = try XCTUnwrap(Self.firstFrameRGB(source)), got = try XCTUnwrap(Self.firstFrameRGB(out))
        let diff = zip(got, want).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(want.count)
        // Through ffv1's 4:2:0 on testsrc's hard colour edges: about 7 levels; the grey
        // picture of palette indices was 85 off, with no chroma at all.
        XCTAssertLessThan(diff, 12, "mean difference \(diff) from the palette's colours")
        func chroma(_ rgb: [UInt8]) -> Double {
            stride(from: 0, to: rgb.count, by: 3).reduce(0.0) { $0 + Double(max(rgb[$1], rgb[$1 + 1], rgb[$1 + 2]) - min(rgb[$1], rgb[$1 + 1], rgb[$1 + 2])) }
        }
        XCTAssertGreaterThan(chroma(got), 0.8 * chroma(want), "the output keeps the palette's colourfulness")
    }

    /// A transport stream whose AAC packets are damaged near the end failed the whole run as
    /// "Cannot write to OUT" (exit 73) with nothing kept: the MP4 muxer refused the damaged
    /// ADTS headers and then the damaged timestamps. Those packets are skipped and counted now,
    /// as damaged video packets are; with --strict they are the documented error (65).
    func testDamagedAudioPacketsAreSkippedNotBlamedOnTheOutput() throws {
        let dir = try CLI.tempDir()
        let ts = dir + "/av.ts"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=320x180:r=25:d=8", "-f", "lavfi", "-i", "sine=d=8", "-c:v", "libx264", "-preset", "ultrafast",
                        "-c:a", "aac", "-shortest", ts])
        var bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ts)))
        var seed: UInt64 = 3
        for i in stride(from: bytes.count * 8 / 10, to: bytes.count - 40, by: 500) {
            for j in 0..<30 {
                seed = seed &* 6364136223846793005 &+ 1442695040888963407
                bytes[i + j] = UInt8(truncatingIfNeeded: seed >> 33)
            }
        }
        let late = dir + "/late.ts"
        try Data(bytes).write(to: URL(fileURLWithPath: late))
        // In one piece (MediaWriter.copy) and in 1 s segments (the join copies the audio).
        for extra in [["--segment-seconds", "0"], ["--segment-seconds", "1"]] {
            let out = dir + "/out\(extra[1]).mp4"
            let r = try CLI.vivify(["run", late, out] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertTrue(r.stderr.contains("damaged"), r.stderr)
            let probe = try CLI.probe(out)
            XCTAssertGreaterThan(CLI.decodedFrames(probe) ?? 0, 180, "the frames are kept")
            XCTAssertEqual(CLI.streams(probe, "audio").count, 1, "and the audio that could be copied")
        }
        let strict = try CLI.vivify(["run", late, dir + "/strict.mp4", "--strict", "--segment-seconds", "0", "--quiet"])
        XCTAssertEqual(strict.code, 65, strict.stderr)
    }

    /// `-y` replaces an existing output with a complete one only: Ctrl-C used to rename the
    /// partial file over a finished one. Interrupted now, the frames done go beside it as
    /// NAME.incomplete.EXT (playable) and the existing file stays byte for byte, in one piece
    /// and in segments; the same command then resumes and replaces it with the whole job,
    /// and removes the frames it had kept beside (only that file: one put there by hand stays,
    /// `testAFileBesideThatIsNotOursStays`).
    func testAnInterruptedRunNeverReplacesAnExistingFile() throws {
        let dir = try CLI.tempDir()
        // 12 s, so that the interruption comes long before the end.
        let source = dir + "/src.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=12", "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", source])
        for (name, extra) in [("whole.mkv", ["--segment-seconds", "0"]), ("segmented.mkv", ["--segment-seconds", "1"])] {
            let out = dir + "/" + name
            try FileManager.default.copyItem(atPath: source, toPath: out)
            let before = try Data(contentsOf: URL(fileURLWithPath: out))
            let p = try SegmentTests.start(["run", source, out, "-y", "--upscale", "--codec", "ffv1"] + extra)
            // Interrupted once some frames are done (the temporary file or a segment exists).
            XCTAssertTrue(SegmentTests.wait(for: p) {
                extra.last == "0" ? ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.contains(".partial") }
                    : SegmentTests.doneCount(SegmentTests.workDirectory(out)) >= 1
            })
            if extra.last == "0" {
                // Some frames written: the temporary file has grown past the container's header.
                XCTAssertTrue(SegmentTests.wait(for: p) {
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
                    return names.contains { name in
                        name.contains(".partial") && ((try? FileManager.default.attributesOfItem(atPath: dir + "/" + name)[.size] as? Int) ?? 0) > 50_000
                    }
                })
            }
            kill(p.processIdentifier, SIGINT)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 130, name)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out)), before, "\(name): the existing file is untouched")
            let kept = out.replacingOccurrences(of: ".mkv", with: ".incomplete.mkv")
            guard FileManager.default.fileExists(atPath: kept) else { return XCTFail("\(name): no \(kept)") }
            let frames = CLI.decodedFrames(try CLI.probe(kept)) ?? 0
            XCTAssertGreaterThan(frames, 0, "\(name): the frames done are kept beside it")
            XCTAssertLessThan(frames, 360, name)
            if extra.last == "1" {
                let r = try CLI.vivify(["run", source, out, "-y", "--upscale", "--codec", "ffv1"] + extra)
                XCTAssertEqual(r.code, 0, r.stderr)
                XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 360, "the resumed run replaces it, complete")
                // The frames kept beside it are superseded: the completing join removes them
                // (stop 48; they stayed), saying so.
                XCTAssertFalse(FileManager.default.fileExists(atPath: kept), "\(kept) left after the job completed")
                XCTAssertTrue(r.stderr.contains("segmented.incomplete.mkv"), r.stderr)
            }
        }
    }

    /// The completing join removes NAME.incomplete.EXT only if it is still the file the
    /// interrupted run wrote: one replaced meanwhile (a user's copy) stays.
    func testAFileBesideThatIsNotOursStays() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/src.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=12", "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", source])
        let out = dir + "/out.mkv", kept = dir + "/out.incomplete.mkv"
        try FileManager.default.copyItem(atPath: source, toPath: out)
        let args = ["run", source, out, "-y", "--upscale", "--codec", "ffv1", "--segment-seconds", "1"]
        let p = try SegmentTests.start(args)
        XCTAssertTrue(SegmentTests.wait(for: p) { SegmentTests.doneCount(SegmentTests.workDirectory(out)) >= 1 })
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 130)
        XCTAssertTrue(FileManager.default.fileExists(atPath: kept))
        // The user puts something else there (a copy of their own).
        try FileManager.default.removeItem(atPath: kept)
        try Data("mine".utf8).write(to: URL(fileURLWithPath: kept))
        let r = try CLI.vivify(args)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 360)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: kept)), Data("mine".utf8), "a file that is not the run's stays")
    }

    /// `timeout -s INT` and a terminal's Ctrl-C signal the process group too, so vivify got two
    /// SIGINTs a millisecond apart and took the second as "stop at once": exit 130 with no word
    /// and every frame lost. Two signals within 250 ms are one now.
    func testTheSameSignalTwiceIsOneInterruption() throws {
        let dir = try CLI.tempDir()
        let source = try SegmentTests.clip(in: dir)
        let out = dir + "/out.mkv"
        let (p, err) = try CLI.start(CLI.binary, ["run", source, out, "--upscale", "--codec", "ffv1", "--segment-seconds", "0"])
        XCTAssertTrue(SegmentTests.wait(for: p) {
            ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).contains { $0.contains(".partial") }
        })
        usleep(500_000)
        kill(p.processIdentifier, SIGINT)
        usleep(1_000)
        kill(p.processIdentifier, SIGINT)
        let stderr = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 130, stderr)
        XCTAssertTrue(stderr.contains("interrupted:"), stderr)
        guard FileManager.default.fileExists(atPath: out) else { return XCTFail("nothing saved: \(stderr)") }
        XCTAssertGreaterThan(CLI.decodedFrames(try CLI.probe(out)) ?? 0, 0, "the frames done are saved")
    }

    /// `flicker --truth` of another clip (another aspect) printed a meaningless drift; it is
    /// refused now. Another size of the same aspect (an upscaled output) still measures.
    func testATruthOfAnotherAspectIsRefused() throws {
        let dir = try CLI.tempDir()
        let wide = dir + "/wide.mp4", narrow = dir + "/narrow.mp4", big = dir + "/big.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=10:duration=1", "-pix_fmt", "yuv420p", wide])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=240x180:rate=10:duration=1", "-pix_fmt", "yuv420p", narrow])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=640x360:rate=10:duration=1", "-pix_fmt", "yuv420p", big])
        let refused = try CLI.vivify(["flicker", wide, "--truth", narrow])
        XCTAssertEqual(refused.code, 64, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("another aspect"), refused.stderr)
        let measured = try CLI.vivify(["flicker", big, "--truth", wide])
        XCTAssertEqual(measured.code, 0, measured.stderr)
        XCTAssertTrue(String(decoding: measured.stdout, as: UTF8.self).contains("truth drift"))
    }

    /// In live mode the progress line's last update said "dropped 0" (it read the count
    /// through the job, gone by then) while the summary counted the drops.
    func testTheLastLiveProgressLineCountsTheDrops() throws {
        let dir = try CLI.tempDir()
        let mirror = UpscaleCLITests.mirror
        guard FileManager.default.fileExists(atPath: mirror) else { throw XCTSkip("../shared/models is not present") }
        let stats = dir + "/stats.json"
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/live.mp4", "--upscale", "waifu2x-cunet-2x",
                                "--mode", "live", "--realtime", "--stats", stats, "--preset", "ultrafast"],
                               environment: ["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": mirror])
        XCTAssertEqual(r.code, 0, r.stderr)
        let s = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        let dropped = try XCTUnwrap(s["frames_dropped"] as? Int)
        XCTAssertGreaterThan(dropped, 0)
        let last = try XCTUnwrap(r.stderr.split(separator: "\n").last { $0.hasPrefix("frame ") && $0.contains(" dropped ") })
        XCTAssertTrue(last.contains("dropped \(dropped) "), "last progress line: \(last); stats: \(dropped) dropped")
    }
    /// An AVI output took the source's fine time base as its frame rate: 10 frames of an MP4
    /// came out as a "600 fps" file of 240 frames (the gaps filled with empty ones). It now
    /// counts in the source's frames.
    func testAnAVIOutputKeepsTheFrameRateAndCount() throws {
        let dir = try CLI.tempDir()
        let source = try SegmentTests.clip(in: dir)
        // In one piece and joined from 1 s segments (the join writes the container then).
        for (name, args, frames) in [("short.avi", ["--max-frames", "10"], 10), ("joined.avi", ["--segment-seconds", "1"], 120)] {
            let out = dir + "/" + name
            let r = try CLI.vivify(["run", source, out, "--quiet"] + args)
            XCTAssertEqual(r.code, 0, r.stderr)
            let probe = try CLI.probe(out)
            let v = try XCTUnwrap(CLI.streams(probe, "video").first)
            XCTAssertEqual(v["r_frame_rate"] as? String, "30/1", name)
            XCTAssertEqual(CLI.decodedFrames(probe), frames, name)
            XCTAssertEqual(CLI.int(v["nb_frames"]), frames, "\(name): the header counts the frames written")
        }
    }

    /// A warning about the written picture named the hidden temporary file
    /// ('/…/.x.vivify-….partial.jpg'); it names the output asked for.
    func testAPictureWarningNamesTheOutput() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/alpha.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=32x24:rate=1", "-frames:v", "1", "-pix_fmt", "rgba", source])
        let out = dir + "/out.jpg"
        let r = try CLI.vivify(["image", source, out])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("'\(out)': JPEG has no alpha channel"), r.stderr)
        XCTAssertFalse(r.stderr.contains(".partial"), r.stderr)
    }
}
