/// Everything that can go wrong while looking up, locating, fetching or verifying a model, with
/// a message that names the model or file and says what to do next.
public struct CatalogError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; decides the process exit code (see `exitCode`).
    public enum Kind: Sendable, Equatable, CaseIterable {
        /// A model file, mirror file or `.param`/`.bin` path does not exist, or a model is not installed.
        case notFound
        /// A file's SHA-256 differs from the catalog's.
        case hashMismatch
        /// A file could not be read, written or renamed.
        case io
        /// A download failed (no connection, HTTP error, timeout).
        case network
        /// The request cannot work: an unknown model name, a path that is not an ncnn `.param` file.
        case invalid

        /// The sysexits-style exit code `vivify` uses for this kind: 66 (no input) for
        /// `.notFound`, 65 (data error) for `.hashMismatch`, 64 (usage) for `.invalid`, 74
        /// (I/O error) for `.io` and `.network`.
        public var exitCode: Int32 {
            switch self {
            case .notFound: return 66
            case .hashMismatch: return 65
            case .invalid: return 64
            case .io, .network: return 74
            }
        }
    }

    /// What kind of failure this is.
    public let kind: Kind
    /// One sentence naming what failed, on what, and what to do next.
    public let message: String

    /// Makes an error of `kind` with a complete, user-facing `message`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
