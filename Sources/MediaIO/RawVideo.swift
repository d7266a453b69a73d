/// Reads headerless frames of a fixed size and layout (`rgb24` or `gray`), e.g. from a pipe.
public final class RawVideoReader: FrameSource {
    private let input: ByteReader
    private var index = 0
    public let info: MediaInfo
    public var copyableStreams: [CopyableStream] { [] }
    public var corruptCount: Int { 0 }

    /// Opens `path` ("-" for standard input) holding `format` frames of `width`×`height` at
    /// `rate`; a size beyond `maxPixels` pixels (`--max-pixels`) is refused.
    public init(path: String, format: PixelFormat, width: Int, height: Int, rate: Rational,
                maxPixels: Int = MediaLimits.defaultMaxPixels) throws {
        guard format == .rgb24 || format == .gray else {
            throw MediaError(.invalidOptions, "Raw input must be rgb24 or gray, not \(format.rawValue).")
        }
        try MediaLimits.checkFrame(width: width, height: height, what: "Raw input of --size \(width)x\(height)", kind: .invalidOptions,
                                  limit: maxPixels)
        guard MediaLimits.isPlausible(frameRate: rate) else {
            throw MediaError(.invalidOptions, "--rate \(rate) is not a frame rate from 1/1000 to 1000 fps. Write it as 30, 29.97 or 30000/1001.")
        }
        input = try ByteReader(path: path)
        let frameBytes = format.frameBytes(width: width, height: height)
        var frames: Int?
        if let size = input.regularFileSize {
            if size % frameBytes != 0 {
                throw MediaError(.corruptInput, "\(input.name) is \(size) bytes, not a whole number of \(width)x\(height) \(format.rawValue) frames (\(frameBytes) bytes each). Check --size and --input-format.")
            }
            frames = size / frameBytes
        }
        let duration = frames.map { Double($0) / rate.doubleValue }
        let video = VideoStreamInfo(width: width, height: height, pixelFormat: format, sourcePixelFormatName: format.rawValue,
                                    codecName: "rawvideo", timeBase: rate.inverted, frameRate: rate, frameCount: frames,
                                    duration: duration, color: ColorInfo(primaries: 1, transfer: 13, matrix: 2, range: 2))
        info = MediaInfo(container: "rawvideo", duration: duration,
                         streams: [StreamSummary(index: 0, kind: "video", codecName: "rawvideo", duration: duration, details: "\(width)x\(height) \(format.rawValue)")],
                         video: video)
    }

    public func read(into frame: inout VideoFrame) throws -> SourceEvent {
        let v = info.video
        frame.reshape(format: v.pixelFormat, width: v.width, height: v.height)
        let expected = frame.planes[0].count
        let got = try frame.planes[0].withUnsafeMutableBytes { try input.readFully(into: $0) }
        if got == 0 { return .end }
        if got < expected {
            throw MediaError(.corruptInput, "\(input.name) is truncated: frame \(index) has \(got) of \(expected) bytes, so the stream's length does not fit --size \(v.width)x\(v.height) (\(v.pixelFormat.rawValue)). The frames before it were read; check --size and --input-format.")
        }
        frame.pts = Int64(index)
        frame.duration = 1
        frame.timeBase = v.timeBase
        frame.color = v.color
        frame.sampleAspectRatio = Rational(1, 1)
        index += 1
        return .frame
    }
}

/// Writes headerless `rgb24` or `gray` frames.
public final class RawVideoWriter {
    private let output: ByteWriter
    /// The layout the frames must have.
    public let pixelFormat: PixelFormat

    /// Prepares to write `format` frames to `path` ("-" for standard output).
    public init(path: String, format: PixelFormat) throws {
        guard format == .rgb24 || format == .gray else {
            throw MediaError(.invalidOptions, "Raw output must be rgb24 or gray, not \(format.rawValue).")
        }
        output = try ByteWriter(path: path)
        pixelFormat = format
    }

    /// Writes one frame.
    public func write(_ frame: VideoFrame) throws {
        precondition(frame.format == pixelFormat, "raw writer got \(frame.format), expected \(pixelFormat)")
        try frame.planes[0].withUnsafeBytes { try output.write($0) }
    }

    /// Flushes everything written.
    public func finish() throws { try output.flush() }
}
