import Foundation
internal import Engine
internal import ModelCatalog
internal import MediaIO
internal import SafeFiles
import Models

/// The plan and state of a resumable segmented job, kept as `manifest.json` in its work
/// directory. Everything a worker needs is in it: the input's fingerprint, the run
/// configuration it rebuilds its run from, the segments with their frame ranges and timestamps, and each finished
/// segment's frame count and SHA-256.
package struct SegmentManifest: Codable, Sendable, Equatable {
    /// What identifies an input file without reading all of it.
    package struct Fingerprint: Codable, Sendable, Equatable {
        /// Absolute path.
        package var path: String
        /// Size in bytes.
        package var size: Int64
        /// Modification time, seconds since 1970.
        package var mtime: Double
        /// SHA-256 of the first MiB.
        package var headSHA256: String
        /// SHA-256 of the last MiB.
        package var tailSHA256: String

        /// Fingerprints the file at `path`.
        package static func of(_ path: String) throws -> Fingerprint {
            let url = URL(fileURLWithPath: path).standardizedFileURL
            var st = stat()
            guard stat(url.path, &st) == 0 else {
                throw MediaError(.inputUnreadable, "Cannot open '\(path)': \(String(cString: strerror(errno))). Check the path.")
            }
            let size = Int64(st.st_size)
            let mtime = Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
            guard let handle = FileHandle(forReadingAtPath: url.path) else {
                throw MediaError(.inputUnreadable, "Cannot read '\(path)'. Check its permissions.")
            }
            defer { try? handle.close() }
            let chunk = 1 << 20
            let head = try handle.read(upToCount: chunk) ?? Data()
            try handle.seek(toOffset: UInt64(max(0, size - Int64(chunk))))
            let tail = try handle.readToEnd() ?? Data()
            var h = SHA256(), t = SHA256()
            h.update(head)
            t.update(tail)
            return Fingerprint(path: url.path, size: size, mtime: mtime, headSHA256: h.finalize().hex, tailSHA256: t.finalize().hex)
        }

        /// Why `other` is not the same input, nil when it is.
        package func difference(to other: Fingerprint) -> String? {
            if path != other.path { return "the input is now '\(other.path)' (was '\(path)')" }
            if size != other.size { return "the input's size changed (\(size) → \(other.size) bytes)" }
            if mtime != other.mtime { return "the input was modified since the segments were made" }
            if headSHA256 != other.headSHA256 || tailSHA256 != other.tailSHA256 { return "the input's content changed" }
            return nil
        }
    }

    /// The file name of segment `index` in the work directory.
    package static func segmentFileName(_ index: Int) -> String { String(format: "segment-%04d.nut", index) }

    /// What is wrong with the segment list as read from a file (nil when nothing): each
    /// segment's index is its position and its file the name that index gives (a `file` of
    /// `../../x` wrote outside the work directory), with counts that make sense.
    package var segmentProblem: String? {
        guard !segments.isEmpty, segments.count <= 1_000_000 else { return "it lists \(segments.count) segments" }
        guard (0...100_000).contains(warmUpFrames) else { return "warmUpFrames \(warmUpFrames) is out of range" }
        // Frame counts are summed and compared: bounded so that no sum overflows.
        let frames = 0...Self.maxFrames
        for (i, s) in segments.enumerated() {
            guard s.index == i else { return "segment \(i) says it is segment \(s.index)" }
            guard s.file == Self.segmentFileName(i) else { return "segment \(i)'s file is '\(s.file)', not '\(Self.segmentFileName(i))'" }
            guard frames.contains(s.firstFrame), frames.contains(s.frames) else { return "segment \(i) has \(s.frames) frames from \(s.firstFrame)" }
            if let done = s.done, !frames.contains(done.frames) || done.bytes < 0 {
                return "segment \(i) is done with \(done.frames) frames in \(done.bytes) bytes"
            }
        }
        guard frames.contains(totalFrames) else { return "totalFrames is \(totalFrames)" }
        // The segments tile the job's frames, one after another from the first: a segment
        // removed (or a count changed) would join a shorter video with exit 0.
        var next = segments[0].firstFrame
        for (i, s) in segments.enumerated() {
            guard s.firstFrame == next else { return "segment \(i) starts at frame \(s.firstFrame), but the segments before it end at \(next)" }
            next += s.frames
        }
        guard next - segments[0].firstFrame == totalFrames else {
            return "its segments hold \(next - segments[0].firstFrame) frames, but totalFrames is \(totalFrames)"
        }
        if let problem = tags.problem { return problem }
        if let span = videoSpan, span.count != 2 || !span.allSatisfy(\.isFinite) || span[0] > span[1] {
            return "videoSpan \(span) is not a start and an end in order"
        }
        return nil
    }

    /// The most frames a manifest may count (per segment, in all): far beyond any video.
    static let maxFrames = 1 << 40

    /// What a job was planned as: the run configuration every worker rebuilds its run from
    /// (so every setting and limit of the plan is honoured), and what the plan found.
    ///
    /// Manifests of layout version 1 (vivify 0.13.0 and before) kept every setting as a flat
    /// field (`upscale`, `codec`, `maxPixels`, …), and those of version 2 the stages as named
    /// fields (`StageSettingsV2`: `colorize`, `upscale`, `colorizeAfter`, `filters`, …) rather
    /// than their list; both are read into the same value and written back in this layout.
    package struct Settings: Codable, Sendable, Equatable {
        /// The vivify version that planned the job.
        package var vivifyVersion: String
        /// The run as planned: absolute paths, the backend it chose, and the limits it was
        /// planned under (the pixel limit, the memory budget when given, the precision
        /// the upscaler computes in, the custom layer library). Threads are each worker's own;
        /// no reports, no network timeout (a segmented job reads a file), no overwrite (only
        /// `join -y` grants one).
        package var configuration: RunConfiguration
        /// SHA-256 of each model's files ("colorize vivify-color" → digest), of the guide's
        /// pictures ("reference PATH"), and of the custom layer library ("custom layers").
        package var models: [String: String]
        /// The upscaler's int8 calibration (JSON; `--precision int8`), taken on the input's
        /// first frame when the job was planned, so that every segment quantises alike.
        package var int8Calibration: String?
        /// Whether the plan was made with -y; not a setting, and never a grant (`join -y` is).
        package var replaceExistingOutput: Bool?

        private enum CodingKeys: String, CodingKey {
            case vivifyVersion, configuration, models, int8Calibration, replaceExistingOutput
        }

        /// The settings of `c` as planned now (its limits as the models run them, absolute
        /// paths), with the loaded models' digests.
        package init(_ c: RunConfiguration, models: [String: String]) {
            var planned = c
            let chosen = (try? c.run.backend.resolved()) ?? c.run.backend
            planned.run.backend = chosen
            let choice = c.limits.precisionChoice
            planned.limits = RunLimits(maxPixels: c.limits.pixelLimit,
                                       maxMemory: c.limits.maxMemory.map { max($0, TiledRunner.smallestMemoryBudget) },
                                       precision: chosen == .onednn ? PrecisionChoice(rawValue: choice.precision(measured: false).rawValue) ?? .fp32
                                           // On Vulkan `auto` decides per model (fp16 for a
                                           // catalog upscaler on a GPU, fp32 for the colorizer):
                                           // every worker decides alike on its device.
                                           : chosen == .vulkan ? (choice == .auto ? .auto : PrecisionChoice(rawValue: BackendChoice.vulkanStorage(under: choice)) ?? .fp32) : .fp32)
            planned.limits.customLayers = c.limits.customLayers
            planned.limits.wholePicturePooling = c.limits.wholePicturePooling == true ? true : nil
            // What `auto` stores catalog upscalers in on the planner's device, which every
            // worker then stores alike (a mixed fleet would join fp16 and fp32 segments).
            if chosen == .vulkan && choice == .auto {
                planned.limits.vulkanAutoStorage = c.limits.vulkanAutoStorage ?? BackendChoice.vulkanAutomaticStorage()
            }
            self.init(planned: planned, models: models)
        }

        /// `planned` in the form a manifest keeps: absolute paths (workers may run elsewhere
        /// in the tree), and nothing that is each worker's own or no setting of the job.
        init(planned: RunConfiguration, models: [String: String], version: String = VivifyVersion.number) {
            var c = planned
            let absolute = { (p: String) in URL(fileURLWithPath: p).standardizedFileURL.path }
            c.input.path = absolute(c.input.path)
            c.input.networkTimeout = nil
            c.input.synthetic = nil
            c.output.path = absolute(c.output.path)
            c.output.existing = .refuse
            c.output.reports = TraceOutputs()
            c.output.discard = false
            c.run.targetFPS = nil
            c.limits.threads = nil
            c.limits.customLayers = c.limits.customLayers.map(absolute)
            c.stages = c.stages.map { $0.planned(absolute: absolute) }
            vivifyVersion = version
            configuration = c
            self.models = models
        }

        /// Reads the settings of this version, the named stages of version 2, or the flat
        /// settings of version 1.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.configuration) else {
                self = try LegacySettings(from: decoder).settings
                return
            }
            vivifyVersion = try container.decode(String.self, forKey: .vivifyVersion)
            // Version 3 lists the stages; version 2 named them (an object, not a list).
            let stages = try container.nestedContainer(keyedBy: ConfigurationKeys.self, forKey: .configuration)
            if (try? stages.nestedUnkeyedContainer(forKey: .stages)) != nil {
                configuration = try container.decode(RunConfiguration.self, forKey: .configuration)
            } else {
                configuration = try container.decode(ConfigurationV2.self, forKey: .configuration).configuration
            }
            models = try container.decode([String: String].self, forKey: .models)
            int8Calibration = try container.decodeIfPresent(String.self, forKey: .int8Calibration)
            replaceExistingOutput = try container.decodeIfPresent(Bool.self, forKey: .replaceExistingOutput)
        }

        /// The input, absolute.
        package var input: String { configuration.input.path }
        /// The output the segments are joined into, absolute.
        package var output: String { configuration.output.path }
        /// The limits the job was planned under, which every `work` and the join run under.
        package var limits: RunLimits { configuration.limits }

        /// The settings that differ from `other`, as "name old → new", empty when none.
        package func differences(to other: Settings) -> [String] {
            var a = self, b = other
            a.replaceExistingOutput = nil
            b.replaceExistingOutput = nil
            let mine = Self.fields(a), theirs = Self.fields(b)
            return Set(mine.keys).union(theirs.keys).sorted().compactMap { k in mine[k] == theirs[k] ? nil : "\(k) \(mine[k] ?? "none") → \(theirs[k] ?? "none")" }
        }

        /// Every leaf of the settings as JSON, by its path ("configuration.stages.resize.width",
        /// "configuration.stages.filters[0].model"): compared leaf by leaf, since a dictionary's
        /// description lists its keys in no fixed order.
        private static func fields(_ s: Settings) -> [String: String] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            guard let data = try? encoder.encode(s), let object = try? JSONSerialization.jsonObject(with: data) else { return [:] }
            var out: [String: String] = [:]
            func walk(_ value: Any, _ path: String) {
                if let d = value as? [String: Any] {
                    for (k, v) in d { walk(v, path.isEmpty ? k : "\(path).\(k)") }
                } else if let a = value as? [Any] {
                    out[path + ".count"] = String(a.count)
                    for (i, v) in a.enumerated() { walk(v, "\(path)[\(i)]") }
                } else {
                    out[path] = "\(value)"
                }
            }
            walk(object, "")
            return out
        }
    }

    /// The keys of a configuration that tell its layout apart.
    private enum ConfigurationKeys: String, CodingKey {
        case stages
    }

    /// A run configuration as manifests of layout version 2 wrote it: the stages as named
    /// fields.
    struct ConfigurationV2: Decodable {
        var input: InputSettings
        var stages: StageSettingsV2
        var output: OutputSettings
        var run: RunSettings
        var limits: RunLimits

        /// The same run with its stages listed.
        var configuration: RunConfiguration {
            var c = RunConfiguration(input: input.path, output: output.path)
            (c.input, c.output, c.run, c.limits) = (input, output, run, limits)
            c.stages = stages.list
            return c
        }
    }

    /// The stages as manifests of layout version 2 (and, as flat fields, version 1) named
    /// them: at most one colorizer and one upscaler, ordered by `colorizeAfter`, one tile size
    /// for every model, filters placed among them, then resize.
    struct StageSettingsV2: Decodable {
        var colorize: String?
        var upscale: String?
        var tile: Int?
        var colorizeAfter = false
        var stabilize = true
        var anchorShots = true
        var saturation: Float = 1
        var colourGuide = ColourGuideSpec()
        var filters: [FilterStage] = []
        var resize: FrameSize?

        init() {}

        init(from decoder: any Decoder) throws {
            let c = try decoder.container(keyedBy: Keys.self)
            colorize = try c.decodeIfPresent(String.self, forKey: .colorize)
            upscale = try c.decodeIfPresent(String.self, forKey: .upscale)
            tile = try c.decodeIfPresent(Int.self, forKey: .tile)
            colorizeAfter = try c.decodeIfPresent(Bool.self, forKey: .colorizeAfter) ?? false
            stabilize = try c.decodeIfPresent(Bool.self, forKey: .stabilize) ?? true
            anchorShots = try c.decodeIfPresent(Bool.self, forKey: .anchorShots) ?? true
            saturation = try c.decodeIfPresent(Float.self, forKey: .saturation) ?? 1
            colourGuide = try c.decodeIfPresent(ColourGuideSpec.self, forKey: .colourGuide) ?? ColourGuideSpec()
            filters = try c.decodeIfPresent([FilterStage].self, forKey: .filters) ?? []
            resize = try c.decodeIfPresent(FrameSize.self, forKey: .resize)
        }

        private enum Keys: String, CodingKey {
            case colorize, upscale, tile, colorizeAfter, stabilize, anchorShots, saturation, colourGuide, filters, resize
        }

        /// The stages in the order those versions ran them: colorize then upscale (the
        /// reverse with `colorizeAfter`), each filter after the first `after` of them, then resize.
        var list: [StageSpec] {
            var models: [StageSpec] = []
            if let colorize {
                models.append(.colorize(model: colorize, stabilize: stabilize, saturation: saturation, guide: colourGuide, anchorShots: anchorShots))
            }
            if let upscale {
                let step = StageSpec.upscale(model: upscale, tile: tile)
                if colorizeAfter { models.insert(step, at: 0) } else { models.append(step) }
            }
            var stages = FilterStage.place(filters, among: models, tile: tile)
            if let resize { stages.append(.resize(size: resize)) }
            return stages
        }
    }

    /// The settings as manifests of layout version 1 wrote them: every setting a flat
    /// field, the limits in force as `maxPixels`, `maxMemory` and `precision`.
    struct LegacySettings: Decodable {
        var vivifyVersion: String
        var input: String
        var output: String
        var upscale: String?
        var tile: Int?
        var backend: String
        /// nil in manifests of versions before `--precision` (fp32).
        var precision: String?
        var int8Calibration: String?
        var colorize: String?
        var colorizeAfter: Bool
        /// nil when there are none (and in manifests of versions before them).
        var filters: [FilterStage]?
        var stabilize: Bool
        /// nil in manifests of versions before shot anchors (off).
        var anchorShots: Bool?
        var saturation: Float
        /// nil in manifests of versions before guides.
        var colourGuide: ColourGuideSpec?
        var resize: String?
        var codec: String
        var crf: Double?
        var preset: String?
        var pixelFormat: String?
        var copyAudioAndSubtitles: Bool
        var strict: Bool
        var assumeMatrix: String?
        var maxFrames: Int?
        var maxPixels: Int
        /// nil without `--max-memory` and in manifests from before it was recorded.
        var maxMemory: Int?
        var models: [String: String]
        var customLayers: String?
        var replaceExistingOutput: Bool?

        /// The same job in this version's layout. A precision that is missing (manifests from
        /// before `--precision`, the reference backend) or unknown is fp32, as those versions
        /// ran it; a backend this version does not know is oneDNN.
        var settings: Settings {
            var c = RunConfiguration(input: input, output: output)
            var stages = StageSettingsV2()
            stages.upscale = upscale
            stages.tile = tile
            stages.colorize = colorize
            stages.colorizeAfter = colorizeAfter
            stages.filters = filters ?? []
            stages.stabilize = stabilize
            stages.anchorShots = anchorShots ?? false
            stages.saturation = saturation
            stages.colourGuide = colourGuide ?? ColourGuideSpec()
            stages.resize = resize.flatMap(FrameSize.init(parsing:))
            c.stages = stages.list
            c.run.backend = BackendChoice(rawValue: backend) ?? .onednn
            c.output.encoder = EncoderSettings(codec: codec, crf: crf, preset: preset, pixelFormat: pixelFormat)
            c.output.copyAudioAndSubtitles = copyAudioAndSubtitles
            c.input.strict = strict
            c.input.assumeMatrix = assumeMatrix
            c.run.maxFrames = maxFrames
            c.limits = RunLimits(maxPixels: maxPixels, maxMemory: maxMemory,
                                 precision: precision.flatMap(PrecisionChoice.init(rawValue:)) ?? .fp32)
            c.limits.customLayers = customLayers
            // Stored as they were (already absolute when planned).
            var s = Settings(planned: c, models: models, version: vivifyVersion)
            s.configuration.input.path = input
            s.configuration.output.path = output
            // Filters' models as stored; the guide's pictures made absolute, as before.
            s.configuration.stages = zip(s.configuration.stages, c.stages).map { planned, stored in
                if case .filter = stored { return stored }
                return planned
            }
            s.int8Calibration = int8Calibration
            s.replaceExistingOutput = replaceExistingOutput
            return s
        }
    }

    /// One segment: a run of frames by presentation timestamp.
    package struct Segment: Codable, Sendable, Equatable {
        /// Position in the job (0-based; `vivify work --index`).
        package var index: Int
        /// The segment's file in the work directory.
        package var file: String
        /// Index of its first frame in the whole input.
        package var firstFrame: Int
        /// Frames it covers (by the input's index).
        package var frames: Int
        /// Timestamp of its first frame (the video stream's time base).
        package var startPTS: Int64
        /// Timestamp of the next segment's first frame; nil for the last.
        package var endPTS: Int64?
        /// Timestamp of the first warm-up frame (processed, not written).
        package var warmUpPTS: Int64
        /// Keyframes at or before the warm-up, latest first (where decoding may start).
        package var seekCandidates: [Int64]
        /// Start, seconds.
        package var startSeconds: Double
        /// End (the next segment's start, or the last frame's end), seconds.
        package var endSeconds: Double
        /// Where the shot of the first frame processed began (frame number and seconds from
        /// the input's first frame), when the plan scanned for shots: keyframes and hints
        /// carry through a shot, so a segment starting mid-shot must know it.
        package var shotStartFrame: Int? = nil
        package var shotStartSeconds: Double? = nil
        /// Set once the segment file is complete.
        package var done: Done?
        /// The last failure's message, when a worker failed on it.
        package var failed: String?
        /// The exit code that worker gave (absent in manifests from before it was recorded).
        /// 64, 65, 66 and 69 do not change by running the worker again: `join` reports them
        /// instead of waiting (75).
        package var failedExit: Int32? = nil
    }

    /// A finished segment.
    package struct Done: Codable, Sendable, Equatable {
        /// Frames written.
        package var frames: Int
        /// SHA-256 of the segment file.
        package var sha256: String
        /// Size in bytes.
        package var bytes: Int64
    }

    /// An output an interrupted run wrote (the finished segments so far), which the resumed
    /// run may replace without -y.
    package struct OutputIdentity: Codable, Sendable, Equatable {
        package var size: Int64
        package var mtime: Double
        package var inode: UInt64

        /// The identity of the file at `path`, nil when there is none.
        package static func of(_ path: String) -> OutputIdentity? {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            return OutputIdentity(size: Int64(st.st_size), mtime: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9,
                                  inode: UInt64(st.st_ino))
        }
    }

    /// How the joined video stream is tagged (what the unsegmented writer writes).
    package struct Tags: Codable, Sendable, Equatable {
        package var frameRate: [Int]
        package var sampleAspectRatio: [Int]
        /// Primaries, transfer, matrix, range (FFmpeg codes).
        package var color: [Int32]
        package var displayMatrix: [Int32]?
        /// The encoder's time base.
        package var timeBase: [Int]

        /// What is wrong with the tags as read from a file (nil when nothing): the join reads
        /// them as rationals and FFmpeg codes.
        var problem: String? {
            guard frameRate.count == 2, sampleAspectRatio.count == 2, timeBase.count == 2, color.count == 4 else {
                return "its tags have \(frameRate.count), \(sampleAspectRatio.count) and \(timeBase.count) numbers for the frame rate, aspect ratio and time base (2 each) and \(color.count) colour codes (4)"
            }
            guard frameRate[0] > 0, frameRate[1] > 0, timeBase[0] > 0, timeBase[1] > 0, sampleAspectRatio[0] >= 0, sampleAspectRatio[1] > 0 else {
                return "its tags' frame rate \(frameRate), time base \(timeBase) or aspect ratio \(sampleAspectRatio) is not a positive fraction"
            }
            guard color.allSatisfy({ (0...1023).contains($0) }) else { return "its colour codes \(color) are not FFmpeg's" }
            if let displayMatrix, displayMatrix.count != 9 { return "its display matrix has \(displayMatrix.count) numbers, not 9" }
            return nil
        }

        var joinerTags: SegmentJoiner.VideoTags {
            SegmentJoiner.VideoTags(frameRate: Rational(frameRate[0], frameRate[1]),
                                    sampleAspectRatio: Rational(sampleAspectRatio[0], sampleAspectRatio[1]),
                                    color: ColorInfo(primaries: color[0], transfer: color[1], matrix: color[2], range: color[3]),
                                    displayMatrix: displayMatrix, timeBase: Rational(timeBase[0], timeBase[1]))
        }
    }

    /// "vivify-segments".
    package var format = "vivify-segments"
    /// Layout version of this file: 3 keeps the settings as a `RunConfiguration` with its
    /// stages as a list; 2 (read too) named the stages, 1 (read too) kept every setting as a
    /// flat field.
    package var version = Self.currentVersion
    /// The layout this version writes.
    package static let currentVersion = 3
    /// The input.
    package var input: Fingerprint
    /// The settings.
    package var settings: Settings
    /// The segment length asked for, seconds.
    package var segmentSeconds: Double
    /// Time base of every timestamp here, "num/den".
    package var timeBase: String
    /// Frames in the whole job.
    package var totalFrames: Int
    /// Frames decoded before each segment (after the first) to warm up stateful stages.
    package var warmUpFrames: Int
    /// The joined stream's tags.
    package var tags: Tags
    /// With --max-frames: the seconds the video spans (audio and subtitles are trimmed to it).
    package var videoSpan: [Double]?
    /// The segments, in order.
    package var segments: [Segment]
    /// What an interrupted run left at the output.
    package var interruptedOutput: OutputIdentity?
    /// What an interrupted run left beside an output that was there before it
    /// (NAME.incomplete.EXT): removed by the join that completes the job, if still that file.
    package var besideOutput: OutputIdentity?
    /// Where shots start, seconds from the input's first frame, up to the first after the last
    /// keyframe (keyframes and hints given): every worker tells by them, as one run does,
    /// whether a cut lies between a frame and a keyframe.
    package var shotStarts: [Double]? = nil

    /// Frames in finished segments.
    package var framesDone: Int { segments.reduce(0) { $0 + ($1.done?.frames ?? 0) } }
}
