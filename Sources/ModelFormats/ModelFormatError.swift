/// Why a model file could not be imported, with a message that names the file (and the layer
/// or op) and says what to do.
public struct ModelFormatError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; decides the exit code (see the library face's mapping).
    public enum Kind: String, Sendable, CaseIterable {
        /// The file (or a file it needs, such as ncnn's .bin) cannot be opened or read.
        case unreadable
        /// The file is damaged or inconsistent: not the format it claims, truncated, contradictory.
        case malformed
        /// A well-formed model that uses something Vivify's engine does not run (a layer type,
        /// a quantisation, an input kind).
        case unsupported
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

    public var description: String { message }
}
