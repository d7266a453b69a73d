public import Tracing
import Foundation
internal import MediaIO

/// What a run tells its caller as it goes: one value for a run in one piece, a segmented run
/// and one segment of a planned job, in place of a callback set per job type.
public struct RunEvents {
    /// News that is no warning: a model being fetched, "resuming: 7 of 12 segments done".
    public var info: (String) -> Void = { _ in }
    /// A warning, one sentence.
    public var warning: (String) -> Void = { _ in }
    /// Frames start to flow: what is known of the work.
    public var start: (RunStart) -> Void = { _ in }
    /// The frames done so far (an earlier run's included), after each frame.
    public var progress: (Int) -> Void = { _ in }
    /// Asked before each frame whether to stop (SIGINT, SIGTERM): the run then ends early
    /// with the frames done so far kept, playable.
    public var shouldStop: () -> Bool = { false }

    /// Events nobody listens to.
    public init() {}
}

/// What a run knows when its frames start to flow.
public struct RunStart {
    /// Frames expected; nil when unknown.
    public var total: Int?
    /// Frames an earlier run of the same job finished (a resumed segmented run).
    public var reused: Int
    /// Frames dropped so far (live mode), asked when wanted.
    public var dropped: () -> Int
}

/// What a run did.
public struct RunOutcome: Sendable {
    /// How it ended.
    public enum Ending: Sendable, Equatable {
        /// Every frame was written.
        case finished
        /// A signal stopped it; the output holds the frames done so far (`framesOut`, maybe none).
        case interrupted
        /// The output exists and the configuration says leave it (`-n`): nothing was done.
        case skipped
    }

    /// How it ended.
    public var ending: Ending
    /// Frames in the output.
    public var framesOut: Int
    /// Damaged packets or frames skipped.
    public var corrupt: Int
    /// The segments, for a run done in segments.
    public var segments: SegmentedRun.Summary?
    /// The frame-timing summary, for a run done in one piece.
    public var report: TraceReport?
    /// Where an interrupted run kept its frames when not at the output: NAME.incomplete.EXT
    /// beside an output that existed before it (an interrupted run never replaces a file).
    public var keptBeside: String? = nil
}

/// Before a run kept in one pass by `onePass` (options such as `--stats`) of a job that would
/// otherwise run in segments: the segments an interrupted run of the same output kept are
/// refused while `resume` (they cannot be resumed in one pass, and a finished one-pass run
/// left them behind) or discarded, with the partial output they made replaceable as the
/// segmented run would; and a note when the input is longer than one segment (an
/// interruption then cannot resume).
private func keptSegments(_ c: inout RunConfiguration, onePass: [String], resume: Bool, segmentSeconds: Double, events: RunEvents) throws {
    let names = onePass.joined(separator: ", ")
    let directory = SegmentedJob.defaultDirectory(forOutput: c.output.path)
    // Only segments this run could resume count: of this input as it is now (a folder of
    // another input, or one that cannot be read, a segmented run would discard and start
    // afresh; this one leaves it). With -n and an output there, nothing is touched.
    let leftAlone = c.output.existing == .skip && FileManager.default.fileExists(atPath: c.output.path)
    if !leftAlone, let earlier = try? SegmentedJob(directory: directory), let now = try? SegmentManifest.Fingerprint.of(c.input.path),
       earlier.manifest.input.difference(to: now) == nil {
        if resume {
            let kept = " (\(earlier.manifest.segments.filter { earlier.isVerified($0) }.count) of \(earlier.manifest.segments.count) segments done)"
            throw MediaError(.invalidOptions, "'\(directory.path)' holds the segments of an interrupted run of '\(c.output.path)'\(kept). \(names) \(onePass.count == 1 ? "needs" : "need") the whole run in one pass, which cannot resume them. Run the same command without \(names) to resume, or add --no-resume to start afresh in one pass (the kept segments are deleted).")
        }
        events.info("--no-resume: discarding the segments in '\(directory.path)'.")
        if let own = earlier.manifest.interruptedOutput, SegmentManifest.OutputIdentity.of(c.output.path) == own { c.output.existing = .replace }
        SegmentedJob.removeWorkDirectory(directory)
    }
    if let duration = try? Probe.describe(c.input, countFrames: false).duration, duration > segmentSeconds {
        events.info("\(names) \(onePass.count == 1 ? "needs" : "need") the run in one pass: '\(c.input.path)' (\(String(format: "%.0f", duration)) s) is not split into resumable segments, so an interruption starts it again.")
    }
}

/// Whether `configuration` runs in resumable segments of about `segmentSeconds`: a file into
/// a file, offline, no timing report asked for (the reports need one pass), and segments asked
/// for (`segmentSeconds` above 0).
public func runsInSegments(_ configuration: RunConfiguration, segmentSeconds: Double) -> Bool {
    segmentSeconds > 0 && configuration.output.reports.isEmpty && SegmentedJob.canSegment(configuration)
}

/// Runs `configuration`, the library's one entry point for a job (`vivify run`): in resumable
/// segments when `runsInSegments` says so and the input is longer than one segment, else in
/// one piece; it loads the models once and keeps them, and writes the timing reports the
/// configuration asks for. `resume` reuses the segments an earlier run of the same job
/// finished; `sequential` runs every stage on one thread (the plain loop the threaded pipeline
/// is measured against).
///
/// `onePassFor` names what else keeps the run in one pass (`--summary`), beside the reports.
/// A job that would run in segments but for them neither resumes an interrupted run's
/// segments nor leaves them behind: it refuses while they are kept (resume, exit 64, naming
/// the fix) or discards them (`resume` false), and says when a long input runs in one pass.
public func run(_ configuration: RunConfiguration, segmentSeconds: Double = SegmentedJob.defaultSegmentSeconds,
                resume: Bool = true, sequential: Bool = false, onePassFor: [String] = [], events: RunEvents = RunEvents()) throws -> RunOutcome {
    var c = configuration
    try c.checkRun()
    var models: [FrameProcessor]?
    var planned: [Double]?
    let onePass = onePassFor + [("--stats", c.output.reports.stats), ("--trace", c.output.reports.trace), ("--plot", c.output.reports.plot)]
        .compactMap { $1 == nil ? nil : $0 }
    if !onePass.isEmpty && segmentSeconds > 0 && SegmentedJob.canSegment(c) {
        try keptSegments(&c, onePass: onePass, resume: resume, segmentSeconds: segmentSeconds, events: events)
    }
    if onePass.isEmpty && runsInSegments(c, segmentSeconds: segmentSeconds) {
        switch try SegmentedRun(configuration: c, segmentSeconds: segmentSeconds, resume: resume, events: events).run() {
        case .skipped:
            return RunOutcome(ending: .skipped, framesOut: 0, corrupt: 0)
        case .single(let loaded, let shotStarts):
            planned = shotStarts
            // Loaded for stages that run at once (`RunConfiguration.modelCompute`); one stage
            // at a time loads its own with all cores.
            models = sequential ? nil : loaded
        case .finished(let summary):
            return RunOutcome(ending: summary.interrupted ? .interrupted : .finished, framesOut: summary.framesOut, corrupt: 0, segments: summary,
                              keptBeside: summary.keptBeside)
        }
    }
    let job = Job(configuration: c)
    job.preloadedModels = models
    job.plannedShotStarts = planned
    job.sequential = sequential
    job.events = events
    let result = try job.run()
    if result.skipped { return RunOutcome(ending: .skipped, framesOut: 0, corrupt: 0) }
    if let tracer = job.lastTracer {
        var report = result.report
        if c.output.reports.stats != nil { report.run = try job.runDescription(segmentSeconds: segmentSeconds, resume: resume, onePassFor: onePass) }
        try c.output.reports.write(tracer, report: report)
    }
    return RunOutcome(ending: result.interrupted ? .interrupted : .finished, framesOut: result.framesOut, corrupt: result.corrupt,
                      report: result.report, keptBeside: result.keptBeside)
}
