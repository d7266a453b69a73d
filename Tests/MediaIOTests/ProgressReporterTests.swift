import Vivify
import XCTest

/// The progress line, driven by a manual clock (no sleeps).
final class ProgressReporterTests: XCTestCase {
    private final class Clock: @unchecked Sendable { var now = 100.0 }

    func testLineEveryIntervalOffATerminal() {
        let clock = Clock()
        var lines: [String] = []
        let p = ProgressReporter(total: 100, interactive: false, interval: 5, clock: { clock.now }, emit: { lines.append($0) })
        for frame in 1...50 {
            clock.now += 0.2 // 5 fps
            p.update(framesDone: frame)
        }
        XCTAssertEqual(lines.count, 2, "one line per 5 s over 10 s: \(lines)")
        XCTAssertEqual(lines[0], "frame 25/100 (25%)  5.0 fps  elapsed 0:00:05  ETA 0:00:15\n")
        p.finish(framesDone: 50)
        XCTAssertEqual(lines.last, "frame 50/100 (50%)  5.0 fps  elapsed 0:00:10  ETA 0:00:10\n")
    }

    /// A batch makes its reporter when the first picture is done: the rate counts from when
    /// the batch began (it read "6211087.9 images/s", one picture over the microseconds since
    /// the reporter was made).
    func testAReporterMadeLateCountsFromWhenTheWorkBegan() {
        let clock = Clock()
        var lines: [String] = []
        let began = clock.now
        clock.now += 2 // the first picture took 2 s
        let p = ProgressReporter(total: 4, interactive: false, interval: 5, clock: { clock.now }, emit: { lines.append($0) },
                                 noun: "image", rateUnit: "images/s", started: began)
        p.update(framesDone: 1)
        for image in 2...4 {
            clock.now += 2
            p.update(framesDone: image)
        }
        p.finish(framesDone: 4)
        XCTAssertEqual(lines.last, "image 4/4 (100%)  2.0 s/image  elapsed 0:00:08  ETA 0:00:00\n")
    }

    /// A resumed segmented job: the count covers the whole job (reused frames included), the
    /// rate and the ETA only the frames this run does.
    func testResumedJobCountsReusedFramesButNotInTheRate() {
        let clock = Clock()
        var lines: [String] = []
        let p = ProgressReporter(total: 120, interactive: false, interval: 5, clock: { clock.now }, emit: { lines.append($0) }, reused: 60)
        p.update(framesDone: 60)
        for frame in 61...80 {
            clock.now += 0.25 // 4 fps
            p.update(framesDone: frame)
        }
        XCTAssertEqual(lines.last, "frame 80/120 (67%)  60 reused  4.0 fps  elapsed 0:00:05  ETA 0:00:10\n")
    }

    func testLiveLineShowsRateAndDropsNotAnETA() {
        let clock = Clock()
        var lines: [String] = []
        var drops = 0
        let p = ProgressReporter(total: 100, interactive: false, interval: 5, clock: { clock.now }, emit: { lines.append($0) },
                                 live: true, dropped: { drops })
        for frame in 1...25 {
            clock.now += 0.2
            drops = frame / 5
            p.update(framesDone: frame)
        }
        XCTAssertEqual(lines, ["frame 25  5.0 fps  dropped 5  elapsed 0:00:05\n"])
    }

    func testRedrawsInPlaceOnATerminal() {
        let clock = Clock()
        var out: [String] = []
        let p = ProgressReporter(total: nil, interactive: true, clock: { clock.now }, emit: { out.append($0) })
        clock.now += 1
        p.update(framesDone: 30)
        p.finish(framesDone: 30)
        XCTAssertTrue(out[0].hasPrefix("\r"))
        XCTAssertTrue(out[0].contains("frame 30  30.0 fps"))
        XCTAssertFalse(out[0].contains("ETA"), "no ETA without a total")
        XCTAssertEqual(out.last, "\n")
    }
}

/// A slow model says seconds per frame, not "0.0 fps"; nothing is rated before a frame is
/// done, no ETA is guessed from fewer than three, and a total the file under-declared is
/// dropped once passed (issue 33).
extension ProgressReporterTests {
    func testSlowModelsAndWrongTotals() {
        let clock = Clock()
        var lines: [String] = []
        let p = ProgressReporter(total: 4, interactive: false, interval: 1, clock: { clock.now }, emit: { lines.append($0) })
        clock.now += 2
        p.update(framesDone: 0)
        XCTAssertEqual(lines.last, "frame 0/4 (0%)  starting  elapsed 0:00:02\n")
        clock.now += 23
        p.update(framesDone: 1)
        XCTAssertEqual(lines.last, "frame 1/4 (25%)  25.0 s/frame  elapsed 0:00:25\n", "no ETA from one frame")
        clock.now += 50
        p.update(framesDone: 3)
        XCTAssertEqual(lines.last, "frame 3/4 (75%)  25.0 s/frame  elapsed 0:01:15  ETA 0:00:25\n")
        clock.now += 50
        p.update(framesDone: 5)
        XCTAssertEqual(lines.last, "frame 5  25.0 s/frame  elapsed 0:02:05\n", "past the declared total: no total")
    }
}
