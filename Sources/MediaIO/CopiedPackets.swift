import CFFmpeg

/// Screens copied (not re-encoded) audio, subtitle and data packets for what the muxer would
/// refuse as damage, so that a damaged packet of the input is skipped and counted instead of
/// failing the whole output (`MediaWriter.copy`, `SegmentJoiner.join`).
///
/// The timestamp rule is libavformat's own (FFmpeg 5.1, `compute_muxer_pkt_fields`), checked
/// before the packet is handed over: a decode time below the stream's last one, or equal to it
/// where the container wants strictly increasing times (not `AVFMT_TS_NONSTRICT`) and the stream
/// is not subtitles or data; a presentation time before the decode time. Like the muxer it makes
/// no check after a last decode time of 0 or none, nor for containers without timestamps
/// (`AVFMT_NOTIMESTAMPS`). A packet the muxer itself then refuses as invalid data (an ADTS header
/// its AAC conversion cannot parse) counts as damaged too (`isDamage`).
struct CopiedPacketScreen {
    private var lastDTS: [Int32: Int64] = [:]

    /// Whether `packet` (already rescaled to output stream `stream` of `format`) may be written.
    private func admits(_ packet: UnsafeMutablePointer<AVPacket>, stream: Int32, of format: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        let flags = format.pointee.oformat.pointee.flags
        if flags & AVFMT_NOTIMESTAMPS != 0 { return true }
        let dts = packet.pointee.dts, pts = packet.pointee.pts
        if dts != AVCode.noPTS && pts != AVCode.noPTS && pts < dts { return false }
        guard dts != AVCode.noPTS, let last = lastDTS[stream], last != 0 else { return true }
        let type = format.pointee.streams[Int(stream)]!.pointee.codecpar.pointee.codec_type
        let equalAllowed = flags & AVFMT_TS_NONSTRICT != 0 || type == AVMEDIA_TYPE_SUBTITLE || type == AVMEDIA_TYPE_DATA
        return equalAllowed ? dts >= last : dts > last
    }

    /// Writes `packet` (already rescaled to output stream `stream`) when `admits` it; the
    /// muxer's result, or invalid data for a packet it would refuse (`isDamage`).
    mutating func write(_ packet: UnsafeMutablePointer<AVPacket>, stream: Int32, to format: UnsafeMutablePointer<AVFormatContext>) -> Int32 {
        guard admits(packet, stream: stream, of: format) else { return AVCode.invalidData }
        let dts = packet.pointee.dts  // the write consumes the packet
        let r = av_interleaved_write_frame(format, packet)
        if r >= 0 && dts != AVCode.noPTS { lastDTS[stream] = dts }
        return r
    }

    /// Whether a write's result says the packet was damaged, not the output unwritable.
    static func isDamage(_ code: Int32) -> Bool { code == AVCode.invalidData }
}
