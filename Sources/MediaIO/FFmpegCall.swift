import CFFmpeg

// Every raw FFmpeg return code passes through these helpers, which turn negative codes into
// typed errors and keep EAGAIN/EOF as ordinary values (see STYLE.md, habit 2).

enum AVCode {
    static let again = vivify_averror_eagain()
    static let eof = vivify_averror_eof()
    static let invalidData = vivify_averror_invaliddata()
    static let noPTS = vivify_av_nopts_value()
}

/// The text FFmpeg gives for an error code.
func avErrorString(_ code: Int32) -> String {
    var buffer = [CChar](repeating: 0, count: 256)
    return buffer.withUnsafeMutableBufferPointer { ptr in
        String(cString: vivify_av_err2str(code, ptr.baseAddress, ptr.count))
    }
}

/// Returns `code` when it is not negative, else throws `kind` with `what` and FFmpeg's reason.
@discardableResult
func avCheck(_ code: Int32, _ kind: MediaError.Kind, _ what: @autoclosure () -> String) throws -> Int32 {
    if code < 0 {
        throw MediaError(kind, "\(what()): \(avErrorString(code)).")
    }
    return code
}

/// Silences FFmpeg's own logging unless asked: our errors and warnings carry the story.
public enum FFmpegLog {
    /// Sets FFmpeg's log level: quiet by default, verbose for debugging.
    public static func configure(verbose: Bool) {
        av_log_set_level(verbose ? AV_LOG_VERBOSE : AV_LOG_QUIET)
        // Encoders that log on their own, past av_log: SVT-AV1 reads SVT_LOG when an encoder
        // starts (0: fatal only, 3: info), unless the user set it; libx265's level is set per
        // encoder from `isVerbose` (MediaWriter.applyQuality).
        setenv("SVT_LOG", verbose ? "3" : "0", 0)
    }

    /// Whether FFmpeg's messages are shown (`configure(verbose: true)`).
    public static var isVerbose: Bool { av_log_get_level() >= AV_LOG_VERBOSE }

    /// The FFmpeg build this process runs ("5.1.6-0+deb12u1"): for `--version` and bug reports.
    public static var version: String { String(cString: av_version_info()) }
}
