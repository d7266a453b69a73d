import ArgumentParser
import Foundation
import Vivify

// Scale-out: the pieces `vivify run` uses for a resumable job, as separate commands that a
// batch engine runs on many machines sharing one work directory.
//
//     vivify plan IN OUT [run options] --work DIR     → manifest, prints the segment count
//     vivify work DIR [--index I]                     → one segment (I from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)
//     vivify join DIR                                 → OUT; segments removed, DIR/joined.json left
//     vivify status DIR [--json]                      → done, missing, damaged and failed segments

struct PlanCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plan",
        abstract: "Cut a file job into segments for many workers: write the manifest into DIR and print the number of segments.",
        discussion: "Then run `vivify work DIR --index I` for I in 0..N-1 (on any machines that see DIR, INPUT and the models), and `vivify join DIR`. Takes the stage and encoder options of `run`.")

    @Argument(help: "Input video file.")
    var input: String

    @Argument(help: "Output file the segments are joined into.")
    var output: String

    @Option(help: ArgumentHelp("The work directory (on a file system every worker sees).", valueName: "DIR"))
    var work: String

    @OptionGroup var jobOptions: JobOptions
    @OptionGroup var segmentOptions: SegmentOptions

    func validate() throws {
        if segmentOptions.segmentSeconds == 0 { throw ValidationError("'--segment-seconds 0' makes no segments; `vivify plan` needs a length above 0.") }
    }

    func run() throws {
        MediaLog.configure(verbose: false)
        var events = RunEvents()
        events.info = { ProgressReporter.writeStderr("vivify: \($0)\n") }
        let c = jobOptions.configuration(input: input, output: output)
        guard let job = try SegmentedJob.plan(c, segmentSeconds: segmentOptions.segmentSeconds, at: URL(fileURLWithPath: work), events: events) else {
            ProgressReporter.writeStderr("vivify: '\(output)' exists; nothing planned (-n).\n")
            return
        }
        print(job.manifest.segments.count)
    }
}

struct WorkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Process one segment of a planned job (skipped when it is already finished and verified).",
        discussion: "Without --index the segment comes from SLURM_ARRAY_TASK_ID (Slurm job arrays) or JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs), so one command line serves both.")

    @Argument(help: "The work directory `vivify plan` wrote.")
    var directory: String

    @Option(help: "The segment to process (0-based).")
    var index: Int?

    @OptionGroup var threadOptions: ThreadOptions

    @Flag(help: "Print nothing but errors.")
    var quiet = false

    func run() throws {
        // Segments run with OpenMP's passive waits (see OpenMPWaitPolicy); first, since it may
        // start the program again.
        OpenMPWaitPolicy.preferPassive()
        MediaLog.configure(verbose: false)
        let interrupts = InterruptMonitor()
        let chosen = try SegmentedJob.segmentIndex(given: index, environment: ProcessInfo.processInfo.environment)
        let quiet = self.quiet
        // A worker started again after the join (a retried pod) has nothing to do.
        if let done = try SegmentedJob.finishedJoin(at: URL(fileURLWithPath: directory)) {
            if !quiet { sayAlreadyJoined(directory, done) }
            return
        }
        let job = try SegmentedJob(directory: URL(fileURLWithPath: directory))
        try job.checkInput()
        job.events.warning = { if !quiet { ProgressReporter.writeStderr("vivify: warning: \($0)\n") } }
        job.events.shouldStop = { interrupts.isInterrupted }
        switch try job.work(index: chosen, threads: threadOptions.threads) {
        case .alreadyDone(let frames):
            if !quiet { ProgressReporter.writeStderr("vivify: segment \(chosen) is already done (\(frames) frames).\n") }
        case .done(let frames):
            if !quiet { ProgressReporter.writeStderr("vivify: segment \(chosen) done (\(frames) frames).\n") }
        case .interrupted(let frames):
            ProgressReporter.writeStderr("vivify: interrupted: segment \(chosen) stopped after \(frames) frames; run it again to redo it.\n")
            throw ReportedFailure(.interrupted)
        }
    }
}

struct JoinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "join",
        abstract: "Verify every segment of a planned job and write its output (packets joined, audio and subtitles copied once); the segments and manifest are then removed, leaving joined.json so that a second join has nothing to do.",
        discussion: "Exit 75 when segments are not finished yet (it names them).")

    @Argument(help: "The work directory.")
    var directory: String

    @Flag(name: [.customShort("y"), .customLong("overwrite")], help: "Replace an existing output (a plan made with -y does not grant it: the join asks for -y itself).")
    var overwrite = false

    @Flag(help: "Keep the work directory after the join.")
    var keep = false

    func run() throws {
        MediaLog.configure(verbose: false)
        let folder = URL(fileURLWithPath: directory)
        // One join at a time; a join after a finished one (a retried pod) has nothing to do.
        try SegmentedJob.withJoinLock(folder) {
            if let done = try SegmentedJob.finishedJoin(at: folder) {
                sayAlreadyJoined(directory, done)
                return
            }
            let job = try SegmentedJob(directory: folder)
            // Only the command line may replace a file: anyone who can write the work directory
            // can edit its manifest.
            let replace = overwrite
            if !overwrite, job.manifest.settings.replaceExistingOutput == true,
               FileManager.default.fileExists(atPath: job.manifest.settings.output) {
                ProgressReporter.writeStderr("vivify: the plan was made with -y, but a manifest cannot allow replacing '\(job.manifest.settings.output)': give `vivify join -y`.\n")
            }
            let joined = try job.join(existing: replace ? .replace : .refuse, removeDirectory: !keep, leaveRecord: !keep)
            for w in joined.warnings { ProgressReporter.writeStderr("vivify: warning: \(w)\n") }
            ProgressReporter.writeStderr("vivify: joined \(joined.frames) frames into \(joined.output).\n")
        }
    }
}

struct StatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "List the done, missing, damaged and failed segments of a planned or interrupted job (or that it was joined).")

    @Argument(help: "The work directory (for a `vivify run`, .OUTPUT.vivify-work beside the output).")
    var directory: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        if let done = try SegmentedJob.finishedJoin(at: URL(fileURLWithPath: directory)) {
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                print(String(decoding: try encoder.encode(["joined": done]), as: UTF8.self))
            } else {
                print("joined into \(done.output) (\(done.frames) frames)")
            }
            return
        }
        let job = try SegmentedJob(directory: URL(fileURLWithPath: directory))
        let states = try job.status(verify: true)
        let done = states.filter { $0.state == "done" }
        if json {
            struct Report: Encodable {
                var input: String, output: String, segments: Int, done: Int, missing: [Int], damaged: [Int], failed: [Int]
                var framesDone: Int, totalFrames: Int, states: [SegmentedJob.SegmentState]
            }
            let r = Report(input: job.manifest.settings.input, output: job.manifest.settings.output, segments: states.count,
                           done: done.count, missing: states.filter { $0.state == "missing" }.map(\.index),
                           damaged: states.filter { $0.state == "damaged" }.map(\.index),
                           failed: states.filter { $0.state == "failed" }.map(\.index),
                           framesDone: done.reduce(0) { $0 + $1.frames }, totalFrames: job.manifest.totalFrames, states: states)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(r), as: UTF8.self))
        } else {
            print("\(job.manifest.settings.input) → \(job.manifest.settings.output)")
            print("\(done.count) of \(states.count) segments done, \(done.reduce(0) { $0 + $1.frames }) of \(job.manifest.totalFrames) frames")
            for s in states {
                // Padded in Swift: Foundation on Linux ignores a width on %@.
                let state = s.state.padding(toLength: 7, withPad: " ", startingAt: 0)
                var line = String(format: "%4d  ", s.index) + state + String(format: "  %8.3f–%8.3f s  %6d frames", s.start, s.end, s.frames)
                if let e = s.error { line += "  \(e)" }
                print(line)
            }
        }
    }
}

/// What `work` and `join` say in a folder whose job was joined (a retried pod): nothing to do.
private func sayAlreadyJoined(_ directory: String, _ done: SegmentedJob.JoinedRecord) {
    ProgressReporter.writeStderr("vivify: '\(directory)' was already joined into \(done.output) (\(done.frames) frames); nothing to do.\n")
}
