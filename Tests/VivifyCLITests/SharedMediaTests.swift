import Foundation
import XCTest

/// Real footage made by others (../shared/media/videos): every clip decodes fully and
/// transcodes with the same frame count; Big Buck Bunny keeps its audio.
final class SharedMediaTests: XCTestCase {
    private func sharedClips() throws -> [String] {
        let dir = CLI.sharedVideos.path
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else {
            throw XCTSkip("\(dir) is not present")
        }
        return names.filter { $0.hasSuffix(".mp4") || $0.hasSuffix(".mkv") || $0.hasSuffix(".webm") }.sorted().map { "\(dir)/\($0)" }
    }

    func testEveryClipTranscodesWithItsFrameCount() throws {
        let clips = try sharedClips()
        XCTAssertGreaterThanOrEqual(clips.count, 5)
        let dir = try CLI.tempDir()
        for clip in clips {
            let name = URL(fileURLWithPath: clip).deletingPathExtension().lastPathComponent
            let source = try CLI.probe(clip)
            let expected = try XCTUnwrap(CLI.decodedFrames(source), name)
            let out = "\(dir)/\(name).mkv"
            let r = try CLI.vivify(["run", clip, out, "--preset", "ultrafast", "--crf", "30", "--quiet"])
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            let result = try CLI.probe(out)
            XCTAssertEqual(CLI.decodedFrames(result), expected, name)
            let sv = CLI.streams(source, "video")[0], ov = CLI.streams(result, "video")[0]
            XCTAssertEqual(CLI.int(ov["width"]), CLI.int(sv["width"]), name)
            XCTAssertEqual(CLI.int(ov["height"]), CLI.int(sv["height"]), name)
            XCTAssertEqual(CLI.streams(result, "audio").count, CLI.streams(source, "audio").count, name)
        }
    }

    func testBigBuckBunnyKeepsItsAudio() throws {
        guard let clip = try sharedClips().first(where: { $0.contains("big_buck_bunny") }) else {
            throw XCTSkip("Big Buck Bunny clip not present")
        }
        let dir = try CLI.tempDir()
        let out = dir + "/bbb.mp4"
        let r = try CLI.vivify(["run", clip, out, "--preset", "ultrafast", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let source = try CLI.probe(clip, countFrames: false), result = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(result), 234)
        let sa = CLI.streams(source, "audio")[0], oa = CLI.streams(result, "audio")[0]
        XCTAssertEqual(oa["codec_name"] as? String, "aac")
        XCTAssertEqual(CLI.int(oa["channels"]), CLI.int(sa["channels"]))
        XCTAssertEqual(CLI.double(oa["duration"])!, CLI.double(sa["duration"])!, accuracy: 0.03)
        XCTAssertEqual(CLI.int(oa["nb_frames"]), CLI.int(sa["nb_frames"]), "every audio packet copied")
        let vDur = CLI.double(CLI.streams(result, "video")[0]["duration"])!
        XCTAssertEqual(vDur, CLI.double(CLI.streams(source, "video")[0]["duration"])!, accuracy: 1.0 / 29.97)
    }
}
