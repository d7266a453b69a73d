import Foundation

/// The directory of installed models and the operations on it: list, check, locate, resolve
/// and fetch (see `ModelStore+Fetch.swift`).
///
/// Layout: `<directory>/<model name>/<file name>`, e.g.
/// `~/.local/share/vivify/models/waifu2x-photo-2x/scale2.0x_model.param`, with the licence
/// texts beside the model's files.
public struct ModelStore: Sendable {
    /// Where installed models live.
    public let directory: URL
    /// A local copy of the upstream files laid out as `<mirror>/ncnn/<family>/<file>`; when set,
    /// `fetch` copies from it instead of downloading.
    public let mirror: URL?
    /// The models this store knows by name.
    public let catalog: Catalog

    /// The environment variable naming the model directory.
    public static let directoryVariable = "VIVIFY_MODELS"
    /// The environment variable naming the mirror directory.
    public static let mirrorVariable = "VIVIFY_MODEL_MIRROR"

    /// A store over explicit directories (what tests use: no environment involved).
    public init(directory: URL, mirror: URL? = nil, catalog: Catalog = .builtIn) {
        self.directory = directory.standardizedFileURL
        self.mirror = mirror?.standardizedFileURL
        self.catalog = catalog
    }

    /// A store configured from `environment`: the directory from `defaultDirectory(environment:)`,
    /// the mirror from `VIVIFY_MODEL_MIRROR` when set and not empty.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, catalog: Catalog = .builtIn) {
        let mirror = environment[Self.mirrorVariable].flatMap { $0.isEmpty ? nil : URL(fileURLWithPath: $0, isDirectory: true) }
        self.init(directory: Self.defaultDirectory(environment: environment), mirror: mirror, catalog: catalog)
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

    /// Where `file` is in the mirror, or nil when no mirror is set.
    public func mirrorURL(of file: ModelFile) -> URL? {
        mirror?.appendingPathComponent(file.mirrorPath)
    }

    /// Where `entry`'s `.param` graph is (or would be) installed.
    public func paramPath(for entry: ModelEntry) -> URL { installedURL(of: entry.paramFile, for: entry) }

    /// Where `entry`'s `.bin` weights are (or would be) installed.
    public func binPath(for entry: ModelEntry) -> URL { installedURL(of: entry.weightsFile, for: entry) }

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
    /// (licence texts do not count). Cheap: reads no file contents; `verify(_:)` hashes.
    public func state(of entry: ModelEntry) -> InstallState {
        var problems: [String] = []
        var present = 0
        for file in entry.files {
            let url = installedURL(of: file, for: entry)
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

    // MARK: - Resolving what the user typed

    /// Turns a user's model argument into the files to load: either a catalog name (the model
    /// must be installed) or a path to an ncnn `.param` file with its `.bin` beside it
    /// (`x.param` → `x.bin`). An argument is taken as a path when it ends in `.param` or
    /// contains a `/`.
    ///
    /// - Throws: `.invalid` for an unknown name (naming close ones) or a path that is not a
    ///   `.param` file; `.notFound` when the model is not installed, the `.param` file does not
    ///   exist, or its `.bin` is missing (naming the file expected).
    public func resolve(_ argument: String) throws -> ResolvedModel {
        if argument.hasSuffix(".param") || argument.contains("/") {
            return try resolvePath(argument)
        }
        let entry = try catalog.lookup(argument)
        switch state(of: entry) {
        case .installed:
            return ResolvedModel(name: entry.name, entry: entry, paramURL: paramPath(for: entry), binURL: binPath(for: entry))
        case .notInstalled:
            throw CatalogError(.notFound, "Model '\(entry.name)' is not installed in '\(directory.path)'. Run `vivify models fetch \(entry.name)` first.")
        case .incomplete(let problems):
            throw CatalogError(.notFound, "Model '\(entry.name)' in '\(modelDirectory(for: entry).path)' is incomplete (\(problems.joined(separator: "; "))). Run `vivify models fetch \(entry.name)` to repair it.")
        }
    }

    private func resolvePath(_ argument: String) throws -> ResolvedModel {
        let param = URL(fileURLWithPath: argument).standardizedFileURL
        guard param.pathExtension == "param" else {
            throw CatalogError(.invalid, "'\(argument)' is not an ncnn .param file. Pass a path ending in .param (with its .bin beside it) or a model name from `vivify models list`.")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: param.path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw CatalogError(.notFound, "Model graph '\(param.path)' does not exist. Check the path, or pass a model name from `vivify models list`.")
        }
        let bin = param.deletingPathExtension().appendingPathExtension("bin")
        guard fileSize(bin) != nil else {
            throw CatalogError(.notFound, "Model graph '\(param.path)' has no weights beside it: '\(bin.path)' is missing. Put the .bin file next to the .param file with the same name.")
        }
        return ResolvedModel(name: param.deletingPathExtension().lastPathComponent, entry: nil, paramURL: param, binURL: bin)
    }
}

/// The files of a model ready to load, from the catalog or from a user's path.
public struct ResolvedModel: Sendable, Equatable {
    /// The catalog name, or the `.param` file's name without extension for a path.
    public let name: String
    /// The catalog entry (with scale, padding, border and blob names), or nil for a user's path:
    /// the caller must then learn those facts from the graph itself.
    public let entry: ModelEntry?
    /// The ncnn `.param` graph.
    public let paramURL: URL
    /// The ncnn `.bin` weights.
    public let binURL: URL

    /// Makes a resolution (for callers that identify a path as a catalog model by its hash).
    public init(name: String, entry: ModelEntry?, paramURL: URL, binURL: URL) {
        self.name = name
        self.entry = entry
        self.paramURL = paramURL
        self.binURL = binURL
    }
}
