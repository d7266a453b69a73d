import Foundation
import ModelCatalog

/// Models that ship inside the vivify binary (our own trained weights): written once into the
/// model directory (`<models>/builtin/NAME.wifm`, checked by SHA-256) and loaded from there.
public enum BuiltinModels {
    /// The default 2× upscaler (`--upscale 2`).
    public static let fast2x = "vivify-fast-2x"

    /// The names of the built-in models.
    public static var names: [String] { data.keys.sorted() }

    /// The path of the built-in bundle `name`, written on first use; nil if there is none.
    public static func path(for name: String, store: ModelStore = ModelStore()) throws -> String? {
        guard let entry = data[name] else { return nil }
        let dir = store.directory.appendingPathComponent("builtin")
        let file = dir.appendingPathComponent("\(name).wifm")
        if let existing = try? Data(contentsOf: file), SHA256.hash(existing).hex == entry.sha256 { return file.path }
        guard let bytes = Data(base64Encoded: entry.base64.replacingOccurrences(of: "\n", with: "")),
              SHA256.hash(bytes).hex == entry.sha256 else {
            throw MediaError(.internalFailure, "The built-in model \(name) is damaged in this vivify binary. Rebuild vivify.")
        }
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            let temp = dir.appendingPathComponent(".\(name).\(getpid()).partial")
            try bytes.write(to: temp)
            if rename(temp.path, file.path) != 0 { throw MediaError(.outputUnwritable, "rename failed") }
        } catch {
            throw MediaError(.outputUnwritable, "Cannot install the built-in model \(name) into '\(dir.path)': \(error). Set VIVIFY_MODELS to a writable folder.")
        }
        return file.path
    }

    /// What an `--upscale` argument names: "2" is the built-in 2× upscaler.
    static func resolve(upscale argument: String) throws -> String {
        if argument == "2" || argument == fast2x, let path = try path(for: fast2x) { return path }
        return argument
    }
}
