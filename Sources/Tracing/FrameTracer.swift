import Foundation

/// Records, for every frame, when it arrived, when each stage started and ended it (and on
/// which thread), and whether and where it was dropped; then summarises against a frame
/// budget of 1000 / target-fps milliseconds. Thread-safe; the clock is injected so tests
/// drive it by hand.
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
    private let clock: @Sendable () -> Double
    private let lock = NSLock()
    private var frames: [FrameRecord] = []

    /// Makes a tracer for `stageNames` (the source first).
    public init(stageNames: [String], targetFPS: Double = 30, clock: @escaping @Sendable () -> Double = FrameTracer.monotonic) {
        self.stageNames = stageNames
        self.targetFPS = targetFPS
        self.clock = clock
        frames.reserveCapacity(4096)
    }

    /// Seconds on a monotonic clock.
    @Sendable public static func monotonic() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// Now, on the tracer's clock.
    public func now() -> Double { clock() }

    private func record(_ id: Int, _ body: (inout FrameRecord) -> Void) {
        lock.lock()
        if id >= frames.count { frames.append(contentsOf: repeatElement(FrameRecord(), count: id - frames.count + 1)) }
        body(&frames[id])
        lock.unlock()
    }

    /// Stage `stage` worked on frame `id` from `start` to `end`.
    public func span(stage: Int, id: Int, thread: String, start: Double, end: Double) {
        record(id) { $0.spans.append(Span(stage: stage, thread: thread, start: start, end: end)) }
    }

    /// Frame `id` was dropped from the queue in front of `stage`.
    public func dropped(id: Int, beforeStage stage: Int, at time: Double) {
        record(id) { $0.dropped = (stage, time) }
    }

    /// A copy of every frame's record.
    public var records: [FrameRecord] {
        lock.lock()
        defer { lock.unlock() }
        return frames
    }

    /// The summary over everything recorded so far.
    public func report() -> TraceReport {
        TraceReport(records: records, stageNames: stageNames, targetFPS: targetFPS)
    }
}

/// Percentiles and counts over a finished run; its Codable form is the `--stats` JSON.
public struct TraceReport: Codable, Sendable {
    /// Latency percentiles of one stage, in milliseconds.
    public struct StageStats: Codable, Sendable {
        public var name: String
        public var p50_ms: Double
        public var p95_ms: Double
        public var p99_ms: Double
        public var max_ms: Double
        public var mean_ms: Double
        public var count: Int
        /// Median time a frame waited in the queue in front of this stage.
        public var queue_wait_p50_ms: Double
    }

    /// End-to-end latency percentiles (arrival to the end of the last stage), in milliseconds.
    public struct Latency: Codable, Sendable {
        public var p50_ms: Double
        public var p95_ms: Double
        public var p99_ms: Double
        public var max_ms: Double
    }

    public var frames_in: Int
    public var frames_processed: Int
    public var frames_dropped: Int
    public var target_fps: Double
    public var achieved_fps: Double
    public var budget_ms: Double
    public var budget_met_ratio: Double
    public var bottleneck_stage: String
    /// How far the bottleneck stage's median exceeds the budget (negative: within it).
    public var bottleneck_excess_ms: Double
    public var stages: [StageStats]
    public var end_to_end: Latency
    /// Where frames were dropped: stage name → count.
    public var drops_by_stage: [String: Int]
    /// Wall time from the first arrival to the last stage end, in seconds.
    public var wall_seconds: Double
    /// The rate frames arrived at (first to last arrival); below the target for a paced
    /// (`--realtime`, live) source slower than the target.
    public var input_fps: Double

    /// Nearest-rank percentile of sorted values.
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank - 1, 0), sorted.count - 1)]
    }

    init(records: [FrameTracer.FrameRecord], stageNames: [String], targetFPS: Double) {
        let last = stageNames.count - 1
        let budget = 1000 / targetFPS
        var perStage = [[Double]](repeating: [], count: stageNames.count)
        var waits = [[Double]](repeating: [], count: stageNames.count)
        var e2e: [Double] = []
        var drops: [String: Int] = [:]
        var arrived = 0, first = Double.infinity, lastEnd = -Double.infinity, lastArrival = -Double.infinity
        for r in records {
            guard let arrival = r.spans.first(where: { $0.stage == 0 }) else { continue }
            arrived += 1
            first = min(first, arrival.start)
            lastArrival = max(lastArrival, arrival.start)
            var previousEnd: Double?
            for s in r.spans.sorted(by: { $0.stage < $1.stage }) {
                perStage[s.stage].append((s.end - s.start) * 1000)
                if let previousEnd { waits[s.stage].append(max(0, s.start - previousEnd) * 1000) }
                previousEnd = s.end
            }
            if let d = r.dropped {
                drops[stageNames[d.stage], default: 0] += 1
            } else if let done = r.spans.first(where: { $0.stage == last }) {
                e2e.append((done.end - arrival.start) * 1000)
                lastEnd = max(lastEnd, done.end)
            }
        }
        e2e.sort()
        frames_in = arrived
        frames_processed = e2e.count
        frames_dropped = drops.values.reduce(0, +)
        target_fps = targetFPS
        wall_seconds = lastEnd > first ? lastEnd - first : 0
        achieved_fps = wall_seconds > 0 ? Double(frames_processed) / wall_seconds : 0
        input_fps = arrived > 1 && lastArrival > first ? Double(arrived - 1) / (lastArrival - first) : 0
        budget_ms = budget
        budget_met_ratio = e2e.isEmpty ? 0 : Double(e2e.filter { $0 <= budget }.count) / Double(e2e.count)
        stages = stageNames.enumerated().map { k, name in
            let v = perStage[k].sorted(), w = waits[k].sorted()
            return StageStats(name: name, p50_ms: Self.percentile(v, 50), p95_ms: Self.percentile(v, 95), p99_ms: Self.percentile(v, 99),
                              max_ms: v.last ?? 0, mean_ms: v.isEmpty ? 0 : v.reduce(0, +) / Double(v.count), count: v.count,
                              queue_wait_p50_ms: Self.percentile(w, 50))
        }
        let worst = stages.max { $0.p50_ms < $1.p50_ms }
        bottleneck_stage = worst?.name ?? ""
        bottleneck_excess_ms = (worst?.p50_ms ?? 0) - budget
        end_to_end = Latency(p50_ms: Self.percentile(e2e, 50), p95_ms: Self.percentile(e2e, 95), p99_ms: Self.percentile(e2e, 99),
                             max_ms: e2e.last ?? 0)
        drops_by_stage = drops
    }

    /// The human summary printed on standard error.
    public var text: String {
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        var lines = ["frame timing (budget \(f(budget_ms)) ms at \(f(target_fps)) fps):"]
        let width = max(8, stages.map(\.name.count).max() ?? 8)
        lines.append("  " + "stage".padding(toLength: width, withPad: " ", startingAt: 0) + "      p50      p95      p99      max   frames")
        for s in stages {
            let cols = [s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms].map { f($0).leftPadded(9) }.joined()
            lines.append("  " + s.name.padding(toLength: width, withPad: " ", startingAt: 0) + cols + String(s.count).leftPadded(9))
        }
        lines.append("  end-to-end latency p50 \(f(end_to_end.p50_ms)) ms, p95 \(f(end_to_end.p95_ms)) ms, p99 \(f(end_to_end.p99_ms)) ms")
        // A paced source slower than the target cannot be processed faster than it arrives:
        // keeping up with it (nothing dropped, throughput at its rate) is what can be met.
        let pacedBelowTarget = input_fps > 0 && input_fps < 0.98 * target_fps
        let keptUp = pacedBelowTarget && frames_dropped == 0 && achieved_fps >= 0.97 * input_fps
        let verdict = achieved_fps >= target_fps ? "met" : keptUp ? "kept up with the input's \(f(input_fps)) fps" : "NOT met"
        lines.append("  throughput \(f(achieved_fps)) fps (target \(f(target_fps))): \(verdict); \(f(100 * budget_met_ratio))% of frames within the budget")
        lines.append("  frames in \(frames_in), processed \(frames_processed), dropped \(frames_dropped)"
                     + (drops_by_stage.isEmpty ? "" : " (" + drops_by_stage.map { "before \($0.key): \($0.value)" }.sorted().joined(separator: ", ") + ")"))
        if bottleneck_excess_ms > 0 {
            lines.append("  bottleneck: \(bottleneck_stage), median \(f(bottleneck_excess_ms)) ms over the budget")
        } else {
            lines.append("  bottleneck: \(bottleneck_stage), median within the budget by \(f(-bottleneck_excess_ms)) ms")
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
