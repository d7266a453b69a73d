import Foundation

/// The bounds every media reader checks before it allocates a frame, and that a job checks
/// on every stage's output before the first frame is processed.
///
/// | limit | default | override |
/// |---|---|---|
/// | pixels per frame (input, and every stage's output) | 40,000,000 (8K UHD is 33.2 M) | `--max-pixels N` |
/// | side of a frame | 32,768 | — (FFmpeg's own image-size check stops near there) |
/// | frame rate | 1/1000 to 1000 fps | — |
/// | y4m header line | 4,096 bytes | — |
///
/// A frame of the default limit costs about 480 MB as planar float RGB, so a run stays within a
/// few GB; a larger picture needs `--max-pixels` and the memory to go with it.
public enum MediaLimits {
    /// The default pixels-per-frame limit.
    public static let defaultMaxPixels = 40_000_000
    /// The largest width or height of any frame.
    public static let maxSide = 32_768
    /// The frame-rate range accepted from files and options, in frames per second.
    public static let frameRates: ClosedRange<Double> = 0.001...1000

    /// `width`×`height` if it is within the limits (`limit` pixels per frame: the run's
    /// `--max-pixels`), else the error: `kind` `.corruptInput` for a file's declared size,
    /// `.invalidOptions` for a size the settings produce. `what` names the frame ("'in.y4m'",
    /// "the upscaler's output").
    @discardableResult
    public static func checkFrame(width: Int, height: Int, what: String, kind: MediaError.Kind = .corruptInput, limit: Int) throws -> Int {
        guard width > 0, height > 0 else {
            throw MediaError(kind, "\(what) has a frame size of \(width)x\(height); both sides must be at least 1.")
        }
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard width <= maxSide, height <= maxSide, !overflow, pixels <= limit else {
            let count = overflow ? "more than \(Int.max)" : "\(pixels)"
            throw MediaError(kind, "\(what) has \(width)x\(height) frames (\(count) pixels), beyond the limit of \(limit) pixels per frame and \(maxSide) per side. Pass --max-pixels N to allow up to N pixels (it needs about 12 bytes of memory per pixel per buffer), or use a smaller picture.")
        }
        return pixels
    }

    /// Whether `rate` (frames per second) is within `frameRates`.
    public static func isPlausible(frameRate rate: Rational) -> Bool {
        rate.num > 0 && rate.den > 0 && frameRates.contains(rate.doubleValue)
    }
}
