import ColorScience
import Foundation
import XCTest

/// Colorizer descriptions are untrusted (issue 33): numbers that would size a 17 GB buffer,
/// divide by zero or make a non-finite input are refused before the model runs, with exit 64
/// naming the key and the fix; nothing is written.
final class UntrustedDescriptionTests: XCTestCase {
    func testColorizerDescriptionNumbersAreCheckedBeforeUse() throws {
        let dir = try CLI.tempDir()
        let fixtures = CLI.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers")
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("eccv16-tiny.\(ext)").path, toPath: dir + "/m.\(ext)")
        }
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48:rate=1", "-frames:v", "1", dir + "/in.png"])
        let base = #""input": "l", "lCenter": 50, "output": "ab", "upsample": "bilinear""#
        let cases: [(String, String)] = [
            (#"{\#(base), "inputSize": 65537, "inputMultiple": 8, "lScale": 100, "abScale": 110}"#, "inputSize 65537"),
            (#"{\#(base), "inputSize": 64, "inputMultiple": 0, "lScale": 100, "abScale": 110}"#, "inputMultiple 0"),
            (#"{\#(base), "inputSize": 64, "inputMultiple": 9223372036854775807, "lScale": 100, "abScale": 110}"#, "inputMultiple"),
            (#"{\#(base), "inputSize": 64, "inputMultiple": 8, "lScale": 0, "abScale": 110}"#, "lScale"),
            (#"{\#(base), "inputSize": 64, "inputMultiple": 8, "lScale": 100, "abScale": 0}"#, "abScale"),
        ]
        for (json, words) in cases {
            try Data(json.utf8).write(to: URL(fileURLWithPath: dir + "/m.json"))
            let r = try CLI.vivify(["image", dir + "/in.png", dir + "/out.png", "--colorize", dir + "/m.param"])
            XCTAssertEqual(r.code, 64, "\(json): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(words), "\(json): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
        }
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent("eccv16-tiny.json").path, toPath: dir + "/ok.json")
        try FileManager.default.removeItem(atPath: dir + "/m.json")
        try FileManager.default.copyItem(atPath: dir + "/ok.json", toPath: dir + "/m.json")
        let r = try CLI.vivify(["image", dir + "/in.png", dir + "/out.png", "--colorize", dir + "/m.param"])
        XCTAssertEqual(r.code, 0, "the fixture's own description works: \(r.stderr)")
    }

    /// Resampling a plane smaller than its stated sides (or of zero size) gives zeros, never a
    /// read past the plane (ColorScience is built -Ounchecked).
    func testResamplingRefusesPlanesSmallerThanTheirSides() {
        var out: [Float] = []
        Resample.bilinear([1, 2, 3], 4, 4, into: &out, 8, 8)
        XCTAssertEqual(out, [Float](repeating: 0, count: 64))
        Resample.bilinear([], 0, 0, into: &out, 3, 2)
        XCTAssertEqual(out, [Float](repeating: 0, count: 6))
        Resample.area([1, 2, 3], 4, 4, into: &out, 2, 2)
        XCTAssertEqual(out, [Float](repeating: 0, count: 4))
        Resample.area([1, 1, 1, 1], 2, 2, into: &out, 1, 1)
        XCTAssertEqual(out, [1])
    }
}
