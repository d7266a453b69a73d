import Foundation
import XCTest

/// Round trips of the project's own clips through `vivify run`, checked with ffprobe.
final class TranscodeTests: XCTestCase {
    func testAudioClipKeepsFramesDurationAudioAndColourTags() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/out.mp4"
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), out, "--preset", "ultrafast", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(r.stderr, "", "--quiet prints nothing")
        let p = try CLI.probe(out)
        let v = CLI.streams(p, "video")[0]
        XCTAssertEqual(CLI.decodedFrames(p), 60)
        XCTAssertEqual(v["codec_name"] as? String, "h264")
        XCTAssertEqual(CLI.int(v["width"]), 320)
        XCTAssertEqual(v["color_space"] as? String, "bt709")
        XCTAssertEqual(v["color_primaries"] as? String, "bt709")
        XCTAssertEqual(v["color_transfer"] as? String, "bt709")
        XCTAssertEqual(v["color_range"] as? String, "tv")
        XCTAssertEqual(CLI.double(v["duration"])!, 2.0, accuracy: 1.0 / 30)
        let a = CLI.streams(p, "audio")
        XCTAssertEqual(a.count, 1)
        XCTAssertEqual(a[0]["codec_name"] as? String, "aac", "audio copied, not re-encoded")
        XCTAssertEqual(CLI.double(a[0]["duration"])!, 2.0, accuracy: 0.03)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testTimestampsPassThroughExactly() throws {
        let dir = try CLI.tempDir()
        let src = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let out = dir + "/out.mkv"
        XCTAssertEqual(try CLI.vivify(["run", src, out, "--preset", "ultrafast", "--quiet"]).code, 0)
        let times = { (path: String) throws -> [Double] in
            let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time", "-of", "csv=p=0", path])
            return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { Double($0.split(separator: ",").first ?? "") }
        }
        let a = try times(src), b = try times(out)
        XCTAssertEqual(a.count, 60)
        XCTAssertEqual(b.count, 60)
        // Matroska cannot start below zero, so the muxer may shift every stream alike (here by
        // the AAC priming delay); frame spacing and audio/video offset must stay exact.
        for (x, y) in zip(a, b) { XCTAssertEqual(x - a[0], y - b[0], accuracy: 0.0011) }
        let starts = { (path: String) throws -> Double in
            let p = try CLI.probe(path, countFrames: false)
            return CLI.double(CLI.streams(p, "video")[0]["start_time"])! - CLI.double(CLI.streams(p, "audio")[0]["start_time"])!
        }
        // MP4 signals the AAC priming with an edit list, so there the offset must be the same;
        // Matroska cannot (ffmpeg's own stream copy shows the same 21 ms shift there).
        let mp4 = dir + "/out.mp4"
        XCTAssertEqual(try CLI.vivify(["run", src, mp4, "--preset", "ultrafast", "--quiet"]).code, 0)
        XCTAssertEqual(try starts(mp4), try starts(src), accuracy: 0.0011, "audio/video sync kept")
    }

    func testVariableFrameRateAndSubtitlesInMatroska() throws {
        let dir = try CLI.tempDir()
        let src = CLI.clip("vfr-160x90-subs.mkv")
        let out = dir + "/out.mkv"
        let r = try CLI.vivify(["run", src, out, "--preset", "ultrafast", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let p = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(p), 50, "VFR frames are neither dropped nor duplicated")
        XCTAssertEqual(CLI.streams(p, "subtitle").first?["codec_name"] as? String, "subrip")
        XCTAssertEqual(CLI.streams(p, "audio").first?["codec_name"] as? String, "vorbis")
        let pts = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts", "-of", "csv=p=0", out])
        let values = String(decoding: pts.stdout, as: UTF8.self).split(separator: "\n").compactMap { Int($0.split(separator: ",").first ?? "") }
        let src_pts = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts", "-of", "csv=p=0", src])
        let expected = String(decoding: src_pts.stdout, as: UTF8.self).split(separator: "\n").compactMap { Int($0.split(separator: ",").first ?? "") }
        XCTAssertEqual(values, expected)
        let inDur = CLI.double((try CLI.probe(src, countFrames: false)["format"] as! [String: Any])["duration"])!
        let outDur = CLI.double((p["format"] as! [String: Any])["duration"])!
        XCTAssertEqual(outDur, inDur, accuracy: 0.1, "duration within one frame (10 fps part)")
    }

    func testSubtitlesDroppedWithWarningWhereContainerCannotHoldThem() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/out.mp4"
        let r = try CLI.vivify(["run", CLI.clip("vfr-160x90-subs.mkv"), out, "--preset", "ultrafast"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("Dropped subtitle stream #2 (subrip)"), r.stderr)
        let p = try CLI.probe(out, countFrames: false)
        XCTAssertEqual(CLI.streams(p, "subtitle").count, 0)
        XCTAssertEqual(CLI.streams(p, "audio").count, 1)
    }

    func testNoAudioDropsAudioAndSubtitles() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/out.mkv"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("vfr-160x90-subs.mkv"), out, "--no-audio", "--quiet", "--preset", "ultrafast"]).code, 0)
        let p = try CLI.probe(out, countFrames: false)
        XCTAssertEqual((p["streams"] as! [Any]).count, 1)
    }

    func testOddSizeKeepsExactSize() throws {
        let dir = try CLI.tempDir()
        for (ext, codec) in [("mp4", "libx264"), ("webm", "libvpx-vp9")] {
            let out = dir + "/out.\(ext)"
            let r = try CLI.vivify(["run", CLI.clip("odd-161x91-25fps.webm"), out, "--codec", codec, "--preset", codec == "libx264" ? "ultrafast" : "8"])
            XCTAssertEqual(r.code, 0, r.stderr)
            let p = try CLI.probe(out)
            let v = CLI.streams(p, "video")[0]
            XCTAssertEqual(CLI.int(v["width"]), 161)
            XCTAssertEqual(CLI.int(v["height"]), 91)
            XCTAssertEqual(CLI.decodedFrames(p), 50)
            XCTAssertEqual(v["color_space"] as? String, "smpte170m", "BT.601 tag carried")
            if codec == "libx264" {
                XCTAssertEqual(v["pix_fmt"] as? String, "yuv444p")
                XCTAssertTrue(r.stderr.contains("odd side"), "the switch to 4:4:4 is announced")
            }
        }
    }

    func testRotationAndSampleAspectRatioAreKept() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/out.mp4"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("rotated-sar-192x108.mp4"), out, "--quiet", "--preset", "ultrafast"]).code, 0)
        let p = try CLI.probe(out)
        let v = CLI.streams(p, "video")[0]
        XCTAssertEqual(v["sample_aspect_ratio"] as? String, "4:3")
        let side = (v["side_data_list"] as? [[String: Any]]) ?? []
        XCTAssertEqual(side.first?["rotation"] as? Int, 90, "\(side)")
        XCTAssertEqual(CLI.decodedFrames(p), 25)
    }

    func testUntaggedInputGetsExplicitTags() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/out.mp4"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), out, "--quiet", "--preset", "ultrafast"]).code, 0)
        let v = CLI.streams(try CLI.probe(out), "video")[0]
        XCTAssertEqual(v["color_space"] as? String, "smpte170m", "SD rule, written explicitly")
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 24)
        let out709 = dir + "/out709.mp4"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), out709, "--quiet", "--assume-matrix", "bt709", "--preset", "ultrafast"]).code, 0)
        XCTAssertEqual(CLI.streams(try CLI.probe(out709), "video")[0]["color_space"] as? String, "bt709")
    }

    func testEveryOfferedEncoder() throws {
        let dir = try CLI.tempDir()
        let cases: [(codec: String, ext: String, name: String, extra: [String])] = [
            ("libx264", "mp4", "h264", ["--crf", "28", "--preset", "ultrafast"]),
            ("libx265", "mkv", "hevc", ["--crf", "30", "--preset", "ultrafast"]),
            ("libvpx-vp9", "webm", "vp9", ["--crf", "40", "--preset", "8"]),
            ("libsvtav1", "mkv", "av1", ["--crf", "45", "--preset", "12"]),
            ("ffv1", "mkv", "ffv1", []),
            ("mpeg4", "avi", "mpeg4", ["--crf", "5"]),
        ]
        for c in cases {
            let out = dir + "/out-\(c.codec).\(c.ext)"
            let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), out, "--codec", c.codec, "--quiet"] + c.extra)
            XCTAssertEqual(r.code, 0, "\(c.codec): \(r.stderr)")
            let p = try CLI.probe(out)
            XCTAssertEqual(CLI.streams(p, "video").first?["codec_name"] as? String, c.name)
            XCTAssertEqual(CLI.decodedFrames(p), 60, c.codec)
        }
    }

    func testFFV1IsLosslessAgainstTheDecodedSource() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/lossless.mkv"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), out, "--codec", "ffv1", "--quiet"]).code, 0)
        let hash = { (path: String) throws -> String in
            let r = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-map", "0:v", "-f", "md5", "-"])
            return String(decoding: r.stdout, as: UTF8.self)
        }
        XCTAssertEqual(try hash(out), try hash(CLI.clip("testsrc-320x180-30fps-audio.mp4")))
    }

    /// With no --codec, a .webm gets VP9 (WebM cannot hold H.264); a container that cannot hold
    /// the default is a usage error naming it, with nothing left behind.
    func testTheContainerChoosesTheDefaultCodec() throws {
        let dir = try CLI.tempDir()
        let webm = dir + "/o.webm"
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), webm, "--max-frames", "3", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(CLI.streams(try CLI.probe(webm), "video").first?["codec_name"] as? String, "vp9")
        let ogv = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o.ogv", "--max-frames", "3"])
        XCTAssertEqual(ogv.code, 64, ogv.stderr)
        XCTAssertTrue(ogv.stderr.contains(".ogv") && ogv.stderr.contains("--codec"), ogv.stderr)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testLanczosResize() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/big.mp4"
        XCTAssertEqual(try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), out, "--resize", "640x360", "--quiet", "--preset", "ultrafast"]).code, 0)
        let p = try CLI.probe(out)
        let v = CLI.streams(p, "video")[0]
        XCTAssertEqual(CLI.int(v["width"]), 640)
        XCTAssertEqual(CLI.int(v["height"]), 360)
        XCTAssertEqual(CLI.decodedFrames(p), 60)
        XCTAssertEqual(CLI.streams(p, "audio").count, 1)
    }

    func testProgressLinesWhenNotATerminal() throws {
        let dir = try CLI.tempDir()
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o.mp4", "--preset", "ultrafast"])
        XCTAssertEqual(r.code, 0)
        XCTAssertTrue(r.stderr.contains("frame 60/60 (100%)"), r.stderr)
        XCTAssertTrue(r.stderr.contains("fps") && r.stderr.contains("elapsed") && r.stderr.contains("ETA"), r.stderr)
        XCTAssertFalse(r.stderr.contains("\r"), "no in-place redraw off a terminal")
        // --max-frames is the total the progress counts to.
        let cut = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o20.mp4", "--preset", "ultrafast", "--max-frames", "20"])
        XCTAssertEqual(cut.code, 0, cut.stderr)
        XCTAssertTrue(cut.stderr.contains("frame 20/20 (100%)"), cut.stderr)
    }

    func testProbeReportsStreamsAndColour() throws {
        let r = try CLI.vivify(["probe", "--json", "--count-frames", CLI.clip("vfr-160x90-subs.mkv")])
        XCTAssertEqual(r.code, 0, r.stderr)
        let j = try JSONSerialization.jsonObject(with: r.stdout) as! [String: Any]
        let v = j["video"] as! [String: Any]
        XCTAssertEqual(v["frames"] as? Int, 50)
        XCTAssertEqual(v["variable_frame_rate"] as? Bool, true)
        XCTAssertEqual(v["codec"] as? String, "h264")
        XCTAssertEqual((j["streams"] as! [Any]).count, 3)
        let text = try CLI.vivify(["probe", CLI.clip("testsrc-320x180-30fps-audio.mp4")])
        let s = String(decoding: text.stdout, as: UTF8.self)
        for needle in ["h264 320x180", "frames: 60", "matrix=bt709", "audio aac", "duration: 2.000 s", "constant"] {
            XCTAssertTrue(s.contains(needle), "missing '\(needle)' in:\n\(s)")
        }
    }
}
