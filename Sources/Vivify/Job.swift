import Foundation
internal import Engine
internal import ModelCatalog
package import MediaIO
internal import Pipeline
import SafeFiles
package import Tracing
import Models

/// What a finished (or interrupted) job did.
package struct JobResult: Sendable {
    /// Frames read from the input.
    package var framesIn: Int
    /// Frames written to the output.
    package var framesOut: Int
    /// Damaged packets or frames skipped.
    package var corrupt: Int
    /// Whether SIGINT/SIGTERM stopped it early (the output holds the frames done so far).
    package var interrupted: Bool
    /// Warnings collected along the way.
    package var warnings: [String]
    /// Frames dropped in live mode.
    package var dropped: Int
    /// The frame-timing summary.
    package var report: TraceReport
    /// Whether nothing was done because the output exists and `existingOutput` is `.skip`.
    package var skipped = false
    /// Where an interrupted run's frames were put when that is not the output: beside it as
    /// NAME.incomplete.EXT, because a file was there already (an interrupted run never
    /// replaces one, `-y` or not).
    package var keptBeside: String? = nil
}

/// An error that happened after some frames were already saved: they were finalised into a
/// playable file beside the target (NAME.incomplete.EXT, an existing target kept), and the job
/// still failed.
package struct PartialOutputError: Error, CustomStringConvertible {
    /// The underlying failure.
    package let underlying: MediaError
    /// Frames saved in the output.
    package let framesWritten: Int
    /// Where they are.
    package let output: String

    package var description: String {
        "\(underlying.message) The \(framesWritten) frames before it were saved to \(output)."
    }
}

/// Runs one `vivify run` job: open the input, apply the stages, write the output.
///
///     source ──▶ [to RGB] ──▶ [colorize] ──▶ [upscale] ──▶ [resize] ──▶ [convert to the sink's layout] ──▶ sink
///        └──────── audio / subtitle packets, copied ───────────────▲
///
/// The output goes to a temporary file beside the target and is renamed at the end, also
/// after an interruption (then holding the frames done so far), so the target is never a
/// half-written file. A failure before any frame is saved removes the temporary file.
package final class Job {
    /// The configuration the job runs.
    package let configuration: RunConfiguration
    /// What the job tells as it goes: warnings, news (a model being fetched), the expected
    /// frame count once the input is open, the frames done after each frame; and whether to
    /// stop, asked before each frame is read.
    package var events = RunEvents()
    /// Run every stage on one thread, one frame at a time (the plain loop the threaded
    /// pipeline is benchmarked against).
    package var sequential = false
    /// The tracer of the last run (its trace and plot can be exported).
    package private(set) var lastTracer: FrameTracer?
    /// The processing chain of the last run (its stages' FLOPs can be asked).
    package private(set) var lastChain: ProcessingChain?
    /// Process only this part of the input (a segment of a resumable job): `output` is then
    /// the segment file, video only, encoded for `SegmentWindow.finalOutput`.
    package var segment: SegmentWindow?
    /// Models already loaded (a segmented run loads them once), in the stages' order; they
    /// are reset before use.
    package var preloadedModels: [FrameProcessor]?
    /// Presentation time of the input's first frame when a scan for time keyframes read it.
    private var timeOrigin: Double?
    /// Where shots start, when a plan of this very run already scanned the input for them
    /// (a run planned in segments that came out as one): not scanned again.
    package var plannedShotStarts: [Double]?
    /// Each frame's time from the first, when the input file was scanned for them (keyframes).
    private var scannedFrameTimes: [Double]?
    /// Where shots start (seconds from the first frame), when keyframes or hints made the run
    /// scan a file for them first.
    private var scannedShotStarts: [Double]?

    /// Prepares a job; nothing is opened until `run()`.
    package init(configuration: RunConfiguration) {
        var c = configuration
        // `auto` as the backend it chose, so the stats name what ran (a bad
        // VIVIFY_VULKAN_DEVICE is reported when the models are made).
        if c.run.backend == .auto, let chosen = try? c.run.backend.resolved() { c.run.backend = chosen }
        self.configuration = c
    }

    /// Opens `input`; `copyStreams` hands out its audio and subtitle packets for copying;
    /// frames beyond `maxPixels` pixels (`--max-pixels`) are refused from their headers.
    /// `allowStill`: a picture opens as a one-frame source (for `probe`); otherwise it is
    /// refused, pointing to `vivify image`.
    package static func openSource(_ input: InputSettings, copyStreams: Bool, decodeTo: PixelFormat? = nil, maxPixels: Int,
                                   allowStill: Bool = false) throws -> FrameSource {
        if let synthetic = input.synthetic { return SyntheticSource(size: synthetic.size, frames: synthetic.frames) }
        let path = input.path
        if path != "-" && !NetworkURL.isNetwork(path) && !FileManager.default.fileExists(atPath: path) {
            throw MediaError(.inputUnreadable, "Cannot open '\(path)': no such file. Check the path.")
        }
        switch input.effectiveFormat {
        case .y4m:
            return try Y4MReader(path: path, maxPixels: maxPixels)
        case .rgb24, .gray:
            guard let size = input.rawSize else {
                throw MediaError(.invalidOptions, "Raw \(input.effectiveFormat!.rawValue) input needs its frame size. Pass --size WxH (e.g. --size 640x360).")
            }
            guard let rate = input.rawRate else {
                throw MediaError(.invalidOptions, "Raw \(input.effectiveFormat!.rawValue) input needs its frame rate. Pass --rate R (e.g. --rate 30 or --rate 30000/1001).")
            }
            return try RawVideoReader(path: path, format: input.effectiveFormat == .rgb24 ? .rgb24 : .gray,
                                      width: size.width, height: size.height, rate: rate, maxPixels: maxPixels)
        case nil:
            var matrix: Int32?
            if let name = input.assumeMatrix {
                guard let code = ColorInfo.matrixCode(named: name) else {
                    throw MediaError(.invalidOptions, "Unknown colour matrix '\(name)'. Use bt709, smpte170m (BT.601), bt470bg or bt2020nc.")
                }
                matrix = code
            }
            let reader = try MediaReader(path: path, outputFormat: decodeTo, copyStreams: copyStreams, strict: input.strict,
                                         matrixOverride: matrix, networkTimeout: input.networkTimeout ?? NetworkURL.defaultTimeout,
                                         maxPixels: maxPixels)
            // A picture would become a one-frame video: point to the command for pictures.
            if !allowStill && isStill(reader.info) {
                throw MediaError(.invalidOptions, "'\(path)' is a still image (\(reader.info.container)); `vivify run` is for video and frame streams. Use `vivify image \(path) OUTPUT.png` for pictures.")
            }
            return reader
        }
    }

    /// Whether FFmpeg opened a picture (image2, or one of the `*_pipe` picture demuxers).
    package static func isStill(_ info: MediaInfo) -> Bool {
        info.container == "image2" || info.container.hasSuffix("_pipe")
    }

    /// Runs the job to the end (or until `events.shouldStop`) and returns what it did:
    ///
    ///     check the request ─▶ load the models ─▶ open the input ─▶ settle the formats
    ///     (chain and sink) ─▶ the stages ─▶ run the pipeline ─▶ put the output in place
    package func run() throws -> JobResult {
        let c = configuration
        try c.checkRun()
        let target: URL?
        switch try checkRequest(c) {
        case .skip:
            let empty = FrameTracer(stageNames: ["decode"], targetFPS: c.run.targetFPS ?? 30).report()
            return JobResult(framesIn: 0, framesOut: 0, corrupt: 0, interrupted: false, warnings: [], dropped: 0, report: empty, skipped: true)
        case .write(let url):
            target = url
        }
        let warnings = WarningLog(forward: events.warning)
        let warn = warnings.add

        // Models load before anything is opened for writing, so a bad model name costs nothing.
        // The stages run at once, one frame each, unless `sequential`: the cores shared out.
        let models = try preloadedModels ?? ProcessorFactory.models(of: c.stages, backend: c.run.backend,
                                                                    settings: sequential ? c.limits.compute : c.modelCompute, log: events.info)
        models.forEach { $0.reset() }
        let source = try openInput(c, warn: warn)
        let video = source.info.video
        timeOrigin = nil
        scannedShotStarts = nil
        // Keyframes past the end are refused before any frame is processed (segments are
        // windows of the whole video: its own length counts).
        scannedFrameTimes = nil
        if let guide = c.stages.colourGuide, !guide.keyframes.isEmpty || (segment == nil && guide.carriesThroughShots) {
            // Each frame's time from a scan of the packets, counted from the first frame
            // whatever the file's first timestamp: a keyframe by time takes the nearest frame
            // and one by number its frame's own time, a variable rate followed. Only of a
            // regular file (a stream or a FIFO would be consumed by the scan); a segment's
            // worker reads the same file the plan did.
            var seconds: [Double]?
            var st = stat()
            let regular = stat(c.input.path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
            let media = source is MediaReader || source is SegmentWindowSource
            if !guide.keyframes.isEmpty, media, regular, let index = try? VideoIndex.read(path: c.input.path),
               let first = index.timestamps.first {
                seconds = index.timestamps.map { index.seconds($0 - first) }
                if segment == nil { timeOrigin = index.seconds(first) }
            } else if guide.needsFrameTimes, !media, regular, let count = video.frameCount, count > 0, count <= 10_000_000,
                      video.frameRate.doubleValue > 0 {
                // A y4m or raw file: frames at a constant rate, from 0.
                let rate = video.frameRate.doubleValue
                seconds = (0..<count).map { Double($0) / rate }
            }
            scannedFrameTimes = seconds
            if segment == nil {
                try guide.checkKeyframes(frameCount: video.frameCount, duration: video.duration, frameRate: video.frameRate.doubleValue,
                                         input: c.input.path, frameSeconds: seconds)
                // Keyframes and the hinted first frame colour their shot, before and after
                // them: a file is scanned for where shots start (up to the first after the last
                // keyframe), so a cut between a frame and a keyframe is known. Without the scan
                // (a stream) a keyframe after a frame applies if its L histogram is the frame's,
                // which a strongly coloured keyframe's L* is not.
                if guide.carriesThroughShots, source is MediaReader, regular {
                    let last = guide.lastKeyframe(frameSeconds: seconds, frameRate: video.frameRate.doubleValue)
                    scannedShotStarts = try plannedShotStarts
                        ?? SegmentedJob.scanShotStarts(c, throughFrame: last.frame, throughSeconds: last.seconds).map(\.seconds)
                }
            }
        }
        let settled = try settleFormats(c, source: source, models: models, target: target, warn: warn)
        let chain = settled.chain
        let live = c.run.mode == .live
        if live { try chain.warmUp() }
        lastChain = chain
        // The total for the progress line: the stored count, else (Matroska and the like) the
        // count the duration and rate give.
        let rate = video.frameRate.doubleValue
        let estimated = video.duration.flatMap { d in d > 0 && rate > 0 && rate <= 1000 ? Int((d * rate).rounded()) : nil }
        // A scan's count first (a variable rate makes duration × rate wrong: 68 for 30 frames).
        let declared = (segment == nil ? scannedFrameTimes?.count : nil) ?? video.frameCount ?? (segment == nil ? estimated : nil)
        // The count is read from the run's own tracer, held by the closure: the final progress
        // line is drawn after the job has gone (a weak reference then read 0).
        let tracerBox = TracerBox()
        events.start(RunStart(total: declared.map { min($0, c.run.maxFrames ?? $0) }, reused: 0,
                              dropped: { tracerBox.tracer?.droppedSoFar ?? 0 }))

        let timestamps = TimestampLog()
        let feed = DecodeFeed(source: source, video: video, configuration: c, window: segment, resolvedColor: settled.resolvedColor,
                              timestamps: timestamps, shouldStop: events.shouldStop, warn: warn)
        // With --live-output hold, dropped frames are replaced by the last processed one at
        // their own timestamps, so the output keeps the source's rate.
        // y4m and raw frames carry no timestamps: variable-rate frames would play too fast (22
        // frames of a 2 s clip in 0.73 s), so they are held there whatever --live-output says.
        let constantRate = c.output.effectiveFormat != nil && !c.output.discard
        if live && constantRate && c.run.liveOutput == .vfr {
            warn("\(c.output.effectiveFormat!.rawValue) output has a constant frame rate: frames dropped in live mode are replaced by the last processed one (as --live-output hold), so the output keeps the source's timing.")
        }
        let writer = HoldingWriter(sink: settled.sink, timestamps: timestamps, hold: live && (c.run.liveOutput == .hold || constantRate))
        let output = JobOutput(sink: settled.sink, writer: writer, partial: settled.partial, temporary: settled.temporary, output: c.output.path)
        let stages = makeStages(chain, live: live, sink: settled.sink, writer: writer)
        // The budget is the source's own rate unless asked otherwise (a 25 fps clip is not
        // measured against 30).
        let targetFPS = c.run.targetFPS ?? (rate.isFinite && rate > 0 && rate <= 1000 ? rate : 30)
        let tracer = FrameTracer(stageNames: ["decode"] + stages.map(\.name), targetFPS: targetFPS)
        feed.tracer = tracer
        lastTracer = tracer
        tracerBox.tracer = tracer
        let pipeline = Pipeline(source: feed.next, stages: stages, observer: tracer)
        let result = try drive(pipeline, output: output, source: source, video: video, timestamps: timestamps, tracer: tracer, warnings: warnings)
        // A keyframe the input never reached (a stream, not checked before the work) coloured
        // only as a keyframe after every frame, if at all. Not said when the run was cut short
        // (a signal, --max-frames): the input did not end there.
        if segment == nil, !result.interrupted, c.run.maxFrames.map({ result.framesIn < $0 }) ?? true {
            for case let p as ColorizeProcessor in chain.processors {
                for k in p.colorizer.guide?.keyframesNeverReached ?? [] {
                    warn("'--keyframe \(k)': \(c.input.displayName) ended before that frame, so it was never reached. Give the number or time of a frame the input has.")
                }
            }
        }
        // --max-frames ended the run before a keyframe's frame: said, as for an input that
        // ended (the stats still name it, as given).
        if segment == nil, !result.interrupted, let limit = c.run.maxFrames, result.framesIn >= limit {
            for case let p as ColorizeProcessor in chain.processors {
                for k in p.colorizer.guide?.keyframesNeverReached ?? [] {
                    warn("'--keyframe \(k)' lies past '--max-frames \(limit)': the run stopped before that frame (the keyframe coloured only the frames of its own shot before it, if any were processed). Raise --max-frames to reach it, or leave it out.")
                }
            }
        }
        return result
    }

    /// What the checks before any work decided about the output.
    private enum OutputDecision {
        /// Write it (to this file; nil: standard output or a network URL).
        case write(URL?)
        /// Leave the existing output alone (`-n`).
        case skip
    }

    /// The checks before any work: the options that cannot work together, and the output
    /// (never a device, FIFO or directory, never an input, an existing one only replaced with
    /// -y or left alone with -n).
    private func checkRequest(_ c: RunConfiguration) throws -> OutputDecision {
        if let name = c.input.assumeMatrix, ColorInfo.matrixCode(named: name) == nil {
            throw MediaError(.invalidOptions, "Unknown colour matrix '\(name)'. Use bt709, smpte170m (BT.601), bt470bg or bt2020nc.")
        }
        var target: URL?
        // A network URL output is streamed as it is made: no file to guard, nothing to rename.
        let output = c.output.path
        if output != "-" && !c.output.discard && !NetworkURL.isNetwork(output) {
            switch try OutputGuard.check(output: output, inputs: [c.input.path], reads: c.readFiles, existing: c.output.existing) {
            case .write(let url): target = url
            case .skip: return .skip
            }
        }
        if output == "-" && c.output.effectiveFormat == nil {
            throw MediaError(.invalidOptions, "Standard output takes y4m or raw frames only. Pass --output-format y4m|rgb24|gray, or write to a file.")
        }
        for guide in c.stages.compactMap(\.colourGuide) { try guide.checkFiles() }
        return .write(target)
    }

    /// Opens the input (the segment's window of it when this job is a segment), its warnings
    /// sent to `warn`.
    private func openInput(_ c: RunConfiguration, warn: @escaping (String) -> Void) throws -> FrameSource {
        let source: FrameSource = try segment.map { try SegmentWindowSource(input: c.input, window: $0, maxPixels: c.limits.pixelLimit) }
            ?? Self.openSource(c.input, copyStreams: c.output.copyAudioAndSubtitles, maxPixels: c.limits.pixelLimit)
        if let reader = source as? MediaReader {
            reader.onWarning = warn
            if let lost = reader.reduction { warn(lost) }
        }
        if let windowed = source as? SegmentWindowSource {
            windowed.reader.onWarning = warn
        }
        if let y4m = source as? Y4MReader {
            for a in y4m.assumptions { warn("\(c.input.displayName): assuming \(a).") }
        }
        return source
    }

    /// The chain and the sink with their formats settled before any frame flows.
    private struct Settled {
        /// The chain, ending in the conversion to what the sink takes.
        var chain: ProcessingChain
        /// Where frames go.
        var sink: FrameSink
        /// The output file being written beside its target (nil: standard output, a URL).
        var partial: PartialFile?
        /// The path the sink writes.
        var temporary: String
        /// The colour the frames are read as (the source's tags, the rule for what they leave
        /// open, `--assume-matrix`).
        var resolvedColor: ColorInfo
    }

    /// The chain of `c`'s stages ([to RGB] when a model runs on other frames, then the list,
    /// the models already loaded), configured for `video`'s frames: every stage's check of
    /// what it gets (a keyframe's aspect, a hint inside the first frame, the pixel limit) is
    /// made here, by a run and by a plan alike.
    package static func chain(_ c: RunConfiguration, video: VideoStreamInfo, models: [FrameProcessor]) throws -> ProcessingChain {
        var models = models
        var processors: [FrameProcessor] = !models.isEmpty && video.pixelFormat != .rgb24 ? [ToRGBProcessor()] : []
        for (spec, name) in zip(c.stages, c.stages.names) {
            processors.append(spec.runsModel ? models.removeFirst()
                              : try ProcessorFactory.make(spec, name: name, backend: c.run.backend, settings: c.limits.compute))
        }
        return try ProcessingChain(processors, input: FrameDescription(
            width: video.width, height: video.height, frameRate: video.frameRate, layout: .packed(video.pixelFormat)), maxPixels: c.limits.pixelLimit)
    }

    /// Settles the formats once: the chain is configured from the ordered stages ([to RGB]
    /// when a model runs on other frames, then the list, the models already loaded) for what
    /// the source gives, the sink from what the chain gives, and the chain then ends in the conversion to the pixel
    /// format the sink says it takes (rounding to 8 bits once).
    private func settleFormats(_ c: RunConfiguration, source: FrameSource, models: [FrameProcessor], target: URL?,
                               warn: (String) -> Void) throws -> Settled {
        let video = source.info.video
        var chain = try Self.chain(c, video: video, models: models)
        // Keyframe times count from the whole input's first frame: a segment's plan knows it,
        // the scan for time keyframes found it, else the first frame sets it.
        let origin = segment?.originPTS.map { Double($0) * video.timeBase.doubleValue } ?? timeOrigin
        chain.processors.forEach {
            $0.place(.video(firstFrameIndex: segment?.firstFrameIndex ?? 0, originSeconds: origin, shotStartSeconds: segment?.shotStartSeconds,
                            shotStarts: segment.map(\.shotStarts) ?? scannedShotStarts, frameTimes: scannedFrameTimes))
        }
        var produced = video
        produced.pixelFormat = chain.output.layout.packedFormat
        var resolved = video.color.resolved(height: video.height)
        if let name = c.input.assumeMatrix, let code = ColorInfo.matrixCode(named: name) {
            resolved.info.matrix = code
            resolved.assumptions.removeAll { $0.hasPrefix("matrix") }
        }

        // Temporary file beside the target, renamed at the end.
        // Without -y the output is created, never replaced: a file that appears meanwhile (a
        // second run to the same new name) makes this run fail and keep what it wrote.
        let partial = target.map { PartialFile(target: $0, replacing: c.output.existing == .replace) }
        let temp = partial?.temporary.path ?? (NetworkURL.isNetwork(c.output.path) ? c.output.path : "-")
        let sink: FrameSink
        do {
            sink = try makeSink(c, path: temp, source: source, video: produced, size: chain.output.size, resolvedColor: resolved, warn: warn)
        } catch {
            partial?.discard()
            throw error
        }
        if let writer = sink as? MediaWriter {
            writer.warnings.forEach(warn)
            writer.refuseDamagedCopies = c.input.strict
        }
        let sinkFormat = sink.requiredFormat ?? produced.pixelFormat
        if chain.output.layout != .packed(sinkFormat) {
            try chain.append(OutputConversionProcessor(format: sinkFormat, color: sink.requiredColor))
        }
        if !resolved.assumptions.isEmpty, sink.requiredFormat == .rgb24, video.pixelFormat.isYUV {
            warn("\(c.input.displayName) has no colour tags; converting to RGB assuming \(resolved.assumptions.joined(separator: ", ")). Pass --assume-matrix to choose.")
        }
        return Settled(chain: chain, sink: sink, partial: partial, temporary: temp, resolvedColor: resolved.info)
    }

    /// The pipeline's stages: the chain's stage groups, each on its own thread (conversions
    /// after the last model share "finish"), then "encode", the sink. Live mode keeps only the
    /// newest frame in front of the first model.
    private func makeStages(_ chain: ProcessingChain, live: Bool, sink: FrameSink, writer: HoldingWriter) -> [Stage<JobItem>] {
        let offlineQueue = QueuePolicy.backpressure(capacity: 3)
        var stages: [Stage<JobItem>] = []
        var firstModel = true
        let lastStateful = chain.lastStateful
        let stop = events.shouldStop
        for group in chain.stageGroups {
            let isModel = group.processors.contains { $0.runsModel }
            let policy = live && isModel && firstModel ? QueuePolicy.newestOnly : offlineQueue
            if isModel { firstModel = false }
            let runner = ProcessingChain.runner(group.processors, lastStateful: lastStateful)
            stages.append(Stage(name: group.name, inputPolicy: policy, process: { item in
                guard case .frame(let frame) = item else { return [item] }
                // After a signal the frames still queued are not run through the models: only
                // what is needed to close a playable file is done (issue 33: the first signal
                // took 9–32 s while queued frames went through a slow model).
                if isModel && stop() { return [] }
                return try runner.pass([frame]).map { .frame($0) }
            }, flush: {
                try runner.flush().map { .frame($0) }
            }))
        }
        let progress = events.progress
        stages.append(Stage(name: "encode", inputPolicy: offlineQueue) { item in
            switch item {
            case .packet(let p): try sink.copy(p)
            case .frame(let frame):
                if frame.isWarmUp { return [] }
                try writer.write(frame)
                progress(writer.framesWritten)
            }
            return []
        })
        return stages
    }

    /// Runs the pipeline and puts the output in place: at the target when the run is complete
    /// (or interrupted on purpose), beside it as NAME.incomplete.EXT when frames were saved
    /// before a failure, nowhere when none were.
    private func drive(_ pipeline: Pipeline<JobItem>, output: JobOutput, source: FrameSource, video: VideoStreamInfo,
                       timestamps: TimestampLog, tracer: FrameTracer, warnings: WarningLog) throws -> JobResult {
        let c = configuration
        let stop = events.shouldStop
        let writer = output.writer
        // Whether a signal stopped the job short: one that came once every frame of a segment
        // was written stopped nothing (the segment is finished, and recorded as done).
        let segment = self.segment
        func interrupted() -> Bool { stop() && (segment.map { $0.frames != writer.framesWritten } ?? true) }
        do {
            if sequential { try pipeline.runSequentially() } else { try pipeline.run() }
            if segment != nil, interrupted() {
                // An interrupted segment is not finished: it is kept playable beside its name
                // (a resumable run joins it into the interrupted output) and redone next time.
                _ = try output.finalize(failed: true, frames: timestamps.count)
                return JobResult(framesIn: timestamps.count, framesOut: writer.framesWritten, corrupt: source.corruptCount,
                                 interrupted: true, warnings: warnings.all, dropped: 0, report: tracer.report())
            }
        } catch let error as MediaError where stop() && error.kind == .corruptInput && writer.framesWritten > 0 {
            // A signal cut the input mid-frame while it waited: an interrupted run, not damage.
            _ = error
        } catch let error as MediaError where error.kind == .corruptInput && writer.framesWritten > 0 {
            // Damaged input after some frames: keep them, without replacing an existing output.
            let kept = try output.finalize(failed: true, frames: timestamps.count)
            throw PartialOutputError(underlying: error, framesWritten: writer.framesWritten, output: kept)
        } catch {
            output.partial?.discard()
            throw error
        }
        // Interrupted before any frame: nothing to keep, and nothing is left behind.
        if timestamps.count == 0 && stop() {
            output.partial?.discard()
            throw MediaError(.interrupted, "Interrupted before the first frame of \(c.input.displayName); nothing was written.")
        }
        // An input with no frames is an error, not an empty output that looks like success.
        if timestamps.count == 0 && !stop() {
            output.partial?.discard()
            throw MediaError(.corruptInput, "\(c.input.displayName) has a video stream with no frames; nothing was written. Check the source.")
        }
        // `-y` replaces an existing output with a complete one only: an interrupted run keeps
        // its frames beside a file that was there (NAME.incomplete.EXT) and leaves the file.
        let besideExisting = interrupted() && output.partial.map { FileManager.default.fileExists(atPath: $0.target.path) } == true
        let savedAt: String
        do {
            savedAt = try output.finalize(failed: besideExisting, frames: timestamps.count)
        } catch {
            output.partial?.discard()
            throw error
        }
        let report = tracer.report()
        // A file that ends early (truncated in a copy or download) decodes without an error:
        // said, with the count its header declares.
        // An MP4 cut by stream copy counts in its header the frames its edit list hides (the GOP
        // before the cut), which are never shown: its duration at its rate then holds what was
        // read, and it is not called damaged.
        let nominal = video.frameRate.doubleValue
        let shown = video.duration.flatMap { d in d > 0 && nominal > 0 ? Int((d * nominal).rounded(.down)) : nil }
        if let stored = video.frameCount, segment == nil, c.run.maxFrames == nil, !stop(), timestamps.count + 1 < stored,
           shown.map({ timestamps.count + 1 < $0 }) ?? true {
            warnings.add("'\(c.input.path)' ended after \(timestamps.count) of the \(stored) frames its header declares: the file is truncated or damaged. Check the source (the frames read were processed).")
        }
        let damagedCopies = (output.sink as? MediaWriter)?.damagedCopies ?? 0
        return JobResult(framesIn: timestamps.count, framesOut: writer.framesWritten, corrupt: source.corruptCount + damagedCopies,
                         interrupted: interrupted(), warnings: warnings.all, dropped: report.framesDropped, report: report,
                         keptBeside: besideExisting ? savedAt : nil)
    }

    /// What the last run was, for the stats file: input, output, each model with the SHA-256
    /// of its files (hashed now, so only when asked), and every setting: the configuration's,
    /// and how the run was asked to go in segments (`segmentSeconds`, `resume`: `Vivify.run`'s
    /// own, outside the configuration; nil when not given), and `onePassFor`, the options that
    /// made it run in one pass whatever `segmentSeconds` says (`--stats` among them).
    package func runDescription(segmentSeconds: Double? = nil, resume: Bool? = nil, onePassFor: [String] = []) throws -> RunDescription {
        let c = configuration
        var models: [RunDescription.Model] = []
        for case let p as ModelStage in lastChain?.processors ?? [] {
            var hashes: [String: String] = [:]
            for f in p.modelFiles {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: f, isDirectory: &isDirectory) else { continue }
                let url = URL(fileURLWithPath: f)
                hashes[f] = isDirectory.boolValue ? try SHA256.treeDigest(directoryAt: url).digest.hex : try SHA256.hash(fileAt: url).hex
            }
            models.append(RunDescription.Model(task: p.name, name: p.modelName, files: hashes, backend: c.run.backend.rawValue,
                                               precision: p.computePrecision))
        }
        // References, keyframes and the hints picture, with their SHA-256 like the models'.
        for (task, path) in c.stages.compactMap(\.colourGuide).flatMap(\.pictures) {
            models.append(RunDescription.Model(task: task, name: path, files: [path: try SHA256.hash(fileAt: URL(fileURLWithPath: path)).hex]))
        }
        var settings: [String: String] = [
            "mode": c.run.mode.rawValue, "live_output": c.run.liveOutput.rawValue, "realtime": String(c.run.realtime),
            "codec": c.output.encoder.encoderName, "backend": c.run.backend.rawValue, "strict": String(c.input.strict),
            "copy_audio_and_subtitles": String(c.output.copyAudioAndSubtitles), "existing_output": c.output.existing.rawValue,
            "threads": String(c.limits.threadCount), "max_pixels": String(c.limits.pixelLimit),
            "max_memory": String(c.limits.maxMemory == nil ? c.run.backend.standardTileMemoryBudget() : c.limits.memoryBudget),
            "pooling": c.limits.wholePicturePooling == true ? "whole" : "tile",
            // Per model stage: the cores shared out between stages that run at once.
            "stage_threads": String(sequential ? c.limits.threadCount : c.modelCompute.threads),
            "sequential": String(sequential),
        ]
        // As asked (`--precision`), on every backend; each model's entry says what it ran in
        // (the reference backend: fp32, with a note when anything else was asked).
        settings["precision"] = c.limits.precisionChoice.rawValue
        // Each stage's own settings (the stabilizer, tiles, resize, …).
        settings.merge(c.stages.statsSettings) { general, _ in general }
        let optional: [(String, String?)] = [
            ("crf", c.output.encoder.crf.map { String($0) }), ("preset", c.output.encoder.preset), ("pix_fmt", c.output.encoder.pixelFormat),
            ("max_frames", c.run.maxFrames.map(String.init)),
            ("target_fps", c.run.targetFPS.map { String($0) }), ("assume_matrix", c.input.assumeMatrix),
            ("input_format", c.input.format?.rawValue), ("output_format", c.output.format?.rawValue),
            ("size", c.input.rawSize?.description), ("rate", c.input.rawRate.map { "\($0.num)/\($0.den)" }),
            ("timeout", c.input.networkTimeout.map { String($0) }), ("custom_layers", c.limits.customLayers),
            ("segment_seconds", segmentSeconds.map { String($0) }), ("resume", resume.map { String($0) }),
            // `segment_seconds` is the option as given; a run these options kept in one pass
            // made no segments, which this says.
            ("one_pass_for", onePassFor.isEmpty ? nil : onePassFor.joined(separator: " ")),
        ]
        for (k, v) in optional { if let v { settings[k] = v } }
        return RunDescription(input: c.input.path, output: c.output.path, models: models, settings: settings)
    }

    private func makeSink(_ c: RunConfiguration, path: String, source: FrameSource, video: VideoStreamInfo, size: FrameSize,
                          resolvedColor: (info: ColorInfo, assumptions: [String]), warn: (String) -> Void) throws -> FrameSink {
        if c.output.discard { return NullSink() }
        switch c.output.effectiveFormat {
        case .y4m:
            var header: Y4MHeader
            // --pix-fmt is honoured; RGB frames (a model ran) otherwise become 4:2:0 when both
            // sides are even (what players and encoders downstream expect), 4:4:4 if not.
            let requested = c.output.encoder.pixelFormat.flatMap(PixelFormat.init(rawValue:)).flatMap { $0 == .rgb24 ? nil : $0 }
            if let y4m = source as? Y4MReader, video.pixelFormat == y4m.info.video.pixelFormat, requested == nil || requested == video.pixelFormat {
                header = y4m.header
                header.set("W", String(size.width))
                header.set("H", String(size.height))
            } else {
                let even = size.width % 2 == 0 && size.height % 2 == 0
                let format = requested ?? (video.pixelFormat == .rgb24 ? (even ? .yuv420p : .yuv444p) : video.pixelFormat)
                header = Y4MHeader(width: size.width, height: size.height, rate: video.frameRate,
                                   aspect: video.sampleAspectRatio, colorTag: Y4MHeader.colorTag(for: format)!,
                                   fullRange: video.color.hasRange ? video.color.isFullRange : nil)
                if video.isVariableFrameRate {
                    warn("y4m has a constant frame rate; the variable timestamps of '\(c.input.path)' are not kept (frames are written in order at \(video.frameRate) fps).")
                }
            }
            return try Y4MWriter(path: path, header: header)
        case .rgb24:
            return try RawVideoWriter(path: path, format: .rgb24)
        case .gray:
            return try RawVideoWriter(path: path, format: .gray)
        case nil:
            let out = OutputVideoDescription(pixelFormat: video.pixelFormat, width: size.width, height: size.height,
                                             frameRate: video.frameRate, timeBase: video.timeBase,
                                             sampleAspectRatio: video.sampleAspectRatio, color: resolvedColor.info,
                                             displayMatrix: video.displayMatrix)
            return try MediaWriter(path: path, targetName: c.output.path, video: out, settings: c.output.encoder,
                                   copyStreams: c.output.copyAudioAndSubtitles && segment == nil ? source.copyableStreams : [],
                                   headersFor: segment?.finalOutput)
        }
    }
}

/// The run's tracer, once made, for a closure handed out before it exists (the progress line's
/// dropped-frame count).
private final class TracerBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: FrameTracer?
    var tracer: FrameTracer? {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
