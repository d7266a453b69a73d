import CFFmpeg

/// The 8-bit pixel layouts Vivify's frames use. Planes are stored tightly packed, row after row.
public enum PixelFormat: String, Sendable, CaseIterable {
    /// Packed R, G, B bytes; one plane.
    case rgb24
    /// One luma plane.
    case gray
    /// Y plane plus U and V at half width and half height.
    case yuv420p
    /// Y plane plus U and V at half width.
    case yuv422p
    /// Y, U and V at full size.
    case yuv444p

    /// Number of planes.
    public var planeCount: Int {
        switch self {
        case .rgb24, .gray: return 1
        case .yuv420p, .yuv422p, .yuv444p: return 3
        }
    }

    /// Whether the format carries luma and chroma (so a colour matrix applies).
    public var isYUV: Bool { planeCount == 3 }

    /// Bytes in one row of plane `plane` for an image `width` wide.
    public func rowBytes(plane: Int, width: Int) -> Int {
        switch self {
        case .rgb24: return width * 3
        case .gray, .yuv444p: return width
        case .yuv420p, .yuv422p: return plane == 0 ? width : (width + 1) / 2
        }
    }

    /// Rows in plane `plane` for an image `height` high.
    public func rows(plane: Int, height: Int) -> Int {
        switch self {
        case .yuv420p: return plane == 0 ? height : (height + 1) / 2
        default: return height
        }
    }

    /// Bytes in one whole frame of `width`×`height`.
    public func frameBytes(width: Int, height: Int) -> Int {
        (0..<planeCount).reduce(0) { $0 + rowBytes(plane: $1, width: width) * rows(plane: $1, height: height) }
    }

    var av: AVPixelFormat {
        switch self {
        case .rgb24: return AV_PIX_FMT_RGB24
        case .gray: return AV_PIX_FMT_GRAY8
        case .yuv420p: return AV_PIX_FMT_YUV420P
        case .yuv422p: return AV_PIX_FMT_YUV422P
        case .yuv444p: return AV_PIX_FMT_YUV444P
        }
    }

    /// The Vivify format an FFmpeg pixel format maps onto without loss, if any. The JPEG
    /// ("full range") variants map onto the plain ones; the range is carried in `ColorInfo`.
    init?(av: AVPixelFormat) {
        switch av {
        case AV_PIX_FMT_RGB24: self = .rgb24
        case AV_PIX_FMT_GRAY8: self = .gray
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P: self = .yuv420p
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P: self = .yuv422p
        case AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P: self = .yuv444p
        default: return nil
        }
    }
}

/// FFmpeg's name for an FFmpeg pixel format, e.g. "yuv420p10le".
func avPixelFormatName(_ format: AVPixelFormat) -> String {
    guard let name = av_get_pix_fmt_name(format) else { return "unknown" }
    return String(cString: name)
}
