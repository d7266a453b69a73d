/// What a source hands out next.
public enum SourceEvent {
    /// The caller's frame was filled with the next picture.
    case frame
    /// A packet of another stream (audio, subtitles) to copy through unchanged.
    case packet(MediaPacket)
    /// Every frame has come out.
    case end
}

/// Something that produces video frames in presentation order: a media file, a y4m stream or
/// raw frames.
public protocol FrameSource: AnyObject {
    /// What the source holds.
    var info: MediaInfo { get }
    /// Streams besides video whose packets `read` will hand out, for copying.
    var copyableStreams: [CopyableStream] { get }
    /// Damaged packets or frames skipped so far.
    var corruptCount: Int { get }
    /// Fills `frame` with the next picture (reusing its storage), or returns another event.
    func read(into frame: inout VideoFrame) throws -> SourceEvent
}
