import Engine
import EngineDNNL
import Foundation
@testable import ModelFormats
import XCTest

/// Compiled custom layers (`--custom-layers`): a C library built here with cc runs the style
/// network's two layers on both backends against the numpy reference, whole and (placed by
/// the geometry the library gives, ABI version 2) in tiles; a version-1 library runs whole;
/// and each wrong answer of a library (wrong shape, a zero size, NaN, a value left unwritten,
/// an error return, a geometry its shapes or values contradict, another ABI version, a
/// missing function) is refused with a message naming it.
final class CompiledCustomLayerTests: XCTestCase {
    static let source = CoreMLNeuralNetworkTests.fixtures.deletingLastPathComponent().appendingPathComponent("custom-layers/fault_layers.c")
    /// No declarations at all, so that the library is asked (the fixtures have theirs beside them).
    static let undeclared = CustomLayerDeclarations(classes: [:], origin: "the test (none)")

    var scratch: URL!
    /// The compiled custom layer library the importer is given (`--custom-layers`).
    var library: String?

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("compiled-layer-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        CompiledCustomLayers.checksGeometryValues.store(true, ordering: .relaxed)
        unsetenv("VIVIFY_TEST_FAULT")
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Builds the test library (extra cc flags in `flags`) and returns its path.
    func build(_ name: String, flags: [String] = []) throws -> String {
        let out = scratch.appendingPathComponent(name).path
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["cc", "-shared", "-fPIC", "-O1", "-o", out, Self.source.path] + flags + ["-lm"]
        let err = Pipe()
        p.standardError = err
        try p.run()
        let message = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { throw XCTSkip("cc could not build the test library: \(message)") }
        return out
    }

    func load(_ fixture: String = "style_fp32") throws -> CoreMLModel {
        try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent(fixture + ".mlmodel").path, customLayers: Self.undeclared, library: library)
    }

    func run(_ model: CoreMLModel, on backend: InferenceBackend) throws -> [Float] {
        let shape = Shape(c: 3, h: 40, w: 40)
        return try backend.prepare(model.graph, input: shape).run(Tensor(shape: shape, data: try CoreMLCustomLayerTests.floats("style.input.f32"))).data
    }

    func testCompiledLayersMatchTheReferenceOnBothBackends() throws {
        library = try build("libfault.so")
        var report: [String] = []
        for fixture in ["style_fp32", "style_fp16", "style_linear8", "style_lut8"] {
            let model = try load(fixture)
            XCTAssertEqual(model.graph.nodes.filter { if case .external = $0.op { return true } else { return false } }.count, 3, "two crops and a rescale")
            XCTAssertTrue(model.description.contains("compiled library"), model.description)
            let expected = try CoreMLCustomLayerTests.floats(fixture + ".output.f32")
            for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
                let d = CoreMLNeuralNetworkTests.maxDiff(try run(model, on: backend), expected) / 255
                XCTAssertLessThanOrEqual(d, 1e-4, "\(fixture) on \(backend.name)")
                report.append(String(format: "%@ %@ %.2e", fixture, backend.name, d))
            }
        }
        print("compiled custom layers vs numpy reference, [0,1] units: " + report.joined(separator: ", "))
    }

    /// A library whose crop answers no crop: the layer after it does not fit, at load. (A
    /// version-1 library: one of version 2 meets its geometry's checks first, below.)
    func testWrongShapeIsRefusedAtLoad() throws {
        library = try build("libfault1.so", flags: ["-DABI_VERSION=1"])
        setenv("VIVIFY_TEST_FAULT", "shape", 1)
        XCTAssertThrowsError(try load()) { error in
            let e = error as! EngineError
            XCTAssertEqual(e.kind, .invalidGraph)
            XCTAssertTrue(e.message.contains("add_1") && e.message.contains("style_fp32.mlmodel"), e.message)
        }
        setenv("VIVIFY_TEST_FAULT", "zero", 1)
        XCTAssertThrowsError(try load()) { error in
            let e = error as! EngineError
            XCTAssertEqual(e.kind, .invalidGraph)
            for part in ["res_crop_1", "class 'ResCropBlockLambda'", "libfault1.so", "answers output shape 16x0x14", "output_shape is wrong"] {
                XCTAssertTrue(e.message.contains(part), "'\(part)' missing: \(e.message)")
            }
        }
    }

    /// NaN, a value left unwritten, an error return: each found when the layer runs. (A
    /// version-1 library: the values' check of a version-2 geometry would meet them at load.)
    func testBadValuesAndFailuresAreCaughtWhenTheLayerRuns() throws {
        library = try build("libfault1.so", flags: ["-DABI_VERSION=1"])
        let cases: [(String, EngineError.Kind, [String])] = [
            ("nan", .nonFiniteOutput, ["class 'RescaleOutputLambda'", "gave nan at channel 1, row 2, column 3"]),
            ("unwritten", .nonFiniteOutput, ["gave nan at channel 2, row 39, column 39", "left unwritten"]),
            ("fail", .invalidGraph, ["class 'RescaleOutputLambda'", "failed on a 1x3x40x40 input: the test library was told to fail"]),
        ]
        for (fault, kind, parts) in cases {
            setenv("VIVIFY_TEST_FAULT", fault, 1)
            let model = try load()
            for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
                XCTAssertThrowsError(try run(model, on: backend), "\(fault) on \(backend.name)") { error in
                    let e = error as! EngineError
                    XCTAssertEqual(e.kind, kind, e.message)
                    for part in parts { XCTAssertTrue(e.message.contains(part), "\(fault): '\(part)' missing: \(e.message)") }
                }
            }
        }
    }

    /// Libraries that are not what the flag promises.
    func testLibrariesThatDoNotFitAreRefused() throws {
        for (path, kind, words) in [
            (try build("libv3.so", flags: ["-DABI_VERSION=3"]), ModelFormatError.Kind.unsupported, "speaks ABI version 3; this Vivify speaks versions 1–2"),
            (scratch.appendingPathComponent("absent.so").path, .unreadable, "no such file"),
            (CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_fp32.mlmodel").path, .unreadable, "Cannot load the custom layer library"),
        ] {
            library = path
            XCTAssertThrowsError(try load(), path) { error in
                let e = error as! ModelFormatError
                XCTAssertEqual(e.kind, kind, e.message)
                XCTAssertTrue(e.message.contains(words), e.message)
            }
        }
        // Without the flag's library, or with one that lacks the class: the undeclared error.
        library = nil
        XCTAssertThrowsError(try load()) { XCTAssertTrue("\($0)".contains("--custom-layers"), "\($0)") }
        // Declarations win over the library where both cover a class.
        library = try build("libfault.so")
        let declared = try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_fp32.mlmodel").path, library: library)
        XCTAssertFalse(declared.graph.nodes.contains { if case .external = $0.op { return true } else { return false } })
    }

    // MARK: tiles, through the geometry

    static func isExternal(_ n: Node) -> Bool { if case .external = n.op { return true } else { return false } }

    /// The compiled network in tiles with statistics passes, placed through the geometry the
    /// library gives: at 40×40 in 20-pixel tiles against the numpy reference, and on pictures
    /// of 72×60 and 78×90 in 24- and 28-pixel tiles (windows that end inside the picture: the
    /// border is 32) against the whole frame, on oneDNN and the reference.
    func testCompiledLayersTileLikeTheWholeFrameAndTheReference() throws {
        library = try build("libfault.so")
        let model = try load()
        let graph = model.graph
        XCTAssertEqual(graph.nodes.filter(Self.isExternal).count, 3)
        XCTAssertTrue(graph.unplacedExternalKernels.isEmpty)
        XCTAssertNotNil(graph.placements(), "the compiled layers are placed like the declared ones")
        XCTAssertTrue(model.description.contains("in tiles like the engine's own layers"), model.description)
        let declared = try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_fp32.mlmodel").path, library: library).graph
        XCTAssertEqual(graph.receptiveRadius(), declared.receptiveRadius(), "the same radius as the declared crop gives")
        let spec = try TilingSpec.inferred(for: graph)
        let fixture = try CoreMLCustomLayerTests.floats("style.input.f32"), expected = try CoreMLCustomLayerTests.floats("style_fp32.output.f32")
        var report: [String] = []
        for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
            var clock = Date()
            func lap() -> Double { defer { clock = Date() }; return Date().timeIntervalSince(clock) }
            let small = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 20)
            XCTAssertEqual(small.passes(height: 40, width: 40), graph.instanceNormIndices.count + 1)
            let d40 = CoreMLNeuralNetworkTests.maxDiff(try CoreMLCustomLayerTests.run(small, fixture, height: 40, width: 40), expected) / 255
            XCTAssertLessThanOrEqual(d40, 1e-4, "40x40 in 20-pixel tiles against the reference on \(backend.name)")
            report.append(String(format: "%@ 40x40/20 vs reference %.1e (%.1f s)", backend.name, d40, lap()))
            let (h, w, tile) = backend is ReferenceBackend ? (90, 78, 28) : (60, 72, 24)
            let input = try CoreMLCustomLayerTests.stylePicture(height: h, width: w)
            let tiled = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: tile)
            XCTAssertGreaterThan(tiled.passes(height: h, width: w), 1)
            let whole = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 4096)
            let a = try CoreMLCustomLayerTests.run(tiled, input, height: h, width: w)
            let tiledSeconds = lap()
            let b = try CoreMLCustomLayerTests.run(whole, input, height: h, width: w)
            XCTAssertFalse(a.contains { $0.isNaN }, "every output pixel written")
            let d = CoreMLNeuralNetworkTests.maxDiff(a, b) / 255
            XCTAssertLessThanOrEqual(d, 1e-4, "\(w)x\(h) in \(tile)-pixel tiles on \(backend.name)")
            report.append(String(format: "%@ %dx%d/%d vs whole %.1e (tiles %.1f s, whole %.1f s)", backend.name, w, h, tile, d, tiledSeconds, lap()))
        }
        print("compiled custom layers in tiles, [0,1] units: " + report.joined(separator: "; "))
    }

    /// Issue 32's bar across its whole matrix: the fp16 and 8-bit (linear, LUT) weight
    /// formats, declared and compiled, in 20-pixel tiles with statistics passes on both
    /// backends, each within 1e-4 of its own numpy reference (fp32 is above).
    func testEveryWeightFormatTilesDeclaredAndCompiled() throws {
        let fixture = try CoreMLCustomLayerTests.floats("style.input.f32")
        var report: [String] = []
        for format in ["style_fp16", "style_linear8", "style_lut8"] {
            let expected = try CoreMLCustomLayerTests.floats(format + ".output.f32")
            library = nil
            let declared = try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent(format + ".mlmodel").path, library: library).graph
            library = try build("libfault-\(format).so")
            let compiled = try load(format).graph
            XCTAssertEqual(compiled.nodes.filter(Self.isExternal).count, 3, format)
            for (how, graph) in [("declared", declared), ("compiled", compiled)] {
                let spec = try TilingSpec.inferred(for: graph)
                for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
                    let runner = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 20)
                    XCTAssertEqual(runner.passes(height: 40, width: 40), graph.instanceNormIndices.count + 1, "\(format) \(how): tiles with statistics")
                    let d = CoreMLNeuralNetworkTests.maxDiff(try CoreMLCustomLayerTests.run(runner, fixture, height: 40, width: 40), expected) / 255
                    XCTAssertLessThanOrEqual(d, 1e-4, "\(format) \(how) in 20-pixel tiles on \(backend.name)")
                    report.append(String(format: "%@ %@ %@ %.1e", format, how, backend.name, d))
                }
            }
        }
        print("every weight format in 20-pixel tiles against its reference, [0,1] units: " + report.joined(separator: ", "))
    }

    /// The batch-norm twin (no whole-picture statistics): with its layers compiled it tiles in
    /// one pass (plain tiles, the receptive radius as border) and gives, tile for tile, what
    /// the declared layers give in the same tiles.
    func testBatchNormTwinTilesInOnePassLikeItsDeclaredLayers() throws {
        library = try build("libfault.so")
        let compiled = try load("style_bn").graph
        let declared = try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_bn.mlmodel").path, library: library).graph
        XCTAssertFalse(compiled.needsWholeFrame)
        XCTAssertEqual(compiled.receptiveRadius(), declared.receptiveRadius())
        let spec = TilingSpec(scale: 1, padding: (compiled.receptiveRadius() + 3) / 4 * 4, border: .reflect, multiple: 4)
        XCTAssertEqual(try TilingSpec.inferred(for: compiled), try TilingSpec.inferred(for: declared))
        let (h, w) = (60, 72)
        let input = try CoreMLCustomLayerTests.stylePicture(height: h, width: w)
        let a = try CoreMLCustomLayerTests.run(TiledRunner(graph: compiled, spec: spec, backend: ReferenceBackend(), tileSize: 24), input, height: h, width: w)
        let b = try CoreMLCustomLayerTests.run(TiledRunner(graph: declared, spec: spec, backend: ReferenceBackend(), tileSize: 24), input, height: h, width: w)
        XCTAssertFalse(a.contains { $0.isNaN })
        let d = CoreMLNeuralNetworkTests.maxDiff(a, b) / 255
        XCTAssertLessThanOrEqual(d, 1e-4)
        print(String(format: "style_bn compiled vs declared, 72x60 in 24-pixel tiles (one pass), [0,1] units: %.1e", d))
    }

    /// A version-1 library (its geometry function, exported, is not called) and a version-2
    /// one whose layers say they may look anywhere: the network runs on whole frames, tiles
    /// asked or not, and says why.
    func testLayersWithoutAGeometryRunOnWholeFrames() throws {
        let fixture = try CoreMLCustomLayerTests.floats("style.input.f32"), expected = try CoreMLCustomLayerTests.floats("style_fp32.output.f32")
        for (name, flags, fault, words) in [("libv1.so", ["-DABI_VERSION=1"], nil, "speaks ABI version 1"),
                                            ("libfault.so", [], "geometry-anywhere", "gives no geometry")] as [(String, [String], String?, String)] {
            library = try build(name, flags: flags)
            if let fault { setenv("VIVIFY_TEST_FAULT", fault, 1) } else { unsetenv("VIVIFY_TEST_FAULT") }
            let model = try load()
            XCTAssertTrue(model.description.contains("on whole frames") && model.description.contains(words), model.description)
            XCTAssertEqual(model.graph.unplacedExternalKernels.count, 2, "\(model.graph.unplacedExternalKernels)")
            XCTAssertTrue(model.graph.unplacedExternalKernels.allSatisfy { $0.contains(name) })
            XCTAssertNil(model.graph.placements())
            let runner = try TiledRunner(graph: model.graph, spec: try TilingSpec.inferred(for: model.graph), backend: ReferenceBackend(), tileSize: 20)
            XCTAssertNil(runner.statisticsPasses, name)
            XCTAssertEqual(runner.passes(height: 40, width: 40), 1)
            let d = CoreMLNeuralNetworkTests.maxDiff(try CoreMLCustomLayerTests.run(runner, fixture, height: 40, width: 40), expected) / 255
            XCTAssertLessThanOrEqual(d, 1e-4, name)
        }
    }

    /// A geometry the library's own shapes contradict, one its values contradict (pointwise,
    /// but reading 12 columns away: the right sizes, only the values show it), and one out of
    /// range: each refused at load, naming the library and the class. With the values' check
    /// off, that second geometry loads and its tiles are far from the whole frame: what the
    /// check prevents, and proof that the tiling test above would catch a wrong geometry.
    /// (A crop placed one position off, by contrast, disagrees with the residual branch's
    /// placement: the graph is not placed and runs whole, never wrong.)
    func testAGeometryTheLibraryContradictsIsRefused() throws {
        let lib = try build("libfault.so")
        library = lib
        for (fault, words) in [("geometry-shape", ["res_crop_1", "class 'ResCropBlockLambda'", "a crop of 1 from each side", "output_shape answers 14x14", "contradicts itself"]),
                               ("geometry-reach", ["rescale_output", "class 'RescaleOutputLambda'", "as pointwise", "changes (by", "geometry is wrong"])] {
            setenv("VIVIFY_TEST_FAULT", fault, 1)
            XCTAssertThrowsError(try load(), fault) { error in
                let e = error as! EngineError
                XCTAssertEqual(e.kind, .invalidGraph)
                for part in words + ["libfault.so", "style_fp32.mlmodel"] { XCTAssertTrue(e.message.contains(part), "\(fault): '\(part)' missing: \(e.message)") }
            }
        }
        setenv("VIVIFY_TEST_FAULT", "geometry-range", 1)
        XCTAssertThrowsError(try load()) { error in
            let e = error as! ModelFormatError
            for part in ["libfault.so", "class 'ResCropBlockLambda'", "scale 0 (1–16)"] { XCTAssertTrue(e.message.contains(part), "'\(part)' missing: \(e.message)") }
        }

        CompiledCustomLayers.checksGeometryValues.store(false, ordering: .relaxed)
        setenv("VIVIFY_TEST_FAULT", "geometry-reach", 1)
        let graph = try load().graph
        let spec = try TilingSpec.inferred(for: graph)
        // Windows of 24 + 2·32 columns: the first ends inside the 72-column picture.
        let (h, w) = (24, 72)
        let input = try CoreMLCustomLayerTests.stylePicture(height: h, width: w)
        let tiled = try TiledRunner(graph: graph, spec: spec, backend: ReferenceBackend(), tileSize: 24)
        XCTAssertGreaterThan(tiled.passes(height: h, width: w), 1)
        let whole = try TiledRunner(graph: graph, spec: spec, backend: ReferenceBackend(), tileSize: 4096)
        XCTAssertNotNil(tiled.statisticsPasses, "placed by the wrong geometry")
        let d = CoreMLNeuralNetworkTests.maxDiff(try CoreMLCustomLayerTests.run(tiled, input, height: h, width: w), try CoreMLCustomLayerTests.run(whole, input, height: h, width: w)) / 255
        XCTAssertGreaterThan(d, 1e-2, "a wrong geometry's tiles differ from the whole frame")
        print(String(format: "a wrong geometry (the rescale said pointwise, reading 12 columns away) in 24-pixel tiles vs whole: %.1e", d))
    }
}
