import Foundation
import FuzzTargets
import MediaIO
import Vivify
import XCTest

/// Replays every input that ever crashed a parser (`Crashes/<target>/`, committed with the fix)
/// and a few hand-made hostile inputs through the fuzz entry points: each must come back with an
/// error, not a trap. A regression kills this test process, which fails the run.
final class FuzzRegressionTests: XCTestCase {
    static let crashes = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Crashes")

    func inputs(_ target: FuzzTarget) -> [URL] {
        let folder = Self.crashes.appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().filter { !$0.hasPrefix(".") }.map { folder.appendingPathComponent($0) }
    }

    func testEveryCommittedCrashNowFailsCleanly() throws {
        var replayed = 0
        for target in FuzzTarget.allCases {
            for url in inputs(target) {
                target.run(try Data(contentsOf: url))
                replayed += 1
            }
        }
        // The folder layout is what scripts/fuzz copies crashes into; an empty tree would mean
        // the test replays nothing.
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: Self.crashes.path).filter { !$0.hasPrefix(".") }),
                       Set(FuzzTarget.allCases.map(\.rawValue)))
        print("replayed \(replayed) committed crash inputs")
    }

    /// Damaged segment manifests are refused when read (65, naming what is wrong), before
    /// `join` reads their tags as rationals and FFmpeg codes (a short array, a negative colour
    /// code or a span out of order trapped there) or `run` sums their frame counts.
    func testDamagedSegmentManifestsAreRefusedWhenRead() throws {
        // A valid manifest: the committed escaping one with its segment file put right.
        let escaping = Self.crashes.appendingPathComponent("segment-manifest/segment-file-escapes-work-dir.json")
        var base = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: escaping)) as? [String: Any])
        var segments = try XCTUnwrap(base["segments"] as? [[String: Any]])
        segments[1]["file"] = "segment-0001.nut"
        base["segments"] = segments
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-manifest-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func open(_ manifest: [String: Any]) throws -> SegmentedJob {
            try JSONSerialization.data(withJSONObject: manifest).write(to: directory.appendingPathComponent(SegmentedJob.manifestName))
            return try SegmentedJob(directory: directory)
        }
        XCTAssertNoThrow(try open(base), "the base manifest must be valid, or the cases below prove nothing")
        func tags(_ key: String, _ value: Any) -> [String: Any] {
            var m = base
            var t = m["tags"] as! [String: Any]
            t[key] = value
            m["tags"] = t
            return m
        }
        func segment(_ key: String, _ value: Any) -> [String: Any] {
            var m = base
            var s = m["segments"] as! [[String: Any]]
            s[0][key] = value
            m["segments"] = s
            return m
        }
        var spanReversed = base
        spanReversed["videoSpan"] = [2.0, 0.0]
        var spanShort = base
        spanShort["videoSpan"] = [1.0]
        var totalHuge = base
        totalHuge["totalFrames"] = Int.max
        let cases: [(String, [String: Any], String)] = [
            ("one-number frame rate", tags("frameRate", [25]), "tags have"),
            ("three colour codes", tags("color", [1, 1, 1]), "tags have"),
            ("time base 1/0", tags("timeBase", [1, 0]), "positive fraction"),
            ("negative colour code", tags("color", [1, -1, 1, 1]), "colour codes"),
            ("display matrix of 4", tags("displayMatrix", [0, 1, 2, 3]), "display matrix"),
            ("span out of order", spanReversed, "videoSpan"),
            ("span of one number", spanShort, "videoSpan"),
            ("frame count past 2^40", segment("frames", 1 << 62), "frames from"),
            ("done with Int.max frames", segment("done", ["frames": Int.max, "sha256": "", "bytes": 1]), "is done with"),
            ("total frames Int.max", totalHuge, "totalFrames"),
        ]
        for (name, manifest, words) in cases {
            XCTAssertThrowsError(try open(manifest), name) { error in
                guard let e = error as? MediaError else { return XCTFail("\(name): \(error)") }
                XCTAssertEqual(e.kind, .corruptInput, name)
                XCTAssertTrue(e.message.contains(words) && e.message.contains("Plan the job again"), "\(name): \(e.message)")
            }
        }
    }

    func testEveryTargetSurvivesEmptyAndNoiseInput() {
        // Knuth's MMIX linear congruential generator: the same noise every run.
        var state: UInt64 = 0x5EED
        func byte() -> UInt8 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        for target in FuzzTarget.allCases {
            target.run(Data())
            for length in [1, 7, 64, 1000] {
                target.run(Data((0..<length).map { _ in byte() }))
            }
        }
    }
}
