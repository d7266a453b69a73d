import CZip
import Foundation

/// A new zip archive written with libzip: owns the `zip_t`, and discards it (writing nothing)
/// unless `close()` succeeded. Every raw libzip call of the writer goes through here.
final class WifmZipWriter {
    private var handle: OpaquePointer?
    let path: String

    /// Creates `path`, which must not exist.
    init(path: String) throws {
        self.path = path
        var code: Int32 = 0
        guard let h = zip_open(path, ZIP_CREATE | ZIP_EXCL, &code) else {
            throw BundleError(.writeFailed, key: nil,
                              "cannot create the archive '\(path)' (\(WifmZipReader.describe(code: code))); check that its folder exists and is writable.")
        }
        handle = h
    }

    deinit { if let handle { zip_discard(handle) } }

    /// Adds `data` as the file `name` (libzip takes its own copy).
    func add(name: String, data: Data) throws {
        let h = try open()
        let copy = malloc(max(data.count, 1))!
        data.withUnsafeBytes { if let base = $0.baseAddress { copy.copyMemory(from: base, byteCount: $0.count) } }
        // freep = 1: libzip frees the copy when it is done with the source.
        guard let source = zip_source_buffer(h, copy, zip_uint64_t(data.count), 1) else {
            free(copy)
            throw failure("add '\(name)'")
        }
        try add(name: name, source: source, mode: 0o100644)
    }

    /// Adds the file at `url` as `name`; libzip reads it when the archive is closed.
    func add(name: String, file url: URL) throws {
        let h = try open()
        guard let source = zip_source_file(h, url.path, 0, -1) else { throw failure("read '\(url.path)'") }
        try add(name: name, source: source, mode: 0o100644)
    }

    /// Adds the folder entry `name/`.
    func addDirectory(name: String) throws {
        let h = try open()
        let index = zip_dir_add(h, name, zip_flags_t(ZIP_FL_ENC_UTF_8))
        guard index >= 0 else { throw failure("add the folder '\(name)'") }
        try setMode(index: index, mode: 0o040755)
    }

    /// Writes the archive; after this the writer is spent.
    func close() throws {
        let h = try open()
        guard zip_close(h) == 0 else {
            let error = failure("write '\(path)'")
            zip_discard(h)
            handle = nil
            throw error
        }
        handle = nil
    }

    private func add(name: String, source: OpaquePointer, mode: UInt32) throws {
        let h = try open()
        let index = zip_file_add(h, name, source, zip_flags_t(ZIP_FL_ENC_UTF_8))
        guard index >= 0 else {
            zip_source_free(source)
            throw failure("add '\(name)'")
        }
        try setMode(index: index, mode: mode)
    }

    /// Records Unix permissions and file type, so extractors make plain files and folders.
    private func setMode(index: Int64, mode: UInt32) throws {
        let h = try open()
        guard zip_file_set_external_attributes(h, zip_uint64_t(index), 0, zip_uint8_t(ZIP_OPSYS_UNIX), mode << 16) == 0 else {
            throw failure("set the attributes of entry #\(index)")
        }
    }

    private func open() throws -> OpaquePointer {
        guard let handle else {
            throw BundleError(.writeFailed, key: nil, "the archive '\(path)' is already closed; this is a bug in Vivify, please report it.")
        }
        return handle
    }

    private func failure(_ what: String) -> BundleError {
        let reason = handle.map { String(cString: zip_strerror($0)) } ?? "closed"
        return BundleError(.writeFailed, key: nil,
                           "cannot \(what) in the archive '\(path)' (\(reason)); check the files and the free space.")
    }
}
