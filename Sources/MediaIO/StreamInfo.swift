/// What Vivify knows about the video stream it reads.
public struct VideoStreamInfo: Sendable {
    /// Width in pixels as stored (before any rotation is applied for display).
    public var width: Int
    /// Height in pixels as stored.
    public var height: Int
    /// The 8-bit format frames come out in when no conversion is asked for.
    public var pixelFormat: PixelFormat
    /// The source's own pixel format name ("yuv420p", "yuv420p10le", "4:2:0 jpeg", …).
    public var sourcePixelFormatName: String
    /// Codec name ("h264", "hevc", "rawvideo", …).
    public var codecName: String
    /// Unit of frame timestamps.
    public var timeBase: Rational
    /// Average frame rate (frames per second as a fraction).
    public var frameRate: Rational
    /// Whether the container signals a variable frame rate (base rate differs from average).
    public var isVariableFrameRate: Bool
    /// Number of frames when the container says so (or a counting probe found out).
    public var frameCount: Int?
    /// Duration in seconds when known.
    public var duration: Double?
    /// Colour description as tagged by the source (fields may be unspecified).
    public var color: ColorInfo
    /// Pixel shape.
    public var sampleAspectRatio: Rational
    /// Display rotation in degrees as FFmpeg reports it (counter-clockwise), 0 when none.
    public var rotation: Double
    /// The raw 3×3 display matrix (16.16 fixed point) when the source has one, to copy it on.
    public var displayMatrix: [Int32]?

    /// Makes a description; rotation and display matrix default to none.
    public init(width: Int, height: Int, pixelFormat: PixelFormat, sourcePixelFormatName: String, codecName: String,
                timeBase: Rational, frameRate: Rational, isVariableFrameRate: Bool = false, frameCount: Int? = nil,
                duration: Double? = nil, color: ColorInfo = .unspecified, sampleAspectRatio: Rational = Rational(1, 1),
                rotation: Double = 0, displayMatrix: [Int32]? = nil) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.sourcePixelFormatName = sourcePixelFormatName
        self.codecName = codecName
        self.timeBase = timeBase
        self.frameRate = frameRate
        self.isVariableFrameRate = isVariableFrameRate
        self.frameCount = frameCount
        self.duration = duration
        self.color = color
        self.sampleAspectRatio = sampleAspectRatio
        self.rotation = rotation
        self.displayMatrix = displayMatrix
    }
}

/// One stream of a media file, summarised for `vivify probe`.
public struct StreamSummary: Sendable {
    /// Index in the container.
    public var index: Int
    /// "video", "audio", "subtitle", "data" or "attachment".
    public var kind: String
    /// Codec name.
    public var codecName: String
    /// Duration in seconds when known.
    public var duration: Double?
    /// Human-readable details (sample rate and channels for audio, language, …).
    public var details: String

    /// Makes a summary.
    public init(index: Int, kind: String, codecName: String, duration: Double?, details: String) {
        self.index = index
        self.kind = kind
        self.codecName = codecName
        self.duration = duration
        self.details = details
    }
}

/// Everything `vivify probe` reports about an input.
public struct MediaInfo: Sendable {
    /// Container name ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", "yuv4mpegpipe", "rawvideo").
    public var container: String
    /// Duration in seconds when known.
    public var duration: Double?
    /// Every stream in the input.
    public var streams: [StreamSummary]
    /// The video stream Vivify processes.
    public var video: VideoStreamInfo

    /// Makes a description.
    public init(container: String, duration: Double?, streams: [StreamSummary], video: VideoStreamInfo) {
        self.container = container
        self.duration = duration
        self.streams = streams
        self.video = video
    }
}
