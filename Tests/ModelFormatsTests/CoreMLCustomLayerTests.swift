import Engine
import EngineDNNL
import Foundation
@testable import ModelFormats
import XCTest

/// Core ML custom layers lowered through declarations: the chapter-shaped style network of
/// `scripts/coreml_style_fixtures.py` (fp32, fp16, 8-bit linear and LUT weights) against the
/// numpy evaluator, whole frame and tiled, on both backends; a layer with its own weights and
/// parameters; expressions against values computed here; and every refusal.
final class CoreMLCustomLayerTests: XCTestCase {
    static let fixtures = CoreMLNeuralNetworkTests.fixtures.appendingPathComponent("style")

    struct Manifest: Decodable {
        struct Entry: Decodable {
            var name: String, model: String, declarations: String, input: String, output: String, weights: String
            var input_shape: [Int], output_shape: [Int]
            var max_abs_diff_from_fp32: Float?
        }
        var fixtures: [Entry]
    }

    static func manifest() throws -> Manifest {
        try JSONDecoder().decode(Manifest.self, from: Data(contentsOf: fixtures.appendingPathComponent("manifest.json")))
    }

    static func floats(_ name: String) throws -> [Float] {
        try CoreMLNeuralNetworkTests.readFloats(fixtures.appendingPathComponent(name))
    }

    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("custom-layer-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    // MARK: the style network

    /// Every weight format on both backends, whole frame, against the evaluator of the same
    /// saved model (0–255 output; the bar is 1e-4 in [0, 1] units, 0.0255 here), and the
    /// quantised models against the fp32 reference within the quantisation's own error.
    func testStyleNetworkMatchesTheReferenceInEveryWeightFormat() throws {
        let manifest = try Self.manifest()
        XCTAssertEqual(manifest.fixtures.map(\.name), ["style_fp32", "style_fp16", "style_linear8", "style_lut8", "style_bn", "params"])
        let fp32 = try Self.floats("style_fp32.output.f32")
        let backends: [InferenceBackend] = [try DNNLBackend(), ReferenceBackend()]
        var report: [String] = []
        for e in manifest.fixtures where e.name.hasPrefix("style") {
            // The declaration beside the model is found by its name.
            let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent(e.model).path)
            XCTAssertTrue(model.inputIsImage, e.name)
            XCTAssertEqual(model.outputName, "output")
            XCTAssertEqual(model.graph.valueNames[model.graph.output], "output", "the last custom layer's node carries the blob's name")
            let shape = Shape(c: 3, h: 40, w: 40)
            let input = Tensor(shape: shape, data: try Self.floats(e.input))
            let expected = try Self.floats(e.output)
            var cells: [String] = []
            for backend in backends {
                let out = try backend.prepare(model.graph, input: shape).run(input)
                XCTAssertEqual([out.shape.c, out.shape.h, out.shape.w], e.output_shape, "\(e.name) on \(backend.name)")
                let d = CoreMLNeuralNetworkTests.maxDiff(out.data, expected)
                XCTAssertLessThanOrEqual(d / 255, 1e-4, "\(e.name) on \(backend.name) against its reference")
                var cell = String(format: "%@ %.2e", backend.name, d / 255)
                if let q = e.max_abs_diff_from_fp32 {
                    // Against the fp32 model: no further than the quantised weights move it.
                    let dq = CoreMLNeuralNetworkTests.maxDiff(out.data, fp32)
                    XCTAssertLessThanOrEqual(dq, q + 255e-4, "\(e.name) on \(backend.name) against fp32")
                    XCTAssertGreaterThan(dq, 0, "\(e.name): quantised weights change the output")
                    cell += String(format: " (vs fp32 %.2e, quantisation %.2e)", dq / 255, q / 255)
                }
                cells.append(cell)
            }
            report.append("\(e.name) [\(e.weights)]: " + cells.joined(separator: ", "))
        }
        print("Core ML custom-layer style network, max abs diff in [0,1] units, 3x40x40 whole frame:\n" + report.joined(separator: "\n"))
    }

    /// A 3×h×w picture of 0–255 pixels (the fixture's pixels repeated and shifted).
    static func stylePicture(height h: Int, width w: Int) throws -> [Float] {
        let base = try floats("style.input.f32")
        return (0..<(3 * h * w)).map { i -> Float in
            let (c, y, x) = (i / (h * w), i / w % h, i % w)
            return base[c * 1600 + (y * 7 + x / 3) % 40 * 40 + (x + y) % 40]
        }
    }

    static func run(_ runner: TiledRunner, _ input: [Float], height: Int, width: Int) throws -> [Float] {
        var out = [Float](repeating: .nan, count: input.count)
        try input.withUnsafeBufferPointer { i in try out.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: 3, height: height, width: width, output: $0) } }
        return out
    }

    /// Instance normalisation in tiles: with a statistics pass per norm the style network in
    /// small tiles (several per axis, odd picture sizes, a flush last tile) normalises by the
    /// whole picture's statistics and matches the whole frame within the bar on both
    /// backends; a picture that fits one tile runs whole in one pass, bit for bit the
    /// whole-frame run checked against numpy above.
    func testInstanceNormStyleNetworkTilesLikeTheWholeFrame() throws {
        let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("style_fp32.mlmodel").path)
        XCTAssertTrue(model.graph.needsWholeFrame)
        let spec = try TilingSpec.inferred(for: model.graph)
        XCTAssertEqual(spec, TilingSpec(scale: 1, padding: 0, border: .reflect, multiple: 4), "the resolver's spec: one tile, no border")
        let norms = model.graph.instanceNormIndices.count
        XCTAssertGreaterThanOrEqual(norms, 7)
        let fixture = try Self.floats("style.input.f32"), expected = try Self.floats("style_fp32.output.f32")
        var report: [String] = []
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let one = try TiledRunner(graph: model.graph, spec: spec, backend: backend, tileSize: 40)
            XCTAssertEqual(one.passes(height: 40, width: 40), 1)
            let shape = Shape(c: 3, h: 40, w: 40)
            let whole40 = try backend.prepare(model.graph, input: shape).run(Tensor(shape: shape, data: fixture)).data
            let out40 = try Self.run(one, fixture, height: 40, width: 40)
            XCTAssertEqual(out40, whole40, "one tile is the whole frame, bit for bit, on \(backend.name)")
            XCTAssertLessThanOrEqual(CoreMLNeuralNetworkTests.maxDiff(out40, expected) / 255, 1e-4)

            // Odd sizes (rounded up to 4 by the border rule, as the whole frame is), tiles of 20
            // and 28: 5–6 tiles a side, each window the tile and its border clipped to the picture.
            for (h, w, tile) in [(93, 78, 20), (61, 110, 28)] {
                let input = try Self.stylePicture(height: h, width: w)
                let tiled = try TiledRunner(graph: model.graph, spec: spec, backend: backend, tileSize: tile)
                let whole = try TiledRunner(graph: model.graph, spec: spec, backend: backend, tileSize: 4096)
                XCTAssertEqual(tiled.passes(height: h, width: w), norms + 1)
                let a = try Self.run(tiled, input, height: h, width: w), b = try Self.run(whole, input, height: h, width: w)
                XCTAssertFalse(a.contains { $0.isNaN }, "every output pixel written")
                let d = CoreMLNeuralNetworkTests.maxDiff(a, b) / 255
                XCTAssertLessThanOrEqual(d, 1e-4, "\(w)x\(h) in \(tile)-pixel tiles on \(backend.name)")
                let macs = Double(try tiled.multiplyAdds(channels: 3, height: h, width: w)) / Double(try whole.multiplyAdds(channels: 3, height: h, width: w))
                report.append(String(format: "%@ %dx%d/%d: %.1e (%.1f× the whole frame's multiply-adds)", backend.name, w, h, tile, d, macs))
            }
        }
        print("style_fp32 (\(norms) instance norms, \(norms + 1) passes, radius \(model.graph.receptiveRadius())) tiled vs whole, [0,1] units: "
              + report.joined(separator: "; "))
    }

    /// What the statistics passes cost in work and memory (the README's figures): the style
    /// network on a 1920×1080 picture in 512-pixel tiles (480×360 interiors) against the whole
    /// frame and against its batch-norm twin in the same tiles (one pass, the same border).
    func testStyleTilingCostFigures() throws {
        let style = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("style_fp32.mlmodel").path).graph
        let twin = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("style_bn.mlmodel").path).graph
        let (h, w, tile) = (1080, 1920, 512)
        let backend = ReferenceBackend()
        let spec = try TilingSpec.inferred(for: style)
        let tiled = try TiledRunner(graph: style, spec: spec, backend: backend, tileSize: tile)
        let whole = try TiledRunner(graph: style, spec: spec, backend: backend)
        XCTAssertEqual(whole.passes(height: h, width: w), 1, "no --tile, no --max-memory: whole frames")
        // The twin with the border statistics tiling gives (the radius + 2, in fours).
        let border = (style.receptiveRadius() + 2 + 3) / 4 * 4
        let onePass = try TiledRunner(graph: twin, spec: TilingSpec(scale: 1, padding: border, border: .reflect, multiple: 4), backend: backend, tileSize: tile)
        XCTAssertEqual(tiled.tileInterior(height: h, width: w).h, onePass.tileInterior(height: h, width: w).h)
        XCTAssertEqual(tiled.tileInterior(height: h, width: w).w, onePass.tileInterior(height: h, width: w).w)
        let (mt, mw, mb) = (try tiled.multiplyAdds(channels: 3, height: h, width: w), try whole.multiplyAdds(channels: 3, height: h, width: w),
                            try onePass.multiplyAdds(channels: 3, height: h, width: w))
        let passes = tiled.passes(height: h, width: w)
        // Each statistics pass runs the network only up to its norm: less than `passes` times one pass.
        XCTAssertGreaterThan(Double(mt) / Double(mb), 2)
        XCTAssertLessThan(Double(mt) / Double(mb), Double(passes))
        func activationBytes(_ h: Int, _ w: Int) throws -> Int {
            try style.inferShapes(input: Shape(c: 3, h: h, w: w)).compactMap { $0?.count }.reduce(0, +) * 4
        }
        let (th, tw) = tiled.tileInterior(height: h, width: w)
        print(String(format: "style_fp32 %dx%d in %dx%d tiles (border %d), %d passes: multiply-adds ×%.2f the whole frame's, ×%.2f the batch-norm twin's in the same tiles; activations %.0f MB a tile, %.0f MB the whole frame",
                     w, h, tw, th, border, passes, Double(mt) / Double(mw), Double(mt) / Double(mb),
                     Double(try activationBytes(th + 2 * border, tw + 2 * border)) / 1e6, Double(try activationBytes(h, w)) / 1e6))
    }

    /// The batch-norm variant has no whole-picture statistics: in 24-pixel tiles with its
    /// receptive field as the overlap it gives the whole-frame result wherever the picture's
    /// edge is farther than the model's own 16-pixel reflection padding reaches (beyond it the
    /// whole frame sees its "same" convolutions' zeros and the tiles more reflected picture),
    /// on both backends; the 40×40 whole frame is checked against numpy above.
    func testBatchNormStyleNetworkTilesLikeTheWholeFrame() throws {
        let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("style_bn.mlmodel").path)
        XCTAssertFalse(model.graph.needsWholeFrame)
        // Two stride-2 layers: tiles and their borders in multiples of 4, so that every tile's
        // strided grid lies on the picture's (the border rounded up as the resolver does).
        let radius = (model.graph.receptiveRadius() + 3) / 4 * 4
        XCTAssertGreaterThan(radius, 16)
        // A 3×120×104 picture of 0–255 pixels (the fixture's pixels repeated and shifted).
        let (h, w) = (120, 104)
        let input = try Self.stylePicture(height: h, width: w)
        let shape = Shape(c: 3, h: h, w: w)
        var report: [String] = []
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let whole = try backend.prepare(model.graph, input: shape).run(Tensor(shape: shape, data: input)).data
            let runner = try TiledRunner(graph: model.graph, spec: TilingSpec(scale: 1, padding: radius, border: .reflect, multiple: 4), backend: backend, tileSize: 24)
            var tiled = [Float](repeating: 0, count: whole.count)
            try input.withUnsafeBufferPointer { i in try tiled.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: 3, height: h, width: w, output: $0) } }
            let margin = radius - 16
            var inner: Float = 0, edge: Float = 0
            for c in 0..<3 {
                for y in 0..<h {
                    for x in 0..<w {
                        let d = abs(whole[(c * h + y) * w + x] - tiled[(c * h + y) * w + x])
                        if y >= margin, y < h - margin, x >= margin, x < w - margin { inner = max(inner, d) } else { edge = max(edge, d) }
                    }
                }
            }
            XCTAssertLessThanOrEqual(inner / 255, 1e-4, "tiles against the whole frame on \(backend.name)")
            report.append(String(format: "%@: inside %.2e, within %d px of the edge %.2e", backend.name, inner / 255, margin, edge / 255))
        }
        print("style_bn tiled (24 px, overlap \(radius)) vs whole frame, [0,1] units: " + report.joined(separator: "; "))
    }

    // MARK: weights, parameters, expressions

    /// A custom layer's own weights (per-channel scale and bias) and parameters (in an
    /// expression and as a padding amount) against the evaluator.
    func testLayerWeightsAndParametersByName() throws {
        let model = try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("params.mlmodel").path)
        let shape = Shape(c: 3, h: 9, w: 11)
        let input = Tensor(shape: shape, data: try Self.floats("params.input.f32"))
        let expected = try Self.floats("params.output.f32")
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            let out = try backend.prepare(model.graph, input: shape).run(input)
            XCTAssertEqual(out.shape, Shape(c: 4, h: 13, w: 15), "padded by the parameter 'border' = 2")
            XCTAssertLessThanOrEqual(CoreMLNeuralNetworkTests.maxDiff(out.data, expected), 1e-5, backend.name)
        }
    }

    /// Loads params.mlmodel with the custom layer declared as `ops`.
    func paramsModel(_ ops: String) throws -> CoreMLModel {
        let json = "{\"ChannelGainLambda\": {\"ops\": \(ops)}}"
        let decl = try CustomLayerDeclarations(json: JSONSerialization.jsonObject(with: Data(json.utf8)), origin: "the test")
        return try CoreMLImporter.load(path: Self.fixtures.appendingPathComponent("params.mlmodel").path, customLayers: decl)
    }

    func run(_ model: CoreMLModel) throws -> [Float] {
        let shape = Shape(c: 3, h: 9, w: 11)
        return try ReferenceBackend().prepare(model.graph, input: shape).run(Tensor(shape: shape, data: try Self.floats("params.input.f32"))).data
    }

    /// Expressions lower to the values Swift computes from the layer's input (the layer
    /// declared as `x` gives that input).
    func testExpressionsComputeWhatTheyWrite() throws {
        let x = try run(paramsModel("[{\"op\": \"expression\", \"expression\": \"x\"}]"))
        let cases: [(String, (Double) -> Double)] = [
            ("(x + 1) * 127.5", { ($0 + 1) * 127.5 }),
            ("-x / 2 - 3", { -$0 / 2 - 3 }),
            ("2 / (x * x + 1)", { 2 / ($0 * $0 + 1) }),
            ("abs(x) + min(x, 0.25) * max(x, -0.5)", { abs($0) + min($0, 0.25) * max($0, -0.5) }),
            ("clamp(x * gain, -0.5, limit / 3)", { min(max($0 * 1.75, -0.5), 0.5) }),
            ("relu(x) + sigmoid(x) + tanh(x) + silu(x)", { max($0, 0) + 1 / (1 + exp(-$0)) + tanh($0) + $0 / (1 + exp(-$0)) }),
            ("pow(x, 2) + sqrt(abs(x)) + leakyRelu(x, 0.1) + elu(x, 0.5)", { $0 * $0 + abs($0).squareRoot() + ($0 >= 0 ? $0 : 0.1 * $0) + ($0 > 0 ? $0 : 0.5 * (exp($0) - 1)) }),
            ("x * (offset + 1.25) + 1e-1 * 3", { $0 + 0.3 }),
        ]
        for (text, f) in cases {
            let y = try run(paramsModel("[{\"op\": \"expression\", \"expression\": \"\(text)\"}]"))
            XCTAssertEqual(y.count, x.count)
            let d = zip(x, y).map { abs(Double($1) - f(Double($0))) }.max() ?? 0
            XCTAssertLessThanOrEqual(d, 1e-5 * max(1, zip(x, y).map { abs(Double($1)) }.max() ?? 1), text)
        }
        // Constant folding: x + 0 and x * 1 add no node; x + (2 - 2) neither.
        XCTAssertEqual(try paramsModel("[{\"op\": \"expression\", \"expression\": \"(x + (2 - 2)) * 1\"}]").graph.nodes.count,
                       try paramsModel("[{\"op\": \"expression\", \"expression\": \"x\"}]").graph.nodes.count)
    }

    /// The other operations: shapes follow from them.
    func testOperationsGiveTheirShapes() throws {
        let cases: [(String, Shape)] = [
            ("[{\"op\": \"crop\", \"top\": 1, \"left\": 2, \"bottom\": 3, \"right\": 4}]", Shape(c: 4, h: 5, w: 5)),
            ("[{\"op\": \"pad\", \"all\": 1, \"mode\": \"reflect\"}]", Shape(c: 4, h: 11, w: 13)),
            ("[{\"op\": \"resize\", \"scale\": 2, \"mode\": \"bilinear\"}]", Shape(c: 4, h: 18, w: 22)),
            ("[{\"op\": \"resize\", \"scaleH\": 3, \"scaleW\": 1}]", Shape(c: 4, h: 27, w: 11)),
            ("[{\"op\": \"pixelShuffle\", \"factor\": 2}]", Shape(c: 1, h: 18, w: 22)),
            ("[{\"op\": \"activation\", \"function\": \"leakyRelu\", \"slope\": 0.2}, {\"op\": \"clamp\", \"min\": 0}]", Shape(c: 4, h: 9, w: 11)),
            ("[{\"op\": \"scaleBias\", \"scale\": [1, 2, 3, 4], \"bias\": {\"param\": \"offset\"}}]", Shape(c: 4, h: 9, w: 11)),
        ]
        for (ops, shape) in cases {
            let g = try paramsModel(ops).graph
            XCTAssertEqual(try g.inferShapes(input: Shape(c: 3, h: 9, w: 11))[g.output], shape, ops)
        }
        let x = try run(paramsModel("[{\"op\": \"expression\", \"expression\": \"x\"}]"))
        let y = try run(paramsModel("[{\"op\": \"activation\", \"function\": \"leakyRelu\", \"slope\": 0.2}, {\"op\": \"clamp\", \"min\": 0, \"max\": 0.5}]"))
        XCTAssertEqual(zip(x, y).map { abs(min(max($0 >= 0 ? $0 : 0.2 * $0, 0), 0.5) - $1) }.max() ?? 1, 0, accuracy: 1e-6)
    }

    // MARK: refusals

    func testUndeclaredClassNamesTheClassItsDescriptionAndTheKey() throws {
        // The model alone, without its .layers.json.
        let bare = scratch.appendingPathComponent("style.mlmodel")
        try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent("style_fp32.mlmodel"), to: bare)
        XCTAssertThrowsError(try CoreMLImporter.load(path: bare.path)) { error in
            let e = error as! ModelFormatError
            XCTAssertEqual(e.kind, .unsupported)  // exit 69
            for part in ["res_crop_1", "ResCropBlockLambda", "return x[:, 2:-2, 2:-2]", "customLayers.ResCropBlockLambda", "manifest.json",
                         bare.deletingPathExtension().path + ".layers.json"] {
                XCTAssertTrue(e.message.contains(part), "'\(part)' missing from: \(e.message)")
            }
        }
        // Declarations that leave one class out name the ones they have.
        try #"{"customLayers": {"ResCropBlockLambda": {"ops": [{"op": "crop", "all": 2}]}}}"#
            .write(to: scratch.appendingPathComponent("style.layers.json"), atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try CoreMLImporter.load(path: bare.path)) { error in
            let e = error as! ModelFormatError
            XCTAssertEqual(e.kind, .unsupported)
            XCTAssertTrue(e.message.contains("RescaleOutputLambda") && e.message.contains("Rescale output using ((x+1)*127.5)"), e.message)
            XCTAssertTrue(e.message.contains("do not name it (they declare 'ResCropBlockLambda')"), e.message)
        }
    }

    /// Bad declarations: each refused with the key path and a fix, never a trap.
    func testBadDeclarationsAreRefusedWithTheirKey() throws {
        let cases: [(String, String)] = [
            (#"[]"#, "`customLayers` is [] (an array), but it must be an object"),
            (#"{"A": []}"#, "`customLayers.A` is [] (an array), but a declaration is an object"),
            (#"{"A": {"ops": 3}}"#, "`customLayers.A.ops` is 3 (a number), not an array"),
            (#"{"A": {"ops": [], "code": "x"}}"#, "`customLayers.A.code` is not a key of a declaration"),
            (#"{"A": {"ops": [{"op": "conv"}]}}"#, "`customLayers.A.ops[0].op` is \"conv\", which is not an operation"),
            (#"{"A": {"ops": [{"op": "crop", "all": -1}]}}"#, "`customLayers.A.ops[0].all` is -1.0, not a whole number of pixels"),
            (#"{"A": {"ops": [{"op": "crop", "all": 1.5}]}}"#, "`customLayers.A.ops[0].all` is 1.5"),
            (#"{"A": {"ops": [{"op": "crop", "all": 1e9}]}}"#, "not a whole number of pixels 0–1024"),
            (#"{"A": {"ops": [{"op": "crop", "all": 2, "top": 1}]}}"#, "`customLayers.A.ops[0].top` is given with `all`"),
            (#"{"A": {"ops": [{"op": "crop"}]}}"#, "`customLayers.A.ops[0]` gives no amounts"),
            (#"{"A": {"ops": [{"op": "crop", "all": "2"}]}}"#, "is \"2\" (a string), not a number"),
            (#"{"A": {"ops": [{"op": "crop", "all": true}]}}"#, "is true (a boolean), not a number"),
            (#"{"A": {"ops": [{"op": "crop", "all": 2, "scale": 2}]}}"#, "`customLayers.A.ops[0].scale` is not a key of the `crop` operation"),
            (#"{"A": {"ops": [{"op": "pad", "all": 2, "mode": "wrap"}]}}"#, "`customLayers.A.ops[0].mode` is \"wrap\""),
            (#"{"A": {"ops": [{"op": "expression", "expression": "(x + 1"}]}}"#, "does not parse: ')' expected at the end"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "x ** 2"}]}}"#, "does not parse: unexpected '*' at character 4"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "exp(x)"}]}}"#, "'exp' is not a function at character 1"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "clamp(x, 0)"}]}}"#, "clamp takes 3 arguments, not 2"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "tanh + x"}]}}"#, "'tanh' is a function: write tanh(…)"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "x + 1e999"}]}}"#, "is not a finite number"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "\#(String(repeating: "(", count: 5000))x\#(String(repeating: ")", count: 5000))"}]}}"#, "characters long, over 1000"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "\#(String(repeating: "(", count: 400))x\#(String(repeating: ")", count: 400))"}]}}"#, "nesting deeper than 32"),
            (#"{"A": {"ops": [{"op": "expression", "expression": "\#(String(repeating: "-", count: 600))x"}]}}"#, "nesting deeper than 32"),
            (#"{"A": {"ops": [{"op": "clamp", "min": 2, "max": 1}]}}"#, "`customLayers.A.ops[0].min` is 2.0, above `max` 1.0"),
            (#"{"A": {"ops": [{"op": "activation", "function": "gelu"}]}}"#, "`customLayers.A.ops[0].function` is \"gelu\""),
            (#"{"A": {"ops": [{"op": "activation", "function": "relu", "slope": 1}]}}"#, "`customLayers.A.ops[0].slope` only applies to leakyRelu"),
            (#"{"A": {"ops": [{"op": "scaleBias", "scale": {"weights": -1}}]}}"#, "Write {\"weights\": K}"),
            (#"{"A": {"ops": [{"op": "scaleBias", "scale": {"param": 3}}]}}"#, "{\"param\": \"NAME\"}"),
            (#"{"A": {"ops": [{"op": "resize", "scale": 100}]}}"#, "`customLayers.A.ops[0].scale` is 100.0, outside 1/16–16"),
            (#"{"A": {"ops": [{"op": "resize", "scale": 2, "scaleH": 2}]}}"#, "has both `scale` and `scaleH`/`scaleW`"),
            (#"{"A": {"ops": [{"op": "pixelShuffle", "factor": 0}]}}"#, "`customLayers.A.ops[0].factor` is 0.0, not a whole number 1–16"),
        ]
        for (json, expected) in cases {
            XCTAssertThrowsError(try CustomLayerDeclarations(json: JSONSerialization.jsonObject(with: Data(json.utf8), options: .fragmentsAllowed), origin: "'t.layers.json'"), json) { error in
                guard let e = error as? ModelFormatError else { return XCTFail("\(json): \(error)") }
                XCTAssertEqual(e.kind, .malformed, json)
                XCTAssertTrue(e.message.contains(expected), "\(json):\n  \(e.message)\n  lacks: \(expected)")
                XCTAssertTrue(e.message.contains("'t.layers.json'"), e.message)
            }
        }
        // The file form: one key, valid JSON.
        let file = scratch.appendingPathComponent("m.layers.json")
        for (text, expected) in [("{\"layers\": {}}", "must hold one key, `customLayers`, not `layers`"), ("{\"customLayers\": {", "are not valid JSON"), ("[1]", "must be a JSON object")] {
            try text.write(to: file, atomically: true, encoding: .utf8)
            XCTAssertThrowsError(try CustomLayerDeclarations.read(path: file.path)) { error in
                XCTAssertTrue((error as? ModelFormatError)?.message.contains(expected) ?? false, "\(text): \(error)")
            }
        }
    }

    /// Declarations that parse but do not fit the layer: refused when the model loads.
    func testDeclarationsThatDoNotFitTheLayerAreRefusedAtLoad() throws {
        let cases: [(String, String)] = [
            (#"[{"op": "expression", "expression": "x * scale"}]"#, "reads parameter 'scale', which the layer does not have (it has 'border', 'gain', 'limit', 'offset')"),
            (#"[{"op": "scaleBias", "scale": {"weights": 2}}]"#, "reads weights[2], but the layer has 2 weight arrays"),
            (#"[{"op": "scaleBias", "scale": [1, 2, 3]}]"#, "has 3 values for an input of 4 channels"),
            (#"[{"op": "expression", "expression": "gain * 2"}]"#, "does not depend on x"),
            (#"[{"op": "expression", "expression": "x / (offset + 0.25)"}]"#, "divides by a constant 0"),
            (#"[{"op": "expression", "expression": "x + 1 / (offset + 0.25)"}]"#, "folds to inf"),
            (#"[{"op": "expression", "expression": "clamp(x, x, 1)"}]"#, "has a lower bound that depends on x"),
            (#"[{"op": "pad", "all": {"param": "gain"}}]"#, "comes to 1.75, not a whole number 0–1024"),
            (#"[{"op": "crop", "all": 5}]"#, "crop"),
        ]
        for (ops, expected) in cases {
            XCTAssertThrowsError(try paramsModel(ops), ops) { error in
                let message = (error as? ModelFormatError)?.message ?? (error as? EngineError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(expected), "\(ops):\n  \(message)\n  lacks: \(expected)")
                XCTAssertTrue(message.contains("params.mlmodel"), message)
            }
        }
    }
}
