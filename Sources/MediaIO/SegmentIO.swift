import CFFmpeg
import Foundation

/// The frames of a file's video stream by timestamp, from one demux-only pass (no decoding):
/// what resumable segments are planned from.
public struct VideoIndex: Sendable, Equatable {
    /// Time base of the timestamps.
    public var timeBase: Rational
    /// Every frame's presentation timestamp, in order (a packet's pts, or its dts when it has none).
    public var timestamps: [Int64]
    /// Presentation timestamps of the keyframes (where decoding can start), in order.
    public var keyframes: [Int64]
    /// Duration of the last frame, in `timeBase` units (0 when the file does not say).
    public var lastDuration: Int64

    /// Seconds of a timestamp.
    public func seconds(_ pts: Int64) -> Double { Double(pts) * timeBase.doubleValue }

    /// The largest keyframe timestamp at or before `pts`, nil when there is none.
    public func keyframe(atOrBefore pts: Int64) -> Int64? {
        var lo = 0, hi = keyframes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if keyframes[mid] <= pts { lo = mid + 1 } else { hi = mid }
        }
        return lo == 0 ? nil : keyframes[lo - 1]
    }

    /// Reads the index of `path`'s video stream (the one a `MediaReader` decodes).
    public static func read(path: String) throws -> VideoIndex {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let openCode = avformat_open_input(&ctx, path, nil, nil)
        if openCode < 0 { throw MediaReader.openFailure(path, openCode) }
        defer { avformat_close_input(&ctx) }
        try avCheck(avformat_find_stream_info(ctx, nil), .inputUnreadable, "Cannot read stream information from '\(path)'")
        let best = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard best >= 0 else {
            throw MediaError(.noVideoStream, "Cannot open '\(path)': no video stream found. Pass a file with a video stream.")
        }
        for i in 0..<Int(ctx!.pointee.nb_streams) where Int32(i) != best {
            ctx!.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
        let tb = Rational(ctx!.pointee.streams[Int(best)]!.pointee.time_base)
        var pkt = av_packet_alloc()
        defer { av_packet_free(&pkt) }
        var stamps: [Int64] = []
        var keys: [Int64] = []
        var lastDuration: Int64 = 0
        while true {
            let r = av_read_frame(ctx, pkt)
            if r == AVCode.eof { break }
            if r < 0 {
                if r == AVCode.invalidData { continue }
                break
            }
            defer { av_packet_unref(pkt) }
            let p = pkt!.pointee
            guard p.stream_index == best else { continue }
            // Packets marked to be discarded (before an edit list's start, in an MP4 cut with
            // -c copy) decode to no frame shown.
            if p.flags & AV_PKT_FLAG_DISCARD != 0 { continue }
            let ts = p.pts != AVCode.noPTS ? p.pts : p.dts
            guard ts != AVCode.noPTS else {
                throw MediaError(.unsupported, "'\(path)' has video packets without timestamps, so it cannot be cut into segments. Remux it (ffmpeg -i IN -c copy OUT.mkv), or pass --segment-seconds 0 to process it in one piece.")
            }
            stamps.append(ts)
            if p.flags & AV_PKT_FLAG_KEY != 0 { keys.append(ts) }
            if p.duration > 0 { lastDuration = p.duration }
        }
        stamps.sort()
        keys.sort()
        // Two packets with one timestamp cannot be told apart by a cut at a time.
        for (a, b) in zip(stamps, stamps.dropFirst()) where a == b {
            throw MediaError(.unsupported, "'\(path)' has two video frames with the timestamp \(a), so it cannot be cut into segments. Remux it with fresh timestamps, or pass --segment-seconds 0.")
        }
        return VideoIndex(timeBase: tb, timestamps: stamps, keyframes: keys, lastDuration: lastDuration)
    }
}

/// Writes one file from finished segment files (video packets, no re-encoding) and the
/// source's audio and subtitle packets, copied once for the whole duration.
public enum SegmentJoiner {
    /// How the joined video stream is described (what the unsegmented writer would write).
    public struct VideoTags: Sendable {
        /// Frame rate.
        public var frameRate: Rational
        /// Pixel shape.
        public var sampleAspectRatio: Rational
        /// Colour description.
        public var color: ColorInfo
        /// Display matrix (rotation), copied onto the stream.
        public var displayMatrix: [Int32]?
        /// The encoder's time base (the unsegmented writer's stream time base).
        public var timeBase: Rational

        /// Makes the tags.
        public init(frameRate: Rational, sampleAspectRatio: Rational, color: ColorInfo, displayMatrix: [Int32]?, timeBase: Rational) {
            self.timeBase = timeBase
            self.frameRate = frameRate
            self.sampleAspectRatio = sampleAspectRatio
            self.color = color
            self.displayMatrix = displayMatrix
        }
    }

    /// What a join wrote.
    public struct Result: Sendable {
        /// Video packets (frames) written.
        public var videoPackets: Int
        /// Warnings (streams the container could not hold).
        public var warnings: [String]
    }

    /// Joins `segments` (in order; each a file whose first stream is the encoded video) into
    /// `path`, in the container `targetName`'s extension names. Audio and subtitle streams of
    /// `source` are copied when `copyStreams`; with `window` (seconds) only their packets that
    /// overlap it are kept (as a `--max-frames` run trims them).
    public static func join(segments: [String], source: String, path: String, targetName: String, tags: VideoTags,
                            copyStreams: Bool, window: ClosedRange<Double>? = nil, strict: Bool = false) throws -> Result {
        precondition(!segments.isEmpty)
        var warnings: [String] = []
        // Copied packets the muxer would refuse as damaged are skipped and counted, as the
        // unsegmented writer does (`CopiedPacketScreen`); with `strict` the first is an error.
        var screen = CopiedPacketScreen()
        var damaged = 0
        guard let oformat = av_guess_format(nil, targetName, nil) else {
            throw MediaError(.invalidOptions, "Cannot tell which container to write for '\(targetName)'. Use an extension such as .mp4, .mkv, .webm, .mov or .avi.")
        }
        var out: UnsafeMutablePointer<AVFormatContext>?
        try avCheck(avformat_alloc_output_context2(&out, oformat, nil, path), .outputUnwritable, "Cannot set up the output '\(targetName)'")
        defer {
            if let o = out {
                if o.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&o.pointee.pb) }
                avformat_free_context(o)
            }
        }

        // The video stream, described by the first segment.
        var first = try openInput(segments[0])
        defer { avformat_close_input(&first) }
        let segStream = first!.pointee.streams[0]!
        guard let video = avformat_new_stream(out, nil) else { throw MediaError(.internalFailure, "Cannot add a video stream to '\(targetName)'.") }
        try avCheck(avcodec_parameters_copy(video.pointee.codecpar, segStream.pointee.codecpar), .internalFailure, "Cannot describe the video stream")
        let par = video.pointee.codecpar!
        par.pointee.codec_tag = 0
        par.pointee.sample_aspect_ratio = tags.sampleAspectRatio.av
        par.pointee.color_primaries = AVColorPrimaries(UInt32(tags.color.primaries))
        par.pointee.color_trc = AVColorTransferCharacteristic(UInt32(tags.color.transfer))
        par.pointee.color_space = AVColorSpace(UInt32(tags.color.matrix))
        par.pointee.color_range = AVColorRange(UInt32(tags.color.range))
        let segmentTB = segStream.pointee.time_base
        video.pointee.time_base = tags.timeBase.av
        video.pointee.avg_frame_rate = tags.frameRate.av
        video.pointee.sample_aspect_ratio = tags.sampleAspectRatio.av
        if let matrix = tags.displayMatrix, let side = av_stream_new_side_data(video, AV_PKT_DATA_DISPLAYMATRIX, 36) {
            side.withMemoryRebound(to: Int32.self, capacity: 9) { m in
                for i in 0..<9 { m[i] = matrix[i] }
            }
        }

        // The source's audio and subtitle streams, as the unsegmented writer keeps them.
        var src = try openInput(source)
        defer { avformat_close_input(&src) }
        var map: [Int32: Int32] = [:]
        for i in 0..<Int(src!.pointee.nb_streams) {
            let st = src!.pointee.streams[i]!
            let type = st.pointee.codecpar.pointee.codec_type
            let kind = type == AVMEDIA_TYPE_AUDIO ? "audio" : type == AVMEDIA_TYPE_SUBTITLE ? "subtitle" : nil
            guard copyStreams, let kind else {
                st.pointee.discard = AVDISCARD_ALL
                continue
            }
            let id = st.pointee.codecpar.pointee.codec_id
            if avformat_query_codec(oformat, id, FF_COMPLIANCE_NORMAL) == 0 {
                let ext = (targetName as NSString).pathExtension
                warnings.append("Dropped \(kind) stream #\(i) (\(String(cString: avcodec_get_name(id)))): the .\(ext) container cannot hold it without re-encoding. Use .mkv to keep it.")
                st.pointee.discard = AVDISCARD_ALL
                continue
            }
            guard let o = avformat_new_stream(out, nil) else { continue }
            avcodec_parameters_copy(o.pointee.codecpar, st.pointee.codecpar)
            o.pointee.codecpar.pointee.codec_tag = 0
            o.pointee.time_base = st.pointee.time_base
            o.pointee.disposition = st.pointee.disposition
            if let lang = av_dict_get(st.pointee.metadata, "language", nil, 0) {
                av_dict_set(&o.pointee.metadata, "language", lang.pointee.value, 0)
            }
            map[Int32(i)] = o.pointee.index
        }

        if oformat.pointee.flags & AVFMT_NOFILE == 0 {
            let r = avio_open(&out!.pointee.pb, path, AVIO_FLAG_WRITE)
            if r < 0 { throw MediaError(.outputUnwritable, "Cannot create '\(targetName)': \(avErrorString(r)). Choose a writable location.") }
        }
        let h = avformat_write_header(out, nil)
        if h < 0 { throw MediaError(.outputUnwritable, "Cannot start writing '\(targetName)': \(avErrorString(h)).") }
        let videoTB = video.pointee.time_base

        // Merge: video packets segment after segment, source packets in file order, the
        // earlier (by dts) first; the muxer interleaves what is close.
        var vpkt = av_packet_alloc(), spkt = av_packet_alloc()
        defer { av_packet_free(&vpkt); av_packet_free(&spkt) }
        var segIndex = 0
        var current: UnsafeMutablePointer<AVFormatContext>? = nil
        defer { if current != nil { avformat_close_input(&current) } }
        var videoPackets = 0
        var lastDTS = Int64.min
        // A segment file stores no dts for the first packets (NUT keeps only pts): they get
        // the encoder's rule back, the segment's first pts less one frame per packet of delay.
        var pending: [UnsafeMutablePointer<AVPacket>] = []
        defer { for p in pending { var q: UnsafeMutablePointer<AVPacket>? = p; av_packet_free(&q) } }
        func readSegmentPacket() throws -> UnsafeMutablePointer<AVPacket>? {
            while segIndex < segments.count {
                if current == nil {
                    current = try openInput(segments[segIndex])
                    let tb = current!.pointee.streams[0]!.pointee.time_base
                    if av_cmp_q(tb, segmentTB) != 0 {
                        throw MediaError(.corruptInput, "Segment '\(segments[segIndex])' has the time base \(Rational(tb)), the first has \(Rational(segmentTB)); the segments are not of one job. Run it again with --no-resume.")
                    }
                    // Buffer the leading packets without dts and give them one.
                    var lead: [UnsafeMutablePointer<AVPacket>] = []
                    while true {
                        var p: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
                        let r = av_read_frame(current, p)
                        if r < 0 {
                            av_packet_free(&p)
                            if r != AVCode.eof { throw MediaError(.corruptInput, "Cannot read segment '\(segments[segIndex])': \(avErrorString(r)). Run the job again to redo it.") }
                            break
                        }
                        if p!.pointee.stream_index != 0 { av_packet_free(&p); continue }
                        lead.append(p!)
                        if p!.pointee.dts != AVCode.noPTS || lead.count > 64 { break }
                    }
                    let missing = lead.prefix { $0.pointee.dts == AVCode.noPTS }
                    if let firstPTS = lead.map(\.pointee.pts).filter({ $0 != AVCode.noPTS }).min() {
                        let step = max(1, lead.first!.pointee.duration)
                        for (i, p) in missing.enumerated() { p.pointee.dts = firstPTS - Int64(missing.count - i) * step }
                    }
                    pending = lead
                }
                if !pending.isEmpty { return pending.removeFirst() }
                let r = av_read_frame(current, vpkt)
                if r >= 0 {
                    if vpkt!.pointee.stream_index != 0 { av_packet_unref(vpkt); continue }
                    return nil  // in vpkt
                }
                if r != AVCode.eof { throw MediaError(.corruptInput, "Cannot read segment '\(segments[segIndex])': \(avErrorString(r)). Run the job again to redo it.") }
                avformat_close_input(&current)
                current = nil
                segIndex += 1
            }
            throw EndOfSegments()
        }
        func nextVideo() throws -> Bool {
            do {
                if let p = try readSegmentPacket() {
                    av_packet_unref(vpkt)
                    av_packet_move_ref(vpkt, p)
                    var q: UnsafeMutablePointer<AVPacket>? = p
                    av_packet_free(&q)
                }
                return true
            } catch is EndOfSegments {
                return false
            }
        }
        func nextSource() -> Bool {
            while av_read_frame(src, spkt) >= 0 {
                let p = spkt!.pointee
                if let window, map[p.stream_index] != nil {
                    let tb = src!.pointee.streams[Int(p.stream_index)]!.pointee.time_base
                    let ts = p.pts != AVCode.noPTS ? p.pts : p.dts
                    if ts != AVCode.noPTS {
                        let start = Double(ts) * Rational(tb).doubleValue
                        let end = start + Double(max(p.duration, 0)) * Rational(tb).doubleValue
                        // Kept: starts before the video ends and ends after it starts.
                        if start >= window.upperBound || (p.duration > 0 && end <= window.lowerBound) {
                            av_packet_unref(spkt)
                            continue
                        }
                    }
                }
                if map[p.stream_index] != nil { return true }
                av_packet_unref(spkt)
            }
            return false
        }
        var haveVideo = try nextVideo()
        var haveSource = nextSource()
        while haveVideo || haveSource {
            var takeVideo = haveVideo
            if haveVideo && haveSource {
                let v = vpkt!.pointee, s = spkt!.pointee
                let vts = v.dts != AVCode.noPTS ? v.dts : v.pts
                let sts = s.dts != AVCode.noPTS ? s.dts : s.pts
                if vts != AVCode.noPTS && sts != AVCode.noPTS {
                    takeVideo = av_compare_ts(vts, segmentTB, sts, src!.pointee.streams[Int(s.stream_index)]!.pointee.time_base) <= 0
                }
            }
            if takeVideo {
                let p = vpkt!
                if p.pointee.dts != AVCode.noPTS {
                    if p.pointee.dts <= lastDTS {
                        throw MediaError(.corruptInput, "The segments overlap in time (a frame at dts \(p.pointee.dts) after \(lastDTS)); they are not of one plan. Run the job again with --no-resume.")
                    }
                    lastDTS = p.pointee.dts
                }
                av_packet_rescale_ts(p, segmentTB, videoTB)
                p.pointee.stream_index = video.pointee.index
                p.pointee.pos = -1
                let w = av_interleaved_write_frame(out, p)
                if w < 0 { throw MediaError(.outputUnwritable, "Cannot write to '\(targetName)': \(avErrorString(w)).") }
                videoPackets += 1
                haveVideo = try nextVideo()
            } else {
                let p = spkt!
                let inTB = src!.pointee.streams[Int(p.pointee.stream_index)]!.pointee.time_base
                let o = map[p.pointee.stream_index]!
                let sourceIndex = p.pointee.stream_index
                av_packet_rescale_ts(p, inTB, out!.pointee.streams[Int(o)]!.pointee.time_base)
                p.pointee.stream_index = o
                p.pointee.pos = -1
                let w = screen.write(p, stream: o, to: out!)
                if CopiedPacketScreen.isDamage(w) {
                    if strict {
                        throw MediaError(.corruptInput, "A damaged packet of input stream #\(sourceIndex) of '\(source)' cannot be copied into '\(targetName)': \(avErrorString(w)) (--strict). Check the source, or leave out --strict to skip such packets.")
                    }
                    damaged += 1
                    av_packet_unref(p)
                } else if w < 0 {
                    throw MediaError(.outputUnwritable, "Cannot write to '\(targetName)': \(avErrorString(w)).")
                }
                haveSource = nextSource()
            }
        }
        let t = av_write_trailer(out)
        if t < 0 { throw MediaError(.outputUnwritable, "Cannot finish '\(targetName)': \(avErrorString(t)).") }
        if oformat.pointee.flags & AVFMT_NOFILE == 0 {
            let c = avio_closep(&out!.pointee.pb)
            if c < 0 { throw MediaError(.outputUnwritable, "Cannot close '\(targetName)': \(avErrorString(c)).") }
        }
        if damaged > 0 {
            warnings.append("skipped \(damaged) damaged audio or subtitle packets of '\(source)' that could not be copied into '\(targetName)'.")
        }
        return Result(videoPackets: videoPackets, warnings: warnings)
    }

    private struct EndOfSegments: Error {}

    private static func openInput(_ path: String) throws -> UnsafeMutablePointer<AVFormatContext>? {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let openCode = avformat_open_input(&ctx, path, nil, nil)
        if openCode < 0 { throw MediaReader.openFailure(path, openCode) }
        let r = avformat_find_stream_info(ctx, nil)
        if r < 0 {
            avformat_close_input(&ctx)
            try avCheck(r, .inputUnreadable, "Cannot read stream information from '\(path)'")
        }
        return ctx
    }
}
