package import MediaIO

// The stages of a job as processors (libavfilter's config_props, video2x's Processor): each
// one is told what frames it will get, says what it will give, before a frame flows; then it
// turns frames into frames, and may flush at the end of the stream.
//
//     FrameDescription ─▶ configure ─▶ FrameDescription ─▶ configure ─▶ … ─▶ the sink's settings
//     ChainFrame       ─▶ process   ─▶ [ChainFrame]      ─▶ process   ─▶ … ─▶ the sink
//
// Between model stages frames stay planar float (`PixelLayout.planarFloat`); the one rounding
// to 8 bits happens in the last stage before the sink.

/// How the pixels of a frame are laid out.
package enum PixelLayout: Equatable, Sendable, CustomStringConvertible {
    /// Packed 8-bit planes of a `PixelFormat` (what decoders give and encoders take).
    case packed(PixelFormat)
    /// Planar float in [0, 1], 1 (grey) or 3 (R, G, B) channels: what the models read and write.
    case planarFloat(channels: Int)

    package var description: String {
        switch self {
        case .packed(let f): return f.rawValue
        case .planarFloat(let c): return "planar float \(c == 1 ? "grey" : "RGB")"
        }
    }
}

/// What the frames at one point of the chain look like, known before any frame flows.
package struct FrameDescription: Equatable, Sendable {
    /// Width in pixels.
    package var width: Int
    /// Height in pixels.
    package var height: Int
    /// Frames per second (the nominal rate; frames carry their own timestamps).
    package var frameRate: Rational
    /// The pixel layout.
    package var layout: PixelLayout
    /// Whether frames carry an alpha plane.
    package var hasAlpha: Bool
    /// The size of the frames the chain was given, before any stage (what `--hint`
    /// coordinates are in: a colorizer after an upscaler maps them). Not part of what the
    /// frames are: two descriptions that differ only here are equal.
    package var sourceWidth: Int, sourceHeight: Int

    package static func == (a: FrameDescription, b: FrameDescription) -> Bool {
        a.width == b.width && a.height == b.height && a.frameRate == b.frameRate && a.layout == b.layout && a.hasAlpha == b.hasAlpha
    }

    /// Makes a description (the source size: this one).
    package init(width: Int, height: Int, frameRate: Rational, layout: PixelLayout, hasAlpha: Bool = false) {
        self.width = width
        self.height = height
        sourceWidth = width
        sourceHeight = height
        self.frameRate = frameRate
        self.layout = layout
        self.hasAlpha = hasAlpha
    }

    /// The size as a `FrameSize`.
    package var size: FrameSize { FrameSize(width: width, height: height) }
}

/// When and how a frame is shown: carried unchanged through the stages.
package struct FrameTiming: Sendable, Equatable {
    /// Presentation timestamp in `timeBase` units, when known.
    package var pts: Int64?
    /// Duration in `timeBase` units, when known.
    package var duration: Int64?
    /// Unit of `pts` and `duration`.
    package var timeBase: Rational
    /// Colour description.
    package var color: ColorInfo
    /// Pixel shape.
    package var sampleAspectRatio: Rational

    /// The timing of a decoded frame.
    package init(of frame: VideoFrame) {
        pts = frame.pts
        duration = frame.duration
        timeBase = frame.timeBase
        color = frame.color
        sampleAspectRatio = frame.sampleAspectRatio
    }

    /// Puts this timing on `frame`.
    package func apply(to frame: inout VideoFrame) {
        frame.pts = pts
        frame.duration = duration
        frame.timeBase = timeBase
        frame.color = color
        frame.sampleAspectRatio = sampleAspectRatio
    }
}

/// The pixels of a frame in the chain.
package enum FramePixels: Sendable {
    /// Packed 8-bit planes (timing fields of the frame are not used: `ChainFrame.timing` is).
    case packed(VideoFrame)
    /// Planar float in [0, 1].
    case planar(FloatPlanarImage)

    /// Width in pixels.
    package var width: Int {
        switch self {
        case .packed(let f): return f.width
        case .planar(let p): return p.width
        }
    }

    /// Height in pixels.
    package var height: Int {
        switch self {
        case .packed(let f): return f.height
        case .planar(let p): return p.height
        }
    }

    /// The layout of these pixels.
    package var layout: PixelLayout {
        switch self {
        case .packed(let f): return .packed(f.format)
        case .planar(let p): return .planarFloat(channels: p.channels)
        }
    }
}

/// One frame as it travels through the chain: its own id (a stage may emit more or fewer
/// frames than it takes), pixels, optional alpha and timing.
package struct ChainFrame: Sendable {
    /// Sequence number (the source's frame number unless a stage makes new frames).
    package var id: Int
    /// The picture.
    package var pixels: FramePixels
    /// Opacity, 1 channel in [0, 1], when the source has it (still images).
    package var alpha: FloatPlanarImage?
    /// When and how it is shown.
    package var timing: FrameTiming
    /// A frame decoded before a segment's start only to bring stateful stages (the temporal
    /// stabilizer) to the state an unsegmented run has there: processed up to the last
    /// stateful stage, never written.
    package var isWarmUp = false

    /// Makes a chain frame.
    package init(id: Int, pixels: FramePixels, alpha: FloatPlanarImage? = nil, timing: FrameTiming) {
        self.id = id
        self.pixels = pixels
        self.alpha = alpha
        self.timing = timing
    }

    /// A decoded frame entering the chain.
    package init(id: Int, frame: VideoFrame) {
        self.init(id: id, pixels: .packed(frame), timing: FrameTiming(of: frame))
    }

    /// The pixels as packed 8-bit, with this frame's timing (the sink's view).
    package var videoFrame: VideoFrame? {
        guard case .packed(var f) = pixels else { return nil }
        timing.apply(to: &f)
        return f
    }
}

/// Where the frames a stage gets sit.
package enum FramePlacement: Equatable, Sendable {
    /// Still pictures (`vivify image`): no place in a video, so keyframes and scene cuts do
    /// not apply.
    case stills
    /// A video's frames, the first one (id 0) being frame `firstFrameIndex` of the whole
    /// input (a segment's window starts mid-video). `originSeconds` is the presentation time
    /// of the whole input's first frame, from which keyframe times count; nil when not known
    /// before the frames come (a stream): then the first frame seen sets it, less its place.
    /// `shotStartSeconds`, when a segment's plan scanned the input, is where the shot of the
    /// first frame began (seconds from the first frame). `shotStarts`, when a scan found them,
    /// are where shots start (seconds from the first frame, up to the first after the last
    /// keyframe): whether a cut lies between a frame and a keyframe is then known, not guessed.
    /// `frameTimes`, when the file was scanned for them, are each frame's time (seconds from
    /// the first frame): keyframes then fall on frames by them, a variable rate followed.
    case video(firstFrameIndex: Int, originSeconds: Double? = nil, shotStartSeconds: Double? = nil, shotStarts: [Double]? = nil,
               frameTimes: [Double]? = nil)
}

/// One stage of the chain. Configured once, then fed frames on one thread, in order.
package protocol FrameProcessor: AnyObject {
    /// Name in traces and messages ("colorize").
    var name: String { get }
    /// Whether this stage runs a model (live mode drops stale frames in front of the first one).
    var runsModel: Bool { get }
    /// Says what this stage outputs for `input`, and prepares for it; throws (naming the
    /// stage and the fix) when it cannot take such frames.
    func configure(input: FrameDescription) throws -> FrameDescription
    /// Turns one frame into the frames to pass on (usually one).
    func process(_ frame: ChainFrame) throws -> [ChainFrame]
    /// Frames still held at the end of the stream.
    func flush() throws -> [ChainFrame]
    /// Runs once on a blank frame of the configured input, so the first real frame pays no
    /// set-up cost (live mode measures every frame); forgets any state it built.
    func warmUp() throws
    /// Floating-point operations (2 per multiply-add) per frame of the configured input.
    func flopsPerFrame() throws -> Double
    /// Frames this stage must see before a segment's first frame so that its state there
    /// matches an unsegmented run's (0: it keeps no state from frame to frame).
    var warmUpFrames: Int { get }
    /// Forgets the state built from earlier frames (a new segment or stream begins).
    func reset()
    /// Says where the frames sit (before the first one; a video's from frame 0 unless told).
    func place(_ placement: FramePlacement)
    /// Gives back the frame-sized buffers kept for the next frame (a still picture is done;
    /// the next one may have another size). The next frame allocates them again.
    func releaseBuffers()
}

extension FrameProcessor {
    package var runsModel: Bool { false }
    package func flush() throws -> [ChainFrame] { [] }
    package func warmUp() throws {}
    package func flopsPerFrame() throws -> Double { 0 }
    package var warmUpFrames: Int { 0 }
    package func reset() {}
    package func place(_ placement: FramePlacement) {}
    package func releaseBuffers() {}
}

/// A stage that runs a model, as the stats file and a segment manifest describe it (its
/// `name` is the task: "colorize", "upscale", "filter2").
package protocol ModelStage: FrameProcessor {
    /// The model's name (built-in or catalog name, bundle or path).
    var modelName: String { get }
    /// The files the model was loaded from (a built-in model has none).
    var modelFiles: [String] { get }
    /// What its convolutions compute in on oneDNN ("fp32", "bf16", "int8"), or its values are
    /// stored in on Vulkan ("fp32", "fp16"); "fp32" on the reference backend.
    var computePrecision: String { get }
}
