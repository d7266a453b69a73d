import Foundation
import XCTest

/// `--max-frames N` trims the copied audio and subtitles to the video it writes (issue 14,
/// item 7): the audio ends within one audio packet of the last frame's end, and subtitle events
/// that start after it are dropped (it once kept all 2.95 s of audio behind 0.67 s of video).
final class MaxFramesTrimTests: XCTestCase {
    /// The end (pts + duration, seconds) of the last packet of stream kind `kind` ("v", "a"), and
    /// the number of subtitle packets, from the file's packets (Matroska has no stream durations).
    func end(_ kind: String, _ path: String) throws -> Double {
        let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", kind, "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0", path])
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { line -> Double? in
            let f = line.split(separator: ",").compactMap { Double($0) }
            return f.count == 2 ? f[0] + f[1] : nil
        }.max() ?? 0
    }

    func subtitleCount(_ path: String) throws -> Int {
        let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "s", "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").count
    }

    /// The first packet's start of stream kind `kind`.
    func start(_ kind: String, _ path: String) throws -> Double {
        let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", kind, "-show_entries", "packet=pts_time", "-of", "csv=p=0", path])
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { Double($0) }.min() ?? -1
    }

    /// The red team's case: a clip whose video starts 2.235 s into its audio. The audio before
    /// the first frame goes too, so 20 frames carry 0.68 s of audio, not 2.9 s.
    func testAudioLeadingTheVideoIsTrimmedToo() throws {
        let clip = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media/videos/cartoon_big_buck_bunny_10s_360p.mp4").path
        guard FileManager.default.fileExists(atPath: clip) else { throw XCTSkip("no shared clips") }
        let dir = try CLI.tempDir()
        let out = dir + "/out.mp4"
        let r = try CLI.vivify(["run", clip, out, "--max-frames", "20", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        // MP4 keeps each stream's start and duration (its video packets carry no durations).
        let v = CLI.streams(try CLI.probe(out), "video").first
        let vs = CLI.double(v?["start_time"]) ?? -1, ve = vs + (CLI.double(v?["duration"]) ?? -1)
        let (as_, ae) = (try start("a", out), try end("a", out))
        XCTAssertEqual(as_, vs, accuracy: 0.0215 + 0.001, "audio starts at \(as_) s, video at \(vs) s")
        XCTAssertEqual(ae, ve, accuracy: 0.0215 + 0.001, "audio ends at \(ae) s, video at \(ve) s")
    }

    func testAudioAndSubtitlesEndWithTheVideo() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        // One subtitle event every 0.5 s over the clip.
        var srt = ""
        for k in 0..<8 {
            let t = { (s: Double) in String(format: "00:00:%02d,%03d", Int(s), Int((s - Double(Int(s))) * 1000)) }
            srt += "\(k + 1)\n\(t(Double(k) * 0.5)) --> \(t(Double(k) * 0.5 + 0.4))\nline \(k + 1)\n\n"
        }
        try srt.write(toFile: dir + "/subs.srt", atomically: true, encoding: .utf8)
        let source = dir + "/source.mkv"
        try CLI.ffmpeg(["-i", clip, "-i", dir + "/subs.srt", "-map", "0", "-map", "1", "-c", "copy", "-c:s", "srt", source])
        XCTAssertGreaterThan(try end("a", source), 2, "the source has more audio than the trimmed runs keep")
        XCTAssertEqual(try subtitleCount(source), 8)
        for frames in [20, 45] {
            let out = dir + "/out\(frames).mkv"
            let r = try CLI.vivify(["run", source, out, "--max-frames", "\(frames)", "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), frames)
            // Both ends from the output's own packets (the muxer may shift every stream alike).
            let videoEnd = try end("v", out), audioEnd = try end("a", out)
            XCTAssertEqual(audioEnd, videoEnd, accuracy: 0.0215 + 0.001, "\(frames) frames: audio ends at \(audioEnd) s, video at \(videoEnd) s (one AAC packet is 21.3 ms)")
            // Events start at 0, 0.5, 1.0, …: those before the video's end stay.
            let expected = Int((Double(frames) / 30 / 0.5).rounded(.up))
            XCTAssertEqual(try subtitleCount(out), expected, "\(frames) frames: subtitle events kept")
        }
    }
}
