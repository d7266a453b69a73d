import Foundation

/// Something that flows through the pipeline; frames have an id for tracing, other items
/// (audio packets, markers) have none and are never dropped. Its type is used on the stage
/// threads, so its metatype must be sendable (`SendableMetatype`; any struct or class is).
public protocol PipelineItem: SendableMetatype {
    /// The frame's sequence number, or nil for items that are not frames.
    var traceID: Int? { get }
}

/// Receives the timing of every stage run and every drop (the frame-timing tracer).
public protocol PipelineObserver: AnyObject, Sendable {
    /// Seconds on the observer's clock.
    func now() -> Double
    /// Stage `stage` worked on frame `id` from `start` to `end` on thread `thread`.
    func span(stage: Int, id: Int, thread: String, start: Double, end: Double)
    /// Frame `id` was dropped from the queue in front of stage `stage`.
    func dropped(id: Int, beforeStage stage: Int, at time: Double)
}

/// One stage: a name, the policy of the queue in front of it, and the work it does on each
/// item (returning the items to pass on: usually the one it got; none for the sink).
public struct Stage<Item> {
    /// Name used in traces and summaries ("upscale").
    public var name: String
    /// Policy of the queue feeding this stage.
    public var inputPolicy: QueuePolicy
    /// The work. Runs on the stage's own thread, one item at a time.
    public var process: (Item) throws -> [Item]
    /// Called once after the last item, on the same thread: the items the stage still holds.
    public var flush: () throws -> [Item]

    /// Makes a stage.
    public init(name: String, inputPolicy: QueuePolicy, process: @escaping (Item) throws -> [Item],
                flush: @escaping () throws -> [Item] = { [] }) {
        self.name = name
        self.inputPolicy = inputPolicy
        self.process = process
        self.flush = flush
    }
}

/// Runs a source and a chain of stages, each on its own thread, joined by bounded queues:
///
///     source ─▶[q1]─▶ stage 1 ─▶[q2]─▶ stage 2 ─▶ … ─▶[qN]─▶ stage N (sink)
///     decode        convert         upscale             encode
///
/// Each queue's policy is a named value (`QueuePolicy`): offline runs use `backpressure`
/// everywhere, so nothing is lost; live runs put `newestOnly` in front of the first model
/// stage, so a stale frame is dropped (and reported) when a newer one arrives, and since a
/// stage works on one item at a time, at most one prediction is in flight. The source reports
/// its own span as "stage 0" (it knows when a frame arrived, apart from any pacing). An error in a stage cancels everything; an error in the source lets the
/// frames already read finish first (so a truncated input still yields its frames), then is
/// rethrown.
public final class Pipeline<Item: PipelineItem>: @unchecked Sendable {
    private let source: () throws -> Item?
    private let stages: [Stage<Item>]
    private let queues: [FrameQueue<Item>]
    private let observer: PipelineObserver?
    private let lock = NSLock()
    private var firstError: Error?
    private var sourceError: Error?

    /// Builds the pipeline; nothing runs until `run()`.
    public init(source: @escaping () throws -> Item?, stages: [Stage<Item>], observer: PipelineObserver?) {
        self.source = source
        self.stages = stages
        self.observer = observer
        queues = stages.map { stage in
            FrameQueue<Item>(name: "→ \(stage.name)", policy: stage.inputPolicy, isDroppable: { $0.traceID != nil })
        }
        for (k, q) in queues.enumerated() {
            q.onDrop = { [observer] item in
                if let id = item.traceID, let observer { observer.dropped(id: id, beforeStage: k + 1, at: observer.now()) }
            }
        }
    }

    /// Items dropped by each queue, by the name of the stage after it.
    public var drops: [String: Int] {
        Dictionary(uniqueKeysWithValues: zip(stages.map(\.name), queues.map(\.dropped)))
    }

    private func fail(_ error: Error) {
        lock.lock()
        if firstError == nil { firstError = error }
        lock.unlock()
        queues.forEach { $0.cancel() }
    }

    /// Runs the source and every stage on the calling thread, one item at a time: the plain
    /// loop the threaded pipeline is measured against. Nothing is dropped.
    public func runSequentially() throws {
        let runner = StageRunner<Item>(count: stages.count, step: { [stages, observer] k, item in
            let start = observer?.now() ?? 0
            let out = try stages[k].process(item)
            if let id = item.traceID, let observer { observer.span(stage: k + 1, id: id, thread: "main", start: start, end: observer.now()) }
            return out
        }, flush: { [stages] k in try stages[k].flush() })
        while let item = try source() { _ = try runner.pass([item]) }
        // End of stream: each stage gives what it holds, which the later stages still process.
        _ = try runner.flush()
    }

    /// Runs to the end and rethrows the first error.
    public func run() throws {
        let group = DispatchGroup()
        let sourceThread = Thread { [self] in
            defer { group.leave() }
            while true {
                let item: Item?
                do {
                    item = try source()
                } catch {
                    lock.lock(); sourceError = error; lock.unlock()
                    break
                }
                guard let item else { break }
                if !queues[0].push(item) { break }
            }
            queues[0].finish()
        }
        sourceThread.name = "vivify-decode"
        sourceThread.stackSize = 8 << 20
        group.enter()
        sourceThread.start()
        for k in stages.indices {
            let thread = Thread { [self] in
                let stage = stages[k]
                let input = queues[k]
                let output = k + 1 < queues.count ? queues[k + 1] : nil
                defer { group.leave() }
                while let item = input.pop() {
                    let start = observer?.now() ?? 0
                    do {
                        let outs = try stage.process(item)
                        if let id = item.traceID, let observer {
                            observer.span(stage: k + 1, id: id, thread: stage.name, start: start, end: observer.now())
                        }
                        if let output { for o in outs { if !output.push(o) { return } } }
                    } catch {
                        fail(error)
                        return
                    }
                }
                // The input ended (or was cancelled: then nothing is flushed).
                if input.isCancelled { return }
                do {
                    let held = try stage.flush()
                    if let output { for o in held { if !output.push(o) { return } } }
                } catch {
                    fail(error)
                    return
                }
                output?.finish()
            }
            thread.name = "vivify-\(stages[k].name)"
            thread.stackSize = 8 << 20
            group.enter()
            thread.start()
        }
        group.wait()
        lock.lock()
        defer { lock.unlock() }
        if let firstError { throw firstError }
        if let sourceError { throw sourceError }
    }
}
