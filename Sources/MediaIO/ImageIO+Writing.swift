import CFFmpeg
import Foundation

// MARK: - Writing

extension ImageIO {
    static func validate(_ image: StillImage, path: String) throws {
        let c = image.color
        guard c.channels == 1 || c.channels == 3 else {
            throw MediaError(.invalidOptions, "Cannot write '\(path)': the image has \(c.channels) colour channels; only 1 (grey) or 3 (RGB) can be written.")
        }
        guard c.width > 0, c.height > 0, c.data.count == c.channels * c.width * c.height else {
            throw MediaError(.invalidOptions, "Cannot write '\(path)': the image is \(c.width)x\(c.height) with \(c.data.count) values, which does not fit \(c.channels) channels.")
        }
        if let a = image.alpha {
            guard a.channels == 1, a.width == c.width, a.height == c.height, a.data.count == c.width * c.height else {
                throw MediaError(.invalidOptions, "Cannot write '\(path)': the alpha plane (\(a.channels) channel(s), \(a.width)x\(a.height)) does not match the \(c.width)x\(c.height) colour image.")
            }
        }
    }

    static func encodePNG(_ image: StillImage, depth: Int, path: String) throws -> PacketBox {
        let layout = PackedLayout(colorChannels: image.color.channels, hasAlpha: image.alpha != nil,
                                  bytesPerSample: depth / 8, bigEndian: true)
        let frame = try makeFrame(layout.av, width: image.width, height: image.height)
        pack(image, layout: layout, into: frame.view.plane(0)!, stride: frame.view.stride(0))
        return try encode(frame, codecID: AV_CODEC_ID_PNG, path: path) { context in
            // Choose each row's filter (libpng's default, adaptive); FFmpeg's default is none.
            try avCheck(av_opt_set(context.pointee.priv_data, "pred", "mixed", 0), .internalFailure, "Cannot set the PNG prediction")
        }
    }

    static func encodeJPEG(_ image: StillImage, quality: Int, path: String) throws -> PacketBox {
        let (width, height) = (image.width, image.height)
        let frame = try makeFrame(AV_PIX_FMT_YUVJ444P, width: width, height: height)
        let planes = frame.view
        if image.color.channels == 1 {
            let gray = PackedLayout(AV_PIX_FMT_GRAY8)!
            pack(StillImage(color: image.color), layout: gray, into: planes.plane(0)!, stride: planes.stride(0))
            for p in 1...2 { planes.plane(p)!.update(repeating: 128, count: planes.stride(p) * height) }
        } else {
            let rgb = PackedLayout(AV_PIX_FMT_RGB24)!
            let rowBytes = width * 3
            var packed = [UInt8](repeating: 0, count: rowBytes * height)
            try packed.withUnsafeMutableBufferPointer { buffer in
                pack(StillImage(color: image.color), layout: rgb, into: buffer.baseAddress!, stride: rowBytes)
                var src = PlaneRefs()
                src.set(0, buffer.baseAddress, rowBytes)
                try SwsScaler().scale(srcFormat: AV_PIX_FMT_RGB24, srcWidth: width, srcHeight: height, srcColor: jfifColor, src: src,
                                      dstFormat: swscaleFormat(AV_PIX_FMT_YUVJ444P), dstWidth: width, dstHeight: height, dstColor: jfifColor,
                                      dst: planes.planeRefs, filter: .bicubic)
            }
        }
        let qscale = Int32(jpegQScale(quality: quality))
        let lambda = qscale * vivify_ff_qp2lambda()
        // mpegvideo encoders take a fixed quantiser from each frame's `quality`.
        frame.pointer.pointee.quality = lambda
        frame.pointer.pointee.color_range = AVCOL_RANGE_JPEG
        frame.pointer.pointee.colorspace = AVCOL_SPC_BT470BG
        return try encode(frame, codecID: AV_CODEC_ID_MJPEG, path: path) { context in
            context.pointee.flags |= AV_CODEC_FLAG_QSCALE
            context.pointee.global_quality = lambda
            context.pointee.qmin = 1
            context.pointee.qmax = 31
            context.pointee.color_range = AVCOL_RANGE_JPEG
            context.pointee.colorspace = AVCOL_SPC_BT470BG
        }
    }

    private static func makeFrame(_ format: AVPixelFormat, width: Int, height: Int) throws -> FrameBox {
        let frame = FrameBox()
        frame.pointer.pointee.format = format.rawValue
        frame.pointer.pointee.width = Int32(width)
        frame.pointer.pointee.height = Int32(height)
        try avCheck(av_frame_get_buffer(frame.pointer, 0), .internalFailure,
                    "Cannot allocate a \(width)x\(height) \(avPixelFormatName(format)) picture")
        return frame
    }

    /// Opens the encoder for `frame`'s size and format, sends the frame, flushes, and returns
    /// the one packet: the complete file.
    private static func encode(_ frame: FrameBox, codecID: AVCodecID, path: String,
                               configure: (UnsafeMutablePointer<AVCodecContext>) throws -> Void) throws -> PacketBox {
        let name = String(cString: avcodec_get_name(codecID))
        guard let codec = avcodec_find_encoder(codecID) else {
            throw MediaError(.unsupported, "Cannot write '\(path)': this FFmpeg has no \(name) encoder. Install an FFmpeg build with it, or choose another extension.")
        }
        let format = AVPixelFormat(frame.pointer.pointee.format)
        if var p = codec.pointee.pix_fmts {
            var listed: [AVPixelFormat] = []
            while p.pointee != AV_PIX_FMT_NONE { listed.append(p.pointee); p += 1 }
            guard listed.contains(format) else {
                throw MediaError(.unsupported, "Cannot write '\(path)': FFmpeg's \(name) encoder does not take \(avPixelFormatName(format)) (it takes \(listed.map(avPixelFormatName).joined(separator: ", "))).")
            }
        }
        let context = CodecContextBox(codec)
        let c = context.pointer
        c.pointee.width = frame.pointer.pointee.width
        c.pointee.height = frame.pointer.pointee.height
        c.pointee.pix_fmt = format
        c.pointee.time_base = AVRational(num: 1, den: 1)
        try configure(c)
        try avCheck(avcodec_open2(c, codec, nil), .unsupported,
                    "Cannot write '\(path)': FFmpeg's \(name) encoder refused a \(c.pointee.width)x\(c.pointee.height) \(avPixelFormatName(format)) picture")
        frame.pointer.pointee.pts = 0
        try avCheck(avcodec_send_frame(c, frame.pointer), .internalFailure, "Cannot encode '\(path)' with \(name)")
        try avCheck(avcodec_send_frame(c, nil), .internalFailure, "Cannot finish encoding '\(path)' with \(name)")
        let packet = PacketBox()
        try avCheck(avcodec_receive_packet(c, packet.pointer), .internalFailure, "The \(name) encoder produced nothing for '\(path)'")
        return packet
    }

    /// Writes colour (and alpha, when `layout` has it) as interleaved 8- or 16-bit samples,
    /// rounding to nearest and clamping.
    static func pack(_ image: StillImage, layout: PackedLayout, into base: UnsafeMutablePointer<UInt8>, stride: Int) {
        let width = image.width, height = image.height, n = width * height
        let cc = layout.colorChannels, spp = layout.samplesPerPixel
        let alphaData = layout.hasAlpha ? image.alpha?.data ?? [] : []
        image.color.data.withUnsafeBufferPointer { c in
            alphaData.withUnsafeBufferPointer { a in
                if layout.bytesPerSample == 1 {
                    for y in 0..<height {
                        let row = base + y * stride
                        let o = y * width
                        for x in 0..<width {
                            let p = row + x * spp
                            for ch in 0..<cc { p[ch] = UInt8(quantize(c[ch * n + o + x], 255)) }
                            if layout.hasAlpha { p[cc] = UInt8(quantize(a[o + x], 255)) }
                        }
                    }
                } else {
                    let (hi, lo) = layout.bigEndian ? (0, 1) : (1, 0)
                    for y in 0..<height {
                        let row = base + y * stride
                        let o = y * width
                        for x in 0..<width {
                            let p = row + x * spp * 2
                            for ch in 0..<spp {
                                let v = quantize(ch < cc ? c[ch * n + o + x] : a[o + x], 65535)
                                p[2 * ch + hi] = UInt8(v >> 8)
                                p[2 * ch + lo] = UInt8(v & 0xFF)
                            }
                        }
                    }
                }
            }
        }
    }

    /// `x * maxValue` rounded to nearest and clamped to [0, maxValue]; NaN gives 0.
    @inline(__always)
    static func quantize(_ x: Float, _ maxValue: Float) -> UInt16 {
        let v = (x * maxValue).rounded()
        return v > 0 ? UInt16(min(v, maxValue)) : 0
    }

    /// Writes the packet's bytes to `path`, creating or truncating it; messages name `shown`
    /// (the output asked for, not the temporary file written first).
    static func writeFile(_ packet: PacketBox, to path: String, named shown: String? = nil) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MediaError(.outputUnwritable, "Cannot create '\(shown ?? path)': \(errnoText()). Choose a writable location.")
        }
        let base = packet.pointer.pointee.data!
        let size = Int(packet.pointer.pointee.size)
        var done = 0
        while done < size {
            let n = Glibc.write(fd, base + done, size - done)
            if n < 0 {
                if errno == EINTR { continue }
                let reason = errnoText()
                close(fd)
                throw MediaError(.outputUnwritable, "Cannot write '\(shown ?? path)': \(reason). Check the free space and permissions.")
            }
            done += n
        }
        // close() is where some file systems report a failed write.
        guard close(fd) == 0 else {
            throw MediaError(.outputUnwritable, "Cannot finish writing '\(shown ?? path)': \(errnoText()). Check the free space and permissions.")
        }
    }
}

/// The text of the current `errno`.
/// The C library's text for the current errno.
func errnoText() -> String { String(cString: strerror(errno)) }
