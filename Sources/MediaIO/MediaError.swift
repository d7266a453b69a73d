/// Everything that can go wrong while reading or writing video, with a message that names the
/// input and says what to do next. `ExitCode` mapping lives in the library face (`Vivify`).
public struct MediaError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; decides the process exit code.
    public enum Kind: Sendable, Equatable {
        /// The input does not exist or cannot be read.
        case inputUnreadable
        /// The input has no video stream.
        case noVideoStream
        /// The input's codec cannot be decoded, or the requested encoder does not exist.
        case unsupported
        /// The input's data is damaged or does not fit its declared layout.
        case corruptInput
        /// The output cannot be created or written.
        case outputUnwritable
        /// The caller passed options that cannot work together.
        case invalidOptions
        /// A library call failed in a way the caller cannot fix.
        case internalFailure
        /// A signal arrived while waiting for input (a FIFO with no writer, an idle pipe).
        case interrupted
        /// Work that others still have to finish first (segments not yet processed).
        case unfinished
    }

    /// The advice that ends the error for an input FFmpeg does not recognise (commands without
    /// `--input-format` replace it with their own).
    public static let rawFramesHint = "Pass a video file, or use --input-format for raw frames."

    /// What kind of failure this is.
    public let kind: Kind
    /// One sentence naming what failed, on what, and what to do next.
    public let message: String

    /// Makes an error of `kind` with a complete, user-facing `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }
}
