import Foundation
import XCTest

/// `--strict` gives the same verdict on the same damaged file every run (issue 14, item 5): it
/// decodes on one thread with the decoder failing on damage, so no error is lost to frame
/// threading. Without it the same damage is a warning and exit 0, every run.
final class StrictDeterminismTests: XCTestCase {
    func testStrictVerdictIsTheSameEveryRun() throws {
        let dir = try CLI.tempDir()
        let clean = dir + "/clean.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=320x240:r=25:d=2", "-c:v", "libx264", "-preset", "fast", "-g", "25", clean])
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: clean)))
        guard let mdat = bytes.indices.dropLast(4).first(where: { bytes[$0..<$0 + 4].elementsEqual(Array("mdat".utf8)) }),
              let moov = bytes.indices.dropLast(4).first(where: { bytes[$0..<$0 + 4].elementsEqual(Array("moov".utf8)) }), moov > mdat else {
            return XCTFail("expected mdat before moov")
        }
        // Damage in the middle of the stream, and in its last packets (found only at the flush).
        var middle = bytes, tail = bytes
        for k in 0..<30 { middle[mdat + (moov - mdat) * 4 / 10 + k * 131] ^= 0xFF }
        for k in 0..<20 { tail[moov - 400 + k * 7] ^= 0xFF }
        for (name, damaged) in [("middle", middle), ("tail", tail)] {
            let path = dir + "/\(name).mp4"
            try Data(damaged).write(to: URL(fileURLWithPath: path))
            var verdicts: [Int32] = [], messages = Set<String>()
            for _ in 0..<8 {
                let r = try CLI.vivify(["run", path, dir + "/out.mp4", "--strict", "-y", "--quiet"])
                verdicts.append(r.code)
                messages.insert(r.stderr)
            }
            XCTAssertEqual(verdicts, [Int32](repeating: 65, count: 8), "\(name): --strict exit codes \(verdicts)")
            XCTAssertEqual(messages.count, 1, "\(name): one message every run: \(messages)")
            XCTAssertTrue(messages.first?.contains("\(name).mp4") == true && messages.first?.contains("--strict") == true, "\(messages)")
            for _ in 0..<3 {
                let r = try CLI.vivify(["run", path, dir + "/out.mp4", "-y"])
                XCTAssertEqual(r.code, 0, r.stderr)
                XCTAssertTrue(r.stderr.contains("warning") && r.stderr.contains("damaged"), "\(name): the damage is a warning: \(r.stderr)")
            }
        }
    }
}
