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
        var generator = SplitMix(seed: 0x5eed)
        for target in FuzzTarget.allCases {
            target.run(Data())
            for length in [1, 7, 64, 1000] {
                target.run(Data((0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }))
            }
        }
    }
}

/// A small deterministic generator for noise inputs.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
