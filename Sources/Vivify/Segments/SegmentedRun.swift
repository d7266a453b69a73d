import Foundation
internal import MediaIO
import SafeFiles

/// `vivify run` on a file, resumable: plans the job into segments (or picks up the plan a
/// crashed or interrupted run left), processes the segments not yet finished in order, and
/// joins them into the output.
public final class SegmentedRun {
    /// What happened.
    enum Outcome {
        /// The input is one segment long: nothing was done; run it as one job with these models.
        /// `shotStarts`: where the plan found shots to start (seconds from the first frame),
        /// when it scanned for them, so the run in one piece need not scan again.
        case single(models: [FrameProcessor], shotStarts: [Double]?)
        /// The output exists and -n says leave it.
        case skipped
        /// Finished (or interrupted, with the output holding the frames so far).
        case finished(Summary)
    }

    /// A finished or interrupted segmented run.
    public struct Summary: Sendable {
        /// Frames in the output.
        public var framesOut: Int
        /// Segments in the job.
        public var segments: Int
        /// Segments reused from an earlier run.
        public var reusedSegments: Int
        /// Segments processed by this run.
        public var processedSegments: Int
        /// Whether a signal stopped it (the output then holds the finished frames, if any).
        public var interrupted: Bool
        /// Where the work directory is (removed after a successful join).
        public var workDirectory: String
        /// Where an interrupted run's joined frames are when not at the output: beside a file
        /// that was there before (NAME.incomplete.EXT).
        public var keptBeside: String? = nil
    }

    /// The job's configuration.
    let configuration: RunConfiguration
    /// Segment length, seconds.
    let segmentSeconds: Double
    /// Whether finished segments of an earlier run of the same job are reused.
    let resume: Bool
    /// Notes ("resuming: 7 of 12 segments done"), warnings, the job's total frames and those
    /// earlier runs did (once planned), the frames done over the whole job after each frame
    /// (reused ones included), and whether to stop.
    let events: RunEvents

    /// Prepares a run; nothing happens until `run()`.
    init(configuration: RunConfiguration, segmentSeconds: Double = SegmentedJob.defaultSegmentSeconds, resume: Bool = true,
         events: RunEvents = RunEvents()) {
        self.configuration = configuration
        self.segmentSeconds = segmentSeconds
        self.resume = resume
        self.events = events
    }

    /// Plans (or resumes), works and joins, under `configuration.limits`.
    func run() throws -> Outcome {
        let onInfo = events.info, shouldStop = events.shouldStop
        let c = configuration
        let input = c.input.path, output = c.output.path
        let directory = SegmentedJob.defaultDirectory(forOutput: output)
        let earlier = try? SegmentedJob(directory: directory)
        var rule = c.output.existing
        if let own = earlier?.manifest.interruptedOutput, SegmentManifest.OutputIdentity.of(output) == own { rule = .replace }
        if case .skip = try OutputGuard.check(output: output, inputs: [input], reads: c.readFiles, existing: rule) { return .skipped }
        try MediaWriter.validate(targetName: output, settings: c.output.encoder)

        // Fetching a model is news, not a warning.
        let models = try SegmentedJob.loadModels(c, log: onInfo)
        let plan: SegmentManifest
        // Said once the run is known to go in segments (in one piece the job says it).
        var readingLoses: [String] = []
        do {
            plan = try SegmentedJob.plan(c, segmentSeconds: segmentSeconds, models: models, warn: { readingLoses.append($0) })
        } catch let e as MediaError where e.kind == .unsupported && e.message.contains("cannot be cut into segments") && earlier == nil {
            // Timestamps that restart (two .ts files joined with cat) or are missing: such a
            // file still runs, in one piece (issue 33: it failed).
            onInfo("'\(input)' cannot be cut into segments (its timestamps repeat or are missing); processing it in one piece, which an interruption cannot resume.")
            return .single(models: models, shotStarts: nil)
        }
        if plan.segments.count == 1 && earlier == nil { return .single(models: models, shotStarts: plan.shotStarts) }

        var job: SegmentedJob
        if let earlier, resume {
            let old = earlier.manifest
            var why = old.input.difference(to: plan.input)
            if why == nil {
                let changed = old.settings.differences(to: plan.settings)
                if !changed.isEmpty { why = "settings changed (\(changed.joined(separator: "; ")))" }
            }
            if why == nil && old.segmentSeconds != plan.segmentSeconds {
                why = "--segment-seconds changed (\(old.segmentSeconds) → \(plan.segmentSeconds))"
            }
            // Where segments start, where their warm-up starts and where their shot began (a
            // plan from before shots were scanned lacks it).
            func layout(_ m: SegmentManifest) -> [[Int64?]] {
                m.segments.map { [$0.startPTS, $0.warmUpPTS, $0.shotStartFrame.map(Int64.init)] }
            }
            if why == nil && (layout(old) != layout(plan) || old.shotStarts != plan.shotStarts) { why = "the segments are planned differently now" }
            if let why {
                onInfo("not resuming from '\(directory.path)': \(why); starting afresh.")
                if plan.segments.count == 1 {
                    SegmentedJob.removeWorkDirectory(directory)
                    return .single(models: models, shotStarts: plan.shotStarts)
                }
                job = try SegmentedJob.create(at: directory, manifest: plan)
            } else {
                job = earlier
            }
        } else {
            if earlier != nil { onInfo("--no-resume: discarding the segments in '\(directory.path)'.") }
            if plan.segments.count == 1 {
                SegmentedJob.removeWorkDirectory(directory)
                return .single(models: models, shotStarts: plan.shotStarts)
            }
            job = try SegmentedJob.create(at: directory, manifest: plan)
        }
        job.events.warning = events.warning
        job.events.shouldStop = shouldStop
        readingLoses.forEach(events.warning)

        let verified = Set(job.manifest.segments.filter { job.isVerified($0) }.map(\.index))
        let total = job.manifest.segments.count
        if !verified.isEmpty { onInfo("resuming: \(verified.count) of \(total) segments done.") }
        var done = job.manifest.segments.filter { verified.contains($0.index) }.reduce(0) { $0 + $1.done!.frames }
        events.start(RunStart(total: job.manifest.totalFrames, reused: done, dropped: { 0 }))
        events.progress(done)
        var processed = 0
        for segment in job.manifest.segments where !verified.contains(segment.index) {
            if shouldStop() { break }
            let base = done
            let progress = events.progress
            job.events.progress = { progress(base + $0) }
            let outcome: SegmentedJob.WorkOutcome
            do {
                outcome = try job.work(index: segment.index, models: models, threads: c.limits.threads)
            } catch let error as MediaError where error.kind == .interrupted && shouldStop() {
                // The signal came while the segment's input was being opened.
                break
            }
            switch outcome {
            case .alreadyDone(let frames), .done(let frames):
                done += frames
                processed += 1
            case .interrupted:
                break
            }
        }
        let allDone = job.manifest.segments.allSatisfy { job.isVerified($0) }
        if shouldStop() && !allDone {
            let partial = try job.joinInterrupted(existing: rule)
            return .finished(Summary(framesOut: partial?.frames ?? 0, segments: total, reusedSegments: verified.count,
                                     processedSegments: processed, interrupted: true, workDirectory: directory.path,
                                     keptBeside: partial.flatMap { $0.besideExisting ? $0.output : nil }))
        }
        let joined = try job.join(existing: rule)
        joined.warnings.forEach(events.warning)
        return .finished(Summary(framesOut: joined.frames, segments: total, reusedSegments: verified.count,
                                 processedSegments: processed, interrupted: false, workDirectory: directory.path))
    }
}
