import ArgumentParser
import Foundation
import Vivify

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode INPUT, apply the stages, encode OUTPUT.",
        discussion: "Use '-' for standard input or output (y4m by default). The output container follows OUTPUT's extension (.mp4, .mkv, .webm, .mov, .avi; .y4m writes raw YUV). Audio and subtitles are copied when the container can hold them. A file longer than one segment is processed in segments kept in .OUTPUT.vivify-work/ beside the output: after a crash, kill or Ctrl-C, the same command resumes from the finished segments (--no-resume starts afresh).")

    @Argument(help: "Input video file, or '-' for standard input.")
    var input: String

    @Argument(help: "Output file, or '-' for standard output.")
    var output: String

    @OptionGroup var jobOptions: JobOptions
    @OptionGroup var networkOptions: NetworkOptions
    @OptionGroup var segmentOptions: SegmentOptions

    @Flag(help: "Discard the finished segments an earlier run of this job left, and start afresh.")
    var noResume = false

    @Flag(help: "Print no progress line and no warnings.")
    var quiet = false

    @Flag(help: "Show FFmpeg's own log messages.")
    var verbose = false

    @Option(help: "offline (default: every frame processed) or live (frames that go stale before the model are dropped).")
    var mode: RunMode = .offline

    @Option(help: "In live mode: vfr (the default: only processed frames, variable rate) or hold (repeat the last processed frame to keep the source rate).")
    var liveOutput: LiveOutput?

    @Flag(help: "Pace a file at its native frame rate, as if it were arriving live.")
    var realtime = false

    @Flag(help: .hidden)
    var sequential = false

    @OptionGroup var timing: TimingOptions

    /// The job these options describe.
    var runConfiguration: RunConfiguration {
        var c = jobOptions.configuration(input: input, output: output, network: networkOptions)
        c.output.reports = timing.outputs
        c.run.mode = mode
        c.run.liveOutput = liveOutput ?? .vfr
        c.run.realtime = realtime
        c.run.targetFPS = timing.targetFps
        return c
    }

    func validate() throws {
        // An offline run keeps every frame: there is nothing to hold or leave out, and a
        // choice that changes nothing should not pass for one that did.
        if let liveOutput, mode != .live {
            throw ValidationError("'--live-output \(liveOutput.rawValue)' applies to live mode only: an offline run writes every frame at its own time. Add --mode live, or leave --live-output out.")
        }
    }

    func run() throws {
        MediaLog.configure(verbose: verbose)
        let c = runConfiguration
        // The summary, like the reports, needs the run in one pass.
        let segmentSeconds = segmentOptions.segmentSeconds
        let onePass = timing.summary ? ["--summary"] : []
        // A segmented file job runs with OpenMP's passive waits (see OpenMPWaitPolicy): decided
        // before anything starts, since it may start the program again.
        if onePass.isEmpty && Vivify.runsInSegments(c, segmentSeconds: segmentSeconds) { OpenMPWaitPolicy.preferPassive() }
        let interrupts = InterruptMonitor()
        // Side files are checked before the work, like the output.
        try c.output.reports.check(inputs: [input] + c.readFiles, outputs: [output])
        let quiet = self.quiet
        // Progress is for file jobs; on a pipe the consumer sets the pace and stderr stays clean.
        let showProgress = !quiet && output != "-"
        var reporter: ProgressReporter?
        var events = RunEvents()
        events.info = { if !quiet { ProgressReporter.writeStderr("vivify: \($0)\n") } }
        events.warning = { if !quiet { ProgressReporter.writeStderr("vivify: warning: \($0)\n") } }
        events.start = { start in
            if showProgress {
                reporter = ProgressReporter(total: start.total, interactive: ProgressReporter.stderrIsTerminal, live: c.run.mode == .live,
                                            dropped: start.dropped, reused: start.reused)
            }
        }
        events.progress = { reporter?.update(framesDone: $0) }
        events.shouldStop = { interrupts.isInterrupted }
        let outcome: RunOutcome
        do {
            outcome = try Vivify.run(c, segmentSeconds: segmentSeconds, resume: !noResume, sequential: sequential, onePassFor: onePass, events: events)
        } catch {
            reporter?.finish(framesDone: 0)
            throw error
        }
        if outcome.ending == .skipped {
            if !quiet { ProgressReporter.writeStderr("vivify: '\(output)' exists; skipped (-n).\n") }
            return
        }
        reporter?.finish(framesDone: outcome.framesOut)
        if let report = outcome.report, !quiet && (timing.summary || mode == .live) { ProgressReporter.writeStderr(report.text) }
        if outcome.corrupt > 0 && !quiet {
            ProgressReporter.writeStderr("vivify: warning: skipped \(outcome.corrupt) damaged packets or frames in '\(input)'.\n")
        }
        if outcome.ending == .interrupted {
            ProgressReporter.writeStderr("vivify: \(Self.interruption(outcome, output: output))\n")
            throw ReportedFailure(.interrupted)
        }
        if let s = outcome.segments, !quiet {
            ProgressReporter.writeStderr("vivify: \(s.framesOut) frames; \(s.segments) segments (\(s.reusedSegments) reused, \(s.processedSegments) processed).\n")
        }
    }

    /// What an interrupted run kept, and how to go on (the line after "vivify: ").
    static func interruption(_ outcome: RunOutcome, output: String) -> String {
        // Beside an output that was there before the run, which it never replaces.
        let saved = outcome.keptBeside.map { "\($0) (the existing \(output) is left as it was)" }
            ?? (output == "-" ? "standard output (each frame whole)" : output)
        guard let s = outcome.segments else { return "interrupted: \(outcome.framesOut) frames saved to \(saved)." }
        guard s.framesOut > 0 else {
            return "interrupted before the first segment was done; nothing was written. Run the same command again to resume."
        }
        return "interrupted: \(s.framesOut) frames saved to \(saved); \(s.reusedSegments + s.processedSegments) of \(s.segments) segments are kept in \(s.workDirectory). Run the same command again to resume."
    }
}
