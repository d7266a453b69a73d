import ColorScience
import Foundation
import XCTest

/// Colour that holds through a shot (issue 29, item 4): the built-in colorizer anchors each
/// shot to its own earlier frames. Measured on real footage through the binary.
final class ShotAnchorCLITests: XCTestCase {
    /// Mean a*, b* of a corner of the sky in each frame from `first` to `last`, every `step`.
    func skyColour(_ path: String, corner: (x0: Double, x1: Double), rows: Double, frames: StrideThrough<Int>) throws -> [(a: Double, b: Double)] {
        let v = try SegmentTests.rgbFrames(path)
        var out: [(Double, Double)] = []
        for n in frames {
            let f = v.frames[n]
            var sa = 0.0, sb = 0.0, count = 0.0
            for y in 0..<Int(Double(v.height) * rows) {
                for x in Int(Double(v.width) * corner.x0)..<Int(Double(v.width) * corner.x1) {
                    let i = 3 * (y * v.width + x)
                    let c = LabReference.rgbToLab(Double(f[i]) / 255, Double(f[i + 1]) / 255, Double(f[i + 2]) / 255)
                    sa += c.a; sb += c.b; count += 1
                }
            }
            out.append((sa / count, sb / count))
        }
        return out
    }

    func spread(_ values: [Double]) -> Double { values.max()! - values.min()! }

    /// The 1950s film's slow zoom on a sign (frames 48–104, one shot): with the stabilizer
    /// alone (`--no-anchor`) the flat grey sky's colour wanders by 14 b* units on the left
    /// (measured: blue to grey) and 8 a* on the right; anchored, each corner keeps one colour
    /// (within 4), and flicker is no higher.
    func testTheZoomKeepsOneSkyColour() throws {
        let dir = try CLI.tempDir()
        let source = CLI.sharedVideos.appendingPathComponent("bw_a-bomb_blast_effects_part_deepremaster.mp4").path
        var spreads: [String: Double] = [:], flicker: [String: Double] = [:]
        for (name, extra) in [("anchored", [String]()), ("stabilizer alone", ["--no-anchor"]), ("not stabilized", ["--no-stabilize"])] {
            let out = dir + "/\(name.replacingOccurrences(of: " ", with: "-")).mkv"
            let r = try CLI.vivify(["run", source, out, "--colorize", "--codec", "ffv1", "--max-frames", "106", "--quiet"] + extra)
            XCTAssertEqual(r.code, 0, r.stderr)
            var worst = 0.0
            for corner in [(0.0, 0.2), (0.8, 1.0)] {
                let sky = try skyColour(out, corner: corner, rows: 0.12, frames: stride(from: 48, through: 104, by: 4))
                worst = max(worst, spread(sky.map(\.a)), spread(sky.map(\.b)))
            }
            spreads[name] = worst
            let f = try CLI.vivify(["flicker", out])
            XCTAssertEqual(f.code, 0, f.stderr)
            let text = String(decoding: f.stdout, as: UTF8.self)
            flicker[name] = Double(text.dropFirst("flicker ".count).prefix { "0123456789.".contains($0) })
        }
        print("sky colour spread through the zoom: \(spreads); flicker: \(flicker)")
        XCTAssertLessThanOrEqual(spreads["anchored"]!, 4, "the anchored sky keeps one colour")
        XCTAssertGreaterThan(spreads["stabilizer alone"]!, 2 * spreads["anchored"]!, "without the anchor the sky wanders (the test sees it)")
        XCTAssertGreaterThan(spreads["not stabilized"]!, 2 * spreads["anchored"]!)
        XCTAssertLessThanOrEqual(flicker["anchored"]!, flicker["stabilizer alone"]!)
    }

    /// A colour clip turned grey and colorized: its drift through the shot no larger than the
    /// truth's over the same regions (Vid4 walk: people walk past a market, the camera follows).
    func testDriftNoLargerThanTheTruths() throws {
        let dir = try CLI.tempDir()
        let truth = CLI.sharedVideos.appendingPathComponent("vid4_walk_gt.mp4").path
        let grey = dir + "/grey.mkv", out = dir + "/out.mkv"
        try CLI.ffmpeg(["-i", truth, "-fps_mode", "passthrough", "-vf", "format=gray,format=yuv420p", "-c:v", "ffv1", grey])
        func drift(_ path: String) throws -> (ours: Double, truth: Double) {
            let r = try CLI.vivify(["flicker", path, "--truth", truth])
            XCTAssertEqual(r.code, 0, r.stderr)
            let text = String(decoding: r.stdout, as: UTF8.self)
            let number = { (label: String) -> Double in
                let range = text.range(of: label + " ")!
                return Double(text[range.upperBound...].prefix { "0123456789.".contains($0) })!
            }
            return (number("; drift"), number("truth drift"))
        }
        var r = try CLI.vivify(["run", grey, out, "--colorize", "--codec", "ffv1", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let anchored = try drift(out)
        r = try CLI.vivify(["run", grey, out, "--colorize", "--codec", "ffv1", "--no-anchor", "--quiet", "-y"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let loose = try drift(out)
        print("walk drift: anchored \(anchored.ours), stabilizer alone \(loose.ours), truth \(anchored.truth)")
        XCTAssertGreaterThan(anchored.truth, 0.5, "the truth's colour moves a little (lighting, tracking): the meter measures")
        XCTAssertLessThanOrEqual(anchored.ours, anchored.truth)
        XCTAssertLessThan(anchored.ours, loose.ours)
    }
}
