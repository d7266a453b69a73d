import Foundation
import XCTest

/// Valid narrow clips (issue 33): 1 to 5 pixels wide, RGB, written as y4m and as raw grey.
/// swscale wrote past the tight planes of such frames and glibc found its heap corrupted
/// (MALLOC_CHECK_=3 makes that an abort every time); now every frame comes out whole.
final class NarrowFrameTests: XCTestCase {
    func testNarrowRGBClipsConvertToY4MAndGrey() throws {
        let dir = try CLI.tempDir()
        let env = ["MALLOC_CHECK_": "3"]
        for (w, h) in [(4, 8), (3, 8), (1, 8), (5, 3), (2, 2)] {
            let src = dir + "/n\(w)x\(h).mkv"
            try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=\(w)x\(h):rate=10", "-frames:v", "12", "-pix_fmt", "rgb24", "-c:v", "ffv1", src])
            var r = try CLI.vivify(["run", src, dir + "/o\(w)x\(h).y4m", "--quiet"], environment: env)
            XCTAssertEqual(r.code, 0, "\(w)x\(h) → y4m: \(r.stderr)")
            let y4m = try Data(contentsOf: URL(fileURLWithPath: dir + "/o\(w)x\(h).y4m"))
            XCTAssertEqual(String(decoding: y4m, as: UTF8.self).components(separatedBy: "FRAME").count - 1, 12, "\(w)x\(h): 12 frames")
            r = try CLI.vivify(["run", src, dir + "/o\(w)x\(h).raw", "--output-format", "gray", "--quiet"], environment: env)
            XCTAssertEqual(r.code, 0, "\(w)x\(h) → gray: \(r.stderr)")
            let grey = try Data(contentsOf: URL(fileURLWithPath: dir + "/o\(w)x\(h).raw"))
            XCTAssertEqual(grey.count, 12 * w * h, "\(w)x\(h): 12 grey frames")
            // The same frames as ffmpeg's own conversion to grey, within rounding.
            let ref = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", src, "-f", "rawvideo", "-pix_fmt", "gray", "-"])
            XCTAssertEqual(ref.stdout.count, grey.count)
            let worst = zip([UInt8](ref.stdout), [UInt8](grey)).map { abs(Int($0) - Int($1)) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 3, "\(w)x\(h): grey values as ffmpeg's")
        }
    }
}
