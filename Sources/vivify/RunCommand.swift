import ArgumentParser
import Engine
import Foundation
import MediaIO
import SafeFiles
import ModelCatalog
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

    @Option(help: "In live mode: vfr (only processed frames, variable rate) or hold (repeat the last processed frame to keep the source rate).")
    var liveOutput: LiveOutput = .vfr

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
        c.run.liveOutput = liveOutput
        c.run.realtime = realtime
        c.run.targetFPS = timing.targetFps
        return c
    }

    func run() throws {
        FFmpegLog.configure(verbose: verbose)
        let c = runConfiguration

        // A segmented file job runs with OpenMP's passive waits (see OpenMPWaitPolicy): decided
        // before anything starts, since it may start the program again.
        let segments = segmentOptions.segmentSeconds > 0 && !timing.timed && SegmentedJob.canSegment(c)
        if segments { OpenMPWaitPolicy.preferPassive() }
        let interrupts = InterruptMonitor()
        // Side files are checked before the work, like the output.
        try c.output.reports.check(inputs: [input] + c.readFiles, outputs: [output])
        let quiet = self.quiet
        let warn: (String) -> Void = { if !quiet { ProgressReporter.writeStderr("vivify: warning: \($0)\n") } }
        let showProgress = !quiet && output != "-"

        // A file job longer than one segment runs resumably (the timing reports need one pass).
        var preloaded: [FrameProcessor]?
        if segments {
            let segmented = SegmentedRun(configuration: c, segmentSeconds: segmentOptions.segmentSeconds, resume: !noResume)
            var reporter: ProgressReporter?
            segmented.onInfo = { if !quiet { ProgressReporter.writeStderr("vivify: \($0)\n") } }
            segmented.onWarning = warn
            segmented.onStart = { total, reused in
                if showProgress { reporter = ProgressReporter(total: total, interactive: ProgressReporter.stderrIsTerminal, reused: reused) }
            }
            segmented.onProgress = { reporter?.update(framesDone: $0) }
            segmented.shouldStop = { interrupts.isInterrupted }
            do {
                switch try segmented.run() {
                case .skipped:
                    if !quiet { ProgressReporter.writeStderr("vivify: '\(output)' exists; skipped (-n).\n") }
                    return
                case .single(let models):
                    preloaded = models
                case .finished(let summary):
                    reporter?.finish(framesDone: summary.framesOut)
                    if summary.interrupted {
                        if summary.framesOut > 0 {
                            ProgressReporter.writeStderr("vivify: interrupted: \(summary.framesOut) frames saved to \(output); \(summary.reusedSegments + summary.processedSegments) of \(summary.segments) segments are kept in \(summary.workDirectory). Run the same command again to resume.\n")
                        } else {
                            ProgressReporter.writeStderr("vivify: interrupted before the first segment was done; nothing was written. Run the same command again to resume.\n")
                        }
                        throw ExitCode(VivifyExitCode.interrupted.rawValue)
                    }
                    if !quiet {
                        ProgressReporter.writeStderr("vivify: \(summary.framesOut) frames; \(summary.segments) segments (\(summary.reusedSegments) reused, \(summary.processedSegments) processed).\n")
                    }
                    return
                }
            } catch let code as ExitCode {
                throw code
            } catch {
                reporter?.finish(framesDone: 0)
                throw error
            }
        }

        let job = Job(configuration: c)
        job.preloadedModels = preloaded
        job.onWarning = warn
        job.onInfo = { if !quiet { ProgressReporter.writeStderr("vivify: \($0)\n") } }
        var reporter: ProgressReporter?
        // Progress is for file jobs; on a pipe the consumer sets the pace and stderr stays clean.
        let isLive = c.run.mode == .live
        // Weak: the job holds this closure, and a strong capture would be a cycle (a leak at exit).
        job.onStart = { [weak job] total in
            if showProgress {
                reporter = ProgressReporter(total: total, interactive: ProgressReporter.stderrIsTerminal, live: isLive,
                                            dropped: { [weak job] in job?.lastTracer?.droppedSoFar ?? 0 })
            }
        }
        job.onProgress = { reporter?.update(framesDone: $0) }
        job.shouldStop = { interrupts.isInterrupted }
        job.sequential = sequential
        do {
            let result = try job.run()
            if result.skipped {
                if !quiet { ProgressReporter.writeStderr("vivify: '\(output)' exists; skipped (-n).\n") }
                return
            }
            reporter?.finish(framesDone: result.framesOut)
            if let tracer = job.lastTracer {
                var report = result.report
                if c.output.reports.stats != nil { report.run = try job.runDescription() }
                try c.output.reports.write(tracer, report: report)
            }
            if !quiet && (timing.summary || mode == .live) { ProgressReporter.writeStderr(result.report.text) }
            if result.corrupt > 0 && !quiet {
                ProgressReporter.writeStderr("vivify: warning: skipped \(result.corrupt) damaged packets or frames in '\(input)'.\n")
            }
            if result.interrupted {
                ProgressReporter.writeStderr("vivify: interrupted: \(result.framesOut) frames saved to \(output).\n")
                throw ExitCode(VivifyExitCode.interrupted.rawValue)
            }
        } catch let code as ExitCode {
            throw code
        } catch {
            reporter?.finish(framesDone: 0)
            throw error
        }
    }
}
