import Foundation

/// How the video is encoded: codec, quality, speed and pixel format.
public struct EncoderSettings: Codable, Sendable, Equatable {
    /// FFmpeg encoder name or one of the aliases `h264`, `x264`, `hevc`, `h265`, `x265`, `vp9`, `av1`.
    public var codec: String
    /// Constant-rate-factor quality (lower is better); for mpeg4 it is the quantiser 1–31.
    public var crf: Double?
    /// Encoder speed preset ("ultrafast" … "veryslow" for x264/x265, 0–13 for SVT-AV1, 0–8 for VP9).
    public var preset: String?
    /// Output pixel format name ("yuv420p", "yuv444p", …); nil picks the codec's usual one.
    public var pixelFormat: String?

    /// The default: libx264, its own default quality and preset.
    public init(codec: String = "libx264", crf: Double? = nil, preset: String? = nil, pixelFormat: String? = nil) {
        self.codec = codec
        self.crf = crf
        self.preset = preset
        self.pixelFormat = pixelFormat
    }

    /// The encoder an output gets when none is named: VP9 for WebM (which cannot hold H.264),
    /// the picture's own codec for a picture (`pictureCodec`), libx264 for everything else.
    public static func defaultCodec(forOutput path: String) -> String {
        if isPicture(output: path), let picture = pictureCodec(forOutput: path) { return picture }
        return path.lowercased().hasSuffix(".webm") ? "libvpx-vp9" : "libx264"
    }

    /// Whether `path` names a picture file (`pictureCodec`), not a network URL that happens to
    /// end like one.
    public static func isPicture(output path: String) -> Bool {
        !NetworkURL.isNetwork(path) && pictureCodec(forOutput: path) != nil
    }

    /// The encoder of a picture file named by its extension (.png, .jpg, .jpeg, .bmp, .tif,
    /// .tiff): such an output holds one frame (`vivify run IN frame.png --max-frames 1`, how
    /// the README gets a frame out to colour it as a keyframe); nil for anything else.
    public static func pictureCodec(forOutput path: String) -> String? {
        switch (path as NSString).pathExtension.lowercased() {
        case "png": return "png"
        case "jpg", "jpeg": return "mjpeg"
        case "bmp": return "bmp"
        case "tif", "tiff": return "tiff"
        default: return nil
        }
    }

    /// The extension of the picture file a picture encoder writes (`pictureCodec`'s
    /// inverse): "png" for png, "jpg" for mjpeg, …; nil for any other encoder.
    public static func pictureExtension(forCodec encoder: String) -> String? {
        switch encoder.lowercased() {
        case "png": return "png"
        case "mjpeg": return "jpg"
        case "bmp": return "bmp"
        case "tiff": return "tif"
        default: return nil
        }
    }

    /// Refuses an encoder that is not the picture's own for a picture output `path` (PNG data
    /// in a .tif, JPEG in a .png: a file whose name lies about its format); nothing for any
    /// other output, or the picture's own encoder.
    public func checkPicture(output path: String) throws {
        guard Self.isPicture(output: path), let own = Self.pictureCodec(forOutput: path), encoderName.lowercased() != own else { return }
        let ext = (path as NSString).pathExtension
        let fix = Self.pictureExtension(forCodec: encoderName).map { "or name the output .\($0) for \(encoderName)" }
            ?? "or write \(encoderName) video to .mkv, .mp4 or another video container"
        throw MediaError(.invalidOptions, "'--codec \(codec)' does not write .\(ext) pictures: '\(path)' would hold another format than its name says. Leave --codec out (a .\(ext) is written with \(own)), \(fix).")
    }

    /// Encoders Vivify documents and tests.
    public static let supportedEncoders = ["libx264", "libx265", "libvpx-vp9", "libsvtav1", "ffv1", "mpeg4"]

    /// The FFmpeg encoder name the codec option stands for.
    public var encoderName: String {
        switch codec.lowercased() {
        case "h264", "x264", "avc": return "libx264"
        case "hevc", "h265", "x265": return "libx265"
        case "vp9": return "libvpx-vp9"
        case "av1", "svtav1", "svt-av1": return "libsvtav1"
        default: return codec
        }
    }

    /// The presets an encoder takes, nil when Vivify does not know its list (then the encoder
    /// itself judges).
    public static func presets(for encoder: String) -> [String]? {
        switch encoder {
        case "libx264", "libx265": return ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow", "placebo"]
        case "libvpx-vp9": return (0...8).map(String.init)
        case "libsvtav1": return (0...13).map(String.init)
        default: return nil
        }
    }

    /// Checks the preset against the encoder's list before anything is opened, so a typo gets
    /// the valid names instead of the encoder's own log line.
    public func validatePreset() throws {
        guard let preset, let valid = Self.presets(for: encoderName), !valid.contains(preset) else { return }
        throw MediaError(.invalidOptions, "Unknown --preset '\(preset)' for \(encoderName). Use one of: \(valid.joined(separator: ", ")).")
    }
}
