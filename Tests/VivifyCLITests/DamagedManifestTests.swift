import Foundation
import Vivify
import XCTest

/// A finished job whose manifest was damaged or edited: `join` refuses it as damaged data (65,
/// naming the manifest and the fix), never as an internal failure (70, which scripts/mutate-campaign
/// found for an edited frame count) or a trap (tags of the wrong arity, a span out of order).
final class DamagedManifestTests: XCTestCase {
    func testJoinOfADamagedManifestIsADataError() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/source.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "3", "-c:v", "ffv1", source])
        let work = dir + "/work"
        var r = try CLI.vivify(["plan", source, dir + "/out.mkv", "--work", work, "--segment-seconds", "1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let manifestURL = URL(fileURLWithPath: work + "/manifest.json")
        let planned = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
        let count = try XCTUnwrap(planned["segments"] as? [[String: Any]]).count
        XCTAssertGreaterThan(count, 1)
        for i in 0..<count {
            r = try CLI.vivify(["work", work, "--index", String(i), "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        let worked = try Data(contentsOf: manifestURL)
        func edited(_ change: (inout [String: Any]) -> Void) throws {
            var m = try XCTUnwrap(try JSONSerialization.jsonObject(with: worked) as? [String: Any])
            change(&m)
            try JSONSerialization.data(withJSONObject: m).write(to: manifestURL)
        }

        // A finished segment's frame count edited: its file still verifies (size, SHA-256).
        try edited { m in
            var segments = m["segments"] as! [[String: Any]]
            var done = segments[0]["done"] as! [String: Any]
            done["frames"] = (done["frames"] as! Int) + 1000
            segments[0]["done"] = done
            m["segments"] = segments
        }
        r = try CLI.vivify(["join", work, "--keep"])
        XCTAssertEqual(r.code, VivifyExitCode.dataError.rawValue, r.stderr)
        XCTAssertTrue(r.stderr.contains("manifest.json") && r.stderr.contains("damaged or was edited") && r.stderr.contains("Plan the job again"), r.stderr)

        // Tags the joiner reads by position, and a span it makes a range of.
        for (name, change) in [("frame rate of one number", { (m: inout [String: Any]) in
                                    var t = m["tags"] as! [String: Any]
                                    t["frameRate"] = [10]
                                    m["tags"] = t
                                }),
                               ("negative colour code", { (m: inout [String: Any]) in
                                    var t = m["tags"] as! [String: Any]
                                    t["color"] = [1, 1, -2, 1]
                                    m["tags"] = t
                                }),
                               ("span out of order", { (m: inout [String: Any]) in m["videoSpan"] = [3.0, 1.0] })] {
            try edited(change)
            r = try CLI.vivify(["join", work, "--keep"])
            XCTAssertEqual(r.code, VivifyExitCode.dataError.rawValue, "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("damaged or was edited"), "\(name): \(r.stderr)")
        }

        // The manifest as the workers left it still joins.
        try worked.write(to: manifestURL)
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
    }
}
