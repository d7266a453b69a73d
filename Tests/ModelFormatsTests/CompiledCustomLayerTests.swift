import Engine
import EngineDNNL
import Foundation
@testable import ModelFormats
import XCTest

/// Compiled custom layers (`--custom-layers`): a C library built here with cc runs the style
/// network's two layers on both backends against the numpy reference, and each wrong answer
/// of a library (wrong shape, a zero size, NaN, a value left unwritten, an error return,
/// another ABI version, a missing function) is refused with a message naming it.
final class CompiledCustomLayerTests: XCTestCase {
    static let source = CoreMLNeuralNetworkTests.fixtures.deletingLastPathComponent().appendingPathComponent("custom-layers/fault_layers.c")
    /// No declarations at all, so that the library is asked (the fixtures have theirs beside them).
    static let undeclared = CustomLayerDeclarations(classes: [:], origin: "the test (none)")

    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("compiled-layer-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        CompiledCustomLayers.libraryPath = nil
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
        try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent(fixture + ".mlmodel").path, customLayers: Self.undeclared)
    }

    func run(_ model: CoreMLModel, on backend: InferenceBackend) throws -> [Float] {
        let shape = Shape(c: 3, h: 40, w: 40)
        return try backend.prepare(model.graph, input: shape).run(Tensor(shape: shape, data: try CoreMLCustomLayerTests.floats("style.input.f32"))).data
    }

    func testCompiledLayersMatchTheReferenceOnBothBackends() throws {
        CompiledCustomLayers.libraryPath = try build("libfault.so")
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

    /// A library whose crop answers no crop: the layer after it does not fit, at load.
    func testWrongShapeIsRefusedAtLoad() throws {
        CompiledCustomLayers.libraryPath = try build("libfault.so")
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
            for part in ["res_crop_1", "class 'ResCropBlockLambda'", "libfault.so", "answers output shape 16x0x14", "output_shape is wrong"] {
                XCTAssertTrue(e.message.contains(part), "'\(part)' missing: \(e.message)")
            }
        }
    }

    /// NaN, a value left unwritten, an error return: each found when the layer runs.
    func testBadValuesAndFailuresAreCaughtWhenTheLayerRuns() throws {
        CompiledCustomLayers.libraryPath = try build("libfault.so")
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
            (try build("libv2.so", flags: ["-DABI_VERSION=2"]), ModelFormatError.Kind.unsupported, "speaks ABI version 2; this Vivify speaks version 1"),
            (scratch.appendingPathComponent("absent.so").path, .unreadable, "no such file"),
            (CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_fp32.mlmodel").path, .unreadable, "Cannot load the custom layer library"),
        ] {
            CompiledCustomLayers.libraryPath = path
            XCTAssertThrowsError(try load(), path) { error in
                let e = error as! ModelFormatError
                XCTAssertEqual(e.kind, kind, e.message)
                XCTAssertTrue(e.message.contains(words), e.message)
            }
        }
        // Without the flag's library, or with one that lacks the class: the undeclared error.
        CompiledCustomLayers.libraryPath = nil
        XCTAssertThrowsError(try load()) { XCTAssertTrue("\($0)".contains("--custom-layers"), "\($0)") }
        // Declarations win over the library where both cover a class.
        CompiledCustomLayers.libraryPath = try build("libfault.so")
        let declared = try CoreMLImporter.load(path: CoreMLCustomLayerTests.fixtures.appendingPathComponent("style_fp32.mlmodel").path)
        XCTAssertFalse(declared.graph.nodes.contains { if case .external = $0.op { return true } else { return false } })
    }
}
