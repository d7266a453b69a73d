import Foundation
import MediaIO
import Vivify
import XCTest

/// `vivify work` rebuilds its run from the run configuration the plan stored in the manifest
/// (issue 30), so a job planned with settings that differ from the defaults is worked with
/// every one of them: the joined file is what the same job in one piece writes.
final class PlannedConfigurationTests: XCTestCase {
    func testAJobPlannedWithOtherSettingsIsWorkedWithThem() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/clip.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=128x96:r=10:d=3", "-g", "5", "-pix_fmt", "yuv420p", "-c:v", "ffv1", source])
        let job = ["--resize", "96x64", "--codec", "ffv1", "--pix-fmt", "yuv444p", "--assume-matrix", "bt470bg", "--max-frames", "25",
                   "--strict", "--no-audio", "--max-pixels", "100000", "--max-memory", "128M", "--backend", "reference"]
        let reference = dir + "/reference.mkv"
        var r = try CLI.vivify(["run", source, reference, "--segment-seconds", "0", "--quiet"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)

        let work = dir + "/work", joined = dir + "/joined.mkv"
        r = try CLI.vivify(["plan", source, joined, "--work", work, "--segment-seconds", "1"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        let count = try XCTUnwrap(Int(String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)))
        XCTAssertGreaterThan(count, 1)

        // The manifest holds the configuration itself.
        let data = try Data(contentsOf: URL(fileURLWithPath: work + "/" + SegmentedJob.manifestName))
        let manifest = try JSONDecoder().decode(SegmentManifest.self, from: data)
        XCTAssertEqual(manifest.version, 3)
        let c = manifest.settings.configuration
        XCTAssertEqual(c.input.path, URL(fileURLWithPath: source).standardizedFileURL.path)
        XCTAssertEqual(c.output.path, URL(fileURLWithPath: joined).standardizedFileURL.path)
        XCTAssertEqual(c.stages, [.resize(size: FrameSize(width: 96, height: 64))])
        XCTAssertEqual(c.output.encoder, EncoderSettings(codec: "ffv1", pixelFormat: "yuv444p"))
        XCTAssertFalse(c.output.copyAudioAndSubtitles)
        XCTAssertEqual(c.input.assumeMatrix, "bt470bg")
        XCTAssertTrue(c.input.strict)
        XCTAssertEqual(c.run.maxFrames, 25)
        XCTAssertEqual(c.run.backend, .reference)
        XCTAssertEqual(c.limits.maxPixels, 100_000)
        XCTAssertEqual(c.limits.maxMemory, 128 << 20)
        XCTAssertNil(c.limits.threads, "threads are each worker's own")

        for i in 0..<count {
            r = try CLI.vivify(["work", work, "--index", String(i), "--quiet"])
            XCTAssertEqual(r.code, 0, "segment \(i): \(r.stderr)")
        }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(try SegmentTests.frameDigests(joined), try SegmentTests.frameDigests(reference))
        let probe = try CLI.probe(joined)
        let video = CLI.streams(probe, "video").first
        XCTAssertEqual(CLI.int(video?["width"]), 96)
        XCTAssertEqual(CLI.int(video?["height"]), 64)
        XCTAssertEqual(video?["pix_fmt"] as? String, "yuv444p")
        XCTAssertEqual(video?["codec_name"] as? String, "ffv1")
        XCTAssertEqual(CLI.decodedFrames(probe), 25)
        XCTAssertTrue(CLI.streams(probe, "audio").isEmpty)
    }
}
