import Foundation
import XCTest

/// What a second new-user afternoon found (stop 48), each end to end through the binary.
final class SecondHuntFindingsTests: XCTestCase {
    static let style = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/coreml/style").path

    /// A job's models are hashed by every file they are read from: a Core ML model's custom
    /// layer declarations (NAME.layers.json) changed between two segments made one video of
    /// two models, exit 0 (mean luma 148 then 78). A worker now refuses to go on.
    func testAChangedSideFileIsNeverResumedFrom() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-frames:v", "20", "-pix_fmt", "yuv420p", clip])
        try FileManager.default.createDirectory(atPath: dir + "/m", withIntermediateDirectories: true)
        for ext in ["mlmodel", "layers.json"] {
            try FileManager.default.copyItem(atPath: "\(Self.style)/style_fp32.\(ext)", toPath: "\(dir)/m/style_fp32.\(ext)")
        }
        let work = dir + "/job"
        let plan = try CLI.vivify(["plan", clip, dir + "/out.mp4", "--filter", dir + "/m/style_fp32.mlmodel", "--segment-seconds", "1", "--work", work])
        XCTAssertEqual(plan.code, 0, plan.stderr)
        XCTAssertEqual(try CLI.vivify(["work", work, "--index", "0"]).code, 0)
        let layers = dir + "/m/style_fp32.layers.json"
        let edited = try String(contentsOfFile: layers, encoding: .utf8).replacingOccurrences(of: "127.5", with: "60")
        try edited.write(toFile: layers, atomically: true, encoding: .utf8)
        let second = try CLI.vivify(["work", work, "--index", "1"])
        XCTAssertNotEqual(second.code, 0, second.stderr)
        XCTAssertTrue(second.stderr.contains("differ"), second.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mp4"))
    }
}
