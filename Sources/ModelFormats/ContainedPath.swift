import Foundation
import Glibc

/// Paths that a model file names (an `.mlpackage`'s Manifest.json item, an ML Program's weight
/// file, ONNX external data) are data, never trusted: they must stay inside the folder they
/// belong to once symbolic links are resolved, and name a regular file (a FIFO would hang the
/// read, a device or folder is not weights).
enum ContainedPath {
    /// `relative` joined to `root`, checked. `what` names the reference in the error, which
    /// names `source` and says to keep the file inside the folder.
    static func resolve(_ relative: String, inside root: String, what: String, source: String) throws -> String {
        let parts = relative.split(separator: "/", omittingEmptySubsequences: true)
        guard !relative.isEmpty, !relative.hasPrefix("/"), !parts.contains(".."), !relative.contains("\0") else {
            throw ModelFormatError(.malformed, "'\(source)': \(what) is '\(relative)', outside the model's folder; refused. Keep the file inside '\(root)'.")
        }
        return try check((root as NSString).appendingPathComponent(relative), named: relative, inside: root, what: what, source: source)
    }

    /// `path` checked to lie inside `root` once links are resolved, and to be a regular file;
    /// `named` is how the model file wrote it.
    static func check(_ joined: String, named relative: String, inside root: String, what: String, source: String) throws -> String {
        guard let realRoot = realPath(root) else {
            throw ModelFormatError(.unreadable, "'\(source)': cannot open the folder '\(root)'. Check the path.")
        }
        guard let real = realPath(joined) else {
            throw ModelFormatError(.unreadable, "'\(source)': cannot read '\(joined)', \(what). Keep the file inside the model's folder.")
        }
        guard real.hasPrefix(realRoot.hasSuffix("/") ? realRoot : realRoot + "/") else {
            throw ModelFormatError(.malformed, "'\(source)': \(what) '\(relative)' leads to '\(real)' through a symbolic link, outside '\(root)'; refused. Keep the file itself inside the model's folder.")
        }
        var st = stat()
        guard stat(real, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw ModelFormatError(.malformed, "'\(source)': \(what) '\(relative)' is not a regular file (a FIFO, device or folder); refused. Keep the data file itself there.")
        }
        return real
    }

    /// The canonical absolute path (links resolved), or nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let p = realpath(path, nil) else { return nil }
        defer { free(p) }
        return String(cString: p)
    }
}
