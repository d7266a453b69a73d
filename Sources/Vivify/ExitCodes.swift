internal import Engine
public import MediaIO
internal import ModelCatalog
internal import ModelFormats
import SafeFiles

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
    /// A model could not be fetched or stored: download, pip or disk error.
    case ioError = 74
    /// A segmented job's join found segments not yet finished (run `vivify work` for them, then join again).
    case unfinished = 75
    /// Stopped by SIGINT or SIGTERM; the frames done so far were finalised into a playable file.
    case interrupted = 130

    /// What the code means, in the few words `vivify --help` lists (the README's table says
    /// more; a test holds the two to these cases).
    public var summary: String {
        switch self {
        case .success: return "success"
        case .usage: return "bad options"
        case .dataError: return "damaged input"
        case .noInput: return "input missing or unreadable"
        case .unsupported: return "unsupported input, model or encoder"
        case .software: return "internal error"
        case .cannotCreateOutput: return "output not writable (or it exists: pass -y or -n)"
        case .ioError: return "a model could not be fetched"
        case .unfinished: return "segments not finished (join)"
        case .interrupted: return "interrupted (output kept, playable)"
        }
    }

    /// The list `vivify --help` ends with: every code and its summary.
    public static var helpText: String {
        "Exit codes: " + allCases.map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", ") + "."
    }

    /// The exit code for an error of `kind`.
    public init(_ kind: MediaError.Kind) {
        switch kind {
        case .inputUnreadable: self = .noInput
        case .noVideoStream, .unsupported: self = .unsupported
        case .corruptInput: self = .dataError
        case .outputUnwritable: self = .cannotCreateOutput
        case .invalidOptions: self = .usage
        case .internalFailure: self = .software
        case .interrupted: self = .interrupted
        case .unfinished: self = .unfinished
        }
    }
}

/// A failure already told to the user (a batch's pictures, each named as it failed; an
/// interrupted run, with what it kept): the process ends with `code` and prints nothing more.
public struct ReportedFailure: Error, Sendable, Equatable {
    /// The exit code the process ends with.
    public var code: VivifyExitCode

    /// A failure that ends the process with `code`.
    public init(_ code: VivifyExitCode) {
        self.code = code
    }
}

/// The one mapping from the typed errors of every layer — media (`MediaError`), model files
/// (`ModelFormatError`), engine (`EngineError`), catalog (`CatalogError`) and bundles
/// (`BundleError`) — to the documented exit code and the one sentence to print. Every command
/// reports through it.
public enum ErrorReport {
    /// The exit code for `error`.
    public static func exitCode(for error: Error) -> VivifyExitCode {
        switch error {
        case let e as ReportedFailure: return e.code
        case let e as MediaError: return VivifyExitCode(e.kind)
        case let e as PartialOutputError: return VivifyExitCode(e.underlying.kind)
        case let e as ModelFormatError:
            switch e.kind {
            case .unreadable: return .noInput
            case .malformed: return .dataError
            case .unsupported: return .unsupported
            }
        case let e as EngineError:
            switch e.kind {
            case .invalidGraph, .nonFiniteOutput: return .dataError
            case .unsupported: return .unsupported
            case .invalidSetting: return .usage
            case .backendFailure: return .software
            }
        case let e as CatalogError:
            switch e.kind {
            case .notFound: return .noInput
            case .hashMismatch: return .dataError
            case .invalid: return .usage
            case .io, .network: return .ioError
            }
        case let e as OutputProblem:
            switch e.kind {
            case .missingFolder, .readOnlyFolder, .exists, .brokenLink: return .cannotCreateOutput
            case .notRegularFile, .sameAsInput: return .usage
            }
        case let e as BundleError:
            switch e.kind {
            case .writeFailed: return .cannotCreateOutput
            case .invalidPackInput: return .usage
            default: return .dataError  // every rule of reading: the bundle is malformed
            }
        default: return .software
        }
    }

    /// The sentence to print for `error`.
    public static func message(for error: Error) -> String {
        switch error {
        case let e as MediaError: return e.message
        case let e as PartialOutputError: return e.description
        case let e as ModelFormatError: return e.message
        case let e as EngineError: return e.fallback == .cpuBackend ? e.message + " Or run on the CPU (--backend onednn)." : e.message
        case let e as CatalogError: return e.message
        case let e as BundleError: return e.message
        case let e as OutputProblem: return e.message
        default: return "\(error)"
        }
    }
}
