import Foundation
internal import MediaIO
package import ModelCatalog
package import ModelFormats
import SafeFiles
internal import BuiltinModelData

/// Models that ship inside the vivify binary (our own trained weights): written once into the
/// model directory (`<models>/builtin/NAME.wifm`, checked by SHA-256) and loaded from there.
package enum BuiltinModels {
    /// The default 2× upscaler (`--upscale` alone, or `--upscale 2`).
    package static let fast2x = "vivify-fast-2x"
    /// The default colorizer (`--colorize` alone).
    package static let color = "vivify-color"

    /// Bundle name → (SHA-256, base64 of the .wifm), from the generated BuiltinModelData target.
    static var data: [String: (sha256: String, base64: String)] { BuiltinModelData.bundles }

    /// The names of the built-in models.
    package static var names: [String] { data.keys.sorted() }

    /// The path of the built-in bundle `name`, written on first use; nil if there is none.
    package static func path(for name: String, store: ModelStore = ModelStore()) throws -> String? {
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
            try PartialFile(target: file).write { try bytes.write(to: $0) }
        } catch {
            throw MediaError(.outputUnwritable, "Cannot install the built-in model \(name) into '\(dir.path)': \(error). Set VIVIFY_MODELS to a writable folder.")
        }
        return file.path
    }

    /// The task of each built-in model.
    static let tasks: [String: WifmManifest.Task] = [fast2x: .upscale, color: .colorize]

    /// The task of the built-in model `name`, or nil when there is none.
    package static func task(of name: String) -> WifmManifest.Task? { tasks[name] }

    /// The built-in model an argument names for `task`: "2" or vivify-fast-2x for upscaling,
    /// vivify-color for colorizing; nil otherwise.
    static func name(for argument: String, task: WifmManifest.Task) -> String? {
        switch task {
        case .upscale: return argument == "2" || argument == fast2x ? fast2x : nil
        case .colorize: return argument == color ? color : nil
        }
    }

    /// A built-in model as `vivify models list` and `info` show it.
    package struct Description: Sendable {
        package var name: String
        package var task: String
        package var scale: Int
        package var path: String
        package var bytes: Int
        package var sha256: String
        package var licence: String
        /// The bundle's info.md.
        package var info: String
    }

    /// Describes the built-in model `name` (installing it into the model directory if needed).
    package static func describe(_ name: String, store: ModelStore = ModelStore()) throws -> Description? {
        guard let entry = data[name], let path = try path(for: name, store: store) else { return nil }
        let bundle = try ModelBundle.open(path: path)
        let size = ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
        // Our own weights, trained on academic benchmark photographs (see each info.md).
        return Description(name: name, task: bundle.manifest.task.rawValue, scale: bundle.manifest.scale, path: path, bytes: size,
                           sha256: entry.sha256, licence: "research use", info: bundle.infoMarkdown ?? "")
    }
}
