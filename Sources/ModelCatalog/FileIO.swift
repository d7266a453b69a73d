import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Every raw POSIX call of this module goes through the small wrappers below, which turn
// return codes and errno into `CatalogError`s that name the file.

// Free functions so the methods named read/write/close below do not shadow the C calls.
private func posixRead(_ fd: Int32, _ p: UnsafeMutableRawPointer?, _ n: Int) -> Int { read(fd, p, n) }
private func posixWrite(_ fd: Int32, _ p: UnsafeRawPointer, _ n: Int) -> Int { write(fd, p, n) }
private func posixClose(_ fd: Int32) { _ = close(fd) }

/// The text of the current `errno`.
func errnoText(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}

/// A file opened for reading in chunks; closes its descriptor on `close()` or `deinit`.
final class FileReader {
    private var fd: Int32
    let url: URL

    /// Opens `url` for reading.
    ///
    /// - Throws: `.notFound` when it does not exist, `.io` otherwise.
    init(_ url: URL) throws {
        self.url = url
        fd = open(url.path, O_RDONLY | O_CLOEXEC)
        if fd < 0 {
            let code = errno
            if code == ENOENT {
                throw CatalogError(.notFound, "Cannot read '\(url.path)': the file does not exist. Check the path, or fetch the model again with `vivify models fetch`.")
            }
            throw CatalogError(.io, "Cannot open '\(url.path)': \(errnoText(code)). Check its permissions.")
        }
    }

    /// Reads up to `buffer.count` bytes into `buffer`; returns the count, 0 at end of file.
    func read(into buffer: inout [UInt8]) throws -> Int {
        while true {
            let n = buffer.withUnsafeMutableBytes { posixRead(fd, $0.baseAddress, $0.count) }
            if n >= 0 { return n }
            if errno == EINTR { continue }
            throw CatalogError(.io, "Cannot read '\(url.path)': \(errnoText()). Check the disk and retry.")
        }
    }

    func close() {
        if fd >= 0 { posixClose(fd); fd = -1 }
    }

    deinit { close() }
}

/// A new file opened for writing; closes its descriptor on `close()` or `deinit`.
final class FileWriter {
    private var fd: Int32
    let url: URL

    /// Creates (or truncates) `url` for writing, readable by everyone as installed model files are.
    init(_ url: URL) throws {
        self.url = url
        fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        if fd < 0 {
            throw CatalogError(.io, "Cannot create '\(url.path)': \(errnoText()). Check that the model directory is writable, or set VIVIFY_MODELS to one that is.")
        }
    }

    /// Writes all of `bytes`.
    func write(_ bytes: UnsafeRawBufferPointer) throws {
        var p = bytes.baseAddress
        var left = bytes.count
        while left > 0, let q = p {
            let n = posixWrite(fd, q, left)
            if n < 0 {
                if errno == EINTR { continue }
                throw CatalogError(.io, "Cannot write '\(url.path)': \(errnoText()). Free some disk space or choose another VIVIFY_MODELS directory.")
            }
            p = q + n
            left -= n
        }
    }

    /// Flushes to disk and closes, so a rename after it never exposes a half-written file.
    func finish() throws {
        guard fd >= 0 else { return }
        if fsync(fd) != 0 && errno != EINVAL {
            let text = errnoText()
            close()
            throw CatalogError(.io, "Cannot flush '\(url.path)' to disk: \(text). Check the disk and retry.")
        }
        close()
    }

    func close() {
        if fd >= 0 { posixClose(fd); fd = -1 }
    }

    deinit { close() }
}

/// Atomically replaces `destination` with `source` (both in one directory).
func atomicRename(_ source: URL, to destination: URL) throws {
    if rename(source.path, destination.path) != 0 {
        throw CatalogError(.io, "Cannot move '\(source.path)' to '\(destination.path)': \(errnoText()). Check that the model directory is writable.")
    }
}

/// Removes `url` if it exists, ignoring every error: used to clean up temporary files.
func removeQuietly(_ url: URL) {
    _ = unlink(url.path)
}

/// Removes the directory `url` if it is empty, ignoring every error.
func removeEmptyDirectory(_ url: URL) {
    _ = rmdir(url.path)
}

/// The byte size of the regular file at `url`, or nil when there is none.
func fileSize(_ url: URL) -> Int64? {
    var st = stat()
    guard stat(url.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
    return Int64(st.st_size)
}

/// Creates `url` and its parents when missing.
func makeDirectory(_ url: URL) throws {
    do {
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    } catch {
        throw CatalogError(.io, "Cannot create the model directory '\(url.path)': \(error.localizedDescription). Set VIVIFY_MODELS to a writable directory.")
    }
}
