import Foundation
import XCTest

/// A cached catalog model is checked against its SHA-256 before use, not only at fetch (issue
/// 33): the same weights changed in place, same size, are refused (65) with the fix.
final class VerifyWhatRunsTests: XCTestCase {
    func testTamperedCachedModelIsRefused() throws {
        let mirror = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models").path
        guard FileManager.default.fileExists(atPath: mirror) else { throw XCTSkip("../shared/models is not beside the checkout") }
        let dir = try CLI.tempDir()
        let env = ["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": mirror]
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48", "-frames:v", "1", dir + "/in.png"])
        var r = try CLI.vivify(["image", dir + "/in.png", dir + "/a.png", "--upscale", "waifu2x-photo-2x"], environment: env)
        XCTAssertEqual(r.code, 0, r.stderr)
        r = try CLI.vivify(["image", dir + "/in.png", dir + "/b.png", "--upscale", "waifu2x-photo-2x"], environment: env)
        XCTAssertEqual(r.code, 0, "untouched, it runs again: \(r.stderr)")
        // Flip one byte of the weights, size unchanged.
        let enumerator = FileManager.default.enumerator(atPath: dir + "/models")!
        let bin = (enumerator.allObjects as! [String]).first { $0.hasSuffix(".bin") }!
        let url = URL(fileURLWithPath: dir + "/models/" + bin)
        var bytes = try Data(contentsOf: url)
        bytes[bytes.count / 2] ^= 0x40
        try bytes.write(to: url)
        r = try CLI.vivify(["image", dir + "/in.png", dir + "/c.png", "--upscale", "waifu2x-photo-2x"], environment: env)
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("changed after it was fetched"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/c.png"))
    }
}
