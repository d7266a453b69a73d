import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The ONNX importer on files built at test time by `scripts/onnx_fixtures.py` (the `onnx`
/// package's helpers, written as PyTorch exports them) from the real weights in ../shared and
/// from seeded random weights: each is run on both backends against ONNX Runtime's output
/// (1e-4) and, for the real models, against its ncnn twin through our ncnn importer (2/255).
final class ONNXImporterTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let sharedModels = root.deletingLastPathComponent().appendingPathComponent("shared/models")

    /// The fixture folder, made once per test run; skipped (failed on CI) without onnx/onnxruntime or ../shared.
    static func fixtures() throws -> URL {
        let dir = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("vivify-onnx-fixtures-\(getpid())")
        if FileManager.default.fileExists(atPath: dir.appendingPathComponent("manifest.json").path) { return dir }
        guard FileManager.default.fileExists(atPath: sharedModels.appendingPathComponent("ncnn").path) else {
            throw XCTSkip("../shared/models is not beside the checkout")
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", root.appendingPathComponent("scripts/onnx_fixtures.py").path,
                       "--models-dir", sharedModels.appendingPathComponent("ncnn").path, "--out", dir.path]
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            let why = "scripts/onnx_fixtures.py failed (pip install onnx onnxruntime; scripts/install-deps does): \(said.suffix(600))"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(why) }
            throw XCTSkip(why)
        }
        return dir
    }

    /// The fixture folder goes when the class's tests are done.
    override class func tearDown() {
        try? FileManager.default.removeItem(at: URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("vivify-onnx-fixtures-\(getpid())"))
        super.tearDown()
    }

    static func floats(_ url: URL) throws -> [Float] { try CoreMLNeuralNetworkTests.readFloats(url) }
    static func maxDiff(_ a: [Float], _ b: [Float]) -> Float { CoreMLNeuralNetworkTests.maxDiff(a, b) }

    /// One fixture through the importer and both backends: its output against ONNX Runtime's.
    /// `tolerance` is relative to the largest expected magnitude (at least 1): 1e-4 by default.
    func check(_ name: String, channels: Int, output: Shape, ncnnTwin: String? = nil, tolerance: Float = 1e-4,
               file: StaticString = #filePath, line: UInt = #line) throws {
        let dir = try Self.fixtures()
        let model = try ONNXImporter.load(path: dir.appendingPathComponent(name + ".onnx").path)
        let shape = Shape(c: channels, h: 32, w: 40)
        let input = Tensor(shape: shape, data: try Self.floats(dir.appendingPathComponent(name + ".input.f32")))
        let expected = try Self.floats(dir.appendingPathComponent(name + ".output.f32"))
        XCTAssertEqual(expected.count, output.count, file: file, line: line)
        let twin = try ncnnTwin.map { try NCNNImporter.load(paramPath: Self.sharedModels.appendingPathComponent("ncnn/\($0)").path) }
        var report = "\(name): \(model.description)\n"
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let y = try backend.prepare(model.graph, input: shape).run(input)
            XCTAssertEqual(y.shape, output, "\(name) on \(backend.name)", file: file, line: line)
            let d = Self.maxDiff(y.data, expected)
            let magnitude = max(1, expected.map { abs($0) }.max() ?? 1)
            XCTAssertLessThanOrEqual(d / magnitude, tolerance, "\(name) on \(backend.name) against ONNX Runtime", file: file, line: line)
            report += String(format: "  %@: max |Δ| against ONNX Runtime %.2e (%.1e of the largest value)", backend.name, d, d / magnitude)
            if let twin {
                let t = try backend.prepare(twin, input: shape).run(input)
                XCTAssertEqual(t.shape, y.shape, file: file, line: line)
                let e = Self.maxDiff(y.data, t.data)
                XCTAssertLessThanOrEqual(e, 2.0 / 255, "\(name) on \(backend.name) against its ncnn twin", file: file, line: line)
                report += String(format: ", against the ncnn twin %.2e", e)
            }
            report += "\n"
        }
        print(report, terminator: "")
    }

    /// realesr-animevideov3-x2 (opset 17, weights as external data): 16 convolutions with
    /// PRelu, DepthToSpace CRD, nearest ×4 (asymmetric, floor) added, bicubic ×0.5.
    func testAnimeVideoV3MatchesONNXRuntimeAndItsNCNNTwin() throws {
        try check("animevideov3-x2", channels: 3, output: Shape(c: 3, h: 64, w: 80), ncnnTwin: "realesr-animevideov3/realesr-animevideov3-x2.param")
    }

    /// waifu2x upconv_7 photo (opset 11): valid convolutions with LeakyRelu, ConvTranspose 4×4/2 pads 3.
    func testUpconv7MatchesONNXRuntimeAndItsNCNNTwin() throws {
        try check("upconv7-photo", channels: 3, output: Shape(c: 3, h: 36, w: 52), ncnnTwin: "waifu2x-upconv7-photo/scale2.0x_model.param")
    }

    /// BatchNormalization, Clip with inputs, Sigmoid, Tanh, scalar and per-channel constants,
    /// Concat, channel Slice, reflect Pad, HardSigmoid, bilinear Resize, Softmax over channels,
    /// GlobalAveragePool → Flatten → Gemm → Reshape broadcast back over the image (opset 13).
    func testSyntheticOpsMatchONNXRuntime() throws {
        try check("synthetic-ops", channels: 4, output: Shape(c: 6, h: 70, w: 86))
    }

    /// The fast style-transfer net (instance norm, reflection pads, residual blocks, nearest
    /// upsampling with sizes computed from the input's shape, tanh): per size the shape
    /// arithmetic is worked out again; tiled, it runs on the whole frame (instance norm).
    func testStyleTransferMatchesONNXRuntime() throws {
        try check("style-transfer", channels: 3, output: Shape(c: 3, h: 32, w: 40))
        let dir = try Self.fixtures()
        let model = try ONNXImporter.load(path: dir.appendingPathComponent("style-transfer.onnx").path)
        XCTAssertNotNil(model.graph.specializer, "sizes from Shape: the graph is remade per input size")
        XCTAssertTrue(model.graph.needsWholeFrame)
        let shape = Shape(c: 3, h: 32, w: 40)
        let input = Tensor(shape: shape, data: try Self.floats(dir.appendingPathComponent("style-transfer.input.f32")))
        let whole = try DNNLBackend().prepare(model.graph, input: shape).run(input)
        let runner = try TiledRunner(graph: model.graph, spec: TilingSpec(scale: 1, padding: 0, border: .reflect), backend: DNNLBackend(), tileSize: 16)
        var out = [Float](repeating: 0, count: shape.count)
        try input.data.withUnsafeBufferPointer { i in
            try out.withUnsafeMutableBufferPointer { o in try runner.run(input: i, channels: 3, height: 32, width: 40, output: o) }
        }
        XCTAssertEqual(Self.maxDiff(out, whole.data), 0, "asked for 16-pixel tiles, instance norm runs on the whole frame")
    }

    /// A scaled-down ECCV16 colorizer: L normalised inside, strided and dilated convs, batch
    /// norms, ConvTranspose, softmax over 64 colour bins (PyTorch's transposes around it below
    /// opset 13), 1×1 to ab, ×110, bilinear ×2 (opset 11).
    func testECCV16ShapedColorizerMatchesONNXRuntime() throws {
        try check("eccv16-colorizer", channels: 1, output: Shape(c: 2, h: 32, w: 40))
        let model = try ONNXImporter.load(path: try Self.fixtures().appendingPathComponent("eccv16-colorizer.onnx").path)
        XCTAssertTrue(model.graph.nodes.contains { if case .softmaxChannels = $0.op { return true } else { return false } },
                      "Transpose → Softmax(−1) → Transpose became a softmax over channels")
        XCTAssertFalse(model.graph.needsWholeFrame)
    }

    /// The repository's ncnn test colorizer written as ONNX layer for layer: against ONNX
    /// Runtime, and against the ncnn file through our ncnn importer.
    func testECCV16TinyMatchesONNXRuntimeAndItsNCNNTwin() throws {
        try check("eccv16-tiny", channels: 1, output: Shape(c: 2, h: 32, w: 40))
        let dir = try Self.fixtures()
        let model = try ONNXImporter.load(path: dir.appendingPathComponent("eccv16-tiny.onnx").path)
        let param = Self.root.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers/eccv16-tiny.param").path
        let twin = try NCNNImporter.load(paramPath: param)
        let shape = Shape(c: 1, h: 32, w: 40)
        let input = Tensor(shape: shape, data: try Self.floats(dir.appendingPathComponent("eccv16-tiny.input.f32")))
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let a = try backend.prepare(model.graph, input: shape).run(input), b = try backend.prepare(twin, input: shape).run(input)
            XCTAssertLessThanOrEqual(Self.maxDiff(a.data, b.data), 1e-4, "\(backend.name): ONNX against the ncnn file")
        }
    }

    /// A PyTorch export at opset 9: pixel shuffle as Reshape → Transpose → Reshape with sizes
    /// from Shape/Gather/Unsqueeze/Concat (becomes the engine's pixel shuffle), Split, MaxPool,
    /// Elu, Upsample, SpaceToDepth; right at a second size too (the arithmetic redone).
    func testPyTorchOpset9ShapeArithmeticAtTwoSizes() throws {
        try check("shuffle-opset9", channels: 3, output: Shape(c: 3, h: 64, w: 80))
        let dir = try Self.fixtures()
        let model = try ONNXImporter.load(path: dir.appendingPathComponent("shuffle-opset9.onnx").path)
        XCTAssertTrue(model.graph.nodes.contains { if case .pixelShuffle(2, .crd) = $0.op { return true } else { return false } },
                      "Reshape–Transpose–Reshape became a pixel shuffle")
        let shape = Shape(c: 3, h: 24, w: 36)
        let input = Tensor(shape: shape, data: try Self.floats(dir.appendingPathComponent("shuffle-opset9.input2.f32")))
        let expected = try Self.floats(dir.appendingPathComponent("shuffle-opset9.output2.f32"))
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let y = try backend.prepare(model.graph, input: shape).run(input)
            XCTAssertEqual(y.shape, Shape(c: 3, h: 48, w: 72))
            XCTAssertLessThanOrEqual(Self.maxDiff(y.data, expected), 1e-4, "\(backend.name) at 24×36")
        }
    }

    /// Symbolic H and W: the same file runs at any tile size.
    func testSymbolicSizesRunAtAnySize() throws {
        let dir = try Self.fixtures()
        let model = try ONNXImporter.load(path: dir.appendingPathComponent("animevideov3-x2.onnx").path)
        XCTAssertEqual(model.inputDimensions.count, 4)
        XCTAssertNil(model.inputDimensions[2])
        XCTAssertEqual(model.opsets[""], 17)
        for (h, w) in [(17, 23), (64, 64)] {
            let y = try DNNLBackend().prepare(model.graph, input: Shape(c: 3, h: h, w: w)).run(Tensor(shape: Shape(c: 3, h: h, w: w)))
            XCTAssertEqual(y.shape, Shape(c: 3, h: 2 * h, w: 2 * w))
        }
    }

    /// An op the engine does not run is an error naming the op, the node and the file.
    func testUnsupportedOpNamesOpNodeAndFile() throws {
        // ModelProto: graph (7) { node (1) { input "x", output "y", name "n1", op_type "Gather" },
        // input (11) "x" 1×3×?×?, output (12) "y" }, opset_import (8) { version 13 }.
        func field(_ n: Int, _ payload: [UInt8]) -> [UInt8] { [UInt8(n << 3 | 2), UInt8(payload.count)] + payload }
        func text(_ n: Int, _ s: String) -> [UInt8] { field(n, Array(s.utf8)) }
        let dims: [UInt8] = field(1, [0x08, 1]) + field(1, [0x08, 3]) + field(1, text(2, "h")) + field(1, text(2, "w"))
        let valueInfo: [UInt8] = text(1, "x") + field(2, field(1, [0x08, 1] + field(2, dims)))
        let node: [UInt8] = text(1, "x") + text(2, "y") + text(3, "n1") + text(4, "Gather")
        let graph: [UInt8] = field(1, node) + field(11, valueInfo) + field(12, text(1, "y"))
        let model: [UInt8] = field(7, graph) + field(8, [0x10, 13])
        XCTAssertThrowsError(try ONNXImporter.parse(Data(model), source: "bad.onnx")) { error in
            let e = error as? ModelFormatError
            XCTAssertEqual(e?.kind, .unsupported)
            XCTAssertTrue(e?.message.contains("'bad.onnx': node 'n1' (Gather)") ?? false, "\(error)")
        }
    }
}
