import Foundation
import CFFmpeg

/// A compressed packet of a non-video stream, passed from reader to writer untouched.
public final class MediaPacket {
    let packet: UnsafeMutablePointer<AVPacket>
    /// Index of the input stream it belongs to.
    public var streamIndex: Int { Int(packet.pointee.stream_index) }

    /// When the packet starts, in seconds of its stream (nil without a timestamp).
    public let seconds: Double?
    /// When it ends (start + duration; the start when it has no duration).
    public let endSeconds: Double?

    init(moving source: UnsafeMutablePointer<AVPacket>, timeBase: AVRational) {
        packet = av_packet_alloc()
        av_packet_move_ref(packet, source)
        let pts = packet.pointee.pts != AVCode.noPTS ? packet.pointee.pts : packet.pointee.dts
        let start = pts == AVCode.noPTS || timeBase.den == 0 ? nil : Double(pts) * Double(timeBase.num) / Double(timeBase.den)
        let duration = Double(max(packet.pointee.duration, 0))
        seconds = start
        endSeconds = start.map { $0 + duration * Double(timeBase.num) / Double(timeBase.den) }
    }

    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = packet
        av_packet_free(&p)
    }
}

/// An input stream (audio, subtitles) whose packets can be copied into the output.
public final class CopyableStream: @unchecked Sendable {
    let parameters: UnsafeMutablePointer<AVCodecParameters>
    let timeBase: AVRational
    let disposition: Int32
    let language: String?
    /// Index in the input.
    public let index: Int
    /// "audio" or "subtitle".
    public let kind: String
    /// Codec name.
    public let codecName: String

    init(stream: UnsafeMutablePointer<AVStream>, kind: String) {
        parameters = avcodec_parameters_alloc()
        avcodec_parameters_copy(parameters, stream.pointee.codecpar)
        timeBase = stream.pointee.time_base
        disposition = stream.pointee.disposition
        index = Int(stream.pointee.index)
        self.kind = kind
        codecName = String(cString: avcodec_get_name(stream.pointee.codecpar.pointee.codec_id))
        if let entry = av_dict_get(stream.pointee.metadata, "language", nil, 0) {
            language = String(cString: entry.pointee.value)
        } else {
            language = nil
        }
    }

    deinit {
        var p: UnsafeMutablePointer<AVCodecParameters>? = parameters
        avcodec_parameters_free(&p)
    }
}

/// Demuxes and decodes a media file with libavformat/libavcodec.
///
/// The frame loop drains the decoder until it asks for more input, reads the next packet, and
/// at end of file flushes the decoder so every frame comes out. Frames keep their timestamps in
/// the stream's time base.
public final class MediaReader: FrameSource {
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var decoder: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private var decoded: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private let videoIndex: Int32
    private let scaler = SwsScaler()
    private let path: String
    private let strict: Bool
    /// Seconds without data after which a network input ends.
    private let networkTimeout: Double
    private var demuxerDone = false
    private var flushSent = false
    private var copyIndices: Set<Int32> = []

    /// What the file holds.
    public let info: MediaInfo
    /// Audio and subtitle streams whose packets `read` hands out.
    public private(set) var copyableStreams: [CopyableStream] = []
    /// Damaged packets skipped and damaged frames seen so far.
    public private(set) var corruptCount = 0
    /// Format frames come out in; nil keeps the stream's own 8-bit layout.
    public let outputFormat: PixelFormat?
    /// Colour description used to convert YUV to RGB (tags, with explicit assumptions filled).
    public let resolvedColor: ColorInfo
    /// What had to be assumed about the colour description (empty when the file says it all).
    public let colorAssumptions: [String]
    /// Called with a warning sentence when damaged data is skipped.
    public var onWarning: ((String) -> Void)?
    /// The last frame's timestamp, and whether a jump back was told.
    private var lastFrameTS: Int64?
    private var warnedJumpBack = false
    /// What reading loses of the source's frames, when anything: Vivify processes video in
    /// 8 bits without alpha, so a 10-bit or alpha source is reduced (one sentence for a
    /// warning; nil for 8-bit sources without alpha).
    public private(set) var reduction: String?

    /// Opens `path` and its video decoder.
    /// - Parameters:
    ///   - outputFormat: convert every frame to this format (`.rgb24` for the models); nil
    ///     keeps the source's own layout (mapped onto the nearest 8-bit format).
    ///   - copyStreams: hand out audio and subtitle packets for copying.
    ///   - strict: make damaged packets an error instead of skipping them.
    ///   - matrixOverride: the YUV matrix to use instead of the file's tag or the size rule.
    ///   - networkTimeout: for a network URL, the seconds without data after which the input
    ///     ends (before its first packet: fails).
    ///   - maxPixels: the largest frame, in pixels, the input may have (`--max-pixels`).
    /// `avformat_find_stream_info` with each stream's probing decoder limited to
    /// `maxPixels`, so probing a huge picture fails instead of allocating it.
    private static func findStreamInfo(_ ctx: UnsafeMutablePointer<AVFormatContext>?, maxPixels: Int) -> Int32 {
        guard let ctx else { return AVCode.invalidData }
        let count = Int(ctx.pointee.nb_streams)
        var options = [OpaquePointer?](repeating: nil, count: max(count, 1))
        for i in 0..<count { av_dict_set(&options[i], "max_pixels", "\(maxPixels)", 0) }
        defer { for i in 0..<count { av_dict_free(&options[i]) } }
        return options.withUnsafeMutableBufferPointer { avformat_find_stream_info(ctx, $0.baseAddress) }
    }

    public init(path: String, outputFormat: PixelFormat? = nil, copyStreams: Bool = true, strict: Bool = false,
                matrixOverride: Int32? = nil, networkTimeout: Double = NetworkURL.defaultTimeout,
                maxPixels: Int = MediaLimits.defaultMaxPixels) throws {
        self.path = path
        self.networkTimeout = networkTimeout
        self.strict = strict
        self.outputFormat = outputFormat
        // A pipe (standard input) or FIFO is read through a non-blocking descriptor of our
        // own: FFmpeg then retries on EAGAIN and asks the interrupt callback each time, so a
        // signal ends an idle wait; a FIFO's writer is awaited the same way before FFmpeg sees it.
        var url = path
        if path == "-" {
            let fd = Glibc.open("/proc/self/fd/0", O_RDONLY | O_NONBLOCK | O_CLOEXEC)
            if fd >= 0 { url = "pipe:\(fd)" }
        } else if InputWait.isFIFO(path) {
            url = "pipe:\(try InputWait.open(path, name: "'\(path)'", blocking: false))"
        }
        var ctx: UnsafeMutablePointer<AVFormatContext>? = avformat_alloc_context()
        ctx?.pointee.interrupt_callback = AVIOInterruptCB(callback: { _ in InputCancellation.isCancelled ? 1 : 0 }, opaque: nil)
        var options: OpaquePointer?
        let network = NetworkURL.isNetwork(path)
        if network {
            NetworkURL.initialise()
            for (k, v) in NetworkURL.inputOptions(for: path, timeout: networkTimeout) { av_dict_set(&options, k, v, 0) }
        }
        let openCode = avformat_open_input(&ctx, url, nil, &options)
        av_dict_free(&options)
        if openCode < 0 && InputCancellation.isCancelled {
            throw MediaError(.interrupted, "Interrupted while opening '\(path)'; nothing was read.")
        }
        if openCode < 0 && network {
            throw MediaError(.inputUnreadable, "No stream from '\(path)' within \(String(format: "%g", networkTimeout)) s (\(avErrorString(openCode))). Check that the sender is running and the address and port, or raise --timeout.")
        }
        if openCode < 0 { throw Self.openFailure(path, openCode) }
        format = ctx
        let infoCode = Self.findStreamInfo(ctx, maxPixels: maxPixels)
        // A signal while the streams were probed (a slow network source) leaves them half
        // described (no size, no rate): that is an interruption, not a file to configure from.
        if InputCancellation.isCancelled {
            throw MediaError(.interrupted, "Interrupted while reading the stream information of '\(path)'; nothing was written.")
        }
        try avCheck(infoCode, .inputUnreadable, "Cannot read stream information from '\(path)'")

        var codec: UnsafePointer<AVCodec>?
        let best = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)
        if best >= 0 {
            // The declared size is checked before the decoder allocates a frame of it.
            let par = ctx!.pointee.streams[Int(best)]!.pointee.codecpar.pointee
            if par.width <= 0 || par.height <= 0 {
                // Sized only by decoding (MJPEG, some raw streams), and the probing decoder
                // refused the frame at the limit, or the stream is damaged.
                throw MediaError(.corruptInput, "Cannot size the video of '\(path)': its first frame could not be decoded within the limit of \(maxPixels) pixels per frame, or it is damaged. If the frames are that large, pass --max-pixels N (about 12 bytes of memory per pixel per buffer).")
            }
            try MediaLimits.checkFrame(width: Int(par.width), height: Int(par.height), what: "'\(path)'", limit: maxPixels)
        }
        if best == vivify_averror_decoder_not_found() || (best >= 0 && codec == nil) {
            let id = best >= 0 ? ctx!.pointee.streams[Int(best)]!.pointee.codecpar.pointee.codec_id : AV_CODEC_ID_NONE
            let name = best >= 0 ? String(cString: avcodec_get_name(id)) : "its codec"
            throw MediaError(.unsupported, "Cannot decode '\(path)': this FFmpeg has no decoder for \(name). Convert it with a codec FFmpeg can decode, or install an FFmpeg build with that decoder.")
        }
        if best < 0 {
            throw MediaError(.noVideoStream, "Cannot open '\(path)': no video stream found. Pass a file with a video stream (raw frames: `run` and `probe` read them with --input-format rgb24|gray|y4m).")
        }
        videoIndex = best
        let stream = ctx!.pointee.streams[Int(best)]!
        let dec = avcodec_alloc_context3(codec)
        decoder = dec
        try avCheck(avcodec_parameters_to_context(dec, stream.pointee.codecpar), .internalFailure, "Cannot set up the decoder for '\(path)'")
        dec!.pointee.pkt_timebase = stream.pointee.time_base
        // With frame threads a packet's decode error surfaces on another thread, sometimes late
        // and sometimes not at all; --strict must give the same verdict every run, so it decodes
        // on one thread and has the decoder fail on damage instead of concealing it.
        dec!.pointee.thread_count = strict ? 1 : 0
        dec!.pointee.thread_type = strict ? 0 : FF_THREAD_FRAME | FF_THREAD_SLICE
        dec!.pointee.err_recognition |= AV_EF_CRCCHECK | AV_EF_BITSTREAM | (strict ? AV_EF_EXPLODE : 0)
        dec!.pointee.max_pixels = Int64(maxPixels)
        let codecName = String(cString: codec!.pointee.name)
        try avCheck(avcodec_open2(dec, codec, nil), .unsupported, "Cannot open the \(codecName) decoder for '\(path)'")

        // Describe the file.
        let par = stream.pointee.codecpar.pointee
        let sourceFormat = AVPixelFormat(par.format)
        let tb = Rational(stream.pointee.time_base)
        var rate = Rational(stream.pointee.avg_frame_rate)
        let baseRate = Rational(stream.pointee.r_frame_rate)
        if !MediaLimits.isPlausible(frameRate: rate) { rate = baseRate }
        if !MediaLimits.isPlausible(frameRate: rate) {
            throw MediaError(.corruptInput, "'\(path)' declares a frame rate of \(rate) fps, outside 1/1000 to 1000 fps. The file's timing is damaged; remux it with a rate (ffmpeg -r 30 -i IN -c copy OUT) and pass that.")
        }
        let isVFR = baseRate.isValid && rate.isValid && av_cmp_q(baseRate.av, rate.av) != 0
        var duration: Double?
        if stream.pointee.duration != AVCode.noPTS && stream.pointee.duration > 0 {
            duration = Double(stream.pointee.duration) * tb.doubleValue
        } else if ctx!.pointee.duration > 0 {
            duration = Double(ctx!.pointee.duration) / Double(AV_TIME_BASE)
        }
        var sar = Rational(par.sample_aspect_ratio)
        if !sar.isValid { sar = Rational(stream.pointee.sample_aspect_ratio) }
        if !sar.isValid { sar = Rational(1, 1) }
        var color = ColorInfo(primaries: Int32(par.color_primaries.rawValue), transfer: Int32(par.color_trc.rawValue),
                              matrix: Int32(par.color_space.rawValue), range: Int32(par.color_range.rawValue))
        if !color.hasRange && (sourceFormat == AV_PIX_FMT_YUVJ420P || sourceFormat == AV_PIX_FMT_YUVJ422P || sourceFormat == AV_PIX_FMT_YUVJ444P) {
            color.range = 2
        }
        var rotation = 0.0
        var matrix: [Int32]?
        var sideSize: Int = 0
        if let side = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &sideSize), sideSize >= 36 {
            side.withMemoryRebound(to: Int32.self, capacity: 9) { m in
                matrix = Array(UnsafeBufferPointer(start: m, count: 9))
                let r = av_display_rotation_get(m)
                rotation = r.isNaN ? 0 : (r == 0 ? 0 : r)
            }
        }
        let nativeFormat = PixelFormat(av: sourceFormat) ?? Self.nearest8Bit(sourceFormat)
        if let d = av_pix_fmt_desc_get(sourceFormat)?.pointee, d.flags & UInt64(AV_PIX_FMT_FLAG_PAL) == 0 {
            let deeper = d.comp.0.depth > 8, alpha = d.flags & UInt64(AV_PIX_FMT_FLAG_ALPHA) != 0
            if deeper || alpha {
                let lost = [deeper ? "\(d.comp.0.depth)-bit samples become 8-bit" : nil, alpha ? "its alpha plane is dropped" : nil].compactMap { $0 }
                reduction = "'\(path)' is \(avPixelFormatName(sourceFormat)): Vivify processes video in 8 bits without alpha, so \(lost.joined(separator: " and ")) (read as \(nativeFormat.rawValue))."
            }
        }
        let video = VideoStreamInfo(
            width: Int(par.width), height: Int(par.height), pixelFormat: nativeFormat,
            sourcePixelFormatName: avPixelFormatName(sourceFormat), codecName: String(cString: avcodec_get_name(par.codec_id)),
            timeBase: tb, frameRate: rate, isVariableFrameRate: isVFR,
            frameCount: stream.pointee.nb_frames > 0 ? Int(stream.pointee.nb_frames) : nil,
            duration: duration, color: color, sampleAspectRatio: sar, rotation: rotation, displayMatrix: matrix)

        var summaries: [StreamSummary] = []
        for i in 0..<Int(ctx!.pointee.nb_streams) {
            let st = ctx!.pointee.streams[i]!
            let cp = st.pointee.codecpar.pointee
            let kind: String
            switch cp.codec_type {
            case AVMEDIA_TYPE_VIDEO: kind = "video"
            case AVMEDIA_TYPE_AUDIO: kind = "audio"
            case AVMEDIA_TYPE_SUBTITLE: kind = "subtitle"
            case AVMEDIA_TYPE_ATTACHMENT: kind = "attachment"
            default: kind = "data"
            }
            var details: [String] = []
            if kind == "audio" {
                details.append("\(cp.sample_rate) Hz")
                details.append("\(cp.ch_layout.nb_channels) channels")
            } else if kind == "video" {
                details.append("\(cp.width)x\(cp.height)")
            }
            if let lang = av_dict_get(st.pointee.metadata, "language", nil, 0) {
                details.append("language \(String(cString: lang.pointee.value))")
            }
            var d: Double?
            if st.pointee.duration != AVCode.noPTS && st.pointee.duration > 0 {
                d = Double(st.pointee.duration) * Rational(st.pointee.time_base).doubleValue
            }
            summaries.append(StreamSummary(index: i, kind: kind, codecName: String(cString: avcodec_get_name(cp.codec_id)),
                                           duration: d, details: details.joined(separator: ", ")))
            if copyStreams && (kind == "audio" || kind == "subtitle") {
                copyableStreams.append(CopyableStream(stream: st, kind: kind))
                copyIndices.insert(Int32(i))
            }
        }
        // Skip every stream we do not use so the demuxer does not hand them over.
        for i in 0..<Int(ctx!.pointee.nb_streams) where Int32(i) != best && !copyIndices.contains(Int32(i)) {
            ctx!.pointee.streams[i]!.pointee.discard = AVDISCARD_ALL
        }
        info = MediaInfo(container: String(cString: ctx!.pointee.iformat.pointee.name),
                         duration: ctx!.pointee.duration > 0 ? Double(ctx!.pointee.duration) / Double(AV_TIME_BASE) : duration,
                         streams: summaries, video: video)
        var resolved = color.resolved(height: video.height)
        if let m = matrixOverride {
            resolved.info.matrix = m
            resolved.assumptions.removeAll { $0.hasPrefix("matrix") }
        }
        // Assumptions only matter where YUV is turned into RGB.
        let needsMatrix = outputFormat == .rgb24 && nativeFormat.isYUV
        resolvedColor = resolved.info
        colorAssumptions = needsMatrix ? resolved.assumptions : []
    }

    deinit {
        avcodec_free_context(&decoder)
        avformat_close_input(&format)
        av_packet_free(&packet)
        av_frame_free(&decoded)
    }

    /// The 8-bit layout closest to an FFmpeg format we do not map directly (10-bit, NV12, …).
    static func nearest8Bit(_ f: AVPixelFormat) -> PixelFormat {
        guard let d = av_pix_fmt_desc_get(f)?.pointee else { return .yuv420p }
        // A palette format (pal8: one component, the index) is colour through its palette.
        if d.flags & UInt64(AV_PIX_FMT_FLAG_RGB | AV_PIX_FMT_FLAG_PAL) != 0 { return .rgb24 }
        if d.nb_components <= 2 { return .gray }
        switch (d.log2_chroma_w, d.log2_chroma_h) {
        case (1, 1): return .yuv420p
        case (1, 0): return .yuv422p
        default: return .yuv444p
        }
    }

    public func read(into frame: inout VideoFrame) throws -> SourceEvent {
        while true {
            let got = avcodec_receive_frame(decoder, decoded)
            if got == 0 {
                defer { av_frame_unref(decoded) }
                let f = decoded!.pointee
                if f.decode_error_flags != 0 || (f.flags & AV_FRAME_FLAG_CORRUPT) != 0 {
                    corruptCount += 1
                    if strict {
                        throw MediaError(.corruptInput, "'\(path)' has a damaged frame near \(describe(pts: f.best_effort_timestamp)). Repair or re-encode the input, or drop --strict to skip damaged data.")
                    }
                    onWarning?("'\(path)': damaged frame near \(describe(pts: f.best_effort_timestamp)) decoded with errors concealed.")
                }
                try store(decoded!, into: &frame)
                return .frame
            }
            if got == AVCode.eof { return .end }
            if got != AVCode.again {
                try damaged(got, what: "decoding")
                continue
            }
            if demuxerDone {
                if flushSent { return .end }
                flushSent = true
                _ = avcodec_send_packet(decoder, nil)
                continue
            }
            let r = av_read_frame(format, packet)
            if r == AVCode.eof {
                demuxerDone = true
                continue
            }
            if r < 0 && InputCancellation.isCancelled {
                // A signal while waiting for input: the stream ends here, the frames so far are kept.
                demuxerDone = true
                continue
            }
            if r < 0 {
                if r == AVCode.invalidData {
                    try damaged(r, what: "reading")
                    continue
                }
                if NetworkURL.isNetwork(path) {
                    // A live source that goes quiet for the timeout has ended.
                    onWarning?("'\(path)': no data for \(String(format: "%g", networkTimeout)) s (\(avErrorString(r))); the stream is taken as ended.")
                    demuxerDone = true
                    continue
                }
                // An I/O error or truncation ends the stream; what was read still comes out.
                onWarning?("'\(path)': reading stopped early (\(avErrorString(r))); the frames read so far are kept.")
                if strict {
                    throw MediaError(.corruptInput, "'\(path)' could not be read to the end: \(avErrorString(r)). Repair the file, or drop --strict to keep what can be read.")
                }
                demuxerDone = true
                continue
            }
            let index = packet!.pointee.stream_index
            if index == videoIndex {
                let sent = avcodec_send_packet(decoder, packet)
                av_packet_unref(packet)
                if sent < 0 && sent != AVCode.again {
                    try damaged(sent, what: "decoding")
                }
                continue
            }
            if copyIndices.contains(index) {
                return .packet(MediaPacket(moving: packet!, timeBase: format!.pointee.streams[Int(index)]!.pointee.time_base))
            }
            av_packet_unref(packet)
        }
    }

    /// Moves to the keyframe at or before `pts` (the video stream's time base) and clears the
    /// decoder, so the next `read` decodes from there (resumable segments start mid-file).
    public func seek(toPTS pts: Int64) throws {
        let r = av_seek_frame(format, videoIndex, pts, AVSEEK_FLAG_BACKWARD)
        if r < 0 {
            throw MediaError(.unsupported, "'\(path)' cannot seek to \(describe(pts: pts)) (\(avErrorString(r))). Remux it into .mkv or .mp4 (ffmpeg -i IN -c copy OUT.mkv), or pass --segment-seconds 0 to process it in one piece.")
        }
        avcodec_flush_buffers(decoder)
        lastFrameTS = nil
        demuxerDone = false
        flushSent = false
    }

    private func damaged(_ code: Int32, what: String) throws {
        corruptCount += 1
        if strict {
            throw MediaError(.corruptInput, "'\(path)' has damaged data (\(what): \(avErrorString(code))). Repair or re-encode the input, or drop --strict to skip damaged packets.")
        }
        onWarning?("'\(path)': skipped a damaged packet (\(what): \(avErrorString(code))).")
    }

    private func describe(pts: Int64) -> String {
        if pts == AVCode.noPTS { return "an unknown time" }
        return String(format: "%.3f s", Double(pts) * info.video.timeBase.doubleValue)
    }

    private func store(_ av: UnsafeMutablePointer<AVFrame>, into frame: inout VideoFrame) throws {
        let f = av.pointee
        let srcFormat = AVPixelFormat(f.format)
        let width = Int(f.width), height = Int(f.height)
        let target = outputFormat ?? PixelFormat(av: srcFormat) ?? Self.nearest8Bit(srcFormat)
        frame.reshape(format: target, width: width, height: height)
        frame.timeBase = info.video.timeBase
        let ts = f.best_effort_timestamp != AVCode.noPTS ? f.best_effort_timestamp : f.pts
        frame.pts = ts == AVCode.noPTS ? nil : ts
        if ts != AVCode.noPTS {
            // Frames come out in presentation order: a time that goes back is a discontinuity
            // (MPEG-TS files joined with cat), which the output's timing would follow.
            if let last = lastFrameTS, ts < last, !warnedJumpBack {
                warnedJumpBack = true
                onWarning?("'\(path)': the video's timestamps jump back from \(describe(pts: last)) to \(describe(pts: ts)) (files joined end to end?), and the output's timing follows them: the frames after the jump are squeezed together. Remux it first, which mends the jump: ffmpeg -i '\(path)' -c copy OUT.mkv, then run on OUT.mkv.")
            }
            lastFrameTS = ts
        }
        frame.duration = f.pkt_duration > 0 ? f.pkt_duration : nil
        var sar = Rational(f.sample_aspect_ratio)
        if !sar.isValid { sar = info.video.sampleAspectRatio }
        frame.sampleAspectRatio = sar
        var color = resolvedColor
        if f.color_range.rawValue != 0 { color.range = Int32(f.color_range.rawValue) }
        if srcFormat == AV_PIX_FMT_YUVJ420P || srcFormat == AV_PIX_FMT_YUVJ422P || srcFormat == AV_PIX_FMT_YUVJ444P { color.range = 2 }
        if PixelFormat(av: srcFormat) == target {
            // Same layout: copy rows, dropping FFmpeg's line padding.
            frame.color = color
            for p in 0..<target.planeCount {
                let rowBytes = target.rowBytes(plane: p, width: width)
                let rows = target.rows(plane: p, height: height)
                let stride = Int(withUnsafePointer(to: f.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[p] } })
                let src = withUnsafePointer(to: f.data) { $0.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[p]! } }
                frame.planes[p].withUnsafeMutableBufferPointer { dst in
                    for y in 0..<rows {
                        (dst.baseAddress! + y * rowBytes).update(from: src + y * stride, count: rowBytes)
                    }
                }
            }
            return
        }
        var src = PlaneRefs()
        withUnsafePointer(to: f.data) { dp in
            dp.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { d in
                withUnsafePointer(to: f.linesize) { lp in
                    lp.withMemoryRebound(to: Int32.self, capacity: 8) { l in
                        for i in 0..<4 { src.set(i, d[i], Int(l[i])) }
                    }
                }
            }
        }
        var dstColor = color
        if target == .rgb24 { dstColor.range = 2 }
        // The decoder's planes are padded by FFmpeg; the frame's are tight (see `PaddedPlanes`).
        let dst = scaler.paddedDestination(format: target, width: width, height: height)
        try scaler.scale(srcFormat: srcFormat, srcWidth: width, srcHeight: height, srcColor: color, src: src,
                         dstFormat: target.av, dstWidth: width, dstHeight: height, dstColor: dstColor, dst: dst,
                         filter: .bicubic)
        scaler.storeDestination(into: &frame)
        frame.color = dstColor
    }

    /// What a demux-only scan of the video stream found.
    public struct PacketScan: Sendable {
        /// Number of video packets (one per frame for the codecs we read).
        public var count: Int
        /// Whether the gaps between consecutive timestamps differ by more than one tick.
        public var isVariableFrameRate: Bool
        /// Frames per second over the whole stream (count / time span), when it can be told.
        public var averageRate: Double?
    }

    /// The error for an input file FFmpeg could not open: not a media file, or not readable.
    static func openFailure(_ path: String, _ code: Int32) -> MediaError {
        let reason = avErrorString(code)
        if code == AVCode.invalidData {
            return MediaError(.inputUnreadable, "Cannot read '\(path)': \(reason) — it is not a media file FFmpeg recognises. \(MediaError.rawFramesHint)")
        }
        return MediaError(.inputUnreadable, "Cannot open '\(path)': \(reason). Check the path and its permissions.")
    }

    /// Demuxes the whole file (no decoding) to count the video packets and see whether their
    /// timestamps are evenly spaced, for containers that store neither.
    public static func scanVideoPackets(path: String) throws -> PacketScan {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        let openCode = avformat_open_input(&ctx, path, nil, nil)
        if openCode < 0 { throw openFailure(path, openCode) }
        defer { avformat_close_input(&ctx) }
        try avCheck(avformat_find_stream_info(ctx, nil), .inputUnreadable, "Cannot read stream information from '\(path)'")
        let best = av_find_best_stream(ctx, AVMEDIA_TYPE_VIDEO, -1, -1, nil, 0)
        guard best >= 0 else { return PacketScan(count: 0, isVariableFrameRate: false, averageRate: nil) }
        var pkt = av_packet_alloc()
        defer { av_packet_free(&pkt) }
        var stamps: [Int64] = []
        var count = 0
        while av_read_frame(ctx, pkt) >= 0 {
            // Packets an edit list hides (the GOP before an MP4 stream-copied cut's start) are
            // decoded for reference but never shown: not frames of the video.
            if pkt!.pointee.stream_index == best && pkt!.pointee.flags & AV_PKT_FLAG_DISCARD == 0 {
                count += 1
                if pkt!.pointee.pts != AVCode.noPTS { stamps.append(pkt!.pointee.pts) }
            }
            av_packet_unref(pkt)
        }
        stamps.sort()
        let gaps = zip(stamps.dropFirst(), stamps).map { $0 - $1 }
        let vfr = (gaps.max() ?? 0) - (gaps.min() ?? 0) > 1
        var rate: Double?
        if let first = stamps.first, let last = stamps.last, last > first, stamps.count > 1 {
            let tb = Rational(ctx!.pointee.streams[Int(best)]!.pointee.time_base)
            rate = Double(stamps.count - 1) / (Double(last - first) * tb.doubleValue)
        }
        return PacketScan(count: count, isVariableFrameRate: vfr, averageRate: rate)
    }
}
