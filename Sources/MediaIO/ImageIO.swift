import CFFmpeg
import Foundation

// Still images go through libavcodec alone. A PNG or JPEG file is one complete packet, so the
// whole file is handed to the decoder at once, and the one packet an encoder returns is the
// whole output file. No demuxer means no file-name patterns ("%d", globs), no parser splitting
// a JPEG at an embedded EXIF thumbnail, and no text file mistaken for subtitles.
//
//   read:   file bytes ─▶ png | mjpeg decoder ─▶ AVFrame ─▶ [swscale] ─▶ packed 8/16-bit ─▶ floats ─▶ EXIF turn
//   write:  floats ─▶ packed 8/16-bit (PNG) | yuvj444p via swscale (JPEG) ─▶ encoder ─▶ packet bytes ─▶ file

/// A still picture as the models see it: colour planes in [0, 1], an optional alpha plane,
/// and the precision its file stored, so that writing it back can keep 16-bit sources 16-bit.
public struct StillImage: Sendable, Equatable {
    /// Colour as planar floats in [0, 1]: 1 channel (grey) or 3 (R, G, B).
    public var color: FloatPlanarImage
    /// Opacity as 1 channel in [0, 1] (1 is opaque), present when the source has alpha.
    public var alpha: FloatPlanarImage?
    /// Bits per channel the source stored: 8 or 16.
    public var bitDepth: Int

    /// Width in pixels.
    public var width: Int { color.width }
    /// Height in pixels.
    public var height: Int { color.height }

    /// Makes an image from colour planes, optional alpha of the same size, and a bit depth.
    public init(color: FloatPlanarImage, alpha: FloatPlanarImage? = nil, bitDepth: Int = 8) {
        self.color = color
        self.alpha = alpha
        self.bitDepth = bitDepth
    }
}

/// Reads and writes PNG and JPEG files with FFmpeg's png and mjpeg codecs.
///
/// Reading gives 8- and 16-bit PNG (grey, grey+alpha, RGB, RGBA, palette, 1-bit) and JPEG
/// (grey and YCbCr); writing picks the format from the extension: `.png` (8 or 16 bits, with
/// alpha) or `.jpg`/`.jpeg` (8 bits, no alpha).
public enum ImageIO {
    /// Output extensions `write` understands, lower case and without the dot.
    public static let writableExtensions = ["png", "jpg", "jpeg"]

    /// Decodes the PNG or JPEG file at `path`.
    ///
    /// Grey files give 1 colour channel, everything else 3. A JPEG stored as YCbCr whose
    /// chroma is exactly neutral everywhere (a grey picture saved by a colour encoder,
    /// including ours) is read as grey too. JPEG YCbCr becomes RGB with full-range BT.601, as
    /// JFIF defines it. A JPEG's EXIF orientation is applied, so the pixels come out upright
    /// (the files `write` makes carry no EXIF).
    /// - Throws: `MediaError` `.inputUnreadable` when the file is missing, unreadable or not
    ///   an image; `.unsupported` for other image formats (GIF, BMP, WebP, TIFF); and
    ///   `.corruptInput` when the PNG or JPEG data is damaged.
    public static func read(path: String) throws -> StillImage {
        let packet = try loadFile(path)
        let format = try ImageFileFormat(sniffing: packet, path: path)
        // The size the file declares, checked before the decoder allocates the picture.
        if let (w, h) = declaredSize(packet, format) {
            try MediaLimits.checkFrame(width: w, height: h, what: "The image '\(path)'")
        }
        let frame = try decode(packet, as: format, path: path)
        var image = try unpack(frame.pointer, from: format, path: path)
        if let orientation = exifOrientation(frame.pointer) {
            image.color = image.color.reoriented(exif: orientation)
            image.alpha = image.alpha?.reoriented(exif: orientation)
        }
        return image
    }

    /// Encodes `image` into the file at `path` (created or replaced in place; write to a
    /// temporary name and rename for atomic replacement), in the format its extension names.
    ///
    /// Floats are scaled to the integer range, rounded to nearest and clamped (NaN gives 0).
    /// - PNG (`.png`): `bitDepth` bits per channel, nil meaning `image.bitDepth`; alpha is
    ///   written when present (grey, grey+alpha, RGB or RGBA).
    /// - JPEG (`.jpg`, `.jpeg`): 8 bits, 4:4:4 YCbCr (grey pictures too, with neutral chroma,
    ///   since FFmpeg's mjpeg encoder has no greyscale mode; `read` turns them back into grey).
    ///   Alpha is dropped, and so is precision beyond 8 bits; each comes back as a warning.
    ///   `jpegQuality` is libjpeg's 1–100 scale, matched to FFmpeg's quantiser (see
    ///   `jpegQScale(quality:)`).
    /// - Returns: Warnings about what the format could not keep.
    /// - Throws: `MediaError` `.invalidOptions` for an unknown extension, a bit depth other
    ///   than 8 or 16, a quality outside 1–100 or an image of the wrong shape;
    ///   `.outputUnwritable` when the file cannot be written.
    @discardableResult
    public static func write(_ image: StillImage, to path: String, bitDepth: Int? = nil, jpegQuality: Int = 92) throws -> [String] {
        let format = try outputFormat(for: path)
        try validate(image, path: path)
        let depth = bitDepth ?? (image.bitDepth > 8 ? 16 : 8)
        guard depth == 8 || depth == 16 else {
            throw MediaError(.invalidOptions, "Cannot write '\(path)' with \(depth) bits per channel: images are written with 8 or 16. Pass 8 or 16.")
        }
        var warnings: [String] = []
        let packet: PacketBox
        switch format {
        case .png:
            packet = try encodePNG(image, depth: depth, path: path)
        case .jpeg:
            guard (1...100).contains(jpegQuality) else {
                throw MediaError(.invalidOptions, "JPEG quality \(jpegQuality) is out of range for '\(path)'. Pass a quality from 1 to 100 (92 is the default).")
            }
            if depth == 16 {
                warnings.append("'\(path)': JPEG stores 8 bits per channel; the 16-bit image was written with 8. Use .png to keep 16 bits.")
            }
            if image.alpha != nil {
                warnings.append("'\(path)': JPEG has no alpha channel; the transparency was dropped. Use .png to keep it.")
            }
            packet = try encodeJPEG(image, quality: jpegQuality, path: path)
        }
        try writeFile(packet, to: path)
        return warnings
    }

    /// Checks that `path` names a format `write` can produce, so a caller can fail before
    /// doing any work.
    /// - Throws: `MediaError` `.invalidOptions` naming the extension and the supported ones.
    public static func validateOutputPath(_ path: String) throws {
        _ = try outputFormat(for: path)
    }

    /// FFmpeg's mjpeg quantiser (qscale 1–31) for a libjpeg-style quality (1–100).
    ///
    /// libjpeg scales the Annex K tables by 5000/q % below 50 and by (200 − 2q) % above;
    /// FFmpeg scales one fixed table by qscale/8. Matching the geometric means of the luma
    /// tables gives qscale ≈ 0.118 × that percentage: 92 → 2, 95 → 1, 75 → 6, 50 → 12.
    public static func jpegQScale(quality: Int) -> Int {
        let q = Double(min(max(quality, 1), 100))
        let percent = q < 50 ? 5000 / q : 200 - 2 * q
        return min(max(Int((percent * 0.118).rounded()), 1), 31)
    }
}

// MARK: - File formats

/// The two still-image codecs ImageIO speaks.
enum ImageFileFormat {
    case png, jpeg

    var codecID: AVCodecID { self == .png ? AV_CODEC_ID_PNG : AV_CODEC_ID_MJPEG }
    var name: String { self == .png ? "PNG" : "JPEG" }

    /// Tells the format from the file's first bytes (its extension may lie).
    init(sniffing packet: PacketBox, path: String) throws {
        let bytes = UnsafeBufferPointer(start: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && zip(bytes[offset...], magic).allSatisfy { $0 == $1 }
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { self = .png; return }
        if starts([0xFF, 0xD8, 0xFF]) { self = .jpeg; return }
        let other: String? = starts(Array("GIF8".utf8)) ? "a GIF"
            : starts(Array("BM".utf8)) ? "a BMP"
            : starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) ? "a WebP"
            : starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) ? "a TIFF"
            : nil
        if let other {
            throw MediaError(.unsupported, "Cannot read '\(path)': it is \(other) image, and only PNG and JPEG are read. Convert it to PNG (for example `ffmpeg -i '\(path)' out.png`) and pass that.")
        }
        throw MediaError(.inputUnreadable, "Cannot read '\(path)': it is not a PNG or JPEG image. Pass a .png or .jpg file.")
    }
}

extension ImageIO {
    static func outputFormat(for path: String) throws -> ImageFileFormat {
        let ext = URL(fileURLWithPath: path).pathExtension.lowercased()
        switch ext {
        case "png": return .png
        case "jpg", "jpeg": return .jpeg
        default:
            let named = ext.isEmpty ? "it has no extension" : "'.\(ext)' is not an image format Vivify writes"
            throw MediaError(.invalidOptions, "Cannot write '\(path)': \(named). Use one of \(writableExtensions.map { "." + $0 }.joined(separator: ", ")) (PNG is lossless, 8 or 16 bits, and keeps alpha).")
        }
    }
}

// MARK: - Owned FFmpeg objects

/// An `AVPacket` freed with its owner.
final class PacketBox {
    let pointer: UnsafeMutablePointer<AVPacket>
    init() { pointer = av_packet_alloc() }
    deinit {
        var p: UnsafeMutablePointer<AVPacket>? = pointer
        av_packet_free(&p)
    }
}

/// An `AVFrame` freed with its owner.
final class FrameBox {
    let pointer: UnsafeMutablePointer<AVFrame>
    init() { pointer = av_frame_alloc() }
    deinit {
        var p: UnsafeMutablePointer<AVFrame>? = pointer
        av_frame_free(&p)
    }

    /// Plane access to the frame.
    var view: FrameView { FrameView(pointer) }
}

/// An opened (or to-be-opened) codec context freed with its owner.
final class CodecContextBox {
    let pointer: UnsafeMutablePointer<AVCodecContext>
    let codec: UnsafePointer<AVCodec>
    init(_ codec: UnsafePointer<AVCodec>) {
        self.codec = codec
        pointer = avcodec_alloc_context3(codec)
        // One picture gains nothing from frame threads, and they would delay the output.
        pointer.pointee.thread_count = 1
    }
    deinit {
        var p: UnsafeMutablePointer<AVCodecContext>? = pointer
        avcodec_free_context(&p)
    }
}

// MARK: - Packed sample layouts

/// An interleaved layout with 1 or 3 colour samples, optional alpha last, 8 or 16 bits each:
/// the formats ImageIO packs and unpacks itself (gray, ya8, rgb24, rgba and their 16-bit kin).
struct PackedLayout: Equatable {
    var colorChannels: Int
    var hasAlpha: Bool
    var bytesPerSample: Int
    var bigEndian: Bool

    var samplesPerPixel: Int { colorChannels + (hasAlpha ? 1 : 0) }
    var bytesPerPixel: Int { samplesPerPixel * bytesPerSample }

    private static let table: [(AVPixelFormat, PackedLayout)] = [
        (AV_PIX_FMT_GRAY8, .init(colorChannels: 1, hasAlpha: false, bytesPerSample: 1, bigEndian: false)),
        (AV_PIX_FMT_YA8, .init(colorChannels: 1, hasAlpha: true, bytesPerSample: 1, bigEndian: false)),
        (AV_PIX_FMT_RGB24, .init(colorChannels: 3, hasAlpha: false, bytesPerSample: 1, bigEndian: false)),
        (AV_PIX_FMT_RGBA, .init(colorChannels: 3, hasAlpha: true, bytesPerSample: 1, bigEndian: false)),
        (AV_PIX_FMT_GRAY16BE, .init(colorChannels: 1, hasAlpha: false, bytesPerSample: 2, bigEndian: true)),
        (AV_PIX_FMT_GRAY16LE, .init(colorChannels: 1, hasAlpha: false, bytesPerSample: 2, bigEndian: false)),
        (AV_PIX_FMT_YA16BE, .init(colorChannels: 1, hasAlpha: true, bytesPerSample: 2, bigEndian: true)),
        (AV_PIX_FMT_YA16LE, .init(colorChannels: 1, hasAlpha: true, bytesPerSample: 2, bigEndian: false)),
        (AV_PIX_FMT_RGB48BE, .init(colorChannels: 3, hasAlpha: false, bytesPerSample: 2, bigEndian: true)),
        (AV_PIX_FMT_RGB48LE, .init(colorChannels: 3, hasAlpha: false, bytesPerSample: 2, bigEndian: false)),
        (AV_PIX_FMT_RGBA64BE, .init(colorChannels: 3, hasAlpha: true, bytesPerSample: 2, bigEndian: true)),
        (AV_PIX_FMT_RGBA64LE, .init(colorChannels: 3, hasAlpha: true, bytesPerSample: 2, bigEndian: false)),
    ]

    /// The layout of an FFmpeg format ImageIO can read directly, if it is one.
    init?(_ format: AVPixelFormat) {
        guard let hit = Self.table.first(where: { $0.0 == format }) else { return nil }
        self = hit.1
    }

    init(colorChannels: Int, hasAlpha: Bool, bytesPerSample: Int, bigEndian: Bool) {
        self.colorChannels = colorChannels
        self.hasAlpha = hasAlpha
        self.bytesPerSample = bytesPerSample
        self.bigEndian = bytesPerSample == 2 && bigEndian
    }

    /// FFmpeg's name for this layout (16-bit ones with their byte order spelled out).
    var av: AVPixelFormat { Self.table.first(where: { $0.1 == self })!.0 }
}

// MARK: - Reading

extension ImageIO {
    /// Reads the whole file into a packet (with FFmpeg's zeroed input padding).
    static func loadFile(_ path: String) throws -> PacketBox {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw MediaError(.inputUnreadable, "Cannot open '\(path)': \(errnoText()). Check the path and its permissions.")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw MediaError(.inputUnreadable, "Cannot read '\(path)': \(errnoText()). Check the path and its permissions.")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw MediaError(.inputUnreadable, "Cannot read '\(path)': it is not a regular file. Pass a PNG or JPEG image file.")
        }
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

    /// Width and height from a PNG's IHDR or a JPEG's first SOF marker; nil when not found
    /// (the decoder's own `max_pixels` still applies).
    static func declaredSize(_ packet: PacketBox, _ format: ImageFileFormat) -> (Int, Int)? {
        guard let data = packet.pointer.pointee.data else { return nil }
        let bytes = UnsafeBufferPointer(start: data, count: Int(packet.pointer.pointee.size))
        func be16(_ i: Int) -> Int { Int(bytes[i]) << 8 | Int(bytes[i + 1]) }
        func be32(_ i: Int) -> Int { be16(i) << 16 | be16(i + 2) }
        switch format {
        case .png:
            // Signature (8), chunk length (4), "IHDR", width, height.
            guard bytes.count >= 24, bytes[12] == 0x49, bytes[13] == 0x48, bytes[14] == 0x44, bytes[15] == 0x52 else { return nil }
            return (be32(16), be32(20))
        case .jpeg:
            var i = 2
            while i + 9 < bytes.count {
                guard bytes[i] == 0xFF else { return nil }
                let marker = bytes[i + 1]
                if marker == 0xFF { i += 1; continue }
                if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
                // SOF0–SOF15 except DHT (C4), JPG (C8) and DAC (CC): precision, height, width.
                if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                    return (be16(i + 7), be16(i + 5))
                }
                if marker == 0xDA { return nil }
                i += 2 + be16(i + 2)
            }
            return nil
        }
    }

    /// Sends the whole file as one packet and takes the one picture out.
    static func decode(_ packet: PacketBox, as format: ImageFileFormat, path: String) throws -> FrameBox {
        guard let codec = avcodec_find_decoder(format.codecID) else {
            throw MediaError(.unsupported, "Cannot read '\(path)': this FFmpeg has no \(format.name) decoder. Install an FFmpeg build with it.")
        }
        let context = CodecContextBox(codec)
        // Without this the JPEG decoder fills a truncated file's missing rows with grey and
        // reports nothing; a still image has no later frames to make up for a damaged one.
        context.pointer.pointee.err_recognition |= AV_EF_EXPLODE
        context.pointer.pointee.max_pixels = Int64(MediaLimits.maxPixels)
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
    private static let jfifColor = ColorInfo(primaries: 2, transfer: 2, matrix: 5, range: 2)

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
        // A colour encoder given a grey picture stores neutral chroma; keep such JPEGs grey.
        if isYUV, bitDepth == 8, desc.comp.0.step == 1, hasNeutralChroma(planes, desc: desc, width: width, height: height) {
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
            try SwsScaler().scale(srcFormat: swscaleFormat(source), srcWidth: width, srcHeight: height, srcColor: jfifColor, src: planes.planeRefs,
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

    /// Writes the packet's bytes to `path`, creating or truncating it.
    private static func writeFile(_ packet: PacketBox, to path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MediaError(.outputUnwritable, "Cannot create '\(path)': \(errnoText()). Choose a writable location.")
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
                throw MediaError(.outputUnwritable, "Cannot write '\(path)': \(reason). Check the free space and permissions.")
            }
            done += n
        }
        // close() is where some file systems report a failed write.
        guard close(fd) == 0 else {
            throw MediaError(.outputUnwritable, "Cannot finish writing '\(path)': \(errnoText()). Check the free space and permissions.")
        }
    }
}

/// The text of the current `errno`.
private func errnoText() -> String { String(cString: strerror(errno)) }
