/// The header of a YUV4MPEG2 stream. The tokens are kept in their original order so a stream
/// read and written again without changes comes out byte for byte the same.
public struct Y4MHeader: Sendable, Equatable {
    /// Header tokens after "YUV4MPEG2", each a tag letter followed by its value ("W640").
    public var tokens: [String]

    /// Parses a header line (without its newline).
    public init(line: [UInt8], source: String) throws {
        guard let text = String(validating: line, as: UTF8.self), text.hasPrefix("YUV4MPEG2") else {
            throw MediaError(.inputUnreadable, "\(source) is not a YUV4MPEG2 (y4m) stream: it does not start with 'YUV4MPEG2'. Pass y4m, or set --input-format rgb24|gray with --size and --rate for raw frames.")
        }
        tokens = text.dropFirst(9).split(separator: " ").map(String.init)
    }

    /// Builds a header from scratch, in the order FFmpeg writes one.
    public init(width: Int, height: Int, rate: Rational, aspect: Rational, colorTag: String, fullRange: Bool?) {
        tokens = ["W\(width)", "H\(height)", "F\(rate.num):\(rate.den)", "Ip",
                  "A\(aspect.isValid ? aspect.num : 0):\(aspect.isValid ? aspect.den : 0)", "C\(colorTag)"]
        if let full = fullRange { tokens.append("XCOLORRANGE=\(full ? "FULL" : "LIMITED")") }
    }

    /// The value of the first token with tag `tag` (e.g. "W" → "640").
    public func value(_ tag: Character) -> String? {
        tokens.first { $0.first == tag }.map { String($0.dropFirst()) }
    }

    /// Sets (or appends) the token with tag `tag`.
    public mutating func set(_ tag: Character, _ value: String) {
        if let i = tokens.firstIndex(where: { $0.first == tag }) {
            tokens[i] = "\(tag)\(value)"
        } else {
            tokens.append("\(tag)\(value)")
        }
    }

    /// The header line including its newline.
    public var line: String { (["YUV4MPEG2"] + tokens).joined(separator: " ") + "\n" }

    /// The pixel layout a y4m colour tag stands for (8-bit only).
    public static func pixelFormat(colorTag: String) -> PixelFormat? {
        switch colorTag {
        case "420jpeg", "420mpeg2", "420paldv", "420": return .yuv420p
        case "422": return .yuv422p
        case "444": return .yuv444p
        case "mono": return .gray
        default: return nil
        }
    }

    /// The y4m colour tag for a pixel layout, or nil for RGB (which y4m cannot carry).
    public static func colorTag(for format: PixelFormat) -> String? {
        switch format {
        case .yuv420p: return "420jpeg"
        case .yuv422p: return "422"
        case .yuv444p: return "444"
        case .gray: return "mono"
        case .rgb24: return nil
        }
    }
}

/// Reads a YUV4MPEG2 stream (a file or standard input) frame by frame.
public final class Y4MReader: FrameSource {
    private let input: ByteReader
    private var index = 0
    /// The parsed header, to write the same one back out.
    public let header: Y4MHeader
    public let info: MediaInfo
    public var copyableStreams: [CopyableStream] { [] }
    public var corruptCount: Int { 0 }
    /// Notes on what had to be assumed (missing frame rate).
    public private(set) var assumptions: [String] = []

    /// Opens `path` ("-" for standard input) and reads its header; frames beyond `maxPixels`
    /// pixels (`--max-pixels`) are refused from it.
    public init(path: String, maxPixels: Int = MediaLimits.defaultMaxPixels) throws {
        input = try ByteReader(path: path)
        guard let line = try input.readLine(limit: 4096) else {
            if InputCancellation.isCancelled {
                throw MediaError(.interrupted, "Interrupted while waiting for the y4m header on \(input.name); nothing was read.")
            }
            throw MediaError(.inputUnreadable, "\(input.name) is empty: no y4m header. Pass a YUV4MPEG2 stream (e.g. ffmpeg … -f yuv4mpegpipe -).")
        }
        header = try Y4MHeader(line: line, source: input.name)
        guard let w = header.value("W").flatMap(Int.init), let h = header.value("H").flatMap(Int.init), w > 0, h > 0 else {
            throw MediaError(.corruptInput, "\(input.name): the y4m header has no valid W (width) and H (height). Fix the producer of the stream.")
        }
        // Before any frame is allocated: a header can declare any size.
        try MediaLimits.checkFrame(width: w, height: h, what: "The y4m stream \(input.name)", limit: maxPixels)
        let tag = header.value("C") ?? "420jpeg"
        guard let format = Y4MHeader.pixelFormat(colorTag: tag) else {
            throw MediaError(.unsupported, "\(input.name): y4m colour space 'C\(tag)' is not supported. Use 8-bit 420jpeg, 420mpeg2, 420paldv, 422, 444 or mono (e.g. ffmpeg … -pix_fmt yuv420p).")
        }
        var rate = Rational(25, 1)
        if let f = header.value("F"), f != "0:0" {
            guard let r = Rational(parsing: f), MediaLimits.isPlausible(frameRate: r) else {
                throw MediaError(.corruptInput, "\(input.name): the y4m header's frame rate F\(f) is not a rate from 1/1000 to 1000 fps. Fix the producer of the stream (F30000:1001 is 29.97 fps).")
            }
            rate = r
        } else {
            assumptions.append("frame rate 25 (the y4m header has no F)")
        }
        var aspect = Rational(1, 1)
        if let a = header.value("A"), let r = Rational(parsing: a), r.isValid { aspect = r }
        var color = ColorInfo.unspecified
        for token in header.tokens where token.hasPrefix("XCOLORRANGE=") {
            color.range = token.hasSuffix("FULL") ? 2 : 1
        }
        let video = VideoStreamInfo(width: w, height: h, pixelFormat: format, sourcePixelFormatName: "y4m \(tag)",
                                    codecName: "rawvideo", timeBase: rate.inverted, frameRate: rate,
                                    color: color, sampleAspectRatio: aspect)
        var frames: Int?
        if let size = input.regularFileSize {
            let frameBytes = 6 + format.frameBytes(width: w, height: h)
            frames = (size - input.consumed) / frameBytes
        }
        var v = video
        v.frameCount = frames
        v.duration = frames.map { Double($0) / rate.doubleValue }
        info = MediaInfo(container: "yuv4mpegpipe", duration: v.duration,
                         streams: [StreamSummary(index: 0, kind: "video", codecName: "rawvideo", duration: v.duration, details: "\(w)x\(h) \(tag)")],
                         video: v)
    }

    public func read(into frame: inout VideoFrame) throws -> SourceEvent {
        guard let line = try input.readLine(limit: 4096) else { return .end }
        guard line.starts(with: Array("FRAME".utf8)) else {
            throw MediaError(.corruptInput, "\(input.name): expected 'FRAME' at the start of frame \(index), found other data. The stream is damaged or its header does not match its frames.")
        }
        let v = info.video
        frame.reshape(format: v.pixelFormat, width: v.width, height: v.height)
        for p in 0..<v.pixelFormat.planeCount {
            let expected = frame.planes[p].count
            let got = try frame.planes[p].withUnsafeMutableBytes { try input.readFully(into: $0) }
            if got < expected {
                throw MediaError(.corruptInput, "\(input.name) is truncated: frame \(index) ends after \(got) of \(expected) bytes in plane \(p). The frames before it were read; re-create the stream to include the whole frame.")
            }
        }
        frame.pts = Int64(index)
        frame.duration = 1
        frame.timeBase = v.timeBase
        frame.color = v.color
        frame.sampleAspectRatio = v.sampleAspectRatio
        index += 1
        return .frame
    }
}

/// Writes frames as a YUV4MPEG2 stream.
public final class Y4MWriter {
    private let output: ByteWriter
    private var header: Y4MHeader
    private var wroteHeader = false
    /// The layout the frames must have.
    public let pixelFormat: PixelFormat

    /// Prepares to write `header` (its C tag must name an 8-bit layout) to `path` ("-" for stdout).
    public init(path: String, header: Y4MHeader) throws {
        guard let format = Y4MHeader.pixelFormat(colorTag: header.value("C") ?? "420jpeg") else {
            throw MediaError(.invalidOptions, "Cannot write y4m colour space '\(header.value("C") ?? "")'.")
        }
        output = try ByteWriter(path: path)
        self.header = header
        pixelFormat = format
    }

    /// Writes one frame (the header goes out before the first).
    public func write(_ frame: VideoFrame) throws {
        precondition(frame.format == pixelFormat, "y4m writer got \(frame.format), expected \(pixelFormat)")
        if !wroteHeader {
            try output.write(header.line)
            wroteHeader = true
        }
        try output.write("FRAME\n")
        for plane in frame.planes { try plane.withUnsafeBytes { try output.write($0) } }
    }

    /// Flushes everything written.
    public func finish() throws {
        if !wroteHeader { try output.write(header.line); wroteHeader = true }
        try output.flush()
    }
}
