import Foundation
import XCTest

/// `vivify bench` takes `vivify run`'s model options (one declaration of each stage's option,
/// issue 30): the stages run in the order those options give, and an option that `run`
/// checks is checked here too.
final class BenchCLITests: XCTestCase {
    /// The stage lines of the frame-timing table, in order.
    private func stages(_ stdout: String) -> [String] {
        stdout.split(separator: "\n").compactMap { line in
            let name = line.split(separator: " ").first.map(String.init) ?? ""
            return ["upscale", "colorize"].contains(name) && line.hasPrefix("  ") ? name : nil
        }
    }

    func testBenchRunsTheStagesInRunsOrder() throws {
        let common = ["bench", "--colorize", "--upscale", "--size", "64x48", "--frames", "2"]
        var r = try CLI.vivify(common)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(stages(String(decoding: r.stdout, as: UTF8.self)), ["colorize", "upscale"])
        r = try CLI.vivify(common + ["--colorize-after", "--saturation", "1.2", "--precision", "fp32"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(stages(String(decoding: r.stdout, as: UTF8.self)), ["upscale", "colorize"], "--colorize-after as `run` takes it")
        r = try CLI.vivify(["bench", "--upscale", "--saturation", "1.2", "--size", "64x48", "--frames", "2"])
        XCTAssertEqual(r.code, 64, "run's own check: --saturation without a colorizer")
        XCTAssertTrue(r.stderr.contains("--saturation"), r.stderr)
    }
}
