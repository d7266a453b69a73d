import Engine
import EngineDNNL
import Foundation
import MediaIO
import ModelFormats
import Models
import Vivify

// The files the Vivify library reads beside models and jobs: a colorizer's `.json`
// description, int8 calibrations, segment manifests and `.npy` tensors. Each goes through the
// library's own entry point and then through what a run does next with it, on tiny models
// written once per process into the scratch folder.

extension FuzzTarget {
    /// ncnn weights: for each layer, a float32 flag (0), `weights` values, then `bias` values.
    static func ncnnWeights(_ layers: [(weights: Int, bias: Int)]) -> Data {
        var data = Data()
        var k = 0
        for layer in layers {
            data.append(contentsOf: [0, 0, 0, 0])
            for _ in 0..<layer.weights + layer.bias {
                // Varied values so ranges and scales differ from channel to channel.
                let v = Float(sin(Double(k) * 0.7)) * 0.5
                k += 1
                withUnsafeBytes(of: v.bitPattern.littleEndian) { data.append(contentsOf: $0) }
            }
        }
        return data
    }

    /// Writes an ncnn model (`NAME.param`, `NAME.bin`) into the scratch folder; returns the
    /// `.param` path.
    static func ncnnModel(_ name: String, param: String, weights: Data) -> String {
        _ = write(weights, "models/\(name).bin")
        return write(Data(param.utf8), "models/\(name).param")
    }

    // MARK: colorizer description

    /// Tiny colorizers: L (1 channel) or L+hints+mask (4) in, ab (2) or RGB (3) out.
    static let colorizers: [String: String] = {
        var paths: [String: String] = [:]
        for (input, output) in [(1, 2), (4, 2), (1, 3)] {
            let n = input * output * 9
            let param = "7767517\n2 2\nInput in0 0 1 in0 2=\(input)\nConvolution conv 1 1 in0 out0 0=\(output) 1=3 4=1 5=1 6=\(n)\n"
            paths["\(input)-\(output)"] = ncnnModel("colorizer-\(input)-\(output)", param: param, weights: ncnnWeights([(n, output)]))
        }
        return paths
    }()

    /// A colorizer's `.json` description, read beside a model as `vivify run --colorize
    /// model.param` reads it, then the colorizer run on frames of 1×1, 7×5 and 16×9.
    static func colorizerDescription(_ data: Data) {
        // The model that fits the description's channels (when it names them), so that most
        // descriptions get past loading to the frames.
        let keys = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any]
        let input = keys?["input"] as? String == "l+hints+mask" ? 4 : 1
        let output = keys?["output"] as? String == "rgb" ? 3 : 2
        guard let param = colorizers["\(input)-\(output)"] ?? colorizers["1-2"] else { return }
        _ = write(data, "models/colorizer-\(input)-\(output).json")
        // oneDNN, as `vivify` runs it: a description at the limits (2048² L) stays well within
        // the fuzzer's time limit there.
        guard let colorizer = try? Models.Colorizer(model: param, backend: .onednn, settings: ComputeSettings(threads: threads), stabilize: true) else { return }
        // The model side is the description's (up to 2048², valid): instrumented, a frame costs
        // about 1.5 µs per model pixel, so beyond 1024² three frames would pass the fuzzer's
        // 10 s limit through cost alone. Those descriptions are loaded and checked only; the
        // frame path is the same code at any side.
        let side = colorizer.modelSize(width: 16, height: 9)
        guard side.w * side.h <= 1024 * 1024 else { return }
        for (w, h) in [(1, 1), (7, 5), (16, 9)] {
            var frame = VideoFrame(format: .rgb24, width: w, height: h)
            for i in frame.planes[0].indices { frame.planes[0][i] = UInt8(truncatingIfNeeded: i &* 37) }
            if w < 16 {
                var out = VideoFrame(format: .rgb24, width: 1, height: 1)
                guard (try? colorizer.colorize(frame, into: &out)) != nil else { return }
            } else {
                var planar = FloatPlanarImage(channels: 3, width: 1, height: 1)
                _ = try? colorizer.colorize(frame, into: &planar)
            }
        }
    }

    // MARK: int8 calibration

    /// A small upscaler-like graph (3 → 8 → 8 → 8 → 3 channels, 3×3 convolutions, ReLU and
    /// leaky ReLU) whose layers `c1`…`c4` a calibration can name: `c2` and `c3` run int8, `c1`
    /// is equalised against `c2`.
    static let calibrationGraph: Graph? = {
        let param = """
            7767517
            5 5
            Input in0 0 1 in0 0=16 1=16 2=3
            Convolution c1 1 1 in0 v1 0=8 1=3 4=1 5=1 6=216 9=1
            Convolution c2 1 1 v1 v2 0=8 1=3 4=1 5=1 6=576 9=2 -23310=1,0.1
            Convolution c3 1 1 v2 v3 0=8 1=3 4=1 5=1 6=576 9=1
            Convolution c4 1 1 v3 out0 0=3 1=3 4=1 5=1 6=216

            """
        return try? NCNNImporter.parse(param: param, weights: ncnnWeights([(216, 8), (576, 8), (576, 8), (216, 3)]), source: "calibration.param")
    }()

    static let calibrationInput: Tensor = {
        var t = Tensor(shape: Shape(c: 3, h: 16, w: 16))
        for i in t.data.indices { t.data[i] = Float((i &* 97) % 256) / 255 }
        return t
    }()

    /// An int8 calibration (the model store's `int8/*.json`, a segment manifest's
    /// `int8Calibration`), decoded as they are and used as `--precision int8` uses it: the
    /// oneDNN backend equalises and quantises the graph with it, then runs a tile.
    static func calibration(_ data: Data) {
        guard let calibration = try? JSONDecoder().decode(Int8Calibration.self, from: data), let graph = calibrationGraph,
              let backend = try? DNNLBackend(precision: .int8, calibration: calibration, threads: threads),
              let prepared = try? backend.prepare(graph, input: calibrationInput.shape) else { return }
        _ = try? prepared.run(calibrationInput)
    }

    // MARK: segment manifest

    /// A segmented job's `manifest.json`, opened as `vivify work/status/join` open it, then
    /// what they read from it without touching the input or the output: every segment's state
    /// (its file verified), the run's settings rebuilt, and the settings compared.
    static func segmentManifest(_ data: Data) {
        let directory = scratch.appendingPathComponent("work", isDirectory: true)
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = write(data, "work/\(SegmentedJob.manifestName)")
        guard let job = try? SegmentedJob(directory: directory) else { return }
        _ = try? job.status(verify: true)
        let m = job.manifest
        _ = m.framesDone
        _ = SegmentManifest.Settings(m.settings.configuration, models: m.settings.models).differences(to: m.settings)
    }

    // MARK: .npy

    /// The model `vivify infer` runs the tensors on: a 3×3 convolution, 3 channels in and out.
    static let npyModel: String = ncnnModel(
        "infer", param: "7767517\n2 2\nInput in0 0 1 in0\nConvolution conv 1 1 in0 out0 0=3 1=3 4=1 5=1 6=81\n",
        weights: ncnnWeights([(81, 3)]))

    /// A `.npy` file read as `vivify infer --input` reads it, then run through a model.
    static func npy(_ data: Data) {
        let path = write(data, "input.npy")
        guard let array = try? NPYArray.read(path) else { return }
        _ = array.fileData
        _ = try? ModelInference.run(model: npyModel, input: array, backend: .reference, limits: RunLimits(threads: threads))
    }

    /// A picture file, read under a small pixel limit (the declared size is checked before the
    /// decoder allocates), then its pixels used as a run uses them.
    static func image(_ data: Data) {
        let path = write(data, "picture")
        guard let image = try? ImageIO.read(path: path, maxPixels: 1 << 20) else { return }
        let c = image.color
        var sum: Float = 0
        for v in c.data { sum += v }
        if let a = image.alpha { for v in a.data { sum += v } }
        _ = sum
    }
}
