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

/// Everything `vivify run` needs to know. The CLI maps its flags onto this and nothing else.
/// As JSON it holds every field but `synthetic` (a benchmark's generated input).
public struct RunConfiguration: Codable, Sendable {
    /// Input path, or "-" for standard input.
    public var input: String
    /// Output path, or "-" for standard output.
    public var output: String
    /// Frame layout of the input when it is not a media file; nil decides from the name
    /// ("-" and ".y4m" are y4m, everything else goes to FFmpeg).
    public var inputFormat: StreamFormat?
    /// Frame layout of the output when it is not a media file; nil decides from the name
    /// ("-" and ".y4m" are y4m, everything else is encoded into the container the extension names).
    public var outputFormat: StreamFormat?
    /// Frame size of raw input.
    public var rawSize: FrameSize?
    /// Frame rate of raw input.
    public var rawRate: Rational?
    /// Encoder settings for media outputs.
    public var encoder: EncoderSettings
    /// Copy audio and subtitle streams (when the container can hold them).
    public var copyAudioAndSubtitles: Bool
    /// Make damaged input data fatal instead of skipping it.
    public var strict: Bool
    /// YUV matrix to assume instead of the input's tag or the size rule (FFmpeg name).
    public var assumeMatrix: String?
    /// The stages: which models run, how and in which order, then resize.
    public var stages: StageSettings
    /// Stop after this many input frames.
    public var maxFrames: Int?
    /// Backend running the models.
    public var backend: BackendChoice
    /// Offline (nothing dropped) or live (stale frames dropped before the model).
    public var mode: RunMode
    /// In live mode: emit only processed frames, or repeat the last one to keep the rate.
    public var liveOutput: LiveOutput
    /// Pace a file at its native frame rate, as if it were arriving live.
    public var realtime: Bool
    /// The frame rate the budget is computed from; nil uses the source's rate (30 when it has none).
    public var targetFPS: Double?
    /// Generate this many frames of this size instead of reading `input` (`vivify bench`).
    public var synthetic: (size: FrameSize, frames: Int)?
    /// Throw the frames away instead of writing `output` (`vivify bench`).
    public var discardOutput: Bool
    /// What to do when `output` exists: refuse (default), replace (`-y`) or skip (`-n`).
    public var existingOutput: ExistingOutput
    /// Threads, pixel limit, memory budget, precision and network timeout, put in force when
    /// the run starts (nil fields leave what is in force).
    public var limits: RunLimits

    private enum CodingKeys: String, CodingKey {
        case input, output, inputFormat, outputFormat, rawSize, rawRate, encoder, copyAudioAndSubtitles, strict, assumeMatrix
        case stages, maxFrames, backend, mode, liveOutput, realtime, targetFPS, discardOutput, existingOutput, limits
    }

    /// A configuration with defaults: auto formats, libx264, audio copied, lenient.
    public init(input: String, output: String) {
        self.input = input
        self.output = output
        inputFormat = nil
        outputFormat = nil
        rawSize = nil
        rawRate = nil
        encoder = EncoderSettings()
        copyAudioAndSubtitles = true
        strict = false
        assumeMatrix = nil
        stages = StageSettings()
        maxFrames = nil
        backend = .onednn
        mode = .offline
        liveOutput = .vfr
        realtime = false
        targetFPS = nil
        synthetic = nil
        discardOutput = false
        existingOutput = .refuse
        limits = RunLimits()
    }

    /// Every file a run reads besides its input: model files named by path (an ncnn `.param`
    /// with its `.bin` and `.json` beside it) and the colorizer's references, keyframes and
    /// hints picture. Reports may replace none of them.
    public var readFiles: [String] {
        var files: [String] = []
        for model in [upscale, colorize].compactMap({ $0 }) + filters.map(\.model) where FileManager.default.fileExists(atPath: model) {
            files.append(model)
            let stem = (model as NSString).deletingPathExtension
            if let weights = ModelFileFormat.weightsFile(beside: model) { files += [weights, stem + ".json"] }
        }
        return files + colourGuide.files
    }

    /// The input layout after applying the naming rule.
    public var effectiveInputFormat: StreamFormat? {
        if let inputFormat { return inputFormat }
        if input == "-" || input.lowercased().hasSuffix(".y4m") { return .y4m }
        return nil
    }

    /// The output layout after applying the naming rule (nil: encoded media file).
    public var effectiveOutputFormat: StreamFormat? {
        if let outputFormat { return outputFormat }
        if output == "-" || output.lowercased().hasSuffix(".y4m") { return .y4m }
        return nil
    }
}

extension RunConfiguration {
    // The stage settings by their own names, for the callers in this package that
    // set one or two; other callers use `stages`.

    /// `stages.resize`.
    package var resize: FrameSize? { get { stages.resize } set { stages.resize = newValue } }
    /// `stages.upscale`.
    package var upscale: String? { get { stages.upscale } set { stages.upscale = newValue } }
    /// `stages.tile`.
    package var tile: Int? { get { stages.tile } set { stages.tile = newValue } }
    /// `stages.colorize`.
    package var colorize: String? { get { stages.colorize } set { stages.colorize = newValue } }
    /// `stages.colorizeAfter`.
    package var colorizeAfter: Bool { get { stages.colorizeAfter } set { stages.colorizeAfter = newValue } }
    /// `stages.stabilize`.
    package var stabilize: Bool { get { stages.stabilize } set { stages.stabilize = newValue } }
    /// `stages.anchorShots`.
    package var anchorShots: Bool { get { stages.anchorShots } set { stages.anchorShots = newValue } }
    /// `stages.saturation`.
    package var saturation: Float { get { stages.saturation } set { stages.saturation = newValue } }
    /// `stages.colourGuide`.
    package var colourGuide: ColourGuideSpec { get { stages.colourGuide } set { stages.colourGuide = newValue } }
    /// `stages.filters`.
    package var filters: [FilterStage] { get { stages.filters } set { stages.filters = newValue } }
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

// By its name ("onednn"), like the other choices of a run.
extension BackendChoice: Codable {}
