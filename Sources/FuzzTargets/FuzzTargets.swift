import Compute
import Engine
import Foundation
import MediaIO
import ModelFormats

/// The parsers that read untrusted bytes, each as one fuzz entry point: the bytes go in, any
/// thrown error is the expected outcome for bad input, and a trap, a sanitizer report, an
/// allocation past the fuzzer's limit or a hang is a bug.
///
/// The `vivify-fuzz` tool drives these with libFuzzer (`scripts/fuzz`); the
/// `FuzzRegressionTests` replay every input that once crashed one of them.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// A YUV4MPEG2 stream: header, then up to three frames.
    case y4m
    /// Frame rates and y4m header lines as text (`--rate`, `F`/`A` tags).
    case rate
    /// The protobuf wire format, walked recursively as far as it nests.
    case protobuf
    /// A Core ML NeuralNetwork `.mlmodel`.
    case coreml
    /// A Core ML ML Program: `UInt32` little-endian length, the model protobuf, then the
    /// weight file the program's blobs point into.
    case mlprogram
    /// An ncnn model: the `.param` text, then (after a NUL byte, if any) the `.bin` weights;
    /// without a NUL the weights are 4 MiB of zeros, enough for every real model's structure.
    case ncnn
    /// An ONNX `.onnx` model (no external data: the importer is given no folder).
    case onnx
    /// A `.wifm` manifest (JSON).
    case wifmManifest = "wifm-manifest"
    /// A whole `.wifm` bundle (zip): archive checks, extraction, manifest and the model inside.
    case wifmArchive = "wifm-archive"
    /// A colorizer's `.json` description beside its model, then the colorizer on tiny frames.
    case colorizerDescription = "colorizer-description"
    /// An int8 calibration (JSON), then a graph equalised, quantised and run with it.
    case calibration
    /// A segmented job's `manifest.json` (plan/work/join), opened and read as the commands do.
    case segmentManifest = "segment-manifest"
    /// Headerless rgb24/gray frames of 1×1 to 64×64, through every conversion of a run.
    case rawFrames = "raw-frames"
    /// A y4m stream of any size and colour tag, its frames through every conversion of a run.
    case y4mFrames = "y4m-frames"
    /// A `.npy` tensor as `vivify infer` reads it, then run through a model.
    case npy
    /// An ML Program weight file (`weight.bin`) under a real program that points into it.
    case mlprogramWeights = "mlprogram-weights"
    /// A Core ML custom layer declaration (`NAME.layers.json`) for a small model with one
    /// custom layer that has weights and parameters, then the model run with it.
    case customLayers = "custom-layers"
    /// A still picture as `vivify image`, `--reference`, `--keyframe` and `--hints` read it
    /// (PNG, JPEG, BMP, TIFF or WebP, told by its first bytes), then every value read.
    case image

    /// Feeds `data` to the parser. Errors are swallowed: only crashes count.
    public func run(_ data: Data) {
        switch self {
        case .y4m: FuzzTarget.y4m(data)
        case .rate: FuzzTarget.rate(data)
        case .protobuf: _ = FuzzTarget.walk(ProtobufReader(data), depth: 0)
        case .coreml: FuzzTarget.coreml(data)
        case .mlprogram: FuzzTarget.mlprogram(data)
        case .ncnn: FuzzTarget.ncnn(data)
        case .onnx:
            if let model = try? ONNXImporter.parse(data, source: "fuzz.onnx") { FuzzTarget.exercise(model.graph) }
        case .wifmManifest: _ = try? WifmManifest.read(json: data, entries: nil)
        case .wifmArchive: FuzzTarget.wifmArchive(data)
        case .colorizerDescription: FuzzTarget.colorizerDescription(data)
        case .calibration: FuzzTarget.calibration(data)
        case .segmentManifest: FuzzTarget.segmentManifest(data)
        case .rawFrames: FuzzTarget.rawFrames(data)
        case .y4mFrames: FuzzTarget.y4mFrames(data)
        case .npy: FuzzTarget.npy(data)
        case .mlprogramWeights: FuzzTarget.mlprogramWeights(data)
        case .customLayers: FuzzTarget.customLayers(data)
        case .image: FuzzTarget.image(data)
        }
    }

    /// The compute threads every target's backends and loops are given (oneDNN's OpenMP team
    /// included): one, since the fuzzer runs one target per core, and idle OpenMP threads
    /// spinning between the small inputs cost more than the work.
    static let threads = 1

    /// A private scratch folder for the targets that read files (one per process).
    static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-fuzz.\(getpid())", isDirectory: true)
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Removes the scratch folder (the driver calls this at exit).
    public static func cleanUp() { try? FileManager.default.removeItem(at: scratch) }

    static func write(_ data: Data, _ name: String) -> String {
        let url = scratch.appendingPathComponent(name)
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try? data.write(to: url)
        return url.path
    }

    static func y4m(_ data: Data) {
        let path = write(data, "input.y4m")
        guard let reader = try? Y4MReader(path: path) else { return }
        var frame = VideoFrame(format: reader.info.video.pixelFormat, width: 2, height: 2)
        for _ in 0..<3 {
            guard let event = try? reader.read(into: &frame), case .frame = event else { return }
        }
    }

    static func rate(_ data: Data) {
        let text = String(decoding: data, as: UTF8.self)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).prefix(64) {
            if let r = Rational(parsing: String(line)) {
                _ = r.isValid ? r.doubleValue : 0
                _ = r.isValid ? r.inverted.description : ""
                _ = r.isValid ? r.rescale(1_000_000, to: Rational(1, 90_000)) : 0
            }
            _ = try? Y4MHeader(line: Array(line.utf8), source: "fuzz")
        }
    }

    /// Walks every length-delimited field that parses as a message, to a fixed depth, and reads
    /// the first few field numbers as packed floats and ints.
    static func walk(_ reader: ProtobufReader, depth: Int) -> Int {
        guard depth < 16, let fields = try? reader.fields() else { return 0 }
        var count = fields.count
        for number in Set(fields.map(\.0)).sorted().prefix(4) {
            _ = try? reader.floats(number)
            _ = try? reader.ints(number)
        }
        for (_, value) in fields.prefix(1024) {
            if case let .bytes(bytes) = value { count += walk(ProtobufReader(bytes), depth: depth + 1) }
        }
        return count
    }

    static func coreml(_ data: Data) {
        guard let model = try? CoreMLImporter.parse(data, source: "fuzz.mlmodel") else { return }
        exercise(model.graph)
    }

    static func mlprogram(_ data: Data) {
        var modelBytes = data
        var weights = Data()
        if data.count >= 4 {
            let declared = Int(data[data.startIndex]) | Int(data[data.startIndex + 1]) << 8
                | Int(data[data.startIndex + 2]) << 16 | Int(data[data.startIndex + 3]) << 24
            let body = data.dropFirst(4)
            let split = body.startIndex + min(declared, body.count)
            modelBytes = Data(body[body.startIndex..<split])
            weights = Data(body[split...])
        }
        let modelPath = write(modelBytes, "program/model.mlmodel")
        _ = write(weights, "program/weights/weight.bin")
        guard let model = try? CoreMLProgramImporter.load(path: modelPath) else { return }
        exercise(model.graph)
    }

    static let zeroWeights = Data(count: 4 << 20)

    static func ncnn(_ data: Data) {
        let param: Data
        let weights: Data
        if let nul = data.firstIndex(of: 0) {
            param = Data(data[data.startIndex..<nul])
            weights = Data(data[(nul + 1)...])
        } else {
            param = data
            weights = zeroWeights
        }
        guard let graph = try? NCNNImporter.parse(param: String(decoding: param, as: UTF8.self), weights: weights, source: "fuzz.param") else { return }
        exercise(graph)
    }

    static func wifmArchive(_ data: Data) {
        let path = write(data, "bundle.wifm")
        guard let bundle = try? ModelBundle.open(path: path) else { return }
        for sub in [bundle.manifest.main] + (bundle.manifest.alpha.map { [$0] } ?? []) {
            let file = bundle.url(for: sub).path
            guard let format = ModelFileFormat.forPath(file), let importer = format.importer,
                  let imported = try? importer(file, bundle.weightsURL(for: sub)?.path, bundle.manifest.customLayers, nil) else { continue }
            exercise(imported.graph)
        }
    }

    /// What every caller does next with an imported graph: shapes and costs for a small tile.
    static func exercise(_ graph: Graph) {
        let shape = Shape(c: graph.inputChannels ?? 3, h: 16, w: 16)
        _ = try? graph.inferShapes(input: shape)
        _ = try? graph.multiplyAdds(input: shape)
    }
}
