import Foundation
import XCTest

/// What a third new-user afternoon found (stop 48), each end to end through the binary: a
/// hang, a black picture with exit 0, audio that failed whole runs, live frames that played
/// too fast, a NaN that failed after the work, and messages that blamed the wrong thing.
final class ThirdHuntFindingsTests: XCTestCase {
    /// SVT-AV1 into a container that refuses AV1 (.mov): the encoder was opened, the muxer
    /// refused, and closing the encoder waited for ever (74 threads on locks; one signal did
    /// nothing). It exits 64 at once now, leaving nothing.
    func testAnEncoderThatNeverGotAFrameClosesAtOnce() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/in.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=160x90:r=25:d=1", "-c:v", "libx264", source])
        let r = try CLI.vivify(["run", source, dir + "/av1.mov", "--codec", "libsvtav1", "--no-audio", "--max-frames", "5"], within: 60)
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains(".mov container cannot hold"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["in.mkv"])
    }

    /// Audio the codec tables allow but the muxer refuses in its header (FLAC in .mp4,
    /// "experimental"; Opus and FLAC in .mov) failed the whole run (73, 64 blaming the video).
    /// Such a stream is dropped with a warning naming it, as any stream a container cannot hold.
    func testAudioTheMuxerRefusesIsDroppedNotFatal() throws {
        let dir = try CLI.tempDir()
        for (codec, name) in [("flac", "flac.mkv"), ("libopus", "opus.mkv")] {
            try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=96x64:r=10:d=1", "-f", "lavfi", "-i", "sine=d=1", "-c:v", "libx264", "-c:a", codec, dir + "/" + name])
        }
        for (input, output, audio) in [("flac.mkv", "a.mp4", "flac"), ("flac.mkv", "b.mov", "flac"), ("opus.mkv", "c.mov", "opus"), ("opus.mkv", "d.mp4", nil)] {
            let r = try CLI.vivify(["run", dir + "/" + input, dir + "/" + output, "--max-frames", "5", "--quiet"], within: 60)
            XCTAssertEqual(r.code, 0, "\(input) → \(output): \(r.stderr)")
            let probe = try CLI.probe(dir + "/" + output)
            XCTAssertEqual(CLI.decodedFrames(probe), 5)
            if let audio {
                XCTAssertTrue(CLI.streams(probe, "audio").isEmpty, "\(output)")
                let warned = try CLI.vivify(["run", dir + "/" + input, dir + "/w-" + output, "--max-frames", "5"], within: 60)
                XCTAssertTrue(warned.stderr.contains("Dropped audio stream #1 (\(audio))"), warned.stderr)
            } else {
                XCTAssertEqual(CLI.streams(probe, "audio").first?["codec_name"] as? String, "opus", "\(output): Opus stays in .mp4")
            }
        }
    }

    /// Live mode into y4m or raw frames (no timestamps) wrote only the processed frames: a
    /// 2 s clip played in 0.73 s. They are held now, with a warning: every source frame's slot.
    func testLiveFramesIntoY4MKeepTheSourcesTiming() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=160x90:r=30:d=1", "-c:v", "libx264", source])
        // realcugan-2x takes about 60 ms a frame here, twice the 33 ms a 30 fps source gives.
        guard FileManager.default.fileExists(atPath: UpscaleCLITests.mirror) else { throw XCTSkip("../shared/models is not present") }
        let r = try CLI.run("/usr/bin/timeout", ["-s", "KILL", "120", CLI.binary, "run", source, dir + "/o.y4m", "--mode", "live", "--realtime", "--upscale", "realcugan-2x"],
                            environment: ["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": UpscaleCLITests.mirror])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("constant frame rate"), r.stderr)
        let dropped = r.stderr.range(of: #"dropped (\d+)"#, options: .regularExpression).flatMap { Int(r.stderr[$0].split(separator: " ")[1]) } ?? 0
        XCTAssertGreaterThan(dropped, 0, "the run must drop frames to show the holding: \(r.stderr)")
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/o.y4m")), 30, "one frame per source frame")
    }

    /// `--target-fps nan` passed every comparison, and the stats file failed after the work
    /// (70, "invalidValue: nan"), the video written. Refused before any work now, 64.
    func testANaNTargetIsRefusedBeforeTheWork() throws {
        let dir = try CLI.tempDir()
        for args in [["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o.mp4", "--max-frames", "2", "--target-fps", "nan", "--stats", dir + "/s.json"],
                     ["bench", "--size", "64x64", "--frames", "2", "--target-fps", "nan"],
                     ["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/o.mp4", "--crf", "nan"]] {
            let r = try CLI.vivify(args, within: 60)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("out of range"), r.stderr)
        }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
    }

    /// Pictures refused from their headers with what is wrong: a JPEG-compressed TIFF came out
    /// black with exit 0; an animated WebP was "damaged"; a WebP over the pixel limit was
    /// "Invalid argument … damaged"; a TIFF over 32768 a side blamed "the input" (64). Each is
    /// a header a few dozen bytes long here.
    func testPicturesAreJudgedByTheirHeaders() throws {
        let dir = try CLI.tempDir()
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16) }
        func tiff(width: Int, height: Int, compression: Int) -> Data {
            var bytes: [UInt8] = Array("II".utf8) + le16(42) + le32(8)
            let entries = [(256, 4, width), (257, 4, height), (258, 3, 8), (259, 3, compression), (262, 3, 2), (273, 4, 200), (277, 3, 3), (279, 4, 64)]
            bytes += le16(entries.count)
            for (tag, type, value) in entries { bytes += le16(tag) + le16(type) + le32(1) + (type == 3 ? le16(value) + [0, 0] : le32(value)) }
            bytes += le32(0)
            return Data(bytes + [UInt8](repeating: 0, count: 300 - bytes.count))
        }
        func webpX(width: Int, height: Int, animated: Bool) -> Data {
            var bytes: [UInt8] = Array("RIFF".utf8) + le32(22) + Array("WEBPVP8X".utf8) + le32(10)
            bytes += [animated ? 0x02 : 0, 0, 0, 0] + Array(le32(width - 1).prefix(3)) + Array(le32(height - 1).prefix(3))
            return Data(bytes)
        }
        let cases: [(String, Data, Int32, String)] = [
            ("jpeg.tif", tiff(width: 48, height: 40, compression: 7), 69, "JPEG-compressed TIFF"),
            ("wide.tif", tiff(width: 40000, height: 20, compression: 1), 65, "'\(dir)/wide.tif' has 40000x20"),
            ("anim.webp", webpX(width: 64, height: 48, animated: true), 69, "animated WebP"),
            ("big.webp", webpX(width: 7000, height: 7000, animated: false), 65, "'\(dir)/big.webp' has 7000x7000"),
        ]
        for (name, data, code, says) in cases {
            try data.write(to: URL(fileURLWithPath: dir + "/" + name))
            let r = try CLI.vivify(["image", dir + "/" + name, dir + "/out.png", "--upscale"], within: 60)
            XCTAssertEqual(r.code, code, "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(says), "\(name): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
    }

    /// mov_text subtitles (an .mp4's) into .mkv are dropped, and the advice said "Use .mkv to
    /// keep it" of an .mkv output: it names the containers that hold them now.
    func testADroppedStreamNamesAContainerThatHoldsIt() throws {
        let dir = try CLI.tempDir()
        let srt = dir + "/s.srt"
        try "1\n00:00:00,000 --> 00:00:00,500\nhello\n".write(toFile: srt, atomically: true, encoding: .utf8)
        let source = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=96x64:r=10:d=1", "-i", srt, "-map", "0", "-map", "1", "-c:v", "libx264", "-c:s", "mov_text", source])
        let r = try CLI.vivify(["run", source, dir + "/o.mkv", "--max-frames", "5"], within: 60)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("Use .mp4 or .mov to keep it"), r.stderr)
    }
}
