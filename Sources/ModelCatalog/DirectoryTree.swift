import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// A model that is a directory (a Core ML `.mlpackage`) is checked as a tree: one SHA-256 over
// the sorted list of its files' SHA-256s, the same digest these shell tools give:
//
//   cd X.mlpackage && find . -type f -print0 | LC_ALL=C sort -z | sed -z 's|^\./||' \
//     | xargs -0 sha256sum | sha256sum

/// The regular files below the directory `url` as (path relative to `url`, size), sorted by
/// path bytewise; nil when `url` is not a directory.
///
/// - Throws: `.hashMismatch` when the tree holds something that is neither a directory nor a
///   regular file (a link, a device): installed models never do.
func regularFiles(under url: URL) throws -> [(path: String, size: Int64)]? {
    var st = stat()
    guard stat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFDIR else { return nil }
    guard let walker = FileManager.default.enumerator(atPath: url.path) else { return nil }
    var out: [(path: String, size: Int64)] = []
    while let relative = walker.nextObject() as? String {
        var entry = stat()
        guard lstat(url.appendingPathComponent(relative).path, &entry) == 0 else {
            throw CatalogError(.io, "Cannot read '\(url.appendingPathComponent(relative).path)': \(errnoText()). Check its permissions.")
        }
        switch entry.st_mode & S_IFMT {
        case S_IFDIR: continue
        case S_IFREG: out.append((relative, Int64(entry.st_size)))
        default:
            throw CatalogError(.hashMismatch, "'\(url.appendingPathComponent(relative).path)' is not a regular file; a model directory holds only files and folders. Delete '\(url.path)' and fetch the model again.")
        }
    }
    out.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
    return out
}

/// The total size of the regular files below `url`, or nil when it is not a readable directory.
func directorySize(_ url: URL) -> Int64? {
    guard let files = try? regularFiles(under: url) else { return nil }
    return files.reduce(0) { $0 + $1.size }
}

extension SHA256 {
    /// The tree digest of the directory at `url`: the SHA-256 of one line
    /// `"<file SHA-256 hex>  <relative path>\n"` per regular file below it, sorted by path
    /// bytewise (what `sha256sum` prints for the sorted file list; see the top of this file).
    ///
    /// - Returns: the digest, the sum of the files' sizes and the number of files.
    /// - Throws: `.notFound` when `url` is not a directory, `.hashMismatch` when it holds a
    ///   link or other special file, `.io` when a file cannot be read.
    public static func treeDigest(directoryAt url: URL) throws -> (digest: Digest, size: Int64, files: Int) {
        guard let files = try regularFiles(under: url) else {
            throw CatalogError(.notFound, "'\(url.path)' is not a directory. Fetch the model again with `vivify models fetch`.")
        }
        var listing = SHA256()
        var total: Int64 = 0
        for f in files {
            let digest = try hash(fileAt: url.appendingPathComponent(f.path))
            listing.update(Data("\(digest.hex)  \(f.path)\n".utf8))
            total += f.size
        }
        return (listing.finalize(), total, files.count)
    }
}

/// Removes the file or directory tree at `url` if it exists, ignoring every error: used to
/// clean up temporary unpacked directories.
func removeTreeQuietly(_ url: URL) {
    try? FileManager.default.removeItem(at: url)
}
