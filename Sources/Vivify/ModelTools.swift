internal import Engine
import Foundation
import SafeFiles
internal import MediaIO
internal import ModelFormats
import Models

/// `vivify models pack|info|verify` for model files and bundles (the library half).
package enum ModelTools {
    /// The weights file read with the model at `path` where its format keeps them in a file of
    /// their own (an ncnn `.param`'s `.bin` beside it); nil for every other format.
    package static func weightsFile(beside path: String) -> String? {
        ModelFileFormat.weightsFile(beside: path)
    }

    /// Builds a `.wifm` from a manifest and files, validating the manifest against them first.
    /// Returns the warnings `open` would give.
    package static func pack(manifest: String, files: [String], output: String, existing: ExistingOutput = .refuse) throws -> [String] {
        guard let json = FileManager.default.contents(atPath: manifest) else {
            throw MediaError(.inputUnreadable, "Cannot read the manifest '\(manifest)'. Check the path.")
        }
        // The same rule as `run` and `image`: an existing bundle is replaced only with -y, and
        // never when it is one of the files being packed.
        let target: URL
        switch try OutputGuard.check(output: output, inputs: [manifest] + files, existing: existing) {
        case .write(let url): target = url
        case .skip: return ["'\(output)' exists; skipped (-n)."]
        }
        // An ncnn .param brings the .bin beside it unless given.
        var files = files
        for f in files {
            for companion in [ModelFileFormat.weightsFile(beside: f)].compactMap({ $0 }) where FileManager.default.fileExists(atPath: companion) {
                if !files.contains(where: { URL(fileURLWithPath: $0).standardizedFileURL == URL(fileURLWithPath: companion).standardizedFileURL }) {
                    files.append(companion)
                }
            }
        }
        do {
            return try ModelBundle.pack(manifestJSON: json, files: files.map { URL(fileURLWithPath: $0) }, to: target)
        } catch let e as BundleError where e.kind != .writeFailed {
            // What is wrong with a bundle being packed is wrong with the pack command's inputs
            // (a usage error), not with a file on disk (a data error, as when opening one).
            throw BundleError(.invalidPackInput, key: e.key, e.message)
        }
    }

    /// A text description of a bundle or model file: manifest, I/O and info.md for bundles;
    /// what the importer found for Core ML and ncnn files.
    package static func describe(path: String) throws -> String {
        guard let format = ModelFileFormat.forPath(path) else {
            throw MediaError(.unsupported, "Cannot describe '\(path)': it is not a model file Vivify reads. Use \(ModelFileFormat.extensionList).")
        }
        guard FileManager.default.fileExists(atPath: path) else {
            throw MediaError(.inputUnreadable, "Cannot describe '\(path)': no such file. Check the path.")
        }
        return try format.describer(path)
    }

    /// Whether `argument` looks like a model file: its extension is one of the format table's,
    /// or a companion file's (.bin weights, .json description) or a format still to come (.onnx).
    package static func looksLikeModelFile(_ argument: String) -> Bool {
        let ext = (argument as NSString).pathExtension.lowercased()
        return ModelFileFormat.allExtensions.contains(ext) || ["json", "bin", "onnx"].contains(ext)
    }

    /// What a dry run of an upscaler found.
    package struct Verification: Sendable {
        package var name: String
        package var scale: Int
        package var padding: Int
        package var tileSize: Int
        package var tileInput: [Int]
        package var tileOutput: [Int]
        package var flopsPerTile: Double
        package var msPerTile: Double
        package var tilesPerFrame: Int
        package var frame: FrameSize

        /// Estimated milliseconds for one frame of `frame`.
        package var msPerFrame: Double { msPerTile * Double(tilesPerFrame) }

        package var text: String {
            """
            model: \(name)
            scale: \(scale)x, border \(padding) px per side, tile \(tileSize) px
            tile: input \(tileInput.map(String.init).joined(separator: "x")) -> output \(tileOutput.map(String.init).joined(separator: "x"))
            FLOPs per tile: \(String(format: "%.2f", flopsPerTile / 1e9)) GFLOP
            measured: \(String(format: "%.1f", msPerTile)) ms per tile (median of 3)
            estimate for \(frame): \(tilesPerFrame) tiles, \(String(format: "%.0f", msPerFrame)) ms per frame

            """
        }
    }

    /// What a dry run of a colorizer found: its model pass, and a whole frame through the stage.
    package struct ColorVerification: Sendable {
        package var name: String
        package var input: String
        package var modelInput: [Int]
        package var modelOutput: [Int]
        package var flopsPerPass: Double
        package var msPerPass: Double
        package var msPerFrame: Double
        package var frame: FrameSize

        package var text: String {
            """
            model: \(name)
            task: colorize (reads \(input), predicts colour at the model's size; the frame keeps its own L)
            model pass: input \(modelInput.map(String.init).joined(separator: "x")) -> output \(modelOutput.map(String.init).joined(separator: "x"))
            FLOPs per pass: \(String(format: "%.2f", flopsPerPass / 1e9)) GFLOP
            measured: \(String(format: "%.1f", msPerPass)) ms per model pass (median of 3)
            measured for \(frame): \(String(format: "%.0f", msPerFrame)) ms per frame, whole stage (median of 3)

            """
        }
    }

    /// Either kind of dry run.
    package enum ModelVerification: Sendable {
        case upscale(Verification)
        case colorize(ColorVerification)

        package var text: String {
            switch self {
            case .upscale(let v): v.text
            case .colorize(let v): v.text
            }
        }
    }

    /// Dry-runs `model` as what it is: a colorizer (the built-in `vivify-color`, a colorize
    /// bundle, a model file with a colorizer description beside it) or an upscaler (any other).
    package static func verifyAny(model: String, frame: FrameSize, tile: Int?, backend: BackendChoice,
                                  limits: RunLimits = RunLimits()) throws -> ModelVerification {
        if try isColorizer(model) {
            return .colorize(try verifyColorizer(model: model, frame: frame, backend: backend, limits: limits))
        }
        return .upscale(try verify(model: model, frame: frame, tile: tile, backend: backend, limits: limits))
    }

    /// Whether `model` names a colorizer: a built-in of that task, a bundle whose manifest says
    /// `colorize`, or a bare model file with its colorizer description (`.json`) beside it.
    static func isColorizer(_ model: String) throws -> Bool {
        if BuiltinModels.names.contains(model) { return BuiltinModels.task(of: model) == .colorize }
        guard let format = ModelFileFormat.forPath(model), FileManager.default.fileExists(atPath: model) else { return false }
        if format.importer == nil {
            let bundle = try ModelBundle.open(path: model)
            return bundle.manifest.task == .colorize
        }
        return ColorizerSpec.hasDescription(beside: model)
    }

    /// Loads the colorizer `model`, times one model pass on its input and a whole frame of
    /// `frame` through the stage (L, model, guided upsampling, Lab → RGB), under `limits`.
    package static func verifyColorizer(model: String, frame: FrameSize, backend: BackendChoice,
                                        limits: RunLimits = RunLimits()) throws -> ColorVerification {
        let colorizer = try Colorizer(model: model, backend: backend, settings: limits.compute, stabilize: false)
        let size = colorizer.modelSize(width: frame.width, height: frame.height)
        let shape = Shape(c: colorizer.spec.input == .l ? 1 : 4, h: size.h, w: size.w)
        let prepared = try backend.make(precision: limits.precisionChoice, threads: limits.threadCount).prepare(colorizer.graph, input: shape)
        let input = Tensor(shape: shape, data: [Float](repeating: 0.5, count: shape.count))
        func median(_ body: () throws -> Void) rethrows -> Double {
            try body()
            var times: [Double] = []
            for _ in 0..<3 {
                let start = DispatchTime.now().uptimeNanoseconds
                try body()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            return times.sorted()[1]
        }
        let msPerPass = try median { _ = try prepared.run(input) }
        // A grey ramp: lightness that varies, so the guided upsampling does real work.
        var picture = VideoFrame(format: .rgb24, width: frame.width, height: frame.height)
        for y in 0..<frame.height {
            for x in 0..<frame.width {
                let v = UInt8((x + y) * 255 / max(1, frame.width + frame.height - 2))
                let i = (y * frame.width + x) * 3
                picture.planes[0][i] = v; picture.planes[0][i + 1] = v; picture.planes[0][i + 2] = v
            }
        }
        var output = VideoFrame(format: .rgb24, width: frame.width, height: frame.height)
        let msPerFrame = try median { try colorizer.colorize(picture, into: &output) }
        let o = prepared.outputShape
        return ColorVerification(name: colorizer.name, input: colorizer.spec.input == .l ? "L" : "L, ab hints and a mask",
                                 modelInput: [shape.c, shape.h, shape.w], modelOutput: [o.c, o.h, o.w],
                                 flopsPerPass: 2 * Double(try colorizer.graph.multiplyAdds(input: shape)),
                                 msPerPass: msPerPass, msPerFrame: msPerFrame, frame: frame)
    }

    /// Loads `model` (any form), checks its shapes on one tile and times it, under `limits`.
    package static func verify(model: String, frame: FrameSize, tile: Int?, backend: BackendChoice,
                              limits: RunLimits = RunLimits()) throws -> Verification {
        let upscaler = try Upscaler(model: model, tile: tile, backend: backend, settings: limits.compute)
        let spec = upscaler.spec
        let t = min(upscaler.tileSize, max(frame.width, frame.height))
        let (th, tw) = upscaler.tileInterior(height: frame.height, width: frame.width)
        let shape = Shape(c: 3, h: th + 2 * spec.padding, w: tw + 2 * spec.padding)
        // On the upscaler's own backend: the precision `run` computes it in (int8 or bf16 for a
        // catalog upscaler under auto on oneDNN, fp16 storage on a GPU).
        let prepared = try upscaler.engine.prepare(upscaler.graph, input: shape)
        let input = Tensor(shape: shape, data: [Float](repeating: 0.5, count: shape.count))
        _ = try prepared.run(input)
        var times: [Double] = []
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try prepared.run(input)
            times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
        }
        let tiles = TiledRunner.origins(length: frame.height, tile: th).count * TiledRunner.origins(length: frame.width, tile: tw).count
        let o = prepared.outputShape
        return Verification(name: upscaler.name, scale: upscaler.scale, padding: spec.padding, tileSize: t,
                            tileInput: [shape.c, shape.h, shape.w], tileOutput: [o.c, o.h, o.w],
                            flopsPerTile: 2 * Double(try upscaler.graph.multiplyAdds(input: shape)),
                            msPerTile: times.sorted()[1], tilesPerFrame: tiles, frame: frame)
    }
}
