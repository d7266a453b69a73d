import CFFmpeg
import Foundation

// MARK: - Reading

extension ImageIO {
    /// Reads the whole file into a packet (with FFmpeg's zeroed input padding).
    static func loadFile(_ path: String) throws -> PacketBox {
        // A FIFO (or a device) is refused before it is opened: opening a FIFO for reading
        // waits for a writer, and a batch over a folder holding one hung there for ever. The
        // path is looked at through links, as open would follow them.
        var before = stat()
        if stat(path, &before) == 0, before.st_mode & S_IFMT != S_IFREG {
            throw notRegular(path, mode: before.st_mode)
        }
        // Non-blocking, so that a FIFO put there since cannot hang the open either (for a
        // regular file it changes nothing); fstat then checks what was opened.
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            throw MediaError(.inputUnreadable, "Cannot open '\(path)': \(errnoText()). Check the path and its permissions.")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw MediaError(.inputUnreadable, "Cannot read '\(path)': \(errnoText()). Check the path and its permissions.")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw notRegular(path, mode: info.st_mode) }
        let size = Int(info.st_size)
        guard size > 0 else {
            throw MediaError(.inputUnreadable, "Cannot read '\(path)': the file is empty. Pass a PNG or JPEG image file.")
        }
        guard size <= Int(Int32.max) - Int(AV_INPUT_BUFFER_PADDING_SIZE) else {
            throw MediaError(.unsupported, "Cannot read '\(path)': \(size) bytes is more than FFmpeg takes in one packet (2 GiB). Pass a smaller image.")
        }
        let packet = PacketBox()
        try avCheck(av_new_packet(packet.pointer, Int32(size)), .internalFailure, "Cannot allocate \(size) bytes to read '\(path)'")
        let base = packet.pointer.pointee.data!
        var done = 0
        while done < size {
            let n = Glibc.read(fd, base + done, size - done)
            if n < 0 {
                if errno == EINTR { continue }
                throw MediaError(.inputUnreadable, "Cannot read '\(path)': \(errnoText()). Check the file and the disk.")
            }
            if n == 0 { break }
            done += n
        }
        packet.pointer.pointee.size = Int32(done)
        return packet
    }

    /// The refusal of `path`, which is not a regular file (`mode` says what it is).
    private static func notRegular(_ path: String, mode: mode_t) -> MediaError {
        let kind: String
        switch mode & S_IFMT {
        case S_IFDIR: kind = "a directory"
        case S_IFIFO: kind = "a FIFO"
        case S_IFSOCK: kind = "a socket"
        case S_IFCHR, S_IFBLK: kind = "a device"
        default: kind = "not a plain file"
        }
        return MediaError(.inputUnreadable, "Cannot read '\(path)': it is not a regular file (\(kind)). Pass a PNG or JPEG image file.")
    }

    /// Width and height from a PNG's IHDR, a JPEG's first SOF marker, a BMP's info header, a
    /// TIFF's first IFD or a WebP's first chunk; nil when not found.
    static func declaredSize(_ packet: PacketBox, _ format: ImageFileFormat) -> (Int, Int)? {
        guard let data = packet.pointer.pointee.data else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(packet.pointer.pointee.size))
        let be = HeaderBytes(bytes, littleEndian: false), le = HeaderBytes(bytes, littleEndian: true)
        switch format {
        case .png:
            // Signature (8), chunk length (4), "IHDR", width, height.
            guard bytes.count >= 24, bytes[12] == 0x49, bytes[13] == 0x48, bytes[14] == 0x44, bytes[15] == 0x52,
                  let w = be.u32(16), let h = be.u32(20) else { return nil }
            return (w, h)
        case .jpeg:
            var i = 2
            while i + 9 < bytes.count {
                guard bytes[i] == 0xFF else { return nil }
                let marker = bytes[i + 1]
                if marker == 0xFF { i += 1; continue }
                if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
                // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    guard let w = be.u16(i + 7), let h = be.u16(i + 5) else { return nil }
                    return (w, h)
                }
                if marker == 0xDA { return nil }
                guard let length = be.u16(i + 2) else { return nil }
                i += 2 + length
            }
            return nil
        case .bmp:
            // File header (14), info header size, width, height (negative: top-down rows);
            // the 12-byte core header of OS/2 keeps 16-bit sizes.
            guard let header = le.u32(14) else { return nil }
            if header == 12 {
                guard let w = le.u16(18), let h = le.u16(20) else { return nil }
                return (w, h)
            }
            guard let w = le.i32(18), let h = le.i32(22) else { return nil }
            return (abs(w), abs(h))
        case .tiff:
            return tiffHeader(bytes)?.size
        case .webp:
            return webpHeader(bytes)?.size
        }
    }

    /// A TIFF's first image: its size and compression (tags 256, 257, 259 of the first IFD),
    /// every read bounds-checked; nil when the header cannot be read.
    static func tiffHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> (size: (Int, Int)?, compression: Int?)? {
        guard bytes.count >= 8 else { return nil }
        let r = HeaderBytes(bytes, littleEndian: bytes[0] == 0x49)
        guard let ifd = r.u32(4), let count = r.u16(ifd), count <= 4096 else { return nil }
        var width: Int?, height: Int?, compression: Int?
        for k in 0..<count {
            let e = ifd + 2 + 12 * k
            guard let tag = r.u16(e), let type = r.u16(e + 2) else { break }
            // SHORT (3) values sit in the entry's first two bytes, LONG (4) in all four.
            let value = type == 3 ? r.u16(e + 8) : type == 4 ? r.u32(e + 8) : nil
            switch tag {
            case 256: width = value
            case 257: height = value
            case 259: compression = value
            default: break
            }
        }
        return (width.flatMap { w in height.map { (w, $0) } }, compression)
    }

    /// A WebP's canvas size (from its VP8, VP8L or VP8X chunk) and whether it is animated;
    /// nil when the header cannot be read.
    static func webpHeader(_ bytes: UnsafeBufferPointer<UInt8>) -> (size: (Int, Int)?, animated: Bool)? {
        guard bytes.count >= 30 else { return nil }
        let chunk = String(decoding: bytes[12..<16], as: UTF8.self)
        let le = HeaderBytes(bytes, littleEndian: true)
        switch chunk {
        case "VP8 ":
            guard bytes[23] == 0x9D, bytes[24] == 0x01, bytes[25] == 0x2A, let w = le.u16(26), let h = le.u16(28) else { return nil }
            return ((w & 0x3FFF, h & 0x3FFF), false)
        case "VP8L":
            guard bytes[20] == 0x2F else { return nil }
            let w = 1 + (Int(bytes[21]) | (Int(bytes[22]) & 0x3F) << 8)
            let h = 1 + (Int(bytes[22]) >> 6 | Int(bytes[23]) << 2 | (Int(bytes[24]) & 0x0F) << 10)
            return ((w, h), false)
        case "VP8X":
            guard let w = le.u24(24), let h = le.u24(27) else { return nil }
            return ((1 + w, 1 + h), bytes[20] & 0x02 != 0)
        default:
            return nil
        }
    }

    /// Refuses, from its header, a picture whose format this reader's decoder would get wrong:
    /// an animated WebP (not decoded as a picture) and a JPEG-compressed TIFF (FFmpeg 5.1 gave
    /// a black picture for it, exit 0).
    static func checkSupported(_ packet: PacketBox, _ format: ImageFileFormat, path: String) throws {
        guard let data = packet.pointer.pointee.data else { return }
        let bytes = UnsafeBufferPointer(start: data, count: Int(packet.pointer.pointee.size))
        switch format {
        case .webp:
            if webpHeader(bytes)?.animated == true {
                throw MediaError(.unsupported, "Cannot read '\(path)': it is an animated WebP, which is not read as a picture. Take one frame out (for example `ffmpeg -i '\(path)' -frames:v 1 frame.png`) and pass that.")
            }
        case .tiff:
            if let c = tiffHeader(bytes)?.compression, c == 6 || c == 7 {
                throw MediaError(.unsupported, "Cannot read '\(path)': it is a JPEG-compressed TIFF, which this FFmpeg decodes wrongly. Re-save it uncompressed or as PNG (for example with an image editor, or `convert '\(path)' out.png`) and pass that.")
            }
        default:
            break
        }
    }

    /// Sends the whole file as one packet and takes the one picture out.
    static func decode(_ packet: PacketBox, as format: ImageFileFormat, path: String, maxPixels: Int) throws -> FrameBox {
        guard let codec = avcodec_find_decoder(format.codecID) else {
            throw MediaError(.unsupported, "Cannot read '\(path)': this FFmpeg has no \(format.name) decoder. Install an FFmpeg build with it.")
        }
        let context = CodecContextBox(codec)
        // Without this the JPEG decoder fills a truncated file's missing rows with grey and
        // reports nothing; a still image has no later frames to make up for a damaged one.
        // (FFmpeg's TIFF decoder fails every file under it, its own writer's too.)
        if format != .tiff { context.pointer.pointee.err_recognition |= AV_EF_EXPLODE }
        context.pointer.pointee.max_pixels = Int64(maxPixels)
        try avCheck(avcodec_open2(context.pointer, codec, nil), .internalFailure, "Cannot open FFmpeg's \(format.name) decoder for '\(path)'")
        func damaged(_ code: Int32) -> MediaError {
            MediaError(.corruptInput, "Cannot decode '\(path)': \(avErrorString(code)). The \(format.name) data is damaged or cut short; re-export the image, or re-save it with a tool that conceals damage (`ffmpeg -i in out.png`) and pass that.")
        }
        let frame = FrameBox()
        let sent = avcodec_send_packet(context.pointer, packet.pointer)
        if sent < 0 { throw damaged(sent) }
        var got = avcodec_receive_frame(context.pointer, frame.pointer)
        if got == AVCode.again {
            _ = avcodec_send_packet(context.pointer, nil)
            got = avcodec_receive_frame(context.pointer, frame.pointer)
        }
        if got < 0 { throw damaged(got == AVCode.eof ? AVCode.invalidData : got) }
        let f = frame.pointer.pointee
        if f.decode_error_flags != 0 || f.flags & AV_FRAME_FLAG_CORRUPT != 0 {
            throw damaged(AVCode.invalidData)
        }
        return frame
    }

    /// JPEG's YCbCr (JFIF): BT.601 matrix, full range.
    static let jfifColor = ColorInfo(primaries: 2, transfer: 2, matrix: 5, range: 2)

    /// How a decoded picture's YCbCr is to be read: JFIF for JPEG (and the "J" formats);
    /// otherwise (lossy WebP, YCbCr TIFF) the frame's own matrix and range, BT.601 limited
    /// range where it says nothing, as FFmpeg reads them.
    static func yuvColor(_ frame: UnsafeMutablePointer<AVFrame>, from format: ImageFileFormat) -> ColorInfo {
        let f = frame.pointee
        if format == .jpeg || f.color_range == AVCOL_RANGE_JPEG { return jfifColor }
        let matrix = f.colorspace == AVCOL_SPC_UNSPECIFIED || f.colorspace == AVCOL_SPC_RGB ? 5 : Int32(f.colorspace.rawValue)
        return ColorInfo(primaries: 2, transfer: 2, matrix: matrix, range: 1)
    }

    /// Turns a decoded picture into float planes, through swscale only for layouts that are
    /// not already packed gray/RGB with optional alpha.
    static func unpack(_ frame: UnsafeMutablePointer<AVFrame>, from format: ImageFileFormat, path: String) throws -> StillImage {
        let planes = FrameView(frame)
        let width = Int(frame.pointee.width), height = Int(frame.pointee.height)
        let source = AVPixelFormat(frame.pointee.format)
        guard width > 0, height > 0, let desc = av_pix_fmt_desc_get(source)?.pointee else {
            throw MediaError(.corruptInput, "Cannot decode '\(path)': the decoder returned no picture. Re-export the image or pass another file.")
        }
        let bitDepth = desc.comp.0.depth > 8 ? 16 : 8

        if let layout = PackedLayout(source) {
            let (color, alpha) = unpackSamples(planes.plane(0)!, stride: planes.stride(0), layout: layout, width: width, height: height)
            return StillImage(color: color, alpha: alpha, bitDepth: bitDepth)
        }

        let isRGB = desc.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0
        let isPalette = desc.flags & UInt64(AV_PIX_FMT_FLAG_PAL) != 0
        let isYUV = !isRGB && !isPalette && desc.nb_components >= 3
        // A colour encoder given a grey picture stores neutral chroma; keep such JPEGs grey
        // (a WebP with alpha keeps its alpha through the path below).
        let hasAlphaPlane = desc.flags & UInt64(AV_PIX_FMT_FLAG_ALPHA) != 0
        if isYUV, !hasAlphaPlane, bitDepth == 8, desc.comp.0.step == 1, hasNeutralChroma(planes, desc: desc, width: width, height: height) {
            let gray = PackedLayout(AV_PIX_FMT_GRAY8)!
            let (color, _) = unpackSamples(planes.plane(0)!, stride: planes.stride(0), layout: gray, width: width, height: height)
            return StillImage(color: color, alpha: nil, bitDepth: 8)
        }

        let isGrey = !isRGB && !isPalette && desc.nb_components <= 2
        let hasAlpha = desc.flags & UInt64(AV_PIX_FMT_FLAG_ALPHA) != 0
        let target = PackedLayout(colorChannels: isGrey && !hasAlpha ? 1 : 3, hasAlpha: hasAlpha,
                                  bytesPerSample: bitDepth / 8, bigEndian: false)
        // swscale's vector code writes past the end of tightly packed rows (narrow pictures):
        // rows are padded as every other conversion's are (`PaddedPlanes`), with slack after
        // the last row.
        let rowBytes = PaddedPlanes.stride(rowBytes: width * target.bytesPerPixel)
        var packed = [UInt8](repeating: 0, count: rowBytes * height + 64)
        try packed.withUnsafeMutableBufferPointer { dst in
            var refs = PlaneRefs()
            refs.set(0, dst.baseAddress, rowBytes)
            try SwsScaler().scale(srcFormat: swscaleFormat(source), srcWidth: width, srcHeight: height, srcColor: yuvColor(frame, from: format), src: planes.planeRefs,
                                  dstFormat: target.av, dstWidth: width, dstHeight: height, dstColor: jfifColor, dst: refs,
                                  filter: .bicubic)
        }
        let (color, decodedAlpha) = packed.withUnsafeBufferPointer {
            unpackSamples($0.baseAddress!, stride: rowBytes, layout: target, width: width, height: height)
        }
        // Palettes always carry an alpha entry; only a palette that uses transparency has alpha.
        var alpha = decodedAlpha
        if isPalette, let a = alpha, a.data.allSatisfy({ $0 == 1 }) { alpha = nil }
        return StillImage(color: color, alpha: alpha, bitDepth: bitDepth)
    }

    /// The plain YUV name of a JPEG "J" format (same memory layout): swscale deprecates the
    /// J names, and the full range they stand for is passed to it explicitly (`jfifColor`).
    static func swscaleFormat(_ format: AVPixelFormat) -> AVPixelFormat {
        switch format {
        case AV_PIX_FMT_YUVJ420P: return AV_PIX_FMT_YUV420P
        case AV_PIX_FMT_YUVJ422P: return AV_PIX_FMT_YUV422P
        case AV_PIX_FMT_YUVJ444P: return AV_PIX_FMT_YUV444P
        case AV_PIX_FMT_YUVJ440P: return AV_PIX_FMT_YUV440P
        case AV_PIX_FMT_YUVJ411P: return AV_PIX_FMT_YUV411P
        default: return format
        }
    }

    /// Whether both chroma planes of an 8-bit YCbCr picture are exactly 128 everywhere.
    private static func hasNeutralChroma(_ frame: FrameView, desc: AVPixFmtDescriptor, width: Int, height: Int) -> Bool {
        let cw = -((-width) >> Int(desc.log2_chroma_w)), ch = -((-height) >> Int(desc.log2_chroma_h))
        for p in 1...2 {
            guard let base = frame.plane(p) else { return false }
            let stride = frame.stride(p)
            for y in 0..<ch {
                let row = UnsafeBufferPointer(start: base + y * stride, count: cw)
                if row.contains(where: { $0 != 128 }) { return false }
            }
        }
        return true
    }

    /// Splits interleaved 8- or 16-bit samples into colour and alpha planes of floats in [0, 1].
    static func unpackSamples(_ base: UnsafePointer<UInt8>, stride: Int, layout: PackedLayout,
                              width: Int, height: Int) -> (FloatPlanarImage, FloatPlanarImage?) {
        var color = FloatPlanarImage(channels: layout.colorChannels, width: width, height: height)
        var alpha = FloatPlanarImage(channels: layout.hasAlpha ? 1 : 0, width: width, height: height)
        let n = width * height, cc = layout.colorChannels, spp = layout.samplesPerPixel, hasAlpha = layout.hasAlpha
        color.data.withUnsafeMutableBufferPointer { c in
            alpha.data.withUnsafeMutableBufferPointer { a in
                if layout.bytesPerSample == 1 {
                    // Division, not a reciprocal multiply, so 255 maps to exactly 1.
                    let lut = (0...255).map { Float($0) / 255 }
                    for y in 0..<height {
                        let row = base + y * stride
                        let o = y * width
                        for x in 0..<width {
                            let p = row + x * spp
                            for ch in 0..<cc { c[ch * n + o + x] = lut[Int(p[ch])] }
                            if hasAlpha { a[o + x] = lut[Int(p[cc])] }
                        }
                    }
                } else {
                    let (hi, lo) = layout.bigEndian ? (0, 1) : (1, 0)
                    for y in 0..<height {
                        let row = base + y * stride
                        let o = y * width
                        for x in 0..<width {
                            let p = row + x * spp * 2
                            for ch in 0...(hasAlpha ? cc : cc - 1) {
                                let v = Float(UInt16(p[2 * ch + hi]) << 8 | UInt16(p[2 * ch + lo])) / 65535
                                if ch < cc { c[ch * n + o + x] = v } else { a[o + x] = v }
                            }
                        }
                    }
                }
            }
        }
        return (color, hasAlpha ? alpha : nil)
    }

    /// The EXIF orientation (2–8) FFmpeg's JPEG decoder found, if the picture is not upright.
    static func exifOrientation(_ frame: UnsafeMutablePointer<AVFrame>) -> Int? {
        guard let entry = av_dict_get(frame.pointee.metadata, "Orientation", nil, 0), let value = entry.pointee.value,
              let o = Int(String(cString: value).trimmingCharacters(in: .whitespaces)), (2...8).contains(o) else { return nil }
        return o
    }
}

/// Plane pointers and strides of a frame owned elsewhere.
struct FrameView {
    let frame: UnsafeMutablePointer<AVFrame>
    init(_ frame: UnsafeMutablePointer<AVFrame>) { self.frame = frame }

    func plane(_ i: Int) -> UnsafeMutablePointer<UInt8>? {
        withUnsafePointer(to: frame.pointee.data) { $0.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 8) { $0[i] } }
    }

    func stride(_ i: Int) -> Int {
        Int(withUnsafePointer(to: frame.pointee.linesize) { $0.withMemoryRebound(to: Int32.self, capacity: 8) { $0[i] } })
    }

    var planeRefs: PlaneRefs {
        var refs = PlaneRefs()
        for i in 0..<4 { refs.set(i, plane(i), stride(i)) }
        return refs
    }
}

extension FloatPlanarImage {
    /// This image turned upright as EXIF orientation `exif` (1–8) asks: 2 mirrors, 3 turns
    /// 180°, 4 flips, 5 transposes, 6 turns 90° clockwise, 7 transverses, 8 turns 90°
    /// anticlockwise. Orientations 5–8 swap width and height.
    func reoriented(exif: Int) -> FloatPlanarImage {
        guard (2...8).contains(exif) else { return self }
        let w = width, h = height
        let swaps = exif >= 5
        var out = FloatPlanarImage(channels: channels, width: swaps ? h : w, height: swaps ? w : h)
        let ow = out.width, oh = out.height, n = w * h
        data.withUnsafeBufferPointer { src in
            out.data.withUnsafeMutableBufferPointer { dst in
                for c in 0..<channels {
                    let s = src.baseAddress! + c * n, d = dst.baseAddress! + c * n
                    for y in 0..<oh {
                        for x in 0..<ow {
                            // (sx, sy): where output pixel (x, y) sits in the stored picture.
                            let (sx, sy): (Int, Int)
                            switch exif {
                            case 2: (sx, sy) = (w - 1 - x, y)
                            case 3: (sx, sy) = (w - 1 - x, h - 1 - y)
                            case 4: (sx, sy) = (x, h - 1 - y)
                            case 5: (sx, sy) = (y, x)
                            case 6: (sx, sy) = (y, h - 1 - x)
                            case 7: (sx, sy) = (w - 1 - y, h - 1 - x)
                            default: (sx, sy) = (w - 1 - y, x)
                            }
                            d[y * ow + x] = s[sy * w + sx]
                        }
                    }
                }
            }
        }
        return out
    }
}


/// A file's first bytes read as picture headers lay them out: unsigned 16-, 24- and 32-bit
/// integers (and a signed 32-bit one) in either byte order, nil where the value would reach
/// past the end (a short or damaged file). One reader for the PNG, JPEG, BMP, TIFF and WebP
/// headers.
struct HeaderBytes {
    let bytes: UnsafeBufferPointer<UInt8>
    let littleEndian: Bool

    init(_ bytes: UnsafeBufferPointer<UInt8>, littleEndian: Bool) {
        self.bytes = bytes
        self.littleEndian = littleEndian
    }

    /// `width` bytes from `i` as an unsigned integer; nil outside the bytes.
    func unsigned(_ i: Int, width: Int) -> Int? {
        guard i >= 0, i <= bytes.count - width else { return nil }
        var v = 0
        for k in 0..<width { v |= Int(bytes[i + k]) << (8 * (littleEndian ? k : width - 1 - k)) }
        return v
    }

    func u16(_ i: Int) -> Int? { unsigned(i, width: 2) }
    func u24(_ i: Int) -> Int? { unsigned(i, width: 3) }
    func u32(_ i: Int) -> Int? { unsigned(i, width: 4) }
    /// A two's-complement 32-bit value (a BMP's height is negative for top-down rows).
    func i32(_ i: Int) -> Int? { u32(i).map { Int(Int32(bitPattern: UInt32($0))) } }
}
