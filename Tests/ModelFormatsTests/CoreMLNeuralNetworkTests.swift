import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The Core ML NeuralNetwork importer: the real waifu2x .mlmodel files against their ncnn twins,
/// coremltools-built fixtures against the numpy evaluator of `scripts/coreml_fixtures.py`, and
/// hand-written models (bytes from the small protobuf writer below) for weight encodings,
/// channel orders, padding types and error messages.
final class CoreMLNeuralNetworkTests: XCTestCase {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let shared = root.deletingLastPathComponent().appendingPathComponent("shared/models")
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/coreml")

    static func readFloats(_ url: URL) throws -> [Float] {
        let data = try Data(contentsOf: url)
        return data.withUnsafeBytes { raw in (0..<(data.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) } }
    }

    static func maxDiff(_ a: [Float], _ b: [Float]) -> Float {
        precondition(a.count == b.count, "\(a.count) vs \(b.count) values")
        return zip(a, b).map { abs($0 - $1) }.max() ?? 0
    }

    // MARK: waifu2x: the same upconv_7 weights as Core ML and as ncnn

    func testWaifu2xModelsMatchTheirNCNNTwins() throws {
        let coreml = Self.shared.appendingPathComponent("coreml")
        let pairs = [
            ("up_photo_scale2x_model", "waifu2x-upconv7-photo/scale2.0x_model"),
            ("up_photo_noise1_scale2x_model", "waifu2x-upconv7-photo/noise1_scale2.0x_model"),
            ("up_anime_scale2x_model", "waifu2x-upconv7-art/scale2.0x_model"),
            ("up_anime_noise1_scale2x_model", "waifu2x-upconv7-art/noise1_scale2.0x_model"),
        ]
        guard FileManager.default.fileExists(atPath: coreml.appendingPathComponent(pairs[0].0 + ".mlmodel").path) else {
            throw XCTSkip("../shared/models/coreml is absent")
        }
        // A deterministic 60×60 RGB tile in [0, 1] (both models take RGB floats in [0, 1]).
        let shape = Shape(c: 3, h: 60, w: 60)
        var seed: UInt32 = 12345
        let input = Tensor(shape: shape, data: (0..<shape.count).map { i in
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let (c, y, x) = (i / 3600, i / 60 % 60, i % 60)
            let smooth = 0.5 + 0.35 * sin(Float(x) * 0.21 + Float(y) * 0.13 + Float(c) * 2.0)
            return min(max(smooth + (Float(seed >> 8) / Float(1 << 24) - 0.5) * 0.3, 0), 1)
        })
        let backends: [InferenceBackend] = [try DNNLBackend(), ReferenceBackend()]
        var report: [String] = []
        for (name, twin) in pairs {
            let model = try CoreMLImporter.load(path: coreml.appendingPathComponent(name + ".mlmodel").path)
            XCTAssertEqual(model.inputName, "input")
            XCTAssertEqual(model.outputName, "conv7")
            XCTAssertFalse(model.inputIsImage)
            XCTAssertEqual(model.inputShape.map { [$0.c, $0.h, $0.w] }, [3, 156, 156])
            XCTAssertNil(model.preprocessingScale)
            XCTAssertNil(model.channelBiases)
            XCTAssertEqual(model.specVersion, 1)
            XCTAssertTrue(model.description.contains("no preprocessing"), model.description)
            // Six convolutions with their leaky ReLUs fused, and the transposed convolution.
            XCTAssertEqual(model.graph.nodes.count, 7)
            let ncnn = try NCNNImporter.load(paramPath: Self.shared.appendingPathComponent("ncnn/\(twin).param").path)
            var cells: [String] = []
            var outputs: [[Float]] = []
            for backend in backends {
                let a = try backend.prepare(model.graph, input: shape).run(input)
                let b = try backend.prepare(ncnn, input: shape).run(input)
                XCTAssertEqual(a.shape, Shape(c: 3, h: 92, w: 92), "out = 2·(in − 14)")
                XCTAssertEqual(a.shape, b.shape)
                let d = Self.maxDiff(a.data, b.data)
                XCTAssertLessThanOrEqual(d, 2.0 / 255, "\(name) vs ncnn \(twin) on \(backend.name)")
                cells.append(String(format: "%@ %.2e", backend.name, d))
                outputs.append(a.data)
            }
            let between = Self.maxDiff(outputs[0], outputs[1])
            XCTAssertLessThanOrEqual(between, 1e-4, "\(name): oneDNN vs reference")
            report.append("\(name) vs ncnn \(twin): \(cells.joined(separator: ", ")); Core ML graph oneDNN vs reference \(String(format: "%.2e", between))")
        }
        print("Core ML vs ncnn waifu2x parity (max abs diff, [0,1] units, 3x60x60 tile):\n" + report.joined(separator: "\n"))
    }

    // MARK: coremltools fixtures against the numpy evaluator

    struct Manifest: Decodable {
        struct Entry: Decodable {
            var name: String
            var model: String
            var input: String
            var output: String
            var input_name: String
            var input_is_image: Bool
            var input_shape: [Int]
            var output_shape: [Int]
            var spec_version: Int
            var covers: [String]
        }
        var tolerance: Float
        var fixtures: [Entry]
    }

    func testFixturesMatchTheNumpyReference() throws {
        let manifest = try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: Self.fixtures.appendingPathComponent("manifest.json")))
        XCTAssertEqual(manifest.fixtures.count, 10)
        let backends: [InferenceBackend] = [try DNNLBackend(), ReferenceBackend()]
        var report: [String] = []
        for e in manifest.fixtures {
            let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent(e.model).path)
            XCTAssertEqual(model.inputName, e.input_name, e.name)
            XCTAssertEqual(model.inputIsImage, e.input_is_image, e.name)
            XCTAssertEqual(model.specVersion, e.spec_version, e.name)
            XCTAssertEqual(model.inputShape.map { [$0.c, $0.h, $0.w] }, e.input_shape, e.name)
            let shape = Shape(c: e.input_shape[0], h: e.input_shape[1], w: e.input_shape[2])
            let input = Tensor(shape: shape, data: try Self.readFloats(Self.fixtures.appendingPathComponent(e.input)))
            let expected = try Self.readFloats(Self.fixtures.appendingPathComponent(e.output))
            var cells: [String] = []
            for backend in backends {
                let out = try backend.prepare(model.graph, input: shape).run(input)
                XCTAssertEqual([out.shape.c, out.shape.h, out.shape.w], e.output_shape, "\(e.name) on \(backend.name)")
                guard out.data.count == expected.count else { continue }
                let d = Self.maxDiff(out.data, expected)
                XCTAssertLessThanOrEqual(d, manifest.tolerance, "\(e.name) on \(backend.name)")
                cells.append(String(format: "%@ %.2e", backend.name, d))
            }
            report.append("\(e.name): \(cells.joined(separator: ", "))")
        }
        print("Core ML fixtures vs numpy reference (max abs diff):\n" + report.joined(separator: "\n"))
    }

    func testImageScalerIsTheGraphsFirstNode() throws {
        let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("conv_image_bgr.mlmodel").path)
        XCTAssertTrue(model.inputIsImage)
        XCTAssertEqual(model.preprocessingScale ?? 0, 1 / 255, accuracy: 1e-9)
        XCTAssertEqual(model.channelBiases, [-0.5, -0.25, 0.125], "B, G, R order for a BGR image")
        guard case .channelAffine(let scale, let bias) = model.graph.nodes[0].op else {
            return XCTFail("first node is \(model.graph.nodes[0].op.kindName)")
        }
        XCTAssertEqual(model.graph.nodes[0].inputs, [model.graph.input])
        XCTAssertEqual(scale.count, 3)
        XCTAssertEqual(bias, [-0.5, -0.25, 0.125])
        XCTAssertTrue(model.description.contains("0–255 pixel values in B, G, R channel order"), model.description)
        XCTAssertTrue(model.description.contains("1/255"), model.description)

        let gray = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("gray_deconv.mlmodel").path)
        XCTAssertEqual(gray.channelBiases, [-0.5])
        XCTAssertTrue(gray.description.contains("grayscale image, 11 wide × 9 high"), gray.description)
    }

    // MARK: hand-written models

    func testWeightEncodingsDecodeToTheSameWeights() throws {
        let values: [Float] = [0.1, -0.2, 0.3333, 1e-3, -7.5, 65504, 2.5e-5, 0.7]
        func convModel(_ weights: PB) -> Data {
            var conv = PB()
            conv.varint(1, 2)                      // outputChannels
            conv.varint(2, 4)                      // kernelChannels
            conv.packedInts(20, [1, 1])            // kernelSize
            conv.message(50, PB())                 // valid padding
            conv.message(90, weights)
            return Self.model(input: Self.arrayFeature("x", [4, 3, 3]), output: "y",
                              layers: [Self.layer("conv", ["x"], ["y"], field: 100, conv)])
        }
        var f32 = PB(), f16 = PB(), raw = PB(), unpacked = PB()
        f32.packedFloats(1, values)
        for v in values { unpacked.float(1, v) }
        f16.bytes(2, Data(values.flatMap { v -> [UInt8] in let b = Float16(v).bitPattern; return [UInt8(b & 0xFF), UInt8(b >> 8)] }))
        raw.bytes(30, Data(values.flatMap { v -> [UInt8] in let b = v.bitPattern; return (0..<4).map { UInt8(b >> (8 * $0) & 0xFF) } }))
        func weights(_ wp: PB) throws -> [Float] {
            let m = try CoreMLImporter.parse(convModel(wp), source: "weights.mlmodel")
            guard case .convolution(let p) = m.graph.nodes[0].op else { XCTFail("not a convolution"); return [] }
            return p.weights
        }
        XCTAssertEqual(try weights(f32), values, "floatValue (packed) is read exactly")
        XCTAssertEqual(try weights(unpacked), values, "floatValue (unpacked) is read exactly")
        XCTAssertEqual(try weights(raw), values, "rawValue is fp32 little-endian")
        XCTAssertEqual(try weights(f16), values.map { Float(Float16($0)) }, "float16Value is widened exactly")

        var short = PB()
        short.packedFloats(1, Array(values.prefix(5)))
        XCTAssertThrowsError(try CoreMLImporter.parse(convModel(short), source: "short.mlmodel")) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("'conv'") && text.contains("short.mlmodel") && text.contains("5 fp32 values, expected 8"), text)
        }
    }

    func testReorganizeDataOrdersFollowTheProtoExample() throws {
        // NeuralNetwork.proto's example: [C = 8, H = 1, W = 2] holding 1…16, block size 2.
        func run(mode: Int) throws -> (Graph, [Float]) {
            var p = PB()
            p.varint(1, UInt64(mode))
            p.varint(2, 2)
            let data = Self.model(version: 5, input: Self.arrayFeature("x", [8, 1, 2]), output: "y",
                                  layers: [Self.layer("reorg", ["x"], ["y"], field: 345, p)])
            let g = try CoreMLImporter.parse(data, source: "reorg.mlmodel").graph
            let x = Tensor(shape: Shape(c: 8, h: 1, w: 2), data: (1...16).map(Float.init))
            return (g, try ReferenceBackend().prepare(g, input: x.shape).run(x).data)
        }
        let (d2s, depthToSpace) = try run(mode: 1)
        XCTAssertEqual(d2s.nodes[0].op, .pixelShuffle(factor: 2, order: .dcr), "DEPTH_TO_SPACE is DCR")
        XCTAssertEqual(depthToSpace, [1, 5, 2, 6, 9, 13, 10, 14, 3, 7, 4, 8, 11, 15, 12, 16])
        let (ps, pixelShuffle) = try run(mode: 2)
        XCTAssertEqual(ps.nodes[0].op, .pixelShuffle(factor: 2, order: .crd), "PIXEL_SHUFFLE is CRD")
        XCTAssertEqual(pixelShuffle, [1, 3, 2, 4, 5, 7, 6, 8, 9, 11, 10, 12, 13, 15, 14, 16])

        // SPACE_TO_DEPTH undoes DEPTH_TO_SPACE.
        var p = PB()
        p.varint(1, 0)
        p.varint(2, 2)
        let data = Self.model(input: Self.arrayFeature("x", [2, 2, 4]), output: "y", layers: [Self.layer("s2d", ["x"], ["y"], field: 345, p)])
        let g = try CoreMLImporter.parse(data, source: "s2d.mlmodel").graph
        let x = Tensor(shape: Shape(c: 2, h: 2, w: 4), data: depthToSpace)
        let back = try ReferenceBackend().prepare(g, input: x.shape).run(x)
        XCTAssertEqual(back.shape, Shape(c: 8, h: 1, w: 2))
        XCTAssertEqual(back.data, (1...16).map(Float.init))
    }

    func testPaddingTypesFollowTheProtoExample() throws {
        // NeuralNetwork.proto's example: [1, 3, 4] holding 1…12 padded top = 2, left = 2.
        func run(_ type: Int, _ typeParams: PB) throws -> [[Float]] {
            var amounts = PB(), h = PB(), w = PB()
            h.varint(1, 2)
            w.varint(1, 2)
            amounts.message(10, h)
            amounts.message(10, w)
            var p = PB()
            p.message(type, typeParams)
            p.message(10, amounts)
            let data = Self.model(input: Self.arrayFeature("x", [1, 3, 4]), output: "y", layers: [Self.layer("pad", ["x"], ["y"], field: 200, p)])
            let g = try CoreMLImporter.parse(data, source: "pad.mlmodel").graph
            let x = Tensor(shape: Shape(c: 1, h: 3, w: 4), data: (1...12).map(Float.init))
            let y = try ReferenceBackend().prepare(g, input: x.shape).run(x)
            XCTAssertEqual(y.shape, Shape(c: 1, h: 5, w: 6))
            return (0..<5).map { Array(y.data[($0 * 6)..<($0 * 6 + 6)]) }
        }
        var constant = PB()
        constant.float(1, 0)
        XCTAssertEqual(try run(1, constant), [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 4], [0, 0, 5, 6, 7, 8], [0, 0, 9, 10, 11, 12]])
        XCTAssertEqual(try run(2, PB()), [[11, 10, 9, 10, 11, 12], [7, 6, 5, 6, 7, 8], [3, 2, 1, 2, 3, 4], [7, 6, 5, 6, 7, 8], [11, 10, 9, 10, 11, 12]])
        XCTAssertEqual(try run(3, PB()), [[1, 1, 1, 2, 3, 4], [1, 1, 1, 2, 3, 4], [1, 1, 1, 2, 3, 4], [5, 5, 5, 6, 7, 8], [9, 9, 9, 10, 11, 12]])
        var seven = PB()
        seven.float(1, 7)
        XCTAssertEqual(try run(1, seven)[0], [7, 7, 7, 7, 7, 7], "the constant value fills the border")
    }

    func testUnsupportedLayerNamesTypeLayerAndFile() throws {
        var lrn = PB()
        lrn.varint(3, 5)
        let data = Self.model(input: Self.arrayFeature("x", [3, 4, 4]), output: "y",
                              layers: [Self.layer("norm1", ["x"], ["y"], field: 180, lrn)])
        XCTAssertThrowsError(try CoreMLImporter.parse(data, source: "models/lrn.mlmodel")) { error in
            let text = "\(error)"
            XCTAssertEqual((error as? ModelFormatError)?.kind, .unsupported)
            XCTAssertTrue(text.contains("'lrn'") && text.contains("'norm1'") && text.contains("models/lrn.mlmodel"), text)
            XCTAssertTrue(text.contains("Supported layer types"), text)
        }
        // A batch norm computing its statistics at run time (instance normalisation, issue 32)
        // without its gamma, an unfoldable constant, a max pool.
        var bn = PB()
        bn.varint(1, 3)
        bn.varint(5, 1)
        var constant = PB(), constData = PB()
        constant.packedInts(1, [3, 1, 1])
        constData.packedFloats(1, [1, 2, 3])
        constant.message(2, constData)
        var pool = PB()
        pool.varint(1, 0)
        let cases: [(PB, [String])] = [
            (Self.layer("bn", ["x"], ["y"], field: 160, bn), ["'bn'", "gamma is missing"]),
            (Self.layer("maxpool", ["x"], ["y"], field: 120, pool), ["'maxpool'", "windowed max pooling"]),
        ]
        for (layer, words) in cases {
            let d = Self.model(input: Self.arrayFeature("x", [3, 4, 4]), output: "y", layers: [layer])
            XCTAssertThrowsError(try CoreMLImporter.parse(d, source: "bad.mlmodel")) { error in
                for w in words { XCTAssertTrue("\(error)".contains(w), "\(error)") }
            }
        }
        let concat = Self.model(input: Self.arrayFeature("x", [3, 4, 4]), output: "y", layers: [
            Self.layer("k", [], ["c"], field: 290, constant),
            Self.layer("cat", ["x", "c"], ["y"], field: 320, PB()),
        ])
        XCTAssertThrowsError(try CoreMLImporter.parse(concat, source: "const.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("'cat'") && "\(error)".contains("loadConstant layer 'k'"), "\(error)")
        }
    }

    func testOtherModelTypesAreRefused() throws {
        var program = PB()
        program.varint(1, 7)
        program.message(2, PB())
        program.message(502, PB())
        XCTAssertThrowsError(try CoreMLImporter.parse(program.data, source: "prog.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("ML Program") && "\(error)".contains("prog.mlmodel"), "\(error)")
        }
        var glm = PB()
        glm.varint(1, 1)
        glm.message(300, PB())
        XCTAssertThrowsError(try CoreMLImporter.parse(glm.data, source: "glm.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("GLM regressor") && "\(error)".contains("not a neural network"), "\(error)")
        }
        var zero = PB()
        zero.message(500, PB())
        XCTAssertThrowsError(try CoreMLImporter.parse(zero.data, source: "zero.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("specificationVersion is 0"), "\(error)")
        }
        XCTAssertThrowsError(try CoreMLImporter.parse(Data("7767517\n".utf8), source: "text.param")) { error in
            XCTAssertTrue("\(error)".contains("text.param"), "\(error)")
        }
        XCTAssertThrowsError(try CoreMLImporter.load(path: "/nonexistent/model.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("/nonexistent/model.mlmodel"), "\(error)")
        }
    }

    func testMeanImageFlexibleSizesAndPackages() throws {
        // An RGB image of flexible size (64…512 wide, 32 or more high) whose preprocessing
        // subtracts a mean image that is constant over each channel.
        var range = PB(), wr = PB(), hr = PB()
        wr.varint(1, 64)
        wr.varint(2, 512)
        hr.varint(1, 32)
        hr.varint(2, UInt64(bitPattern: -1))
        range.message(1, wr)
        range.message(2, hr)
        var image = PB()
        image.varint(3, 20)
        image.message(31, range)
        let feature = Self.feature("rgb", type: 4, image)
        var mean = PB(), meanImage = PB()
        meanImage.packedFloats(1, [Float](repeating: 100, count: 64 * 32) + [Float](repeating: 110, count: 64 * 32) + [Float](repeating: 120, count: 64 * 32))
        mean.string(1, "rgb")
        mean.message(11, meanImage)
        var relu = PB()
        relu.message(10, PB())
        let data = Self.model(input: feature, output: "y", layers: [Self.layer("relu", ["rgb"], ["y"], field: 130, relu)], preprocessing: [mean])
        let model = try CoreMLImporter.parse(data, source: "mean.mlmodel")
        XCTAssertTrue(model.inputIsImage)
        XCTAssertEqual(model.inputShape.map { [$0.c, $0.h, $0.w] }, [3, 32, 64], "the smallest allowed size is the default")
        XCTAssertNil(model.preprocessingScale)
        XCTAssertTrue(model.description.contains("flexible: width 64…512, height 32 or more"), model.description)
        XCTAssertTrue(model.description.contains("subtracts the model's per-channel mean (100.0, 110.0, 120.0)"), model.description)
        let x = Tensor(shape: Shape(c: 3, h: 2, w: 2), data: [99, 100, 101, 102, 109, 120, 111, 0, 255, 119, 121, 120])
        let y = try ReferenceBackend().prepare(model.graph, input: x.shape).run(x)
        XCTAssertEqual(y.data, [0, 0, 1, 2, 0, 10, 1, 0, 135, 0, 1, 0])

        // A mean image that varies across the picture cannot be a per-channel constant.
        meanImage = PB()
        meanImage.packedFloats(1, (0..<(3 * 64 * 32)).map { Float($0 % 7) })
        mean = PB()
        mean.message(11, meanImage)
        let varying = Self.model(input: feature, output: "y", layers: [Self.layer("relu", ["rgb"], ["y"], field: 130, relu)], preprocessing: [mean])
        XCTAssertThrowsError(try CoreMLImporter.parse(varying, source: "varying.mlmodel")) { error in
            XCTAssertTrue("\(error)".contains("mean image that varies"), "\(error)")
        }

        // An .mlpackage folder holds its spec at Data/com.apple.CoreML/model.mlmodel.
        let package = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-coreml-\(getpid()).mlpackage")
        let inner = package.appendingPathComponent("Data/com.apple.CoreML")
        try FileManager.default.createDirectory(at: inner, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: package) }
        try data.write(to: inner.appendingPathComponent("model.mlmodel"))
        XCTAssertEqual(try CoreMLImporter.load(path: package.path).graph.nodes.count, 2)
        try FileManager.default.removeItem(at: inner.appendingPathComponent("model.mlmodel"))
        XCTAssertThrowsError(try CoreMLImporter.load(path: package.path)) { error in
            XCTAssertTrue("\(error)".contains("not a Core ML model package"), "\(error)")
        }
    }

    // MARK: a minimal protobuf writer for hand-made models

    /// Writes protobuf wire format: enough to hand-build Core ML messages by field number.
    struct PB {
        var data = Data()

        mutating func key(_ field: Int, _ wire: UInt64) { raw(UInt64(field) << 3 | wire) }

        mutating func raw(_ v: UInt64) {
            var v = v
            while v >= 0x80 {
                data.append(UInt8(v & 0x7F) | 0x80)
                v >>= 7
            }
            data.append(UInt8(v))
        }

        mutating func varint(_ field: Int, _ v: UInt64) {
            key(field, 0)
            raw(v)
        }

        mutating func float(_ field: Int, _ v: Float) {
            key(field, 5)
            let b = v.bitPattern
            for k in 0..<4 { data.append(UInt8(b >> (8 * k) & 0xFF)) }
        }

        mutating func bytes(_ field: Int, _ d: Data) {
            key(field, 2)
            raw(UInt64(d.count))
            data.append(d)
        }

        mutating func string(_ field: Int, _ s: String) { bytes(field, Data(s.utf8)) }
        mutating func message(_ field: Int, _ m: PB) { bytes(field, m.data) }

        mutating func packedFloats(_ field: Int, _ v: [Float]) {
            var p = PB()
            for x in v { let b = x.bitPattern; for k in 0..<4 { p.data.append(UInt8(b >> (8 * k) & 0xFF)) } }
            bytes(field, p.data)
        }

        mutating func packedInts(_ field: Int, _ v: [Int]) {
            var p = PB()
            for x in v { p.raw(UInt64(bitPattern: Int64(x))) }
            bytes(field, p.data)
        }
    }

    /// FeatureDescription of a FLOAT32 multi-array.
    static func arrayFeature(_ name: String, _ shape: [Int]) -> PB {
        var array = PB()
        array.packedInts(1, shape)
        array.varint(2, 65568)
        return feature(name, type: 5, array)
    }

    /// FeatureDescription whose FeatureType holds `params` at `type` (4 image, 5 multi-array).
    static func feature(_ name: String, type: Int, _ params: PB) -> PB {
        var t = PB(), feature = PB()
        t.message(type, params)
        feature.string(1, name)
        feature.message(3, t)
        return feature
    }

    /// NeuralNetworkLayer with its parameters message at `field`.
    static func layer(_ name: String, _ inputs: [String], _ outputs: [String], field: Int, _ params: PB) -> PB {
        var l = PB()
        l.string(1, name)
        for i in inputs { l.string(2, i) }
        for o in outputs { l.string(3, o) }
        l.message(field, params)
        return l
    }

    /// A Model holding a NeuralNetwork.
    static func model(version: Int = 1, input: PB, output: String, layers: [PB], preprocessing: [PB] = []) -> Data {
        var out = PB(), description = PB(), network = PB(), model = PB()
        out.string(1, output)
        description.message(1, input)
        description.message(10, out)
        for l in layers { network.message(1, l) }
        for p in preprocessing { network.message(2, p) }
        model.varint(1, UInt64(version))
        model.message(2, description)
        model.message(500, network)
        return model.data
    }
}
