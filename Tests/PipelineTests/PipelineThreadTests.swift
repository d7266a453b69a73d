import Foundation
import Pipeline
import XCTest

/// The threaded pipeline with gated stages (semaphores, no sleeps).
final class PipelineThreadTests: XCTestCase {
    struct Item: PipelineItem { var traceID: Int? }

    final class Recorder: PipelineObserver, @unchecked Sendable {
        let lock = NSLock()
        var spans: [(stage: Int, id: Int, start: Double, end: Double)] = []
        var drops: [Int] = []
        var clock = 0.0
        func now() -> Double { lock.lock(); defer { lock.unlock() }; clock += 1; return clock }
        func span(stage: Int, id: Int, thread: String, start: Double, end: Double) { lock.lock(); spans.append((stage, id, start, end)); lock.unlock() }
        func dropped(id: Int, beforeStage stage: Int, at time: Double) { lock.lock(); drops.append(id); lock.unlock() }
    }

    func testOfflineDeliversEveryItemInOrder() throws {
        var n = 0
        let out = Locked<[Int]>([])
        let p = Pipeline<Item>(source: { n < 500 ? { defer { n += 1 }; return Item(traceID: n) }() : nil }, stages: [
            Stage(name: "a", inputPolicy: .backpressure(capacity: 2)) { [$0] },
            Stage(name: "b", inputPolicy: .backpressure(capacity: 2)) { item in out.mutate { $0.append(item.traceID!) }; return [] },
        ], observer: nil)
        try p.run()
        XCTAssertEqual(out.value, Array(0..<500))
    }

    /// A stage that holds one item back (as a frame interpolator would) gives it up at the end
    /// of the stream; the stages after it still process it, threaded and sequential alike.
    func testFlushAtEndOfStreamReachesTheLaterStages() throws {
        for sequential in [false, true] {
            var n = 0
            var held: Item?
            let out = Locked<[Int]>([])
            let p = Pipeline<Item>(source: { n < 20 ? { defer { n += 1 }; return Item(traceID: n) }() : nil }, stages: [
                Stage(name: "delay", inputPolicy: .backpressure(capacity: 2), process: { item in
                    defer { held = item }
                    return held.map { [$0] } ?? []
                }, flush: { held.map { [$0] } ?? [] }),
                Stage(name: "double", inputPolicy: .backpressure(capacity: 2)) { [Item(traceID: $0.traceID! * 2)] },
                Stage(name: "sink", inputPolicy: .backpressure(capacity: 2)) { item in out.mutate { $0.append(item.traceID!) }; return [] },
            ], observer: nil)
            if sequential { try p.runSequentially() } else { try p.run() }
            XCTAssertEqual(out.value, (0..<20).map { $0 * 2 }, "sequential: \(sequential)")
        }
    }

    /// The model stage blocks on a gate; frames keep arriving; only the newest waits, the rest
    /// are dropped and reported, and the model never runs two frames at once.
    func testLiveDropsStaleFramesWhileTheModelIsBusy() throws {
        let gate = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let active = Locked(0), maxActive = Locked(0)
        let processed = Locked<[Int]>([])
        let recorder = Recorder()
        var n = 0
        let p = Pipeline<Item>(source: {
            // Frame 1 arrives only once the model has started on frame 0; 2…9 follow while it is blocked.
            if n == 1 { started.wait() }
            if n == 10 { gate.signal(); gate.signal() }
            guard n < 10 else { return nil }
            defer { n += 1 }
            return Item(traceID: n)
        }, stages: [
            Stage(name: "model", inputPolicy: .newestOnly) { item in
                active.mutate { $0 += 1 }
                maxActive.mutate { $0 = max($0, active.value) }
                if item.traceID == 0 { started.signal() }
                gate.wait()
                active.mutate { $0 -= 1 }
                return [item]
            },
            Stage(name: "sink", inputPolicy: .backpressure(capacity: 2)) { item in processed.mutate { $0.append(item.traceID!) }; return [] },
        ], observer: recorder)
        try p.run()
        XCTAssertEqual(processed.value, [0, 9], "the first frame, then the newest one")
        XCTAssertEqual(Set(recorder.drops), Set(1...8))
        XCTAssertEqual(p.drops["model"], 8)
        XCTAssertEqual(maxActive.value, 1, "one prediction in flight")
    }

    func testAStageErrorStopsEverything() {
        var n = 0
        struct Boom: Error {}
        let p = Pipeline<Item>(source: { defer { n += 1 }; return Item(traceID: n) }, stages: [
            Stage(name: "a", inputPolicy: .backpressure(capacity: 1)) { item in if item.traceID == 5 { throw Boom() }; return [item] },
            Stage(name: "b", inputPolicy: .backpressure(capacity: 1)) { _ in [] },
        ], observer: nil)
        XCTAssertThrowsError(try p.run()) { XCTAssertTrue($0 is Boom) }
    }

    func testASourceErrorLetsFramesInFlightFinish() {
        var n = 0
        struct Truncated: Error {}
        let out = Locked<[Int]>([])
        let p = Pipeline<Item>(source: { if n == 4 { throw Truncated() }; defer { n += 1 }; return Item(traceID: n) }, stages: [
            Stage(name: "sink", inputPolicy: .backpressure(capacity: 8)) { item in out.mutate { $0.append(item.traceID!) }; return [] },
        ], observer: nil)
        XCTAssertThrowsError(try p.run()) { XCTAssertTrue($0 is Truncated) }
        XCTAssertEqual(out.value, [0, 1, 2, 3])
    }
}

/// A value behind a lock, for test bookkeeping across threads.
final class Locked<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var v: T
    init(_ v: T) { self.v = v }
    var value: T { lock.lock(); defer { lock.unlock() }; return v }
    func mutate(_ f: (inout T) -> Void) { lock.lock(); f(&v); lock.unlock() }
}
