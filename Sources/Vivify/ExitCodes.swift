import MediaIO

/// The process exit codes of `vivify`, documented in the README.
public enum VivifyExitCode: Int32, Sendable, CaseIterable {
    /// Everything worked.
    case success = 0
    /// The options cannot work (also used by the argument parser for bad flags).
    case usage = 64
    /// The input is damaged or does not fit its declared layout (truncated, wrong --size, corrupt with --strict).
    case dataError = 65
    /// The input does not exist or cannot be read.
    case noInput = 66
    /// The input has no video stream, its codec cannot be decoded, or the encoder is unknown.
    case unsupported = 69
    /// An unexpected library failure.
    case software = 70
    /// The output cannot be created or written.
    case cannotCreateOutput = 73
    /// Stopped by SIGINT or SIGTERM; the frames done so far were finalised into a playable file.
    case interrupted = 130

    /// The exit code for an error of `kind`.
    public init(_ kind: MediaError.Kind) {
        switch kind {
        case .inputUnreadable: self = .noInput
        case .noVideoStream, .unsupported: self = .unsupported
        case .corruptInput: self = .dataError
        case .outputUnwritable: self = .cannotCreateOutput
        case .invalidOptions: self = .usage
        case .internalFailure: self = .software
        }
    }
}
