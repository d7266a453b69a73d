import Foundation
import MediaIO
import Vivify
import XCTest

/// A run configuration is one value that survives JSON: every field a run reads comes back.
final class RunConfigurationCodingTests: XCTestCase {
    func testEveryFieldSurvivesJSON() throws {
        var c = RunConfiguration(input: "in.y4m", output: "out.mkv")
        c.inputFormat = .rgb24
        c.rawSize = FrameSize(width: 320, height: 180)
        c.rawRate = Rational(30000, 1001)
        c.encoder = EncoderSettings(codec: "ffv1", crf: 18, preset: "slow", pixelFormat: "yuv444p")
        c.copyAudioAndSubtitles = false
        c.strict = true
        c.assumeMatrix = "bt709"
        var stages = StageSettings(colorize: "vivify-color", upscale: "2", tile: 96)
        stages.colorizeAfter = true
        stages.stabilize = false
        stages.saturation = 1.25
        stages.filters = [FilterStage(model: "style.wifm", strength: 0.5, after: 1)]
        stages.resize = FrameSize(width: 640, height: 360)
        stages.colourGuide.hints = [ColourHint(parsing: "10,20=#ff8000")!]
        c.stages = stages
        c.maxFrames = 30
        c.backend = .reference
        c.mode = .live
        c.liveOutput = .hold
        c.realtime = true
        c.targetFPS = 25
        c.existingOutput = .replace
        c.limits = RunLimits(threads: 2, maxPixels: 1 << 20, maxMemory: 64 << 20, precision: .bf16, networkTimeout: 3)

        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(c)
        let back = try JSONDecoder().decode(RunConfiguration.self, from: json)
        XCTAssertEqual(String(decoding: try encoder.encode(back), as: UTF8.self), String(decoding: json, as: UTF8.self))
        XCTAssertEqual(back.stages, stages)
        XCTAssertEqual(back.limits, c.limits)
        XCTAssertEqual(back.encoder, c.encoder)
        XCTAssertEqual(back.rawRate, Rational(30000, 1001))
        XCTAssertEqual(back.backend, .reference)
        XCTAssertEqual(back.mode, .live)
        XCTAssertEqual(back.existingOutput, .replace)
        XCTAssertEqual(back.modelStages.count, 3, "the order is rebuilt from the stages")
        XCTAssertNil(back.synthetic, "a generated input is not part of the JSON")
    }
}
