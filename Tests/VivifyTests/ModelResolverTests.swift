import Foundation
import MediaIO
import ModelCatalog
import ModelFormats
import Models
import Vivify
import XCTest

/// One resolver for every kind of model argument (built-in name, catalog name, path of each
/// format in the table, bundle), with a did-you-mean for every kind of name.
final class ModelResolverTests: XCTestCase {
    static let root = CoreMLCatalogUpscalerTests.root
    static let mirror = CoreMLCatalogUpscalerTests.mirror

    func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-resolver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func requireMirror() throws {
        guard FileManager.default.fileExists(atPath: Self.mirror.appendingPathComponent("ncnn").path) else {
            throw XCTSkip("\(Self.mirror.path) is not present")
        }
    }

    /// (Moved here from the model store, which now resolves catalog names only.) A user's
    /// `.param` needs its `.bin` beside it; one that is byte for byte a catalog model gets that
    /// model's tiling rules.
    func testParamPathNeedsTheBinBesideItAndACatalogTwinGetsItsTiling() throws {
        try requireMirror()
        let dir = try temporaryDirectory()
        let param = dir.appendingPathComponent("custom.param")
        let source = Self.mirror.appendingPathComponent("ncnn/waifu2x-upconv7-art")
        try FileManager.default.copyItem(at: source.appendingPathComponent("scale2.0x_model.param"), to: param)
        let store = ModelStore(directory: dir.appendingPathComponent("models"), mirror: Self.mirror)
        XCTAssertThrowsError(try Upscaler(model: param.path, store: store)) { error in
            let e = error as? MediaError
            XCTAssertEqual(e?.kind, .inputUnreadable)
            XCTAssertEqual(VivifyExitCode(e!.kind), .noInput)
            XCTAssertTrue("\(error)".contains(dir.appendingPathComponent("custom.bin").path), "\(error)")
        }
        try FileManager.default.copyItem(at: source.appendingPathComponent("scale2.0x_model.bin"), to: dir.appendingPathComponent("custom.bin"))
        let custom = try Upscaler(model: param.path, store: store)
        XCTAssertEqual(custom.name, "custom")
        XCTAssertEqual(custom.scale, 2)
        let catalog = try Upscaler(model: "waifu2x-art-2x", store: store)
        XCTAssertEqual(custom.spec.padding, catalog.spec.padding)
        XCTAssertEqual(custom.spec.border, catalog.spec.border)
    }

    func testBadPathsNameTheFileAndTheFormatsThatWork() throws {
        let dir = try temporaryDirectory()
        XCTAssertThrowsError(try Upscaler(model: dir.appendingPathComponent("absent.param").path)) { error in
            XCTAssertEqual((error as? MediaError)?.kind, .inputUnreadable)
            XCTAssertTrue("\(error)".contains("absent.param") && "\(error)".contains("no such file"), "\(error)")
        }
        // A format Vivify does not read: the message lists every one it does.
        let tflite = dir.appendingPathComponent("model.tflite")
        try Data([0, 1, 2]).write(to: tflite)
        for attempt in [{ _ = try Upscaler(model: tflite.path) }, { _ = try Colorizer(model: tflite.path, stabilize: false) }] {
            XCTAssertThrowsError(try attempt()) { error in
                XCTAssertEqual((error as? MediaError)?.kind, .unsupported)
                let text = "\(error)"
                XCTAssertTrue(text.contains("model.tflite"), text)
                for ext in ModelFileFormat.allExtensions { XCTAssertTrue(text.contains("." + ext), "\(text) should list .\(ext)") }
            }
        }
        // A damaged file of a format it reads (ONNX) is malformed, named, not "unsupported".
        let onnx = dir.appendingPathComponent("model.onnx")
        try Data([0, 1, 2]).write(to: onnx)
        XCTAssertThrowsError(try Upscaler(model: onnx.path)) { error in
            XCTAssertEqual((error as? ModelFormatError)?.kind, .malformed, "\(error)")
            XCTAssertTrue("\(error)".contains("model.onnx") && "\(error)".contains("damaged"), "\(error)")
        }
    }

    /// A misspelt name of each kind gets the right name suggested; a name of the other task
    /// says which option takes it.
    func testDidYouMeanForEveryKindOfName() throws {
        let store = ModelStore(directory: try temporaryDirectory(), mirror: nil)
        let cases: [(String, Bool, String)] = [
            ("vivify-colour", false, "vivify-color"),       // built-in colorizer
            ("vivify-fast2x", true, "vivify-fast-2x"),      // built-in upscaler
            ("waifu2x-photo-2", true, "waifu2x-photo-2x"),  // catalog
        ]
        for (typo, upscale, meant) in cases {
            XCTAssertThrowsError(try upscale ? { _ = try Upscaler(model: typo, store: store) }() : { _ = try Colorizer(model: typo, stabilize: false) }()) { error in
                XCTAssertEqual((error as? MediaError)?.kind, .invalidOptions, "\(typo): \(error)")
                XCTAssertTrue("\(error)".contains("Did you mean") && "\(error)".contains("'\(meant)'"), "\(typo): \(error)")
            }
        }
        XCTAssertThrowsError(try Colorizer(model: "waifu2x-photo-2x", stabilize: false)) { error in
            XCTAssertEqual((error as? MediaError)?.kind, .invalidOptions)
            XCTAssertTrue("\(error)".contains("--upscale"), "\(error)")
        }
        XCTAssertThrowsError(try Upscaler(model: "vivify-color", store: store)) { error in
            XCTAssertEqual((error as? MediaError)?.kind, .invalidOptions)
            XCTAssertTrue("\(error)".contains("--colorize"), "\(error)")
        }
    }

    /// Each format of the table loads through the one resolver and is described by `models info`.
    func testEveryFormatInTheTableLoadsAndIsDescribed() throws {
        let fixtures = Self.root.appendingPathComponent("Tests/ModelFormatsTests/Fixtures")
        let colorizer = Self.root.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers/eccv16-tiny.param").path
        XCTAssertEqual(ModelFileFormat.forPath(colorizer)?.kind, .ncnn)
        XCTAssertEqual(try Colorizer(model: colorizer, stabilize: false).name, "eccv16-tiny")
        XCTAssertTrue(try ModelTools.describe(path: colorizer).contains("ncnn model"))
        let builtin = try XCTUnwrap(try BuiltinModels.path(for: BuiltinModels.fast2x))
        XCTAssertEqual(ModelFileFormat.forPath(builtin)?.kind, .wifm)
        XCTAssertEqual(try Upscaler(model: builtin).scale, 2)
        XCTAssertTrue(try ModelTools.describe(path: builtin).contains("upscale"))
        let mlmodels = try FileManager.default.contentsOfDirectory(atPath: fixtures.appendingPathComponent("coreml").path).filter { $0.hasSuffix(".mlmodel") }
        XCTAssertFalse(mlmodels.isEmpty)
        let mlmodel = fixtures.appendingPathComponent("coreml/\(mlmodels.sorted()[0])").path
        XCTAssertEqual(ModelFileFormat.forPath(mlmodel)?.kind, .coreMLNeuralNetwork)
        XCTAssertFalse(try ModelTools.describe(path: mlmodel).isEmpty)
        let packages = try FileManager.default.contentsOfDirectory(atPath: fixtures.appendingPathComponent("mlprogram").path).filter { $0.hasSuffix(".mlpackage") }
        if let package = packages.sorted().first {
            let path = fixtures.appendingPathComponent("mlprogram/\(package)").path
            XCTAssertEqual(ModelFileFormat.forPath(path)?.kind, .coreMLProgram)
            XCTAssertFalse(try ModelTools.describe(path: path).isEmpty)
        }
        // Every kind is declared once, with distinct extensions.
        XCTAssertEqual(Set(ModelFileFormat.all.map(\.kind)), Set(ModelFileFormat.Kind.allCases))
        XCTAssertEqual(Set(ModelFileFormat.allExtensions).count, ModelFileFormat.allExtensions.count)
        XCTAssertThrowsError(try ModelTools.describe(path: "/tmp/x.xyz")) { XCTAssertEqual(($0 as? MediaError)?.kind, .unsupported) }
    }
}
