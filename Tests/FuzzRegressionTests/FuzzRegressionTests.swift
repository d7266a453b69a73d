import Foundation
import FuzzTargets
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
