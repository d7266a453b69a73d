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
        c.stages = [
            .upscale(model: "2", tile: 64),
            .colorize(model: "vivify-color", stabilize: true, saturation: 1.2, guide: ColourGuideSpec(hints: [ColourHint(parsing: "10,20=#ff8000")!]),
                      anchorShots: false),
            .resize(size: FrameSize(width: 480, height: 270)),
        ]
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
    /// and is kept in this version's layout from then on.
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
        other.configuration.stages[2] = .resize(size: FrameSize(width: 640, height: 360))
        XCTAssertEqual(m.settings.differences(to: other),
                       ["configuration.stages[2].resize.size.height 270 → 360", "configuration.stages[2].resize.size.width 480 → 640"])
    }

    /// A manifest of layout version 2 (stages as named fields), planned by vivify 0.13.0's
    /// layout with
    ///
    ///     vivify plan in.mp4 out.mkv --work work --segment-seconds 1 --upscale --filter 2 \
    ///       --filter-strength 0.5 --colorize --colorize-after --saturation 1.2 --no-anchor \
    ///       --hint 10,20=#ff8000 --tile 64 --resize 480x270 --codec libx264 --crf 20 \
    ///       --preset fast --pix-fmt yuv444p --assume-matrix bt709 --max-frames 60 --strict \
    ///       --no-audio --max-pixels 20000000 --max-memory 256M --precision fp32 --backend onednn -y
    ///
    /// in /tmp/fx, reads as the same job with its stages listed in the order they ran.
    func testAVersion2ManifestReadsWithItsStagesListed() throws {
        let fixture = Self.fixture.deletingLastPathComponent().appendingPathComponent("segment-manifest-v2.json")
        let m = try JSONDecoder().decode(SegmentManifest.self, from: Data(contentsOf: fixture))
        XCTAssertEqual(m.version, 2)
        XCTAssertNil(m.segmentProblem)
        var c = Self.plannedConfiguration
        c.stages.insert(.filter(model: "2", tile: 64, strength: 0.5), at: 1)
        XCTAssertEqual(m.settings.configuration, c)
        XCTAssertEqual(m.settings.configuration.stages.names, ["upscale", "filter", "colorize", "resize"])
        XCTAssertEqual(m.settings.limits, RunLimits(maxPixels: 20_000_000, maxMemory: 256 << 20, precision: .fp32))
        XCTAssertEqual(m.settings.models.keys.sorted(), ["colorize vivify-color", "filter vivify-fast-2x", "upscale vivify-fast-2x"])
        XCTAssertEqual(m.settings.replaceExistingOutput, true)

        // A version-2 work directory opens, and is kept in this version's layout.
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-manifest-v2-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.copyItem(at: fixture, to: directory.appendingPathComponent(SegmentedJob.manifestName))
        let job = try SegmentedJob(directory: directory)
        XCTAssertEqual(job.manifest.version, 3)
        XCTAssertEqual(job.manifest.settings, m.settings)
        XCTAssertEqual(try job.status(verify: true).map(\.state), ["missing", "missing"])
    }

    /// A version-3 manifest keeps the stages as the list they are, and reads back the same.
    func testAVersion3ManifestRoundTrips() throws {
        var m = try JSONDecoder().decode(SegmentManifest.self, from: Data(contentsOf: Self.fixture))
        m.version = SegmentManifest.currentVersion
        XCTAssertEqual(m.version, 3)
        m.settings.configuration.stages.insert(.filter(model: "/tmp/fx/style.wifm", tile: 64, strength: 0.25), at: 2)
        let data = try JSONEncoder().encode(m)
        XCTAssertEqual(try JSONDecoder().decode(SegmentManifest.self, from: data), m)
        let root = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        let settings = root["settings"] as? [String: Any] ?? [:]
        let stages = (settings["configuration"] as? [String: Any])?["stages"] as? [[String: Any]] ?? []
        XCTAssertEqual(stages.map { $0.keys.sorted() }, [["upscale"], ["colorize"], ["filter"], ["resize"]], "the stages as a list, in order")
        XCTAssertEqual((stages[2]["filter"] as? [String: Any])?["strength"] as? Double, 0.25)
        XCTAssertEqual(root["version"] as? Int, 3)
    }
}
