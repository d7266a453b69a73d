import CZip
import Foundation

/// A `.wifm` archive opened for reading, its entries already checked from the central
/// directory — before a single byte is decompressed:
///
///     zip_open ─▶ entry count ≤ maxEntries
///              ─▶ each entry: no `..`, not absolute, no duplicate, not a symlink or device,
///                 not encrypted
///              ─▶ Σ declared sizes ≤ maxTotalUncompressedBytes
///              ─▶ each entry over ratioCheckedAbove: size / compressed ≤ maxCompressionRatio
///
/// Reading then counts bytes and stops an entry at its declared size (a header that lies is
/// caught as it expands, not after), so a zip bomb is an error, never an allocation; and as
/// the declared sizes add up to at most the total limit, so do the bytes written.
final class WifmArchive {
    /// One checked entry.
    struct Entry: Sendable {
        /// libzip's index.
        let index: UInt64
        /// The name as stored.
        let rawName: String
        /// The safe relative path: `/`-separated, no `.` or empty parts, no trailing slash.
        let path: String
        /// A folder entry (`name/`).
        let isDirectory: Bool
        /// Uncompressed size from the central directory.
        let size: UInt64
        /// Compressed size from the central directory.
        let compressedSize: UInt64
    }

    /// The path of the archive.
    let path: String
    /// Every entry, checked, in archive order.
    let entries: [Entry]
    /// The files and folders the entries make.
    let listing: WifmFileListing
    private let zip: WifmZipReader
    private let limits: ModelBundle.Limits
    private var byPath: [String: Entry] = [:]

    /// Opens `path` and checks every entry against `limits` and the path rules.
    init(path: String, limits: ModelBundle.Limits) throws {
        self.path = path
        self.limits = limits
        zip = try WifmZipReader(path: path)
        let count = zip.entryCount
        guard count <= UInt64(limits.maxEntries) else {
            throw BundleError(.tooManyEntries, key: nil,
                              "the archive has \(count) entries, more than the \(limits.maxEntries) a model bundle may have; remove the files the model does not need.")
        }
        var entries: [Entry] = []
        var seen: [String: String] = [:]
        var total: UInt64 = 0
        for index in 0..<count {
            let stat = try zip.stat(index)
            let entry = try Self.check(stat, index: index, zip: zip)
            guard !entry.path.isEmpty else { continue } // "./" and the like: the root itself
            if let first = seen[entry.path] {
                throw BundleError(.unsafePath, key: entry.rawName,
                                  "the archive entry '\(entry.rawName)' has the same path as '\(first)', so one would replace the other; re-create the archive with each file once.")
            }
            seen[entry.path] = entry.rawName
            let (sum, overflow) = total.addingReportingOverflow(entry.size)
            total = overflow ? .max : sum
            entries.append(entry)
        }
        guard total <= limits.maxTotalUncompressedBytes else {
            throw BundleError(.archiveTooLarge, key: nil,
                              "the archive's entries add up to \(total) bytes uncompressed, more than the \(limits.maxTotalUncompressedBytes) bytes a model bundle may hold; it is broken or a zip bomb: use a smaller model or re-create the archive.")
        }
        for e in entries where !e.isDirectory && e.size > limits.ratioCheckedAbove {
            let ratio = e.size / max(e.compressedSize, 1)
            if ratio > limits.maxCompressionRatio {
                throw BundleError(.suspiciousCompression, key: e.rawName,
                                  "the archive entry '\(e.rawName)' expands \(ratio):1 (\(e.compressedSize) to \(e.size) bytes), more than the \(limits.maxCompressionRatio):1 a model file can, so it is refused as a zip bomb; re-create the archive from the real model files.")
            }
        }
        self.entries = entries
        listing = WifmFileListing(paths: entries.map { $0.isDirectory ? $0.path + "/" : $0.path })
        for e in entries { byPath[e.path] = e }
    }

    /// The file entry at `path`, if any.
    func file(_ path: String) -> Entry? {
        guard let e = byPath[path], !e.isDirectory else { return nil }
        return e
    }

    /// The entries at `path` and under it (a folder such as `main.mlpackage`).
    func tree(_ path: String) -> [Entry] {
        entries.filter { $0.path == path || $0.path.hasPrefix(path + "/") }
    }

    /// Reads a whole entry into memory; the caller has checked `entry.size` against its own limit.
    func data(_ entry: Entry) throws -> Data {
        var data = Data(capacity: Int(entry.size))
        try zip.read(entry) { data.append(contentsOf: $0) }
        return data
    }

    /// Writes `entries` under `directory`, keeping their relative paths; folders are 0700 and
    /// files 0600, created exclusively (nothing existing is followed or replaced).
    func extract(_ entries: [Entry], to directory: URL) throws {
        for entry in entries.sorted(by: { $0.path < $1.path }) {
            let target = directory.appendingPathComponent(entry.path, isDirectory: entry.isDirectory)
            let parent = entry.isDirectory ? target : target.deletingLastPathComponent()
            do {
                try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw BundleError(.writeFailed, key: entry.rawName,
                                  "cannot create the folder for '\(entry.rawName)' in '\(directory.path)': \(error.localizedDescription); check the free space of the temporary directory.")
            }
            guard !entry.isDirectory else { continue }
            let fd = open(target.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw BundleError(.writeFailed, key: entry.rawName,
                                  "cannot create '\(target.path)' for the archive entry '\(entry.rawName)': \(String(cString: strerror(errno))); check the temporary directory.")
            }
            defer { close(fd) }
            try zip.read(entry) { chunk in
                var offset = 0
                while offset < chunk.count {
                    let n = write(fd, chunk.baseAddress! + offset, chunk.count - offset)
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else {
                        throw BundleError(.writeFailed, key: entry.rawName,
                                          "cannot write '\(target.path)': \(String(cString: strerror(errno))); free some space in the temporary directory.")
                    }
                    offset += n
                }
            }
        }
    }

    /// The checks that need only the central directory.
    private static func check(_ stat: zip_stat_t, index: UInt64, zip: WifmZipReader) throws -> Entry {
        guard stat.valid & UInt64(ZIP_STAT_NAME) != 0, let cName = stat.name else {
            throw BundleError(.unreadableArchive, key: nil,
                              "the archive entry #\(index) has no readable name; re-create the archive.")
        }
        let raw = String(cString: cName)
        let path = try safePath(raw)
        let (opsys, attributes) = zip.externalAttributes(index)
        if opsys == UInt8(ZIP_OPSYS_UNIX) {
            let type = (attributes >> 16) & UInt32(S_IFMT)
            if type == UInt32(S_IFLNK) {
                throw BundleError(.symlinkEntry, key: raw,
                                  "the archive entry '\(raw)' is a symbolic link, which a model bundle may not hold (it could point outside); re-create the archive with the real files (zip without -y).")
            }
            if type != 0, type != UInt32(S_IFREG), type != UInt32(S_IFDIR) {
                throw BundleError(.unsupportedEntry, key: raw,
                                  "the archive entry '\(raw)' is a device, pipe or socket, not a file; re-create the archive with regular files only.")
            }
        }
        if stat.valid & UInt64(ZIP_STAT_ENCRYPTION_METHOD) != 0, stat.encryption_method != UInt16(ZIP_EM_NONE) {
            throw BundleError(.unsupportedEntry, key: raw,
                              "the archive entry '\(raw)' is encrypted; re-create the archive without a password.")
        }
        guard stat.valid & UInt64(ZIP_STAT_SIZE) != 0, stat.valid & UInt64(ZIP_STAT_COMP_SIZE) != 0 else {
            throw BundleError(.unreadableArchive, key: raw,
                              "the archive entry '\(raw)' has no recorded size; re-create the archive.")
        }
        return Entry(index: index, rawName: raw, path: path, isDirectory: raw.hasSuffix("/") || raw.hasSuffix("\\"),
                     size: stat.size, compressedSize: stat.comp_size)
    }

    /// `raw` as a safe relative path, or the refusal: `..` anywhere, or an absolute path
    /// (`/x`, `\x`, `C:x`). Backslashes count as separators, as Windows tools write them.
    static func safePath(_ raw: String) throws -> String {
        let unified = raw.replacingOccurrences(of: "\\", with: "/")
        let parts = unified.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        let isDrive = parts.first.map { $0.count == 2 && $0.last == ":" && $0.first!.isLetter } ?? false
        if unified.hasPrefix("/") || isDrive {
            throw BundleError(.unsafePath, key: raw,
                              "the archive entry '\(raw)' has an absolute path, which could write outside the bundle; re-create the archive with paths relative to its root.")
        }
        if parts.contains("..") {
            throw BundleError(.unsafePath, key: raw,
                              "the archive entry '\(raw)' climbs out of the archive with '..', which could write outside the bundle; re-create the archive with plain relative paths.")
        }
        return parts.filter { !$0.isEmpty && $0 != "." }.joined(separator: "/")
    }
}

/// A libzip archive opened read-only: owns the `zip_t` and discards it in `deinit`. Every raw
/// libzip call of the reader goes through here and comes back as a `BundleError`.
final class WifmZipReader {
    private let handle: OpaquePointer
    let path: String

    init(path: String) throws {
        self.path = path
        var code: Int32 = 0
        // ZIP_CHECKCONS compares every local header with the central directory, which refuses
        // archives whose entries overlap (the overlapping-file zip bomb) or disagree.
        guard let h = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &code) else {
            throw BundleError(.unreadableArchive, key: nil,
                              "it is not a readable zip archive (\(Self.describe(code: code))); check that the file is a complete .wifm (a zip archive).")
        }
        handle = h
    }

    deinit { zip_discard(handle) }

    var entryCount: UInt64 { UInt64(max(zip_get_num_entries(handle, 0), 0)) }

    func stat(_ index: UInt64) throws -> zip_stat_t {
        var st = zip_stat_t()
        zip_stat_init(&st)
        guard zip_stat_index(handle, index, 0, &st) == 0 else {
            throw BundleError(.unreadableArchive, key: nil,
                              "the archive entry #\(index) cannot be read (\(String(cString: zip_strerror(handle)))); re-create the archive.")
        }
        return st
    }

    /// The host system and attributes recorded for an entry; `(0, 0)` when libzip has none.
    func externalAttributes(_ index: UInt64) -> (UInt8, UInt32) {
        var opsys: UInt8 = 0
        var attributes: UInt32 = 0
        guard zip_file_get_external_attributes(handle, index, 0, &opsys, &attributes) == 0 else { return (0, 0) }
        return (opsys, attributes)
    }

    /// Streams an entry to `sink` in chunks, refusing it as soon as it passes its declared size.
    func read(_ entry: WifmArchive.Entry, into sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        guard let file = zip_fopen_index(handle, entry.index, 0) else {
            throw BundleError(.unsupportedEntry, key: entry.rawName,
                              "the archive entry '\(entry.rawName)' cannot be opened (\(String(cString: zip_strerror(handle)))); re-create the archive with ordinary deflate compression.")
        }
        defer { zip_fclose(file) }
        let chunk = 1 << 16
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 16)
        defer { buffer.deallocate() }
        var total: UInt64 = 0
        while true {
            // Ask for one byte past the declared size at most, so a lying header shows itself
            // after at most one extra chunk of work.
            let want = min(UInt64(chunk), entry.size - min(total, entry.size) + 1)
            let n = zip_fread(file, buffer, want)
            if n < 0 {
                throw BundleError(.unreadableArchive, key: entry.rawName,
                                  "the archive entry '\(entry.rawName)' is damaged (\(String(cString: zip_file_strerror(file)))); re-create the archive.")
            }
            if n == 0 { break }
            total += UInt64(n)
            if total > entry.size {
                throw BundleError(.sizeMismatch, key: entry.rawName,
                                  "the archive entry '\(entry.rawName)' expands past the \(entry.size) bytes its header declares, so it is refused as damaged or a zip bomb; re-create the archive.")
            }
            try sink(UnsafeRawBufferPointer(start: buffer, count: Int(n)))
        }
        guard total == entry.size else {
            throw BundleError(.sizeMismatch, key: entry.rawName,
                              "the archive entry '\(entry.rawName)' holds \(total) bytes, but its header declares \(entry.size); the archive is damaged: re-create it.")
        }
    }

    static func describe(code: Int32) -> String {
        var error = zip_error_t()
        zip_error_init_with_code(&error, code)
        defer { zip_error_fini(&error) }
        return String(cString: zip_error_strerror(&error))
    }
}
