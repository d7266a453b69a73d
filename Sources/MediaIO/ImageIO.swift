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
    /// The EXIF orientation (2–8) the file carried and reading applied (the pixels are
    /// upright as viewers show them); nil when it had none.
    public var appliedOrientation: Int? = nil

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
    /// Input extensions `read` understands (it goes by the file's first bytes), lower case and
    /// without the dot.
    public static let readableExtensions = ["png", "jpg", "jpeg", "bmp", "tif", "tiff", "webp"]
    /// Output extensions `write` understands, lower case and without the dot.
    public static let writableExtensions = ["png", "jpg", "jpeg"]

    /// Decodes the PNG, JPEG, BMP, TIFF or WebP file at `path`.
    ///
    /// Grey files give 1 colour channel, everything else 3. A JPEG stored as YCbCr whose
    /// chroma is exactly neutral everywhere (a grey picture saved by a colour encoder,
    /// including ours) is read as grey too. JPEG YCbCr becomes RGB with full-range BT.601, as
    /// JFIF defines it. A JPEG's EXIF orientation is applied, so the pixels come out upright
    /// (the files `write` makes carry no EXIF).
    /// - Throws: `MediaError` `.inputUnreadable` when the file is missing, unreadable or not
    ///   an image; `.unsupported` for GIF; and `.corruptInput` when the data is damaged;
    ///   `.corruptInput` too for a picture beyond `maxPixels` pixels (`--max-pixels`).
    public static func read(path: String, maxPixels: Int = MediaLimits.defaultMaxPixels) throws -> StillImage {
        let packet = try loadFile(path)
        let format = try ImageFileFormat(sniffing: packet, path: path)
        try checkSupported(packet, format, path: path)
        // The size the file declares, checked before the decoder allocates the picture.
        if let (w, h) = declaredSize(packet, format) {
            try MediaLimits.checkFrame(width: w, height: h, what: "The image '\(path)'", limit: maxPixels)
        }
        let frame = try decode(packet, as: format, path: path, maxPixels: maxPixels)
        var image = try unpack(frame.pointer, from: format, path: path)
        // BMP's and WebP's decoders give 32-bit pixels with alpha whether the file uses it or
        // not (a BMP's fourth byte is often unused, 0): an alpha that says nothing is none.
        if format == .bmp || format == .webp || format == .tiff, let a = image.alpha,
           a.data.allSatisfy({ $0 == 1 }) || (format == .bmp && a.data.allSatisfy({ $0 == 0 })) {
            image.alpha = nil
        }
        if let orientation = exifOrientation(frame.pointer) {
            image.color = image.color.reoriented(exif: orientation)
            image.alpha = image.alpha?.reoriented(exif: orientation)
            image.appliedOrientation = orientation
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
    public static func write(_ image: StillImage, to path: String, bitDepth: Int? = nil, jpegQuality: Int = 92, named name: String? = nil) throws -> [String] {
        let format = try outputFormat(for: path)
        // Warnings name the file the user asked for (`name`), not the temporary one written.
        let shown = name ?? path
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
                warnings.append("'\(shown)': JPEG stores 8 bits per channel; the 16-bit image was written with 8. Use .png to keep 16 bits.")
            }
            if image.alpha != nil {
                warnings.append("'\(shown)': JPEG has no alpha channel; the transparency was dropped. Use .png to keep it.")
            }
            packet = try encodeJPEG(image, quality: jpegQuality, path: path)
        case .bmp, .tiff, .webp:
            // `outputFormat` gives PNG or JPEG only.
            preconditionFailure("ImageIO writes PNG and JPEG")
        }
        try writeFile(packet, to: path, named: shown)
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

