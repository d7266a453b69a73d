import Foundation
public import MediaIO
internal import ModelFormats
public import SafeFiles

/// A frame size in pixels, written `WxH` on the command line.
public struct FrameSize: Codable, Sendable, Equatable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// Makes a size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses "640x360"; nil unless both sides are positive integers.
    public init?(parsing text: String) {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0, w <= 16384, h <= 16384 else { return nil }
        self.init(width: w, height: h)
    }

    public var description: String { "\(width)x\(height)" }
}

/// How frames are laid out in a stream that is not a media container.
public enum StreamFormat: String, Codable, Sendable, CaseIterable {
    /// YUV4MPEG2: a header with size, rate and colour space, then frames. The default on pipes.
    case y4m
    /// Headerless packed RGB frames; needs --size and --rate on input.
    case rgb24
    /// Headerless 8-bit grey frames; needs --size and --rate on input.
    case gray
}

/// Everything a run needs to know, as one value in five groups. The CLI maps its flags onto
/// this and nothing else; the library reads every setting and limit from it; a segmented job
/// stores it in its manifest and every worker rebuilds its run from it.
///
///     input ──▶ stages (an ordered list: the only place their order is decided) ──▶ output
///     run:    the backend, offline or live, pacing, how many frames, the timing budget
///     limits: threads, pixels per frame, the tiles' memory, precision (read where they apply)
///
/// As JSON it holds every field but `input.synthetic` (a benchmark's generated input).
public struct RunConfiguration: Codable, Sendable, Equatable {
    /// Where frames come from and how to read them.
    public var input: InputSettings
    /// The stages, in the order frames go through them: which models run and how, resize.
    public var stages: [StageSpec]
    /// Where frames go and how they are written.
    public var output: OutputSettings
    /// How the run goes: backend, mode, pacing, frame count, timing budget.
    public var run: RunSettings
    /// Threads, pixel limit, memory budget and precision, read by the readers and models the
    /// run makes (nil fields are the library's defaults).
    public var limits: RunLimits

    /// A configuration with defaults: auto formats, libx264, audio copied, lenient, offline.
    public init(input: String, output: String) {
        self.input = InputSettings(path: input)
        stages = []
        self.output = OutputSettings(path: output)
        run = RunSettings()
        limits = RunLimits()
    }

    /// Every file a run reads besides its input: model files named by path (an ncnn `.param`
    /// with its `.bin` and `.json` beside it) and the colorizer's references, keyframes and
    /// hints picture. Reports may replace none of them.
    public var readFiles: [String] {
        var files: [String] = []
        for model in stages.compactMap(\.model) where FileManager.default.fileExists(atPath: model) {
            files.append(model)
            let stem = (model as NSString).deletingPathExtension
            if let weights = ModelFileFormat.weightsFile(beside: model) { files += [weights, stem + ".json"] }
        }
        return files + stages.compactMap(\.colourGuide).flatMap(\.files)
    }
}

/// The input of a run: a media file, a URL, standard input or a frame stream.
public struct InputSettings: Codable, Sendable, Equatable {
    /// Input path or URL, or "-" for standard input.
    public var path: String
    /// Frame layout when it is not a media file; nil decides from the name ("-" and ".y4m"
    /// are y4m, everything else goes to FFmpeg).
    public var format: StreamFormat?
    /// Frame size of raw input.
    public var rawSize: FrameSize?
    /// Frame rate of raw input.
    public var rawRate: Rational?
    /// YUV matrix to assume instead of the input's tag or the size rule (FFmpeg name).
    public var assumeMatrix: String?
    /// Make damaged input data fatal instead of skipping it.
    public var strict = false
    /// Seconds without data after which a network input ends (before its first packet:
    /// fails); nil is `NetworkURL.defaultTimeout`.
    public var networkTimeout: Double?
    /// Generate frames instead of reading `path` (`vivify bench`); not part of the JSON.
    public var synthetic: SyntheticInput?

    private enum CodingKeys: String, CodingKey {
        case path, format, rawSize, rawRate, assumeMatrix, strict, networkTimeout
    }

    /// An input read by its name's rule, lenient, with the default network timeout.
    public init(path: String) {
        self.path = path
    }

    /// The layout after applying the naming rule (nil: a media file or URL for FFmpeg).
    public var effectiveFormat: StreamFormat? {
        if let format { return format }
        if path == "-" || path.lowercased().hasSuffix(".y4m") { return .y4m }
        return nil
    }

    /// Whether `rate` is a frame rate a raw input may have (1/1000 to 1000 fps).
    package static func isPlausible(frameRate rate: Rational) -> Bool {
        MediaLimits.isPlausible(frameRate: rate)
    }

    /// How messages name the input: "standard input" or the quoted path.
    var displayName: String { path == "-" ? "standard input" : "'\(path)'" }
}

/// Frames a benchmark generates instead of reading an input.
public struct SyntheticInput: Sendable, Equatable {
    /// Their size.
    public var size: FrameSize
    /// How many.
    public var frames: Int

    /// Makes the description.
    public init(size: FrameSize, frames: Int) {
        self.size = size
        self.frames = frames
    }
}

/// The output of a run: a media file, a URL, standard output or a frame stream, and the
/// frame-timing reports written beside it.
public struct OutputSettings: Codable, Sendable, Equatable {
    /// Output path or URL, or "-" for standard output.
    public var path: String
    /// Frame layout when it is not a media file; nil decides from the name ("-" and ".y4m"
    /// are y4m, everything else is encoded into the container the extension names).
    public var format: StreamFormat?
    /// Encoder settings for media outputs.
    public var encoder = EncoderSettings()
    /// Copy audio and subtitle streams (when the container can hold them).
    public var copyAudioAndSubtitles = true
    /// What to do when `path` exists: refuse (default), replace (`-y`) or skip (`-n`).
    public var existing = ExistingOutput.refuse
    /// The frame-timing statistics, trace and plot (`--stats`, `--trace`, `--plot`).
    public var reports = TraceOutputs()
    /// Throw the frames away instead of writing `path` (`vivify bench`).
    public var discard = false

    /// An output written by its name's rule with libx264, audio copied, never replacing a file.
    public init(path: String) {
        self.path = path
        // A picture is written with its own codec, WebM with VP9 (as the CLI's default).
        encoder = EncoderSettings(codec: EncoderSettings.defaultCodec(forOutput: path))
    }

    /// The layout after applying the naming rule (nil: an encoded media file).
    public var effectiveFormat: StreamFormat? {
        if let format { return format }
        if path == "-" || path.lowercased().hasSuffix(".y4m") { return .y4m }
        return nil
    }
}

/// How a run goes, apart from what it reads, computes and writes.
public struct RunSettings: Codable, Sendable, Equatable {
    /// Backend running the models.
    public var backend = BackendChoice.onednn
    /// Offline (nothing dropped) or live (stale frames dropped before the model).
    public var mode = RunMode.offline
    /// In live mode: emit only processed frames, or repeat the last one to keep the rate.
    public var liveOutput = LiveOutput.vfr
    /// Pace a file at its native frame rate, as if it were arriving live.
    public var realtime = false
    /// Stop after this many input frames.
    public var maxFrames: Int?
    /// The frame rate the budget is computed from; nil uses the source's rate (30 when it has none).
    public var targetFPS: Double?

    /// Offline, on oneDNN, every frame, unpaced.
    public init() {}
}

extension RunConfiguration {
    /// Refuses what a run cannot do, before any work (every entry point calls it: `run`,
    /// `plan`, the library's `run`): a `maxFrames` below 1, a picture output (.png, .jpg,
    /// …: one frame) for more than one frame or with another format's `--codec`.
    package func checkRun() throws {
        if let maxFrames = run.maxFrames, maxFrames < 1 {
            throw MediaError(.invalidOptions, "'--max-frames \(maxFrames)' must be at least 1 (the number of input frames to process).")
        }
        if let fps = run.targetFPS, !(fps > 0 && fps <= 1000) {
            // NaN passed every comparison and failed the stats file after the work (70).
            throw MediaError(.invalidOptions, "'--target-fps \(fps)' is out of range. Use a rate above 0 and up to 1000.")
        }
        if EncoderSettings.isPicture(output: output.path), run.maxFrames != 1 {
            throw MediaError(.invalidOptions, "'\(output.path)' is a picture, which holds one frame. Add --max-frames 1 to write the first frame of a video (a keyframe to colour), or write video to .mp4, .mkv or another video container; for a picture in, use `vivify image`.")
        }
        try output.encoder.checkPicture(output: output.path)
    }
}

/// How the pipeline treats frames that arrive faster than the model can take them.
public enum RunMode: String, Codable, Sendable, CaseIterable {
    /// Every frame is processed (backpressure slows the source). The default.
    case offline
    /// The queue before the first model stage keeps only the newest frame; stale ones are dropped.
    case live
}

/// What a live run writes.
public enum LiveOutput: String, Codable, Sendable, CaseIterable {
    /// Only processed frames, at their source timestamps (variable frame rate).
    case vfr
    /// Every source timestamp: dropped frames are replaced by the last processed frame.
    case hold
}
