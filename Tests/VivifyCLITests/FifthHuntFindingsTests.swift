import Foundation
import XCTest

/// What the fifth round of new-user checks found (2026-11-30, stop 50), each through the binary.
final class FifthHuntFindingsTests: XCTestCase {
    /// `--live-output hold` on an offline run was taken and ignored: the output had every
    /// frame at its own time, as without it. It is refused (64) naming the fix, before any work;
    /// with `--mode live` it is taken.
    func testLiveOutputWithoutLiveModeIsRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24:rate=10", "-frames:v", "3", "-pix_fmt", "yuv420p", clip])
        for value in ["hold", "vfr"] {
            let r = try CLI.vivify(["run", clip, dir + "/out-\(value).y4m", "--live-output", value])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("'--live-output \(value)' applies to live mode only") && r.stderr.contains("--mode live"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out-\(value).y4m"))
        }
        let live = try CLI.vivify(["run", clip, dir + "/live.y4m", "--mode", "live", "--live-output", "hold", "--quiet"])
        XCTAssertEqual(live.code, 0, live.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/live.y4m")), 3)
    }
}
