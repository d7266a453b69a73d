import CFFmpeg
import Foundation

/// What the encoder is told about the video it receives.
public struct OutputVideoDescription: Sendable {
    /// Layout of the frames that will be written.
    public var pixelFormat: PixelFormat
    /// Width of the frames that will be written.
    public var width: Int
    /// Height of the frames that will be written.
    public var height: Int
    /// Average frame rate of the source.
    public var frameRate: Rational
    /// Time base of the frames' timestamps.
    public var timeBase: Rational
    /// Pixel shape.
    public var sampleAspectRatio: Rational
    /// Colour description to write (resolved: nothing unspecified that a conversion used).
    public var color: ColorInfo
    /// Display matrix to copy onto the output stream (rotation metadata).
    public var displayMatrix: [Int32]?

    /// Makes a description.
    public init(pixelFormat: PixelFormat, width: Int, height: Int, frameRate: Rational, timeBase: Rational, sampleAspectRatio: Rational,
                color: ColorInfo, displayMatrix: [Int32]? = nil) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.frameRate = frameRate
        self.timeBase = timeBase
        self.sampleAspectRatio = sampleAspectRatio
        self.color = color
        self.displayMatrix = displayMatrix
    }
}

/// Encodes frames with libavcodec and muxes them, with copied audio and subtitle packets,
/// into a container chosen from the output file name.
public final class MediaWriter {
    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var encoder: UnsafeMutablePointer<AVCodecContext>?
    private var videoStream: UnsafeMutablePointer<AVStream>
    private var avFrame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    private var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    private let scaler = SwsScaler()
    private var streamMap: [Int: (out: Int32, inTB: AVRational, outTB: AVRational)] = [:]
    private var lastPTS: Int64 = Int64.min
    private var nextPTS: Int64 = 0
    private let frameDuration: Int64
    private let targetName: String
    private var headerWritten = false
    private var finished = false
    private let description: OutputVideoDescription
    private let encoderPixelFormat: AVPixelFormat

    /// The encoder's pixel format when frames can be handed to it in that layout (then the
    /// caller converts, in a stage it traces, and `write` only copies); nil for layouts frames
    /// cannot hold (10-bit, the JPEG "J" formats): `write` converts those itself.
    public var requiredFormat: PixelFormat? {
        PixelFormat(av: encoderPixelFormat).flatMap { $0.av == encoderPixelFormat ? $0 : nil }
    }
    /// The colour the encoder is told, which frames converted into `requiredFormat` take.
    public var requiredColor: ColorInfo? { description.color }

    /// Warnings about what could not be carried over (streams dropped, options ignored).
    public private(set) var warnings: [String] = []
    /// Frames handed to the encoder.
    public private(set) var framesWritten = 0

    /// Opens `path` for writing in the container that `targetName`'s extension names (the
    /// real file may be a temporary one beside the target).
    /// `headersFor` names the file the packets end up in when it is another container (a
    /// segment later joined into it): the encoder writes its headers as that container wants.
    public init(path: String, targetName: String, video: OutputVideoDescription, settings: EncoderSettings,
                copyStreams: [CopyableStream], headersFor: String? = nil) throws {
        self.targetName = targetName
        self.description = video
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        try settings.validatePreset()
        // A network URL names no extension: its protocol picks the muxer.
        let oformat = NetworkURL.muxer(for: targetName).flatMap { av_guess_format($0, nil, nil) } ?? av_guess_format(nil, targetName, nil)
        if NetworkURL.isNetwork(targetName) { NetworkURL.initialise() }
        guard oformat != nil else {
            throw MediaError(.invalidOptions, "Cannot tell which container to write for '\(targetName)'. Use an extension such as .mp4, .mkv, .webm, .mov or .avi (or .y4m for raw YUV).")
        }
        try avCheck(avformat_alloc_output_context2(&ctx, oformat, nil, path), .outputUnwritable, "Cannot set up the output '\(targetName)'")
        format = ctx
        // A segment keeps the encoder's own timestamps (the muxer would shift a first segment's
        // negative dts, and with it every pts); the join's container deals with them once.
        if headersFor != nil { ctx!.pointee.avoid_negative_ts = AVFMT_AVOID_NEG_TS_DISABLED }

        let encoderName = settings.encoderName
        guard let codec = avcodec_find_encoder_by_name(encoderName), av_codec_is_encoder(codec) != 0,
              codec.pointee.type == AVMEDIA_TYPE_VIDEO else {
            avformat_free_context(ctx)
            format = nil
            throw MediaError(.unsupported, "Unknown video encoder '\(settings.codec)'. Use one of: \(EncoderSettings.supportedEncoders.joined(separator: ", ")).")
        }
        if avformat_query_codec(oformat, codec.pointee.id, FF_COMPLIANCE_NORMAL) == 0 {
            avformat_free_context(ctx)
            format = nil
            let ext = (targetName as NSString).pathExtension
            throw MediaError(.invalidOptions, "The .\(ext) container cannot hold \(encoderName) video. Choose another --codec or output extension (.mkv holds them all).")
        }
        guard let stream = avformat_new_stream(ctx, nil) else {
            throw MediaError(.internalFailure, "Cannot add a video stream to '\(targetName)'.")
        }
        videoStream = stream
        let enc = avcodec_alloc_context3(codec)!
        encoder = enc

        // Pixel format: asked for, else the codec's usual 4:2:0, else its first supported one.
        var pixfmt: AVPixelFormat
        if let name = settings.pixelFormat {
            pixfmt = av_get_pix_fmt(name)
            if pixfmt == AV_PIX_FMT_NONE {
                throw MediaError(.invalidOptions, "Unknown pixel format '\(name)'. Use an FFmpeg name such as yuv420p, yuv422p, yuv444p or gray.")
            }
        } else {
            // MJPEG (a .jpg frame) takes full-range 4:2:0 as the JPEG "J" format; a lossless
            // picture is RGB (TIFF takes 4:2:0 too, and a .tif frame came out in it).
            pixfmt = encoderName == "ffv1" ? Self.losslessFormat(for: video) : encoderName == "mjpeg" ? AV_PIX_FMT_YUVJ420P
                : ["png", "bmp", "tiff"].contains(encoderName) ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_YUV420P
        }
        let supported = Self.supportedFormats(codec)
        if !supported.isEmpty && !supported.contains(pixfmt) {
            if settings.pixelFormat != nil {
                let names = supported.map(avPixelFormatName).joined(separator: ", ")
                throw MediaError(.invalidOptions, "Encoder \(encoderName) cannot take pixel format '\(settings.pixelFormat!)'. Use one of: \(names).")
            }
            // The encoder's format that loses least of this one (FFmpeg's own choice), not its
            // first: ffv1 lists 4:2:0 first and takes 8-bit RGB as bgr0, not gbrp, so RGB
            // frames became 4:2:0 in a "lossless" file.
            var loss: Int32 = 0
            let best = supported.withUnsafeBufferPointer { list -> AVPixelFormat in
                var terminated = Array(list) + [AV_PIX_FMT_NONE]
                return avcodec_find_best_pix_fmt_of_list(&terminated, pixfmt, 0, &loss)
            }
            pixfmt = best == AV_PIX_FMT_NONE ? supported[0] : best
        }
        // 4:2:0 needs even sizes in most encoders; keep the exact size by switching to 4:4:4.
        let odd = video.width % 2 == 1 || video.height % 2 == 1
        if odd, settings.pixelFormat == nil, let d = av_pix_fmt_desc_get(pixfmt)?.pointee,
           d.log2_chroma_w > 0 || d.log2_chroma_h > 0, encoderName != "libvpx-vp9", encoderName != "mjpeg" {
            // ffv1 included: it refuses an odd 4:2:0 frame ("Function not implemented").
            if supported.isEmpty || supported.contains(AV_PIX_FMT_YUV444P) {
                warnings.append("\(video.width)x\(video.height) has an odd side, which 4:2:0 \(encoderName) cannot encode; writing yuv444p instead (pass --pix-fmt to choose).")
                pixfmt = AV_PIX_FMT_YUV444P
            }
        }
        encoderPixelFormat = pixfmt

        enc.pointee.width = Int32(video.width)
        enc.pointee.height = Int32(video.height)
        enc.pointee.pix_fmt = pixfmt
        enc.pointee.sample_aspect_ratio = video.sampleAspectRatio.av
        enc.pointee.framerate = video.frameRate.av
        let tb = Self.streamTimeBase(source: video.timeBase, frameRate: video.frameRate, encoder: encoderName, output: targetName)
        enc.pointee.time_base = tb.av
        enc.pointee.color_primaries = AVColorPrimaries(UInt32(video.color.primaries))
        enc.pointee.color_trc = AVColorTransferCharacteristic(UInt32(video.color.transfer))
        enc.pointee.colorspace = AVColorSpace(UInt32(video.color.matrix))
        // JPEG is full range (MJPEG refuses a limited-range tag without relaxed compliance).
        enc.pointee.color_range = encoderName == "mjpeg" ? AVCOL_RANGE_JPEG : AVColorRange(UInt32(video.color.range))
        enc.pointee.thread_count = 0
        let headerFormat = headersFor.flatMap { av_guess_format(nil, $0, nil) } ?? oformat!
        if headerFormat.pointee.flags & AVFMT_GLOBALHEADER != 0 {
            enc.pointee.flags |= AV_CODEC_FLAG_GLOBAL_HEADER
        }
        frameDuration = max(1, av_rescale_q(1, av_inv_q(video.frameRate.av), tb.av))

        try Self.applyQuality(settings, encoderName: encoderName, to: enc, warnings: &warnings)
        if let least = Self.smallestFrame[encoderName], video.width < least || video.height < least {
            throw MediaError(.invalidOptions, "Encoder \(encoderName) takes frames of at least \(least)x\(least); the output's are \(video.width)x\(video.height). Choose another --codec (libx264, libvpx-vp9 and ffv1 take any size) or make the frames larger (--upscale).")
        }
        try avCheck(avcodec_open2(enc, codec, nil), .invalidOptions,
                    "Cannot open encoder \(encoderName) for \(video.width)x\(video.height) \(avPixelFormatName(pixfmt)) (check --crf, --preset and --pix-fmt)")
        try avCheck(avcodec_parameters_from_context(stream.pointee.codecpar, enc), .internalFailure, "Cannot describe the video stream")
        stream.pointee.time_base = tb.av
        stream.pointee.avg_frame_rate = video.frameRate.av
        stream.pointee.sample_aspect_ratio = video.sampleAspectRatio.av
        if let matrix = video.displayMatrix, let side = av_stream_new_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, 36) {
            side.withMemoryRebound(to: Int32.self, capacity: 9) { m in
                for i in 0..<9 { m[i] = matrix[i] }
            }
        }

        for input in copyStreams {
            let id = input.parameters.pointee.codec_id
            let ok = avformat_query_codec(oformat, id, FF_COMPLIANCE_NORMAL)
            // The codec tables say yes for some streams the muxer then refuses in its header
            // (Opus or FLAC in .mov, FLAC in .mp4 "experimental"), which failed the whole run:
            // each stream is tried with the video in a header written to memory first.
            if ok == 0 || !Self.muxerTakes(input, beside: stream, format: oformat!) {
                let ext = (targetName as NSString).pathExtension.lowercased()
                let keep = ext == "mkv" ? (input.codecName == "mov_text" ? ".mp4 or .mov" : "another container") : ".mkv"
                warnings.append("Dropped \(input.kind) stream #\(input.index) (\(input.codecName)): the .\(ext) container cannot hold it without re-encoding. Use \(keep) to keep it.")
                continue
            }
            guard let out = avformat_new_stream(ctx, nil) else { continue }
            avcodec_parameters_copy(out.pointee.codecpar, input.parameters)
            out.pointee.codecpar.pointee.codec_tag = 0
            out.pointee.time_base = input.timeBase
            out.pointee.disposition = input.disposition
            if let lang = input.language { av_dict_set(&out.pointee.metadata, "language", lang, 0) }
            streamMap[input.index] = (out.pointee.index, input.timeBase, input.timeBase)
        }

        // A network output's blocked writes (a peer that stopped reading) are abandoned a
        // moment after a signal, so SIGINT ends the run instead of waiting on the peer for ever.
        var interrupt = AVIOInterruptCB(callback: nil, opaque: nil)
        if NetworkURL.isNetwork(targetName) {
            interrupt = AVIOInterruptCB(callback: { _ in InputCancellation.abandonsNetworkOutput ? 1 : 0 }, opaque: nil)
            ctx!.pointee.interrupt_callback = interrupt
        }
        if oformat!.pointee.flags & AVFMT_NOFILE == 0 {
            let r = avio_open2(&ctx!.pointee.pb, path, AVIO_FLAG_WRITE, &interrupt, nil)
            if r < 0 {
                throw MediaError(.outputUnwritable, "Cannot create '\(targetName)': \(avErrorString(r)). Choose a writable location.")
            }
        }
        let r = avformat_write_header(ctx, nil)
        if r == -EINVAL {
            // The muxer refused the streams (an audio-only or subtitle container, a picture
            // format with a video codec it cannot hold): a bad output name, not a disk problem.
            let ext = (targetName as NSString).pathExtension
            throw MediaError(.invalidOptions, "The .\(ext) container cannot hold this \(settings.codec) video. Choose another output extension (.mkv holds them all) or --codec.")
        }
        if r < 0 {
            throw MediaError(.outputUnwritable, "Cannot start writing '\(targetName)': \(avErrorString(r)).")
        }
        headerWritten = true
        // The muxer may have changed the stream time bases; remember the final ones.
        for (k, v) in streamMap { streamMap[k] = (v.out, v.inTB, ctx!.pointee.streams[Int(v.out)]!.pointee.time_base) }

        let frame = avFrame!
        frame.pointee.format = pixfmt.rawValue
        frame.pointee.width = Int32(video.width)
        frame.pointee.height = Int32(video.height)
        try avCheck(av_frame_get_buffer(frame, 0), .internalFailure, "Cannot allocate an encoder frame")
    }

    deinit {
        if !finished, headerWritten { try? finish() }
        // An encoder opened but never finished (the muxer refused the output after it opened):
        // SVT-AV1 waits for ever in its close without the end of stream, so it is sent one and
        // drained first (every encoder takes it).
        // SVT-AV1 given no frame at all also waits in the end of stream: it gets one blank one.
        if !finished, let enc = encoder, avcodec_is_open(enc) != 0 {
            if framesWritten == 0, let blank = av_frame_alloc() {
                var b: UnsafeMutablePointer<AVFrame>? = blank
                blank.pointee.format = enc.pointee.pix_fmt.rawValue
                blank.pointee.width = enc.pointee.width
                blank.pointee.height = enc.pointee.height
                blank.pointee.pts = 0
                if av_frame_get_buffer(blank, 0) >= 0, let desc = av_pix_fmt_desc_get(enc.pointee.pix_fmt)?.pointee {
                    // Mid-grey in every plane, each plane's own rows (chroma planes are shorter).
                    let h = Int(enc.pointee.height)
                    for p in 0..<Int(desc.nb_components) {
                        let data = withUnsafePointer(to: &blank.pointee.data) { $0.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[p] } }
                        let stride = withUnsafePointer(to: &blank.pointee.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[p] } }
                        let rows = p == 1 || p == 2 ? -((-h) >> Int(desc.log2_chroma_h)) : h
                        if let data, stride > 0 { memset(data, 128, Int(stride) * rows) }
                    }
                    _ = avcodec_send_frame(enc, blank)
                }
                av_frame_free(&b)
            }
            if avcodec_send_frame(enc, nil) >= 0, let pkt = av_packet_alloc() {
                var p: UnsafeMutablePointer<AVPacket>? = pkt
                while avcodec_receive_packet(enc, pkt) >= 0 { av_packet_unref(pkt) }
                av_packet_free(&p)
            }
        }
        avcodec_free_context(&encoder)
        if let ctx = format {
            if ctx.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 { avio_closep(&ctx.pointee.pb) }
            avformat_free_context(ctx)
        }
        av_frame_free(&avFrame)
        av_packet_free(&packet)
    }

    /// Whether `format`'s muxer writes a header for `input` copied beside the video stream
    /// `video` (as set up for the output): tried in memory, nothing written anywhere. A muxer
    /// that refuses the video alone too is no verdict on the stream (true: the real header
    /// says what is wrong).
    static func muxerTakes(_ input: CopyableStream, beside video: UnsafeMutablePointer<AVStream>,
                           format: UnsafePointer<AVOutputFormat>) -> Bool {
        func header(with copied: CopyableStream?) -> Bool? {
            var trial: UnsafeMutablePointer<AVFormatContext>?
            guard avformat_alloc_output_context2(&trial, format, nil, nil) >= 0, let ctx = trial else { return nil }
            defer {
                if let pb = ctx.pointee.pb {
                    var buffer: UnsafeMutablePointer<UInt8>?
                    _ = avio_close_dyn_buf(pb, &buffer)
                    av_free(buffer)
                    ctx.pointee.pb = nil
                }
                avformat_free_context(ctx)
            }
            guard let v = avformat_new_stream(ctx, nil) else { return nil }
            avcodec_parameters_copy(v.pointee.codecpar, video.pointee.codecpar)
            v.pointee.time_base = video.pointee.time_base
            if let copied {
                guard let a = avformat_new_stream(ctx, nil) else { return nil }
                avcodec_parameters_copy(a.pointee.codecpar, copied.parameters)
                a.pointee.codecpar.pointee.codec_tag = 0
                a.pointee.time_base = copied.timeBase
            }
            if format.pointee.flags & AVFMT_NOFILE == 0 {
                guard avio_open_dyn_buf(&ctx.pointee.pb) >= 0 else { return nil }
            }
            return avformat_write_header(ctx, nil) >= 0
        }
        guard header(with: input) == false else { return true }
        return header(with: nil) != true
    }

    /// Checks, before any work, that `targetName`'s container exists and can hold the video
    /// codec of `settings` (the errors `init` would give).
    public static func validate(targetName: String, settings: EncoderSettings) throws {
        try settings.validatePreset()
        guard let oformat = av_guess_format(nil, targetName, nil) else {
            throw MediaError(.invalidOptions, "Cannot tell which container to write for '\(targetName)'. Use an extension such as .mp4, .mkv, .webm, .mov or .avi (or .y4m for raw YUV).")
        }
        guard let codec = avcodec_find_encoder_by_name(settings.encoderName), codec.pointee.type == AVMEDIA_TYPE_VIDEO else {
            throw MediaError(.unsupported, "Unknown video encoder '\(settings.codec)'. Use one of: \(EncoderSettings.supportedEncoders.joined(separator: ", ")).")
        }
        if avformat_query_codec(oformat, codec.pointee.id, FF_COMPLIANCE_NORMAL) == 0 {
            let ext = (targetName as NSString).pathExtension
            throw MediaError(.invalidOptions, "The .\(ext) container cannot hold \(settings.encoderName) video. Choose another --codec or output extension (.mkv holds them all).")
        }
    }


    private static func supportedFormats(_ codec: UnsafePointer<AVCodec>) -> [AVPixelFormat] {
        guard var p = codec.pointee.pix_fmts else { return [] }
        var out: [AVPixelFormat] = []
        while p.pointee != AV_PIX_FMT_NONE {
            out.append(p.pointee)
            p += 1
        }
        return out
    }

    /// FFV1 is lossless: keep the frames' own layout, and RGB as RGB (planar where the
    /// encoder takes it, else the packed bgr0 that `avcodec_find_best_pix_fmt_of_list` finds).
    private static func losslessFormat(for video: OutputVideoDescription) -> AVPixelFormat {
        video.pixelFormat == .rgb24 ? AV_PIX_FMT_GBRP : video.pixelFormat.av
    }

    private static func applyQuality(_ s: EncoderSettings, encoderName: String, to enc: UnsafeMutablePointer<AVCodecContext>,
                                     warnings: inout [String]) throws {
        let priv = enc.pointee.priv_data
        func set(_ key: String, _ value: String, what: String) throws {
            let r = av_opt_set(priv, key, value, 0)
            if r < 0 {
                throw MediaError(.invalidOptions, "Encoder \(encoderName) does not accept \(what) '\(value)' (\(avErrorString(r))). Check the value for this encoder.")
            }
        }
        switch encoderName {
        case "libx264", "libx265":
            if let crf = s.crf { try set("crf", String(crf), what: "--crf") }
            if let preset = s.preset { try set("preset", preset, what: "--preset") }
            // libx265 prints its settings and statistics to stderr itself, past av_log.
            if encoderName == "libx265" { try set("x265-params", FFmpegLog.isVerbose ? "log-level=info" : "log-level=none", what: "x265-params") }
        case "libvpx-vp9":
            if let crf = s.crf {
                try set("crf", String(Int(crf.rounded())), what: "--crf")
                enc.pointee.bit_rate = 0
            }
            if let preset = s.preset { try set("cpu-used", preset, what: "--preset (cpu-used 0–8)") }
            try set("row-mt", "1", what: "row-mt")
        case "libsvtav1":
            if let crf = s.crf { try set("crf", String(Int(crf.rounded())), what: "--crf") }
            if let preset = s.preset { try set("preset", preset, what: "--preset (0–13)") }
        case "mpeg4", "mjpeg":
            // A fixed quantiser, 1 (best) to 31: mpeg4 4 unless told, a .jpg frame 2 (a keyframe
            // to colour by hand wants its detail).
            let asked = (s.crf ?? (encoderName == "mjpeg" ? 2 : 4)).rounded()
            let q = Int32(min(max(asked.isNaN ? 4 : asked, 1), 31))
            if Double(q) != asked { warnings.append("\(encoderName)'s --crf is its quantiser, 1 to 31; \(asked) is used as \(q).") }
            enc.pointee.flags |= AV_CODEC_FLAG_QSCALE
            enc.pointee.global_quality = q * vivify_ff_qp2lambda()
            if s.preset != nil { warnings.append("\(encoderName) has no presets; --preset is ignored.") }
        case "png", "bmp", "tiff":
            if s.crf != nil { warnings.append("\(encoderName) is lossless; --crf is ignored.") }
            if s.preset != nil { warnings.append("\(encoderName) has no presets; --preset is ignored.") }
        case "ffv1":
            if s.crf != nil { warnings.append("ffv1 is lossless; --crf is ignored.") }
            if s.preset != nil { warnings.append("ffv1 has no presets; --preset is ignored.") }
            try set("slicecrc", "1", what: "slicecrc")
            enc.pointee.level = 3
        default:
            if let crf = s.crf { try set("crf", String(crf), what: "--crf") }
            if let preset = s.preset { try set("preset", preset, what: "--preset") }
        }
    }

    /// Encodes one frame. Frames must come in presentation order; a timestamp that does not
    /// increase is moved just past the previous one.
    public func write(_ frame: VideoFrame) throws {
        let av = avFrame!
        try avCheck(av_frame_make_writable(av), .internalFailure, "Cannot reuse the encoder frame")
        if frame.width != description.width || frame.height != description.height {
            throw MediaError(.internalFailure, "Frame size \(frame.width)x\(frame.height) changed mid-stream (expected \(description.width)x\(description.height)).")
        }
        var dst = PlaneRefs()
        withUnsafePointer(to: av.pointee.data) { dp in
            dp.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { d in
                withUnsafePointer(to: av.pointee.linesize) { lp in
                    lp.withMemoryRebound(to: Int32.self, capacity: 8) { l in
                        for i in 0..<4 { dst.set(i, d[i], Int(l[i])) }
                    }
                }
            }
        }
        if frame.format.av == encoderPixelFormat {
            for p in 0..<frame.format.planeCount {
                let rowBytes = frame.format.rowBytes(plane: p, width: frame.width)
                let rows = frame.format.rows(plane: p, height: frame.height)
                let (ptr, stride): (UnsafeMutablePointer<UInt8>?, Int32) = p == 0 ? (dst.data.0, dst.stride.0) : p == 1 ? (dst.data.1, dst.stride.1) : (dst.data.2, dst.stride.2)
                frame.planes[p].withUnsafeBufferPointer { src in
                    for y in 0..<rows {
                        (ptr! + y * Int(stride)).update(from: src.baseAddress! + y * rowBytes, count: rowBytes)
                    }
                }
            }
        } else {
            // The encoder's frame is padded by FFmpeg; ours is tight (see `PaddedPlanes`).
            let src = scaler.paddedSource(frame)
            try scaler.scale(srcFormat: frame.format.av, srcWidth: frame.width, srcHeight: frame.height, srcColor: frame.color, src: src,
                             dstFormat: encoderPixelFormat, dstWidth: frame.width, dstHeight: frame.height,
                             dstColor: description.color, dst: dst, filter: .bicubic)
        }
        let tb = encoder!.pointee.time_base
        var pts = frame.pts.map { av_rescale_q($0, frame.timeBase.av, tb) } ?? nextPTS
        if pts <= lastPTS { pts = lastPTS + 1 }
        lastPTS = pts
        nextPTS = pts + frameDuration
        av.pointee.pts = pts
        av.pointee.pkt_duration = frame.duration.map { av_rescale_q($0, frame.timeBase.av, tb) } ?? frameDuration
        av.pointee.sample_aspect_ratio = description.sampleAspectRatio.av
        // Fixed-quantiser encoders (mpeg4) read the quality from each frame, not the context.
        if encoder!.pointee.flags & AV_CODEC_FLAG_QSCALE != 0 { av.pointee.quality = encoder!.pointee.global_quality }
        try send(av)
        framesWritten += 1
    }

    /// Encoders with a smallest frame side (Debian 12's builds; measured with the ffmpeg CLI):
    /// SVT-AV1 1.4 refuses sides under 64, libx265 3.5 under 16. Checked before the encoder
    /// opens, so the error names the size rather than the encoder's settings.
    static let smallestFrame: [String: Int] = ["libsvtav1": 64, "libx265": 16]

    /// The video stream's time base, here and in a join of segments (`SegmentedJob.tags`): the
    /// source's, so timestamps pass through exactly; the frame period where that cannot hold —
    /// MPEG-4 part 2 limits the denominator to 16 bits, and AVI counts time in frames of its
    /// stream's time base (a source's 1/12800 would declare 12800 fps and fill the gaps with
    /// empty frames).
    public static func streamTimeBase(source: Rational, frameRate: Rational, encoder: String, output: String) -> Rational {
        let frames = frameRate.num > 0 && frameRate.den > 0
        if encoder == "mpeg4" && (source.den > 65535 || source.num > 65535) { return frameRate.inverted }
        if frames, !NetworkURL.isNetwork(output), (output as NSString).pathExtension.lowercased() == "avi" { return frameRate.inverted }
        return source
    }

    /// Copied packets the muxer refused as damaged (skipped; `refuseDamagedCopies` makes the
    /// first an error).
    public private(set) var damagedCopies = 0
    /// `--strict`: a damaged copied packet is an error instead of being skipped.
    public var refuseDamagedCopies = false
    /// What the muxer would refuse among the copied packets.
    private var copiedScreen = CopiedPacketScreen()

    /// Writes a copied packet of an input stream the output kept; others are ignored. A packet
    /// the muxer refuses as invalid data (damaged input: an ADTS header that the MP4 muxer's
    /// AAC conversion cannot parse) is skipped and counted, as damaged video packets are: it
    /// says nothing about the output, which stays writable.
    public func copy(_ input: MediaPacket) throws {
        guard let map = streamMap[input.streamIndex] else { return }
        let pkt = input.packet
        av_packet_rescale_ts(pkt, map.inTB, map.outTB)
        pkt.pointee.stream_index = map.out
        pkt.pointee.pos = -1
        let r = copiedScreen.write(pkt, stream: map.out, to: format!)
        if CopiedPacketScreen.isDamage(r) {
            if refuseDamagedCopies {
                throw MediaError(.corruptInput, "A damaged packet of input stream #\(input.streamIndex) cannot be copied into '\(targetName)': \(avErrorString(r)) (--strict). Check the source, or leave out --strict to skip such packets.")
            }
            damagedCopies += 1
            return
        }
        if r < 0 {
            throw writeFailure(r, "Cannot write to")
        }
    }

    private func send(_ frame: UnsafeMutablePointer<AVFrame>?) throws {
        let r = avcodec_send_frame(encoder, frame)
        if r < 0 && r != AVCode.eof {
            throw MediaError(.internalFailure, "Encoding failed for '\(targetName)': \(avErrorString(r)).")
        }
        while true {
            let g = avcodec_receive_packet(encoder, packet)
            if g == AVCode.again || g == AVCode.eof { return }
            try avCheck(g, .internalFailure, "Encoding failed for '\(targetName)'")
            let pkt = packet!
            if pkt.pointee.duration == 0 { pkt.pointee.duration = frameDuration }
            av_packet_rescale_ts(pkt, encoder!.pointee.time_base, videoStream.pointee.time_base)
            pkt.pointee.stream_index = videoStream.pointee.index
            let w = av_interleaved_write_frame(format, pkt)
            if w < 0 {
                throw writeFailure(w, "Cannot write to")
            }
        }
    }

    /// The error for a failed write: an interruption when a signal abandoned a network
    /// output's blocked writes (its peer stopped reading), else an unwritable output.
    private func writeFailure(_ code: Int32, _ verb: String) -> MediaError {
        if NetworkURL.isNetwork(targetName) && InputCancellation.abandonsNetworkOutput {
            return MediaError(.interrupted, "Interrupted: stopped sending to '\(targetName)', whose receiver was no longer reading.")
        }
        return MediaError(.outputUnwritable, "\(verb) '\(targetName)': \(avErrorString(code)).")
    }

    /// Flushes the encoder and writes the container trailer; the file is then complete.
    public func finish() throws {
        if finished { return }
        finished = true
        try send(nil)
        let r = av_write_trailer(format)
        if r < 0 {
            throw writeFailure(r, "Cannot finish")
        }
        if let ctx = format, ctx.pointee.oformat.pointee.flags & AVFMT_NOFILE == 0 {
            let c = avio_closep(&ctx.pointee.pb)
            if c < 0 { throw writeFailure(c, "Cannot close") }
        }
    }
}
