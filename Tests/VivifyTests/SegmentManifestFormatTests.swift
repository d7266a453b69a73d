import Foundation
import MediaIO
import Vivify
import XCTest

/// Manifests written before the settings became a `RunConfiguration` still open, as the same
/// job. The fixture is a manifest as vivify 0.13.0 wrote it (layout version 1: every setting a
/// flat field), from
///
///     vivify plan in.mp4 out.mkv --work work --segment-seconds 1 --colorize --upscale \
///       --colorize-after --saturation 1.2 --no-anchor --hint 10,20=#ff8000 --tile 64 \
///       --resize 480x270 --codec libx264 --crf 20 --preset fast --pix-fmt yuv444p \
///       --assume-matrix bt709 --max-frames 60 --strict --no-audio --max-pixels 20000000 \
///       --max-memory 256M --precision fp32 --backend onednn -y
///
/// run in /tmp/fx on Media/testsrc-320x180-30fps-audio.mp4.
final class SegmentManifestFormatTests: XCTestCase {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/segment-manifest-v1.json")

    /// The job the fixture's command line describes, as this version plans it (limits in
    /// force, the backend chosen, absolute paths).
    static var plannedConfiguration: RunConfiguration {
        var c = RunConfiguration(input: "/tmp/fx/in.mp4", output: "/tmp/fx/out.mkv")
        c.stages.colorize = "vivify-color"
        c.stages.upscale = "2"
        c.stages.colorizeAfter = true
        c.stages.saturation = 1.2
        c.stages.anchorShots = false
        c.stages.colourGuide.hints = [ColourHint(parsing: "10,20=#ff8000")!]
        c.stages.tile = 64
        c.stages.resize = FrameSize(width: 480, height: 270)
        c.output.encoder = EncoderSettings(codec: "libx264", crf: 20, preset: "fast", pixelFormat: "yuv444p")
        c.output.copyAudioAndSubtitles = false
        c.input.assumeMatrix = "bt709"
        c.input.strict = true
        c.run.maxFrames = 60
        c.run.backend = .onednn
        c.limits = RunLimits(maxPixels: 20_000_000, maxMemory: 256 << 20, precision: .fp32)
        return c
    }

    func testAVersion1ManifestDecodesToTheSameSettings() throws {
        let m = try JSONDecoder().decode(SegmentManifest.self, from: Data(contentsOf: Self.fixture))
        XCTAssertEqual(m.version, 1)
        XCTAssertNil(m.segmentProblem)
        XCTAssertEqual(m.segments.count, 2)
        let s = m.settings
        XCTAssertEqual(s.vivifyVersion, "0.13.0")
        XCTAssertEqual(s.configuration, Self.plannedConfiguration)
        XCTAssertEqual(s.input, "/tmp/fx/in.mp4")
        XCTAssertEqual(s.output, "/tmp/fx/out.mkv")
        XCTAssertEqual(s.limits, RunLimits(maxPixels: 20_000_000, maxMemory: 256 << 20, precision: .fp32))
        XCTAssertEqual(s.models.keys.sorted(), ["colorize vivify-color", "upscale vivify-fast-2x"])
        XCTAssertEqual(s.replaceExistingOutput, true)
        XCTAssertNil(s.int8Calibration)
        XCTAssertEqual(s.configuration.stages.modelStages.count, 2)

        // Written back in this version's layout, the same settings come back.
        let again = try JSONDecoder().decode(SegmentManifest.Settings.self, from: JSONEncoder().encode(s))
        XCTAssertEqual(again, s)
        XCTAssertEqual(again.differences(to: s), [])
        let written = try JSONSerialization.jsonObject(with: JSONEncoder().encode(s)) as? [String: Any] ?? [:]
        XCTAssertEqual(Set(written.keys), ["vivifyVersion", "configuration", "models", "replaceExistingOutput"])
    }

    /// A work directory holding a version-1 manifest opens (for `work`, `status` and `join`),
    /// and is kept in version 2's layout from then on.
    func testAVersion1WorkDirectoryOpens() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-manifest-v1-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: Self.fixture, to: directory.appendingPathComponent(SegmentedJob.manifestName))
        let job = try SegmentedJob(directory: directory)
        XCTAssertEqual(job.manifest.version, SegmentManifest.currentVersion)
        XCTAssertEqual(job.manifest.settings.configuration, Self.plannedConfiguration)
        XCTAssertEqual(try job.status(verify: true).map(\.state), ["missing", "missing"])
    }

    /// A changed setting is named by its place in the configuration (why a run does not resume).
    func testDifferencesNameTheChangedSetting() throws {
        let m = try JSONDecoder().decode(SegmentManifest.self, from: Data(contentsOf: Self.fixture))
        var other = m.settings
        other.configuration.stages.resize = FrameSize(width: 640, height: 360)
        XCTAssertEqual(m.settings.differences(to: other),
                       ["configuration.stages.resize.height 270 → 360", "configuration.stages.resize.width 480 → 640"])
    }
}
