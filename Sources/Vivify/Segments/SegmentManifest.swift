import Foundation
internal import Engine
internal import ModelCatalog
public import MediaIO
public import SafeFiles

/// The plan and state of a resumable segmented job, kept as `manifest.json` in its work
/// directory. Everything a worker needs is in it: the input's fingerprint, every setting that
/// changes pixels, the segments with their frame ranges and timestamps, and each finished
/// segment's frame count and SHA-256.
public struct SegmentManifest: Codable, Sendable, Equatable {
    /// What identifies an input file without reading all of it.
    public struct Fingerprint: Codable, Sendable, Equatable {
        /// Absolute path.
        public var path: String
        /// Size in bytes.
        public var size: Int64
        /// Modification time, seconds since 1970.
        public var mtime: Double
        /// SHA-256 of the first MiB.
        public var headSHA256: String
        /// SHA-256 of the last MiB.
        public var tailSHA256: String

        /// Fingerprints the file at `path`.
        public static func of(_ path: String) throws -> Fingerprint {
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
        public func difference(to other: Fingerprint) -> String? {
            if path != other.path { return "the input is now '\(other.path)' (was '\(path)')" }
            if size != other.size { return "the input's size changed (\(size) → \(other.size) bytes)" }
            if mtime != other.mtime { return "the input was modified since the segments were made" }
            if headSHA256 != other.headSHA256 || tailSHA256 != other.tailSHA256 { return "the input's content changed" }
            return nil
        }
    }

    /// The file name of segment `index` in the work directory.
    public static func segmentFileName(_ index: Int) -> String { String(format: "segment-%04d.nut", index) }

    /// What is wrong with the segment list as read from a file (nil when nothing): each
    /// segment's index is its position and its file the name that index gives (a `file` of
    /// `../../x` wrote outside the work directory), with counts that make sense.
    public var segmentProblem: String? {
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
        if let problem = tags.problem { return problem }
        if let span = videoSpan, span.count != 2 || !span.allSatisfy(\.isFinite) || span[0] > span[1] {
            return "videoSpan \(span) is not a start and an end in order"
        }
        return nil
    }

    /// The most frames a manifest may count (per segment, in all): far beyond any video.
    static let maxFrames = 1 << 40

    /// Every setting that changes the output's pixels or packets (and how to rebuild the run).
    public struct Settings: Codable, Sendable, Equatable {
        public var vivifyVersion: String
        public var input: String
        public var output: String
        public var upscale: String?
        public var tile: Int?
        public var backend: String
        /// The oneDNN convolutions' number format ("fp32", "bf16"); nil in manifests of
        /// versions before `--precision` (fp32).
        public var precision: String?
        /// The upscaler's int8 calibration (JSON; `--precision int8`), taken on the input's
        /// first frame when the job was planned, so that every segment quantises alike.
        public var int8Calibration: String?
        public var colorize: String?
        public var colorizeAfter: Bool
        /// The `--filter` stages with their strengths and places; nil when there are none
        /// (and in manifests of versions before them).
        public var filters: [FilterStage]?
        public var stabilize: Bool
        /// Shot anchors (with the stabilizer); nil in manifests of versions before them (off).
        public var anchorShots: Bool?
        public var saturation: Float
        /// References, keyframes and hints (absolute paths; their digests are in `models`);
        /// nil in manifests of versions before them.
        public var colourGuide: ColourGuideSpec?
        public var resize: String?
        public var codec: String
        public var crf: Double?
        public var preset: String?
        public var pixelFormat: String?
        public var copyAudioAndSubtitles: Bool
        public var strict: Bool
        public var assumeMatrix: String?
        public var maxFrames: Int?
        public var maxPixels: Int
        /// The tiles' memory budget when `--max-memory` was given (bytes); nil without it
        /// (the default budget and tile cap) and in manifests from before it was recorded.
        public var maxMemory: Int?
        /// SHA-256 of each model's files ("colorize vivify-color" → digest), and of the
        /// custom layer library ("custom layers PATH").
        public var models: [String: String]
        /// The compiled custom layer library (`--custom-layers`, absolute); nil without one.
        public var customLayers: String?
        /// Whether the join may replace an existing output (`plan -y`); not a pixel setting.
        public var replaceExistingOutput: Bool?

        /// The settings of `c` (absolute paths), with the loaded models' digests.
        public init(_ c: RunConfiguration, models: [String: String]) {
            vivifyVersion = VivifyVersion.number
            input = URL(fileURLWithPath: c.input).standardizedFileURL.path
            output = URL(fileURLWithPath: c.output).standardizedFileURL.path
            upscale = c.upscale
            tile = c.tile
            let chosen = (try? c.backend.resolved()) ?? c.backend
            backend = chosen.rawValue
            precision = chosen == .onednn ? PrecisionChoice.current : nil
            colorize = c.colorize
            colorizeAfter = c.colorizeAfter
            filters = c.filters.isEmpty ? nil : c.filters.map { FilterStage(model: Self.absoluteIfFile($0.model), strength: $0.strength, after: $0.after) }
            stabilize = c.stabilize
            anchorShots = c.anchorShots
            saturation = c.saturation
            if !c.colourGuide.isEmpty {
                var g = c.colourGuide
                let absolute = { (p: String) in URL(fileURLWithPath: p).standardizedFileURL.path }
                g.references = g.references.map(absolute)
                g.keyframes = g.keyframes.map { Keyframe(position: $0.position, file: absolute($0.file)) }
                g.hintsImage = g.hintsImage.map(absolute)
                colourGuide = g
            }
            resize = c.resize?.description
            codec = c.encoder.encoderName
            crf = c.encoder.crf
            preset = c.encoder.preset
            pixelFormat = c.encoder.pixelFormat
            copyAudioAndSubtitles = c.copyAudioAndSubtitles
            strict = c.strict
            assumeMatrix = c.assumeMatrix
            maxFrames = c.maxFrames
            maxPixels = MediaLimits.maxPixels
            maxMemory = TiledRunner.memoryBudgetGiven ? TiledRunner.defaultMemoryBudget : nil
            customLayers = c.limits.customLayers.map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            self.models = models
        }

        /// A model argument that names a file, as an absolute path (workers may run elsewhere
        /// in the tree); names of built-in and catalog models as they are.
        static func absoluteIfFile(_ model: String) -> String {
            FileManager.default.fileExists(atPath: model) ? URL(fileURLWithPath: model).standardizedFileURL.path : model
        }

        /// The limits the job was planned under, which every `work` and the join run under
        /// (`plan --max-pixels`, `--max-memory` and the precision the upscaler computed in):
        /// kept in the manifest as `maxPixels`, `maxMemory` and `precision`, where manifests
        /// of every version have them. A precision that is missing (manifests from before
        /// `--precision`, the reference backend) or unknown is fp32; threads and the network
        /// timeout are the worker's own.
        public var limits: RunLimits {
            var limits = RunLimits(maxPixels: maxPixels, maxMemory: maxMemory,
                                   precision: precision.flatMap(PrecisionChoice.init(rawValue:)) ?? .fp32)
            limits.customLayers = customLayers
            return limits
        }

        /// The run configuration these settings describe (offline, file to file).
        public func configuration(existing: ExistingOutput = .refuse) -> RunConfiguration {
            var c = RunConfiguration(input: input, output: output)
            c.upscale = upscale
            c.tile = tile
            c.backend = BackendChoice(rawValue: backend) ?? .onednn
            c.colorize = colorize
            c.colorizeAfter = colorizeAfter
            c.filters = filters ?? []
            c.stabilize = stabilize
            c.anchorShots = anchorShots ?? false
            c.saturation = saturation
            c.colourGuide = colourGuide ?? ColourGuideSpec()
            c.resize = resize.flatMap(FrameSize.init(parsing:))
            c.encoder = EncoderSettings(codec: codec, crf: crf, preset: preset, pixelFormat: pixelFormat)
            c.copyAudioAndSubtitles = copyAudioAndSubtitles
            c.strict = strict
            c.assumeMatrix = assumeMatrix
            c.maxFrames = maxFrames
            c.existingOutput = existing
            c.limits = limits
            return c
        }

        /// The settings that differ from `other`, as "name old → new", empty when none.
        public func differences(to other: Settings) -> [String] {
            var a = self, b = other
            a.replaceExistingOutput = nil
            b.replaceExistingOutput = nil
            let mine = Self.fields(a), theirs = Self.fields(b)
            return Set(mine.keys).union(theirs.keys).sorted().compactMap { k in mine[k] == theirs[k] ? nil : "\(k) \(mine[k] ?? "none") → \(theirs[k] ?? "none")" }
        }

        private static func fields(_ s: Settings) -> [String: String] {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            guard let data = try? encoder.encode(s),
                  let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
            var out: [String: String] = [:]
            for (k, v) in object {
                if let d = v as? [String: Any] {
                    for (mk, mv) in d { out["\(k).\(mk)"] = "\(mv)" }
                } else {
                    out[k] = "\(v)"
                }
            }
            return out
        }
    }

    /// One segment: a run of frames by presentation timestamp.
    public struct Segment: Codable, Sendable, Equatable {
        /// Position in the job (0-based; `vivify work --index`).
        public var index: Int
        /// The segment's file in the work directory.
        public var file: String
        /// Index of its first frame in the whole input.
        public var firstFrame: Int
        /// Frames it covers (by the input's index).
        public var frames: Int
        /// Timestamp of its first frame (the video stream's time base).
        public var startPTS: Int64
        /// Timestamp of the next segment's first frame; nil for the last.
        public var endPTS: Int64?
        /// Timestamp of the first warm-up frame (processed, not written).
        public var warmUpPTS: Int64
        /// Keyframes at or before the warm-up, latest first (where decoding may start).
        public var seekCandidates: [Int64]
        /// Start, seconds.
        public var startSeconds: Double
        /// End (the next segment's start, or the last frame's end), seconds.
        public var endSeconds: Double
        /// Set once the segment file is complete.
        public var done: Done?
        /// The last failure's message, when a worker failed on it.
        public var failed: String?
    }

    /// A finished segment.
    public struct Done: Codable, Sendable, Equatable {
        /// Frames written.
        public var frames: Int
        /// SHA-256 of the segment file.
        public var sha256: String
        /// Size in bytes.
        public var bytes: Int64
    }

    /// An output an interrupted run wrote (the finished segments so far), which the resumed
    /// run may replace without -y.
    public struct OutputIdentity: Codable, Sendable, Equatable {
        public var size: Int64
        public var mtime: Double
        public var inode: UInt64

        /// The identity of the file at `path`, nil when there is none.
        public static func of(_ path: String) -> OutputIdentity? {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            return OutputIdentity(size: Int64(st.st_size), mtime: Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9,
                                  inode: UInt64(st.st_ino))
        }
    }

    /// How the joined video stream is tagged (what the unsegmented writer writes).
    public struct Tags: Codable, Sendable, Equatable {
        public var frameRate: [Int]
        public var sampleAspectRatio: [Int]
        /// Primaries, transfer, matrix, range (FFmpeg codes).
        public var color: [Int32]
        public var displayMatrix: [Int32]?
        /// The encoder's time base.
        public var timeBase: [Int]

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
    public var format = "vivify-segments"
    /// Layout version of this file.
    public var version = 1
    /// The input.
    public var input: Fingerprint
    /// The settings.
    public var settings: Settings
    /// The segment length asked for, seconds.
    public var segmentSeconds: Double
    /// Time base of every timestamp here, "num/den".
    public var timeBase: String
    /// Frames in the whole job.
    public var totalFrames: Int
    /// Frames decoded before each segment (after the first) to warm up stateful stages.
    public var warmUpFrames: Int
    /// The joined stream's tags.
    public var tags: Tags
    /// With --max-frames: the seconds the video spans (audio and subtitles are trimmed to it).
    public var videoSpan: [Double]?
    /// The segments, in order.
    public var segments: [Segment]
    /// What an interrupted run left at the output.
    public var interruptedOutput: OutputIdentity?

    /// Frames in finished segments.
    public var framesDone: Int { segments.reduce(0) { $0 + ($1.done?.frames ?? 0) } }
}
