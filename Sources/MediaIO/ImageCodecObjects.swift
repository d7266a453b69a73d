import CFFmpeg
import Foundation

// MARK: - File formats

/// The still-image codecs ImageIO reads (PNG and JPEG it writes too).
enum ImageFileFormat {
    case png, jpeg, bmp, tiff, webp

    var codecID: AVCodecID {
        switch self {
        case .png: AV_CODEC_ID_PNG
        case .jpeg: AV_CODEC_ID_MJPEG
        case .bmp: AV_CODEC_ID_BMP
        case .tiff: AV_CODEC_ID_TIFF
        case .webp: AV_CODEC_ID_WEBP
        }
    }

    var name: String {
        switch self {
        case .png: "PNG"
        case .jpeg: "JPEG"
        case .bmp: "BMP"
        case .tiff: "TIFF"
        case .webp: "WebP"
        }
    }

    /// Tells the format from the file's first bytes (its extension may lie).
    init(sniffing packet: PacketBox, path: String) throws {
        let bytes = UnsafeBufferPointer(start: packet.pointer.pointee.data, count: Int(packet.pointer.pointee.size))
        func starts(_ magic: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + magic.count && zip(bytes[offset...], magic).allSatisfy { $0 == $1 }
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { self = .png; return }
        if starts([0xFF, 0xD8, 0xFF]) { self = .jpeg; return }
        if starts(Array("BM".utf8)) { self = .bmp; return }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { self = .webp; return }
        if starts([0x49, 0x49, 0x2A, 0x00]) || starts([0x4D, 0x4D, 0x00, 0x2A]) { self = .tiff; return }
        if starts(Array("GIF8".utf8)) {
            throw MediaError(.unsupported, "Cannot read '\(path)': it is a GIF image, which Vivify does not read (PNG, JPEG, BMP, TIFF and WebP it does). Convert it to PNG (for example `ffmpeg -i '\(path)' out.png`), or pass an animated GIF to `vivify run` as a video.")
        }
        throw MediaError(.inputUnreadable, "Cannot read '\(path)': it is not a PNG, JPEG, BMP, TIFF or WebP image. Pass a picture in one of those formats.")
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

