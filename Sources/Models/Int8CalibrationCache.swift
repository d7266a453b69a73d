import Foundation
package import ModelCatalog
package import EngineDNNL

/// Where a model's int8 calibration (`--precision int8`) is kept: one small JSON file per
/// model under the model store (`<store>/int8/<SHA-256 of the model's files>.json`), so a
/// model is calibrated once, on the first pictures it upscales in int8, or on chosen ones with
/// `vivify models calibrate`.
package struct Int8CalibrationCache {
    package let url: URL

    /// The cache file for the model read from `files` (named `name` when it has no files:
    /// the built-in one).
    package init(store: ModelStore, name: String, files: [String]) throws {
        try self.init(store: store, name: name, digest: ModelDigest.of(files: files))
    }

    /// The cache file for the model whose files have `digest` (`ModelDigest`).
    package init(store: ModelStore, name: String, digest: SHA256.Digest) {
        var hasher = SHA256()
        hasher.update(Array("vivify-int8-v3 \(name)".utf8))
        hasher.update(digest.bytes)
        url = store.directory.appendingPathComponent("int8").appendingPathComponent("\(hasher.finalize().hex).json")
    }

    /// The stored calibration, nil when there is none or it cannot be read.
    package func load() -> Int8Calibration? {
        guard let data = try? Data(contentsOf: url),
              let calibration = try? JSONDecoder().decode(Int8Calibration.self, from: data),
              !calibration.inputRanges.isEmpty else { return nil }
        return calibration
    }

    /// Stores `calibration` (written to a temporary file and renamed, so a reader never sees
    /// half of it).
    package func save(_ calibration: Int8Calibration) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        let temporary = url.appendingPathExtension("partial-\(getpid())")
        try encoder.encode(calibration).write(to: temporary)
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }
}
