import Foundation

/// Why a `.wifm` model bundle was refused, or could not be written.
///
/// `kind` names the broken rule for code and tests; `key` names the manifest key
/// (`subModels.main.file`, `inputs[0].normalize.scale`) or archive entry it is about;
/// `message` says it for people in one sentence: what failed, on which key or entry and
/// value, which rule it breaks, and what to do.
public struct BundleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The rule that was broken.
    public enum Kind: String, Sendable, CaseIterable {
        // The archive, checked from its central directory before anything is extracted.
        /// The file is not a readable zip archive (or libzip failed reading it).
        case unreadableArchive
        /// More entries than `ModelBundle.Limits.maxEntries`.
        case tooManyEntries
        /// The entries add up to more than `ModelBundle.Limits.maxTotalUncompressedBytes`.
        case archiveTooLarge
        /// A large entry compresses better than `ModelBundle.Limits.maxCompressionRatio`: a zip bomb.
        case suspiciousCompression
        /// An entry expanded to more bytes than its header declares.
        case sizeMismatch
        /// An entry path with `..`, an absolute path, or the same path twice.
        case unsafePath
        /// An entry stored as a symbolic link.
        case symlinkEntry
        /// An encrypted entry, a device or pipe entry, or one libzip cannot decompress.
        case unsupportedEntry
        /// No `manifest.json` at the root of the archive.
        case missingManifest

        // manifest.json
        /// Not JSON, or not a JSON object.
        case invalidJSON
        /// A required key is absent.
        case missingKey
        /// A key holds the wrong JSON type (a string where a number belongs, …).
        case wrongType
        /// `version` is not 1.
        case unsupportedVersion
        /// `name` is not 5–100 characters.
        case invalidName
        /// `type` is not `coreml` (or one of our extensions, `ncnn`, `onnx`).
        case unsupportedModelType
        /// `task` is not `upscale` or `colorize`.
        case unsupportedTask
        /// A submodel other than `main` and `alpha`.
        case unknownSubModel
        /// A submodel `file` whose extension does not fit `type`.
        case unsupportedFileType
        /// A file named by the manifest is not in the archive.
        case missingFile
        /// `dataFormat` is not `nchw` or `chw`.
        case unsupportedDataFormat
        /// `inputShape` has the wrong rank, a non-positive side, a batch other than 1 or the
        /// wrong channel count.
        case invalidInputShape
        /// `inputShape` width and height differ.
        case nonSquareInput
        /// `shrinkSize` is not an integer ≥ 0 leaving a non-empty tile.
        case invalidShrinkSize
        /// `scale` is not an integer ≥ 1 (exactly 1 for colorize models).
        case invalidScale
        /// `alphaMode` is not `sameAsMain` or `separateModel`.
        case unsupportedAlphaMode
        /// `alphaMode` is `separateModel` but there is no `alpha` submodel.
        case missingAlphaModel
        /// A Tensor/IO-style `inputs`/`outputs` entry is malformed.
        case invalidTensorDescription
        /// A colorizer key (`inputSize`, `inputMultiple`, `lCenter`, `lScale`, `abScale`) is out of range.
        case invalidColorizerValue
        /// `customLayers` (extension) is not a valid custom-layer declaration.
        case invalidCustomLayers
        /// `info.md` is larger than 1 MiB.
        case infoTooLarge
        /// `info.md` is not UTF-8.
        case infoNotUTF8

        // Packing
        /// A file given to `ModelBundle.pack` cannot be used (unreadable, duplicate name, symlink inside a folder).
        case invalidPackInput
        /// The bundle could not be written.
        case writeFailed
    }

    /// The rule that was broken.
    public let kind: Kind
    /// The manifest key or archive entry the error is about, when there is one.
    public let key: String?
    /// One sentence for people: what failed, the key and value, the rule, and what to do.
    public let message: String

    /// Makes an error.
    public init(_ kind: Kind, key: String? = nil, _ message: String) {
        self.kind = kind
        self.key = key
        self.message = message
    }

    /// The message.
    public var description: String { message }

    /// The same error, its message prefixed with the bundle it came from.
    func inBundle(_ path: String) -> BundleError {
        BundleError(kind, key: key, "Cannot open the model bundle '\(path)': \(message)")
    }
}
