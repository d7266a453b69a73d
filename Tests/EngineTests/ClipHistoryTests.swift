@testable import EngineDNNL
import XCTest

/// An int8 graph whose recent runs clipped goes straight to fp32 for a while, then tries int8
/// again; runs that seldom clip never stop trying int8.
final class ClipHistoryTests: XCTestCase {
    func testThreeClippedOfFourSkipTwelveRunsThenTryAgain() {
        var h = ClipHistory()
        for clipped in [true, false, true] {
            XCTAssertTrue(h.tryInt8())
            h.record(clipped: clipped)
        }
        XCTAssertTrue(h.tryInt8(), "two of three clipped: still int8")
        h.record(clipped: true)
        for run in 0..<ClipHistory.skipRuns {
            XCTAssertFalse(h.tryInt8(), "run \(run) after three of four clipped goes straight to fp32")
        }
        XCTAssertTrue(h.tryInt8(), "int8 is tried again after the skipped runs")
        h.record(clipped: false)
        XCTAssertTrue(h.tryInt8())
    }

    func testRunsThatClipNowAndThenStayInInt8() {
        var h = ClipHistory()
        for run in 0..<100 {
            XCTAssertTrue(h.tryInt8(), "run \(run)")
            h.record(clipped: run % 2 == 0)  // two of every four
        }
    }

    func testHistoryStartsAfreshAfterSkipping() {
        var h = ClipHistory()
        for _ in 0..<3 {
            _ = h.tryInt8()
            h.record(clipped: true)
        }
        for _ in 0..<ClipHistory.skipRuns { XCTAssertFalse(h.tryInt8()) }
        // The clips before the pause do not count again: two new ones are not three.
        for clipped in [true, true] {
            XCTAssertTrue(h.tryInt8())
            h.record(clipped: clipped)
        }
        XCTAssertTrue(h.tryInt8())
    }
}
