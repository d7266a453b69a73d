import Foundation

/// Records, for every frame, when it arrived, when each stage started and ended it (and on
/// which thread), and whether and where it was dropped; then summarises against a frame
/// budget of 1000 / target-fps milliseconds. Thread-safe; the clock is injected so tests
/// drive it by hand.
///
/// Memory is bounded however long the stream runs (a 24-hour live stream included): a frame's
/// record lives only until the frame is finished (written or dropped), then it is folded into
/// running statistics — exact counts, sums, maxima and budget hits, and a fixed-size uniform
/// reservoir of latencies per stage for the percentiles (exact while a run has at most
/// `reservoirSize` frames) — and kept for export only in a window of the most recent
/// `windowSize` frames.
public final class FrameTracer: @unchecked Sendable {
    /// One stage's work on one frame.
    public struct Span: Sendable, Equatable {
        public var stage: Int
        public var thread: String
        public var start: Double
        public var end: Double
    }

    /// What happened to one frame.
    public struct FrameRecord: Sendable {
        /// Spans in stage order (stage 0 is the source: its start is the arrival time).
        public var spans: [Span] = []
        /// Where it was dropped (index of the stage whose queue dropped it) and when.
        public var dropped: (stage: Int, time: Double)?
    }

    /// Stage names; index 0 is the source.
    public let stageNames: [String]
    /// The target rate.
    public let targetFPS: Double
    /// Finished frames kept for the trace and plot exports (the most recent ones).
    public let windowSize: Int
    /// Latency samples kept per stage for percentiles.
    public let reservoirSize: Int
    private let clock: @Sendable () -> Double
    private let lock = NSLock()
    /// Frames not finished yet, by id (bounded by what the pipeline holds).
    private var inFlight: [Int: FrameRecord] = [:]
    /// The most recent finished frames, oldest first (a ring of `windowSize`).
    private var window: [(id: Int, record: FrameRecord)] = []
    private var windowStart = 0
    private var totals: TraceTotals

    /// Makes a tracer for `stageNames` (the source first).
    public init(stageNames: [String], targetFPS: Double = 30, windowSize: Int = 20_000, reservoirSize: Int = 20_000,
                clock: @escaping @Sendable () -> Double = FrameTracer.monotonic) {
        self.stageNames = stageNames
        self.targetFPS = targetFPS
        self.windowSize = max(1, windowSize)
        self.reservoirSize = max(1, reservoirSize)
        self.clock = clock
        totals = TraceTotals(stages: stageNames.count, reservoirSize: max(1, reservoirSize), budgetMs: 1000 / targetFPS)
    }

    /// Seconds on a monotonic clock.
    @Sendable public static func monotonic() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// Now, on the tracer's clock.
    public func now() -> Double { clock() }

    /// Stage `stage` worked on frame `id` from `start` to `end`. The last stage finishes it.
    public func span(stage: Int, id: Int, thread: String, start: Double, end: Double) {
        lock.lock()
        inFlight[id, default: FrameRecord()].spans.append(Span(stage: stage, thread: thread, start: start, end: end))
        if stage == stageNames.count - 1 { finish(id) }
        lock.unlock()
    }

    /// Frame `id` was dropped from the queue in front of `stage`: it is finished.
    public func dropped(id: Int, beforeStage stage: Int, at time: Double) {
        lock.lock()
        inFlight[id, default: FrameRecord()].dropped = (stage, time)
        finish(id)
        lock.unlock()
    }

    /// Frames dropped so far (cheap: for a live progress line).
    public var droppedSoFar: Int {
        lock.lock()
        defer { lock.unlock() }
        return totals.drops.values.reduce(0, +)
    }

    /// Folds a finished frame into the totals and the export window (under the lock).
    private func finish(_ id: Int) {
        guard let record = inFlight.removeValue(forKey: id) else { return }
        totals.add(record, last: stageNames.count - 1)
        if window.count < windowSize {
            window.append((id, record))
        } else {
            window[windowStart] = (id, record)
            windowStart = (windowStart + 1) % windowSize
        }
    }

    /// The frames kept for export, by id: the most recent finished ones and those in flight.
    public var records: [(id: Int, record: FrameRecord)] {
        lock.lock()
        defer { lock.unlock() }
        let finished = Array(window[windowStart...] + window[..<windowStart])
        return (finished + inFlight.map { ($0.key, $0.value) }).sorted { $0.id < $1.id }
    }

    /// Frames currently held (in flight plus the export window): bounded by `windowSize` plus
    /// what the pipeline holds.
    public var heldRecordCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return inFlight.count + window.count
    }

    /// The summary over everything recorded so far (frames still in flight included).
    public func report() -> TraceReport {
        lock.lock()
        var all = totals
        for (_, r) in inFlight { all.add(r, last: stageNames.count - 1) }
        lock.unlock()
        return TraceReport(totals: all, stageNames: stageNames, targetFPS: targetFPS)
    }
}

/// A fixed-size uniform sample of a stream of values (Vitter's algorithm R) with exact count,
/// sum and maximum. Deterministic: its generator has a fixed seed.
struct Reservoir: Sendable {
    let capacity: Int
    private(set) var samples: [Double] = []
    private(set) var count = 0
    private(set) var sum = 0.0
    private(set) var maximum = 0.0
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    init(capacity: Int) { self.capacity = capacity }

    mutating func add(_ v: Double) {
        count += 1
        sum += v
        maximum = count == 1 ? v : max(maximum, v)
        if samples.count < capacity {
            samples.append(v)
        } else {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let k = Int((state >> 11) % UInt64(count))
            if k < capacity { samples[k] = v }
        }
    }
}

/// The running statistics of finished frames.
struct TraceTotals: Sendable {
    var perStage: [Reservoir]
    var waits: [Reservoir]
    var endToEnd: Reservoir
    var drops: [Int: Int] = [:]
    var arrived = 0
    var withinBudget = 0
    var first = Double.infinity, lastEnd = -Double.infinity, lastArrival = -Double.infinity
    let budgetMs: Double

    init(stages: Int, reservoirSize: Int, budgetMs: Double) {
        perStage = Array(repeating: Reservoir(capacity: reservoirSize), count: stages)
        waits = perStage
        endToEnd = Reservoir(capacity: reservoirSize)
        self.budgetMs = budgetMs
    }

    mutating func add(_ r: FrameTracer.FrameRecord, last: Int) {
        guard let arrival = r.spans.first(where: { $0.stage == 0 }) else { return }
        arrived += 1
        first = min(first, arrival.start)
        lastArrival = max(lastArrival, arrival.start)
        var previousEnd: Double?
        var slowestStage = 0.0
        for s in r.spans.sorted(by: { $0.stage < $1.stage }) {
            perStage[s.stage].add((s.end - s.start) * 1000)
            slowestStage = max(slowestStage, (s.end - s.start) * 1000)
            if let previousEnd { waits[s.stage].add(max(0, s.start - previousEnd) * 1000) }
            previousEnd = s.end
        }
        if let d = r.dropped {
            drops[d.stage, default: 0] += 1
        } else if let done = r.spans.first(where: { $0.stage == last }) {
            let ms = (done.end - arrival.start) * 1000
            endToEnd.add(ms)
            // In a pipeline a frame keeps the rate when no stage spent longer than one frame's
            // budget on it; its end-to-end time (queues and all stages) is latency, reported
            // as latency, and is not compared with one frame's budget.
            if slowestStage <= budgetMs { withinBudget += 1 }
            lastEnd = max(lastEnd, done.end)
        }
    }
}

/// Percentiles and counts over a finished run; its Codable form is the `--stats` JSON.
public struct TraceReport: Codable, Sendable {
    /// Latency percentiles of one stage, in milliseconds.
    public struct StageStats: Codable, Sendable {
        public var name: String
        public var p50Ms: Double
        public var p95Ms: Double
        public var p99Ms: Double
        public var maxMs: Double
        public var meanMs: Double
        public var count: Int
        /// Median time a frame waited in the queue in front of this stage.
        public var queueWaitP50Ms: Double

        enum CodingKeys: String, CodingKey {
            case name, count
            case p50Ms = "p50_ms", p95Ms = "p95_ms", p99Ms = "p99_ms", maxMs = "max_ms", meanMs = "mean_ms"
            case queueWaitP50Ms = "queue_wait_p50_ms"
        }
    }

    /// End-to-end latency percentiles (arrival to the end of the last stage), in milliseconds.
    public struct Latency: Codable, Sendable {
        public var p50Ms: Double
        public var p95Ms: Double
        public var p99Ms: Double
        public var maxMs: Double

        enum CodingKeys: String, CodingKey {
            case p50Ms = "p50_ms", p95Ms = "p95_ms", p99Ms = "p99_ms", maxMs = "max_ms"
        }
    }

    public var framesIn: Int
    public var framesProcessed: Int
    public var framesDropped: Int
    public var targetFps: Double
    public var achievedFps: Double
    public var budgetMs: Double
    public var budgetMetRatio: Double
    public var bottleneckStage: String
    /// How far the bottleneck stage's median exceeds the budget (negative: within it).
    public var bottleneckExcessMs: Double
    public var stages: [StageStats]
    public var endToEnd: Latency
    /// Where frames were dropped: stage name → count.
    public var dropsByStage: [String: Int]
    /// Wall time from the first arrival to the last stage end, in seconds.
    public var wallSeconds: Double
    /// The rate frames arrived at (first to last arrival); below the target for a paced
    /// (`--realtime`, live) source slower than the target.
    public var inputFps: Double

    /// What ran: input, output, models with their hashes and every setting (filled by the
    /// job; nil in a bare tracer's report).
    public var run: RunDescription?

    /// The `--stats` JSON keeps its snake_case keys.
    enum CodingKeys: String, CodingKey {
        case run
        case framesIn = "frames_in", framesProcessed = "frames_processed", framesDropped = "frames_dropped"
        case targetFps = "target_fps", achievedFps = "achieved_fps", budgetMs = "budget_ms", budgetMetRatio = "budget_met_ratio"
        case bottleneckStage = "bottleneck_stage", bottleneckExcessMs = "bottleneck_excess_ms", stages
        case endToEnd = "end_to_end", dropsByStage = "drops_by_stage", wallSeconds = "wall_seconds", inputFps = "input_fps"
    }

    /// Nearest-rank percentile of sorted values.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank - 1, 0), sorted.count - 1)]
    }

    init(totals t: TraceTotals, stageNames: [String], targetFPS: Double) {
        let budget = 1000 / targetFPS
        let e2e = t.endToEnd.samples.sorted()
        framesIn = t.arrived
        framesProcessed = t.endToEnd.count
        framesDropped = t.drops.values.reduce(0, +)
        targetFps = targetFPS
        wallSeconds = t.lastEnd > t.first ? t.lastEnd - t.first : 0
        achievedFps = wallSeconds > 0 ? Double(framesProcessed) / wallSeconds : 0
        inputFps = t.arrived > 1 && t.lastArrival > t.first ? Double(t.arrived - 1) / (t.lastArrival - t.first) : 0
        budgetMs = budget
        budgetMetRatio = t.endToEnd.count == 0 ? 0 : Double(t.withinBudget) / Double(t.endToEnd.count)
        stages = stageNames.enumerated().map { k, name in
            let r = t.perStage[k], v = r.samples.sorted(), w = t.waits[k].samples.sorted()
            return StageStats(name: name, p50Ms: Self.percentile(v, 50), p95Ms: Self.percentile(v, 95), p99Ms: Self.percentile(v, 99),
                              maxMs: r.count == 0 ? 0 : r.maximum, meanMs: r.count == 0 ? 0 : r.sum / Double(r.count), count: r.count,
                              queueWaitP50Ms: Self.percentile(w, 50))
        }
        let worst = stages.max { $0.p50Ms < $1.p50Ms }
        bottleneckStage = worst?.name ?? ""
        bottleneckExcessMs = (worst?.p50Ms ?? 0) - budget
        endToEnd = Latency(p50Ms: Self.percentile(e2e, 50), p95Ms: Self.percentile(e2e, 95), p99Ms: Self.percentile(e2e, 99),
                           maxMs: t.endToEnd.count == 0 ? 0 : t.endToEnd.maximum)
        dropsByStage = Dictionary(uniqueKeysWithValues: t.drops.map { (stageNames[$0.key], $0.value) })
    }

    /// The human summary printed on standard error.
    public var text: String {
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        var lines = ["frame timing (budget \(f(budgetMs)) ms at \(f(targetFps)) fps):"]
        let width = max(8, stages.map(\.name.count).max() ?? 8)
        lines.append("  " + "stage".padding(toLength: width, withPad: " ", startingAt: 0) + "      p50      p95      p99      max   frames")
        for s in stages {
            let cols = [s.p50Ms, s.p95Ms, s.p99Ms, s.maxMs].map { f($0).leftPadded(9) }.joined()
            lines.append("  " + s.name.padding(toLength: width, withPad: " ", startingAt: 0) + cols + String(s.count).leftPadded(9))
        }
        lines.append("  end-to-end latency p50 \(f(endToEnd.p50Ms)) ms, p95 \(f(endToEnd.p95Ms)) ms, p99 \(f(endToEnd.p99Ms)) ms")
        // A paced source slower than the target cannot be processed faster than it arrives:
        // keeping up with it (nothing dropped, throughput at its rate) is what can be met.
        let pacedBelowTarget = inputFps > 0 && inputFps < 0.98 * targetFps
        let keptUp = pacedBelowTarget && framesDropped == 0 && achievedFps >= 0.97 * inputFps
        let verdict = achievedFps >= targetFps ? "met" : keptUp ? "kept up with the input's \(f(inputFps)) fps" : "NOT met"
        lines.append("  throughput \(f(achievedFps)) fps (target \(f(targetFps))): \(verdict); \(f(100 * budgetMetRatio))% of frames with every stage within the budget")
        lines.append("  frames in \(framesIn), processed \(framesProcessed), dropped \(framesDropped)"
                     + (dropsByStage.isEmpty ? "" : " (" + dropsByStage.map { "before \($0.key): \($0.value)" }.sorted().joined(separator: ", ") + ")"))
        if bottleneckExcessMs > 0 {
            lines.append("  bottleneck: \(bottleneckStage), median \(f(bottleneckExcessMs)) ms over the budget")
        } else {
            lines.append("  bottleneck: \(bottleneckStage), median within the budget by \(f(-bottleneckExcessMs)) ms")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The `--stats` JSON.
    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }
}

extension String {
    func leftPadded(_ n: Int) -> String { count >= n ? self : String(repeating: " ", count: n - count) + self }
}

/// What a run was, recorded beside its timing so a stats file says what produced it.
public struct RunDescription: Codable, Sendable, Equatable {
    /// One model of the run.
    public struct Model: Codable, Sendable, Equatable {
        /// "colorize" or "upscale".
        public var task: String
        /// Its name (built-in, catalog or file name).
        public var name: String
        /// Its files with their SHA-256 (a folder such as an .mlpackage: its tree digest).
        public var files: [String: String]
        /// The backend that ran it ("onednn", "reference"), for models.
        public var backend: String?
        /// The number format its convolutions ran in ("fp32", "bf16", "int8"), for models.
        public var precision: String?

        public init(task: String, name: String, files: [String: String], backend: String? = nil, precision: String? = nil) {
            self.task = task
            self.name = name
            self.files = files
            self.backend = backend
            self.precision = precision
        }
    }

    /// The input path ("-" for standard input, "generated" for bench).
    public var input: String
    /// The output path.
    public var output: String
    /// The models in the order they ran.
    public var models: [Model]
    /// Every setting of the run, by option name.
    public var settings: [String: String]

    public init(input: String, output: String, models: [Model], settings: [String: String]) {
        self.input = input
        self.output = output
        self.models = models
        self.settings = settings
    }
}
