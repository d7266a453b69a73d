/// Everything that can go wrong while looking up, locating, fetching or verifying a model, with
/// a message that names the model or file and says what to do next.
public struct CatalogError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; decides the process exit code (`vivify` maps it in
    /// `ErrorReport.exitCode(for:)`: 66, 65, 74, 74, 64 in this order).
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
