import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Fetching, in three steps so that a failure never leaves a half-installed model:
//
//   source (mirror file | upstream URL)
//        │  copy or download
//        ▼
//   <model dir>/.<file>.vivify-<pid>-<n>.partial      one temporary file per model file
//        │  SHA-256 must equal the catalog's          (any mismatch: delete every temp, throw)
//        ▼
//   rename(2) each temp onto <model dir>/<file>       weights last, so `isInstalled` turns
//                                                     true only when everything is in place
//
// A directory packed in an archive (PiperSR's .mlpackage inside its PyPI wheel) goes the same
// way, one step longer:
//
//   archive (mirror <mirror>/pypi/<wheel> | `python3 -m pip download --no-deps pkg==version`)
//        │  SHA-256 and size of the archive must equal the catalog's
//        ▼
//   <model dir>/.<dir>.vivify-<pid>-<n>.partial/      the member's files, unpacked by python3's
//        │  tree SHA-256 must equal the catalog's     zipfile (paths checked, CRCs checked)
//        ▼
//   rename(2) onto <model dir>/<dir>                  an older copy is renamed aside first and
//                                                     removed after

/// What `ModelStore.fetch` did for one model.
public struct FetchReport: Sendable {
    /// What happened to one file.
    public enum Action: Sendable, Hashable {
        /// Copied from this mirror file and verified.
        case copied(from: URL)
        /// Downloaded from this URL and verified.
        case downloaded(from: URL)
        /// A directory unpacked from a verified archive (see `ArchiveOrigin`), its tree
        /// SHA-256 verified too.
        case unpacked(member: String, from: ArchiveOrigin)
        /// Already installed with the right SHA-256; left alone.
        case alreadyInstalled
        /// Not installed, for the reason given (only licence texts with no pinned upstream copy
        /// when downloading).
        case skipped(reason: String)
    }

    /// Where an archive came from.
    public enum ArchiveOrigin: Sendable, Hashable {
        /// The mirror's copy at this path.
        case mirror(URL)
        /// Downloaded by this pip command (the download is deleted once unpacked).
        case pip(command: String)
    }

    /// One file's outcome.
    public struct FileResult: Sendable {
        /// The catalog's description of the file.
        public let file: ModelFile
        /// Where it is installed.
        public let destination: URL
        /// What was done.
        public let action: Action
    }

    /// The model fetched.
    public let entry: ModelEntry
    /// One result per file, model files first, then licence texts.
    public let files: [FileResult]
}

extension ModelStore {
    /// Installs the model called `name`; see `fetch(_:force:)` for an entry.
    ///
    /// - Throws: `.invalid` for an unknown name (naming close ones), else as `fetch(_:force:)`.
    @discardableResult
    public func fetch(_ name: String, force: Bool = false) throws -> FetchReport {
        try fetch(try catalog.lookup(name), force: force)
    }

    /// Installs `entry` into `modelDirectory(for:)`: copies each file from the mirror when one
    /// is set, else downloads its upstream URL; verifies each file's SHA-256; then renames
    /// them into place. Files already installed with the right hash are kept unless `force`.
    ///
    /// - Throws: `.hashMismatch` naming the file, both hashes and what to do (nothing is
    ///   installed then); `.notFound` when a mirror file is missing; `.network` when a
    ///   download fails; `.io` when the model directory cannot be written.
    @discardableResult
    public func fetch(_ entry: ModelEntry, force: Bool = false) throws -> FetchReport {
        let folder = modelDirectory(for: entry)
        let folderExisted = FileManager.default.fileExists(atPath: folder.path)
        try makeDirectory(folder)

        struct Staged { let file: ModelFile; let temporary: URL; let destination: URL }
        var staged: [Staged] = []
        var results: [FetchReport.FileResult] = []
        var committed = false
        // Archives obtained for this fetch, by file name, and pip's download folders to delete.
        var archives: [String: (url: URL, origin: FetchReport.ArchiveOrigin)] = [:]
        var scratch: [URL] = []
        defer {
            for s in scratch { removeTreeQuietly(s) }
            if !committed {
                for s in staged { s.file.isDirectory ? removeTreeQuietly(s.temporary) : removeQuietly(s.temporary) }
                // Leave no trace of a failed first install; rmdir only succeeds when empty.
                if !folderExisted { removeEmptyDirectory(folder) }
            }
        }

        for (index, file) in entry.allFiles.enumerated() {
            let destination = installedURL(of: file, for: entry)
            let temporary = folder.appendingPathComponent(".\(file.name).vivify-\(getpid())-\(index).partial")
            if let archive = file.archive, let member = file.archiveMember {
                if !force, directorySize(destination) == file.size,
                   (try? SHA256.treeDigest(directoryAt: destination).digest.hex) == file.sha256 {
                    results.append(.init(file: file, destination: destination, action: .alreadyInstalled))
                    continue
                }
                if archives[archive.fileName] == nil {
                    let download = folder.appendingPathComponent(".download.vivify-\(getpid())-\(index).partial", isDirectory: true)
                    scratch.append(download)
                    archives[archive.fileName] = try obtain(archive, for: entry, downloadingInto: download)
                }
                let (archiveURL, origin) = archives[archive.fileName]!
                staged.append(Staged(file: file, temporary: temporary, destination: destination))
                try unpack(member, of: archiveURL, into: temporary, model: entry.name)
                let tree = try SHA256.treeDigest(directoryAt: temporary)
                if tree.digest.hex != file.sha256 {
                    throw CatalogError(.hashMismatch, "Directory '\(member)' unpacked from '\(archive.fileName)' for model '\(entry.name)' has tree SHA-256 \(tree.digest.hex) (\(tree.files) files, \(tree.size) bytes), expected \(file.sha256) (\(file.size) bytes); nothing was installed. The archive matched its SHA-256, so the unpacker misbehaved: check that `\(python) -m zipfile` works, then run `vivify models fetch \(entry.name)` again.")
                }
                results.append(.init(file: file, destination: destination, action: .unpacked(member: member, from: origin)))
                continue
            }
            if !force, fileSize(destination) == file.size, (try? SHA256.hash(fileAt: destination).hex) == file.sha256 {
                results.append(.init(file: file, destination: destination, action: .alreadyInstalled))
                continue
            }
            let action: FetchReport.Action
            let actual: String
            if let source = mirrorURL(of: file) {
                guard fileSize(source) != nil else {
                    throw CatalogError(.notFound, "Mirror file '\(source.path)' for model '\(entry.name)' does not exist. Point \(Self.mirrorVariable) at a folder holding \((file.mirrorPath as NSString).deletingLastPathComponent)/ files, or unset it to download from upstream.")
                }
                staged.append(Staged(file: file, temporary: temporary, destination: destination))
                actual = try copyHashing(from: source, to: temporary).hex
                action = .copied(from: source)
            } else if let url = file.upstreamURL {
                staged.append(Staged(file: file, temporary: temporary, destination: destination))
                try download(url, to: temporary, model: entry.name)
                actual = try SHA256.hash(fileAt: temporary).hex
                action = .downloaded(from: url)
            } else {
                results.append(.init(file: file, destination: destination, action: .skipped(
                    reason: "no pinned upstream copy is known; the licence is \(entry.licence.id), see \(entry.source)")))
                continue
            }
            if actual != file.sha256 {
                let size = fileSize(temporary).map { "\($0)" } ?? "unknown"
                let advice: String
                switch action {
                case .copied(let source):
                    advice = "The mirror copy is damaged or a different version: replace '\(source.path)' with the upstream file, or unset \(Self.mirrorVariable) to download it, then run `vivify models fetch \(entry.name)` again."
                default:
                    advice = "The download was damaged or the upstream file changed: run `vivify models fetch \(entry.name)` again, and if it persists use a mirror with \(Self.mirrorVariable)."
                }
                throw CatalogError(.hashMismatch, "File '\(file.name)' of model '\(entry.name)' has SHA-256 \(actual) (\(size) bytes), expected \(file.sha256) (\(file.size) bytes); nothing was installed. \(advice)")
            }
            results.append(.init(file: file, destination: destination, action: action))
        }

        // Licence texts and the graph first, weights last: see the diagram above.
        let order: [ModelFile.Role: Int] = [.licence: 0, .param: 1, .model: 2, .weights: 3]
        for s in staged.sorted(by: { order[$0.file.role]! < order[$1.file.role]! }) {
            if s.file.isDirectory {
                try replaceDirectory(s.destination, with: s.temporary)
            } else {
                try atomicRename(s.temporary, to: s.destination)
            }
        }
        committed = true
        // Report model files first, then licence texts, whatever order they were handled in.
        let reportOrder: [ModelFile.Role: Int] = [.param: 0, .weights: 1, .model: 1, .licence: 2]
        let sorted = results.enumerated().sorted {
            (reportOrder[$0.element.file.role]!, $0.offset) < (reportOrder[$1.element.file.role]!, $1.offset)
        }.map(\.element)
        return FetchReport(entry: entry, files: sorted)
    }

    /// Renames the directory `temporary` onto `destination` (same folder). rename(2) cannot
    /// replace a non-empty directory, so an existing one is renamed aside first and removed
    /// after: readers see the old tree or the new one, never a mixture.
    private func replaceDirectory(_ destination: URL, with temporary: URL) throws {
        var st = stat()
        guard lstat(destination.path, &st) == 0 else {
            return try atomicRename(temporary, to: destination)
        }
        let aside = destination.deletingLastPathComponent()
            .appendingPathComponent(".\(destination.lastPathComponent).vivify-\(getpid()).old")
        removeTreeQuietly(aside)
        try atomicRename(destination, to: aside)
        do {
            try atomicRename(temporary, to: destination)
        } catch {
            _ = try? atomicRename(aside, to: destination)
            throw error
        }
        removeTreeQuietly(aside)
    }

    /// Copies `source` to a new file `destination` in chunks, hashing as it goes.
    private func copyHashing(from source: URL, to destination: URL) throws -> SHA256.Digest {
        let reader = try FileReader(source)
        defer { reader.close() }
        let writer = try FileWriter(destination)
        defer { writer.close() }
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: SHA256.defaultChunkSize)
        while true {
            let n = try reader.read(into: &buffer)
            if n == 0 { break }
            try buffer.withUnsafeBytes { whole in
                let chunk = UnsafeRawBufferPointer(rebasing: whole[0..<n])
                hasher.update(chunk)
                try writer.write(chunk)
            }
        }
        try writer.finish()
        return hasher.finalize()
    }

    /// Downloads `url` to `destination` (in the model directory), blocking until done.
    private func download(_ url: URL, to destination: URL, model: String) throws {
        // The CLI is synchronous; URLSession calls back on its own queue, and the semaphore
        // orders the handler's writes before our read of `outcome`.
        final class Outcome: @unchecked Sendable {
            var error: CatalogError?
            let done = DispatchSemaphore(value: 0)
        }
        let outcome = Outcome()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 60
        configuration.timeoutIntervalForResource = 600
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let advice = "Check the network connection and retry, or set \(Self.mirrorVariable) to a local copy of the models."
        let task = session.downloadTask(with: url) { location, response, error in
            defer { outcome.done.signal() }
            if let error {
                outcome.error = CatalogError(.network, "Cannot download '\(url.absoluteString)' for model '\(model)': \(error.localizedDescription). \(advice)")
                return
            }
            if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
                outcome.error = CatalogError(.network, "Cannot download '\(url.absoluteString)' for model '\(model)': the server answered HTTP \(http.statusCode). \(advice)")
                return
            }
            guard let location else {
                outcome.error = CatalogError(.network, "Cannot download '\(url.absoluteString)' for model '\(model)': no data came back. \(advice)")
                return
            }
            // URLSession deletes `location` when this handler returns, so move it now.
            do {
                removeQuietly(destination)
                try FileManager.default.moveItem(at: location, to: destination)
            } catch {
                outcome.error = CatalogError(.io, "Cannot save the download of '\(url.absoluteString)' to '\(destination.path)': \(error.localizedDescription). Check that the model directory is writable.")
            }
        }
        task.resume()
        outcome.done.wait()
        if let error = outcome.error { throw error }
    }
}
