import Foundation
import SafeFiles

/// An opened `.wifm` model bundle: its validated manifest, and its model files extracted to a
/// private temporary folder that lives as long as the bundle.
///
///     .wifm ─▶ WifmArchive (central directory: count, paths, symlinks, sizes, ratios)
///           ─▶ manifest.json ─▶ WifmManifestReader (rules of v1 + extensions;
///                                                   tolerated mistakes become `warnings`)
///           ─▶ info.md (UTF-8, ≤ 1 MiB)
///           ─▶ mkdtemp 0700 ─▶ extract only the files the manifest names (an .mlpackage as
///                              its folder tree), counting bytes
///           ─▶ ModelBundle (removes the folder in deinit)
///
/// Nothing is written outside that folder, and every refusal is a `BundleError`.
public final class ModelBundle: Sendable {
    /// Limits that keep a hostile archive from exhausting disk or memory.
    public struct Limits: Sendable, Equatable {
        /// Most entries an archive may have.
        public var maxEntries: Int
        /// Most bytes all entries together may declare uncompressed.
        public var maxTotalUncompressedBytes: UInt64
        /// Highest uncompressed:compressed ratio of an entry larger than `ratioCheckedAbove`.
        public var maxCompressionRatio: UInt64
        /// Entries up to this size may compress as well as they like (text, small zeros).
        public var ratioCheckedAbove: UInt64
        /// Largest `manifest.json` read.
        public var maxManifestBytes: UInt64

        /// Makes limits; the defaults are 10,000 entries, 2 GiB, 200:1 above 1 MiB, a 1 MiB manifest.
        public init(maxEntries: Int = 10_000, maxTotalUncompressedBytes: UInt64 = 2 << 30, maxCompressionRatio: UInt64 = 200,
                    ratioCheckedAbove: UInt64 = 1 << 20, maxManifestBytes: UInt64 = 1 << 20) {
            self.maxEntries = maxEntries
            self.maxTotalUncompressedBytes = maxTotalUncompressedBytes
            self.maxCompressionRatio = maxCompressionRatio
            self.ratioCheckedAbove = ratioCheckedAbove
            self.maxManifestBytes = maxManifestBytes
        }

        /// The defaults.
        public static let `default` = Limits()
    }

    /// The validated manifest.
    public let manifest: WifmManifest
    /// Tolerated mistakes and ignored keys or entries, one sentence each, saying what to fix.
    public let warnings: [String]
    /// The private temporary folder (mode 0700) holding the extracted model files; removed
    /// when the bundle is released.
    public let directory: URL
    /// The text of `info.md`, if the bundle has one.
    public let infoMarkdown: String?
    /// The `.wifm` this was opened from.
    public let path: String

    private init(manifest: WifmManifest, warnings: [String], directory: URL, infoMarkdown: String?, path: String) {
        self.manifest = manifest
        self.warnings = warnings
        self.directory = directory
        self.infoMarkdown = infoMarkdown
        self.path = path
    }

    deinit {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Where `subModel`'s file (or `.mlpackage` folder; ncnn: the `.param`) was extracted.
    public func url(for subModel: WifmManifest.SubModel) -> URL {
        directory.appendingPathComponent(subModel.file, isDirectory: subModel.isDirectory)
    }

    /// Where an ncnn submodel's `.bin` was extracted; nil for other types.
    public func weightsURL(for subModel: WifmManifest.SubModel) -> URL? {
        subModel.weightsFile.map { directory.appendingPathComponent($0, isDirectory: false) }
    }

    // MARK: Opening

    /// Opens, checks and extracts the bundle at `path` with the default limits.
    ///
    /// - Throws: `BundleError`, its message starting "Cannot open the model bundle '…':".
    public static func open(path: String) throws -> ModelBundle {
        try open(path: path, limits: .default)
    }

    /// Opens, checks and extracts the bundle at `path` within `limits`.
    public static func open(path: String, limits: Limits) throws -> ModelBundle {
        do {
            return try load(path: path, limits: limits)
        } catch let error as BundleError {
            throw error.inBundle(path)
        }
    }

    private static func load(path: String, limits: Limits) throws -> ModelBundle {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw BundleError(.unreadableArchive, key: nil, "there is no such file; check the path.")
        }
        guard !isDirectory.boolValue else {
            throw BundleError(.unreadableArchive, key: nil,
                              "it is a folder, but a bundle is a zip archive; zip the folder's contents (manifest.json at the root) into a .wifm.")
        }
        let archive = try WifmArchive(path: path, limits: limits)
        guard let manifestEntry = archive.file("manifest.json") else {
            let nested = archive.entries.first { !$0.isDirectory && $0.path.hasSuffix("/manifest.json") }
            let hint = nested.map { "; the archive has '\($0.path)', so zip the folder's contents rather than the folder" }
                ?? "; add the manifest the spec describes"
            throw BundleError(.missingManifest, key: "manifest.json", "the archive has no manifest.json at its root\(hint).")
        }
        guard manifestEntry.size <= limits.maxManifestBytes else {
            throw BundleError(.invalidJSON, key: "manifest.json",
                              "manifest.json is \(manifestEntry.size) bytes, more than the \(limits.maxManifestBytes) a manifest may have; a manifest is a few hundred bytes of JSON: rewrite it.")
        }
        var reader = WifmManifestReader(listing: archive.listing)
        let manifest = try reader.read(archive.data(manifestEntry))
        var warnings = reader.warnings

        var info: String?
        if let entry = archive.file("info.md") {
            if let error = WifmInfo.sizeError(entry.size) { throw error }
            info = try WifmInfo.text(archive.data(entry))
        }

        var needed: [WifmArchive.Entry] = []
        for sub in manifest.subModels {
            needed += sub.isDirectory ? archive.tree(sub.file) : [archive.file(sub.file)].compactMap { $0 }
            if let bin = sub.weightsFile, let entry = archive.file(bin) { needed.append(entry) }
        }
        let used = Set(needed.map(\.path) + ["manifest.json", "info.md"])
        let unused = archive.entries.filter { e in
            !used.contains(e.path) && !e.isDirectory && !isPlatformClutter(e.path)
        }.map(\.path)
        if !unused.isEmpty {
            let shown = unused.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (unused.count > 5 ? " and \(unused.count - 5) more" : "")
            warnings.append("the archive holds \(shown), which the manifest does not name; \(unused.count == 1 ? "it was" : "they were") ignored: remove \(unused.count == 1 ? "it" : "them") or name \(unused.count == 1 ? "it" : "them") in manifest.json.")
        }

        let directory = try makePrivateDirectory()
        do {
            var seen = Set<String>()
            try archive.extract(needed.filter { seen.insert($0.path).inserted }, to: directory)
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        return ModelBundle(manifest: manifest, warnings: warnings, directory: directory, infoMarkdown: info, path: path)
    }

    /// Files that zip tools on macOS and Windows add on their own.
    private static func isPlatformClutter(_ path: String) -> Bool {
        let last = path.split(separator: "/").last.map(String.init) ?? path
        return path.hasPrefix("__MACOSX/") || last == ".DS_Store" || last == "Thumbs.db" || last.hasPrefix("._")
    }

    /// Removes the extraction folders of vivify processes that no longer run (killed or crashed
    /// before `deinit`): `vivify-wifm.<pid>.*` whose pid is gone, and unnamed older ones after a day.
    /// Returns how many were removed. Runs once per process, before the first extraction.
    @discardableResult
    public static func sweepStaleExtractions(in folder: String = NSTemporaryDirectory()) -> Int {
        var removed = 0
        let me = getpid()
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where name.hasPrefix("vivify-wifm.") {
            let path = (folder as NSString).appendingPathComponent(name)
            let parts = name.split(separator: ".")
            let stale: Bool
            if parts.count == 3, let pid = Int32(parts[1]) {
                stale = pid != me && kill(pid, 0) != 0 && errno == ESRCH
            } else {
                let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date()
                stale = Date().timeIntervalSince(modified) > 86_400
            }
            if stale, (try? FileManager.default.removeItem(atPath: path)) != nil { removed += 1 }
        }
        return removed
    }

    private static let sweptOnce: Bool = { sweepStaleExtractions(); return true }()

    /// `mkdtemp` under `NSTemporaryDirectory()`: a fresh folder only we can enter (0700), named
    /// with our pid so that a later process can tell it is stale if we die.
    private static func makePrivateDirectory() throws -> URL {
        _ = sweptOnce
        let template = (NSTemporaryDirectory() as NSString).appendingPathComponent("vivify-wifm.\(getpid()).XXXXXX")
        var bytes = Array(template.utf8CString)
        let made = bytes.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard let made else {
            throw BundleError(.writeFailed, key: nil,
                              "cannot create a private temporary folder from '\(template)' (\(String(cString: strerror(errno)))); check that TMPDIR exists and is writable.")
        }
        return URL(fileURLWithPath: String(cString: made), isDirectory: true)
    }

    // MARK: Packing

    /// Writes a `.wifm` from a manifest and the files it names, after validating the manifest
    /// against those files exactly as `open` would.
    ///
    /// Each file lands at the root of the archive under its own name; a folder (an
    /// `.mlpackage`) is added with everything inside it. `info.md`, if among `files`, is
    /// checked too. The archive is written to a temporary file beside `output` and renamed
    /// over it only when complete.
    ///
    /// - Returns: the warnings `open` would give (tolerated mistakes, unused files).
    /// - Throws: `BundleError`, its message starting "Cannot pack '…':".
    @discardableResult
    public static func pack(manifestJSON: Data, files: [URL], to output: URL) throws -> [String] {
        do {
            return try packChecked(manifestJSON: manifestJSON, files: files, to: output)
        } catch let error as BundleError {
            throw BundleError(error.kind, key: error.key, "Cannot pack '\(output.path)': \(error.message)")
        }
    }

    /// One thing to put in the archive.
    private enum Item {
        case file(name: String, url: URL)
        case directory(name: String)
    }

    private static func packChecked(manifestJSON: Data, files: [URL], to output: URL) throws -> [String] {
        var items: [Item] = []
        var topNames = Set<String>()
        for given in files {
            let url = given.resolvingSymlinksInPath()
            let name = given.lastPathComponent
            guard name != "manifest.json" else {
                throw BundleError(.invalidPackInput, key: name,
                                  "'\(given.path)' is named manifest.json, but the manifest comes from `manifestJSON`; leave it out of the files.")
            }
            guard (try? WifmArchive.safePath(name)) == name, !name.isEmpty else {
                throw BundleError(.invalidPackInput, key: name, "'\(given.path)' has no usable file name; rename it.")
            }
            guard topNames.insert(name).inserted else {
                throw BundleError(.invalidPackInput, key: name,
                                  "two of the files are named '\(name)', but each lands at the root of the archive; rename one.")
            }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
                throw BundleError(.invalidPackInput, key: name, "'\(given.path)' does not exist; check the path.")
            }
            guard isDirectory.boolValue else {
                items.append(.file(name: name, url: url))
                continue
            }
            items.append(.directory(name: name))
            let inside: [String]
            do {
                inside = try FileManager.default.subpathsOfDirectory(atPath: url.path).sorted()
            } catch {
                throw BundleError(.invalidPackInput, key: name, "cannot list the folder '\(given.path)': \(error.localizedDescription); check its permissions.")
            }
            for relative in inside {
                let itemURL = url.appendingPathComponent(relative)
                let type = (try? FileManager.default.attributesOfItem(atPath: itemURL.path))?[.type] as? FileAttributeType
                switch type {
                case .typeDirectory?: items.append(.directory(name: "\(name)/\(relative)"))
                case .typeRegular?: items.append(.file(name: "\(name)/\(relative)", url: itemURL))
                default:
                    throw BundleError(.invalidPackInput, key: "\(name)/\(relative)",
                                      "'\(itemURL.path)' is a symbolic link or special file, which a bundle may not hold; replace it with the real file.")
                }
            }
        }
        let paths = items.map { item -> String in
            switch item {
            case let .file(name, _): return name
            case let .directory(name): return name + "/"
            }
        }
        let listing = WifmFileListing(paths: paths)
        var reader = WifmManifestReader(listing: listing)
        let manifest = try reader.read(manifestJSON)
        var warnings = reader.warnings
        if case let .file(_, url)? = items.first(where: { if case .file("info.md", _) = $0 { return true } else { return false } }) {
            let size = (try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? UInt64 ?? 0
            if let error = WifmInfo.sizeError(size) { throw error }
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw BundleError(.invalidPackInput, key: "info.md", "cannot read '\(url.path)'; check its permissions.")
            }
            _ = try WifmInfo.text(data)
        }
        let named = Set(manifest.subModels.flatMap { [$0.file] + ($0.weightsFile.map { [$0] } ?? []) } + ["info.md"])
        let unused = topNames.subtracting(named).sorted()
        if !unused.isEmpty {
            warnings.append("the files \(unused.map { "'\($0)'" }.joined(separator: ", ")) are not named by the manifest; they were packed, but readers ignore them: leave them out.")
        }

        let partial = PartialFile(target: output)
        let temporary = partial.temporary
        do {
            let writer = try WifmZipWriter(path: temporary.path)
            try writer.add(name: "manifest.json", data: manifestJSON)
            for item in items {
                switch item {
                case let .file(name, url): try writer.add(name: name, file: url)
                case let .directory(name): try writer.addDirectory(name: name)
                }
            }
            try writer.close()
            // libzip makes its file 0600; a bundle is meant to be shared.
            chmod(temporary.path, 0o644)
            do {
                try partial.commit()
            } catch {
                throw BundleError(.writeFailed, key: nil, "cannot move the finished archive into place (\(error.reason)); check that the folder is writable.")
            }
        } catch {
            partial.discard()
            throw error
        }
        return warnings
    }
}
