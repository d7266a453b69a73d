import Pipeline
import XCTest

/// The queue policies as plain state machines: no threads, no sleeps.
final class QueueStateTests: XCTestCase {
    /// Frames are Ints; negative numbers stand for packets, which may never be dropped.
    func newestOnly() -> QueueState<Int> { QueueState(policy: .newestOnly, isDroppable: { $0 >= 0 }) }

    func testBackpressureNeverDropsAndMakesTheProducerWait() {
        var q = QueueState<Int>(policy: .backpressure(capacity: 2))
        guard case .accepted = q.push(1), case .accepted = q.push(2) else { return XCTFail("first two accepted") }
        guard case .wait = q.push(3) else { return XCTFail("full queue makes the producer wait") }
        guard case .element(1) = q.pop() else { return XCTFail("FIFO") }
        guard case .accepted = q.push(3) else { return XCTFail("room again after a pop") }
        q.finish()
        var out: [Int] = []
        while case .element(let e) = q.pop() { out.append(e) }
        XCTAssertEqual(out, [2, 3])
        guard case .finished = q.pop() else { return XCTFail("finished after draining") }
        XCTAssertEqual(q.dropped, 0)
    }

    func testOfflineKeepsEveryFrameOfALongBurst() {
        var q = QueueState<Int>(policy: .backpressure(capacity: 3))
        var produced = 0, consumed: [Int] = []
        // A fast producer and a consumer that takes one item every third step.
        for step in 0..<300 {
            if produced < 100, case .accepted = q.push(produced) { produced += 1 }
            if step % 3 == 0, case .element(let e) = q.pop() { consumed.append(e) }
        }
        q.finish()
        while case .element(let e) = q.pop() { consumed.append(e) }
        XCTAssertEqual(consumed, Array(0..<100), "nothing dropped, order kept")
    }

    func testNewestFrameWinsAndEveryDropIsReported() {
        var q = newestOnly()
        guard case .accepted = q.push(0) else { return XCTFail() }
        guard case .acceptedDropping(let d1) = q.push(1) else { return XCTFail("frame 0 is stale once 1 arrives") }
        XCTAssertEqual(d1, [0])
        guard case .acceptedDropping(let d2) = q.push(2) else { return XCTFail() }
        XCTAssertEqual(d2, [1])
        guard case .element(2) = q.pop() else { return XCTFail("the newest frame is the one taken") }
        guard case .wait = q.pop() else { return XCTFail("then nothing") }
        XCTAssertEqual(q.dropped, 2)
    }

    func testPacketsAreNeverDroppedAndKeepTheirOrder() {
        var q = newestOnly()
        _ = q.push(0)
        _ = q.push(-1)      // a packet
        _ = q.push(1)       // drops frame 0, keeps the packet
        _ = q.push(-2)
        q.finish()
        var out: [Int] = []
        while case .element(let e) = q.pop() { out.append(e) }
        XCTAssertEqual(out, [-1, 1, -2])
        XCTAssertEqual(q.dropped, 1)
    }

    /// A model stage that takes one frame at a time behind a newest-only queue: at most one
    /// prediction in flight, processed + dropped = arrived, and each processed frame is the
    /// newest that had arrived when the model became free. The clock is a step counter.
    func testLiveSchedulingWithAManualClock() {
        var q = newestOnly()
        let modelTime = 5           // steps per prediction; a frame arrives every step
        var inFlight: (frame: Int, done: Int)?
        var processed: [Int] = [], maxInFlight = 0
        var arrived = 0
        for now in 0..<100 {
            _ = q.push(arrived)
            arrived += 1
            if let f = inFlight, f.done <= now { processed.append(f.frame); inFlight = nil }
            if inFlight == nil, case .element(let frame) = q.pop() {
                XCTAssertEqual(frame, arrived - 1, "the model takes the newest frame")
                inFlight = (frame, now + modelTime)
            }
            maxInFlight = max(maxInFlight, inFlight == nil ? 0 : 1)
        }
        q.finish()
        let waiting = q.count
        XCTAssertEqual(maxInFlight, 1)
        XCTAssertEqual(processed.count + (inFlight == nil ? 0 : 1) + q.dropped + waiting, arrived)
        XCTAssertEqual(q.dropped, arrived - processed.count - 1 - waiting, "every frame not processed is counted as dropped")
        XCTAssertEqual(Double(processed.count), Double(arrived) / Double(modelTime), accuracy: 2)
    }

    /// An item already taken is never reported as dropped, even with packets still waiting.
    func testTakenFramesAreNotDroppedLater() {
        var q = newestOnly()
        _ = q.push(-1)
        _ = q.push(-2)
        _ = q.push(0)
        guard case .element(-1) = q.pop(), case .element(-2) = q.pop(), case .element(0) = q.pop() else { return XCTFail() }
        _ = q.push(-3)
        guard case .accepted = q.push(1) else { return XCTFail("frame 0 was taken, nothing is stale") }
        XCTAssertEqual(q.dropped, 0)
        guard case .acceptedDropping(let d) = q.push(2) else { return XCTFail() }
        XCTAssertEqual(d, [1])
    }

    func testCancelReleasesEveryone() {
        var q = QueueState<Int>(policy: .backpressure(capacity: 1))
        _ = q.push(1)
        q.cancel()
        guard case .cancelled = q.push(2) else { return XCTFail() }
        guard case .finished = q.pop() else { return XCTFail() }
    }
}
