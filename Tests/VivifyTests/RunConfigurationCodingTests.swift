import Foundation
import MediaIO
import Vivify
import XCTest

/// A run configuration is one value that survives JSON: every field a run reads comes back.
final class RunConfigurationCodingTests: XCTestCase {
    func testEveryFieldSurvivesJSON() throws {
        var c = RunConfiguration(input: "in.y4m", output: "out.mkv")
        c.input.format = .rgb24
        c.input.rawSize = FrameSize(width: 320, height: 180)
        c.input.rawRate = Rational(30000, 1001)
        c.output.encoder = EncoderSettings(codec: "ffv1", crf: 18, preset: "slow", pixelFormat: "yuv444p")
        c.output.copyAudioAndSubtitles = false
        c.input.strict = true
        c.input.assumeMatrix = "bt709"
        let stages: [StageSpec] = [
            .upscale(model: "2", tile: 96), .filter(model: "style.wifm", tile: 96, strength: 0.5),
            .colorize(model: "vivify-color", stabilize: false, saturation: 1.25, guide: ColourGuideSpec(hints: [ColourHint(parsing: "10,20=#ff8000")!]),
                      anchorShots: true),
            .resize(size: FrameSize(width: 640, height: 360)),
        ]
        c.stages = stages
        c.run.maxFrames = 30
        c.run.backend = .reference
        c.run.mode = .live
        c.run.liveOutput = .hold
        c.run.realtime = true
        c.run.targetFPS = 25
        c.output.existing = .replace
        c.limits = RunLimits(threads: 2, maxPixels: 1 << 20, maxMemory: 64 << 20, precision: .bf16)
        c.input.networkTimeout = 3

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(c)
        let back = try JSONDecoder().decode(RunConfiguration.self, from: json)
        XCTAssertEqual(String(decoding: try encoder.encode(back), as: UTF8.self), String(decoding: json, as: UTF8.self))
        XCTAssertEqual(back.stages, stages)
        XCTAssertEqual(back.limits, c.limits)
        XCTAssertEqual(back.output.encoder, c.output.encoder)
        XCTAssertEqual(back.input.rawRate, Rational(30000, 1001))
        XCTAssertEqual(back.run.backend, .reference)
        XCTAssertEqual(back.run.mode, .live)
        XCTAssertEqual(back.output.existing, .replace)
        XCTAssertEqual(back.stages.modelStages.map(\.name), ["upscale", "filter", "colorize"], "the list keeps its order")
        XCTAssertNil(back.input.synthetic, "a generated input is not part of the JSON")
    }
}
