/// Somewhere frames go: an encoded media file, a y4m stream or raw frames.
public protocol FrameSink: AnyObject {
    /// The only layout `write` takes, or nil when any `PixelFormat` is fine.
    var requiredFormat: PixelFormat? { get }
    /// The matrix and range that frames converted into `requiredFormat` must take, when the
    /// sink has settled them (an encoder's resolved colour); nil: the frames' own.
    var requiredColor: ColorInfo? { get }
    /// Writes one frame.
    func write(_ frame: VideoFrame) throws
    /// Writes a packet copied from the input (audio, subtitles); sinks without such streams ignore it.
    func copy(_ packet: MediaPacket) throws
    /// Completes the output (flushes the encoder, writes the trailer).
    func finish() throws
}

extension MediaWriter: FrameSink {}

extension Y4MWriter: FrameSink {
    public var requiredFormat: PixelFormat? { pixelFormat }
    public var requiredColor: ColorInfo? { nil }
    public func copy(_ packet: MediaPacket) throws {}
}

extension RawVideoWriter: FrameSink {
    public var requiredFormat: PixelFormat? { pixelFormat }
    public var requiredColor: ColorInfo? { nil }
    public func copy(_ packet: MediaPacket) throws {}
}
