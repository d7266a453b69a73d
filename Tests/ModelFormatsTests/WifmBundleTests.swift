import Foundation
@testable import ModelFormats
import XCTest

/// Valid bundles open and expose their files; tolerated mistakes warn; pack round-trips.
final class WifmBundleTests: WifmTestCase {
    /// Extraction folders of processes that died before cleaning up are swept; a live
    /// process's folder and unrelated folders are left alone.
    func testStaleExtractionFoldersOfDeadProcessesAreSwept() throws {
        let tmp = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-sweep-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: tmp) }
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let dead = finished.processIdentifier
        for name in ["vivify-wifm.\(dead).aB3dE9", "vivify-wifm.\(getpid()).xY7zQ1", "vivify-wifm.Kq2mW0", "other.\(dead).folder"] {
            try FileManager.default.createDirectory(at: tmp.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        XCTAssertEqual(ModelBundle.sweepStaleExtractions(in: tmp.path), 1)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: tmp.path)),
                       ["vivify-wifm.\(getpid()).xY7zQ1", "vivify-wifm.Kq2mW0", "other.\(dead).folder"])
    }

    func testValidCoreMLBundleOpensAndExposesItsFiles() throws {
        let model = try Fixture.coreMLModel()
        var z = HandZip()
        z.add("manifest.json", text: Fixture.json(Fixture.v1()))
        z.add("info.md", text: "# waifu2x photo 2x\nLicence: MIT\n")
        try z.add("main.mlmodel", contentsOf: model)

        var directory: URL?
        do {
            let bundle = try open(z)
            directory = bundle.directory
            XCTAssertEqual(bundle.warnings, [])
            XCTAssertEqual(bundle.manifest.version, 1)
            XCTAssertEqual(bundle.manifest.name, "Test 2x Model")
            XCTAssertEqual(bundle.manifest.type, .coreml)
            XCTAssertEqual(bundle.manifest.task, .upscale)
            XCTAssertEqual(bundle.manifest.dataFormat, .nchw)
            XCTAssertEqual(bundle.manifest.inputShape, [1, 3, 128, 128])
            XCTAssertEqual(bundle.manifest.channels, 3)
            XCTAssertEqual(bundle.manifest.shrinkSize, 7)
            XCTAssertEqual(bundle.manifest.alphaMode, .sameAsMain)
            XCTAssertNil(bundle.manifest.alpha)
            XCTAssertEqual(bundle.infoMarkdown, "# waifu2x photo 2x\nLicence: MIT\n")
            let url = bundle.url(for: bundle.manifest.main)
            XCTAssertEqual(url.deletingLastPathComponent().standardizedFileURL, bundle.directory.standardizedFileURL)
            XCTAssertEqual(try Data(contentsOf: url), try Data(contentsOf: model))
            let mode = try FileManager.default.attributesOfItem(atPath: bundle.directory.path)[.posixPermissions] as? Int
            XCTAssertEqual(mode, 0o700)
            XCTAssertTrue(bundle.directory.path.hasPrefix(NSTemporaryDirectory()) ||
                          bundle.directory.path.hasPrefix((NSTemporaryDirectory() as NSString).standardizingPath))
            XCTAssertTrue(bundle.manifest.summary.contains("Test 2x Model"), bundle.manifest.summary)
            XCTAssertTrue(bundle.manifest.summary.contains("output tile 228×228"), bundle.manifest.summary)
        }
        let gone = try XCTUnwrap(directory)
        XCTAssertFalse(FileManager.default.fileExists(atPath: gone.path), "deinit must remove the private folder")
    }

    func testNcnnBundleOpensAndLoads() throws {
        let (param, bin) = try Fixture.ncnnModel()
        let manifest = Fixture.v1([
            "name": "waifu2x upconv7 photo 2x",
            "type": "ncnn",
            "subModels": ["main": ["file": "scale2.0x_model.param", "inputName": "Input1", "outputName": "Eltwise4"]],
            "inputShape": [1, 3, 64, 64],
            "shrinkSize": 7,
        ])
        var z = HandZip()
        z.add("manifest.json", text: Fixture.json(manifest))
        try z.add("scale2.0x_model.param", contentsOf: param)
        try z.add("scale2.0x_model.bin", contentsOf: bin)
        let bundle = try open(z)
        let main = bundle.manifest.main
        XCTAssertEqual(main.weightsFile, "scale2.0x_model.bin")
        let weights = try XCTUnwrap(bundle.weightsURL(for: main))
        XCTAssertEqual(try Data(contentsOf: bundle.url(for: main)), try Data(contentsOf: param))
        XCTAssertEqual(try Data(contentsOf: weights), try Data(contentsOf: bin))
        XCTAssertNoThrow(try NCNNImporter.load(paramPath: bundle.url(for: main).path, binPath: weights.path))
    }

    /// The spec's own first example: a trailing comma and `main.mlmodel` for a package.
    func testSpecExampleMistakesWarnAndOpen() throws {
        let manifest = """
        {
            "version": 1,
            "name": "Custom 2x Model",
            "type": "coreml",
            "subModels": {
                "main": {
                    "file": "main.mlmodel",
                    "inputName": "input_1",
                    "outputName": "Identity"
                },
            },
            "dataFormat": "nchw",
            "inputShape": [1, 3, 128, 128],
            "shrinkSize": 16,
            "scale": 2,
            "alphaMode": "sameAsMain"
        }
        """
        var z = HandZip()
        z.add("manifest.json", text: manifest)
        z.addDirectory("main.mlpackage")
        z.add("main.mlpackage/Manifest.json", text: "{}")
        z.add("main.mlpackage/Data/com.apple.CoreML/model.mlmodel", [1, 2, 3])
        let bundle = try open(z)
        XCTAssertEqual(bundle.warnings.count, 2, "\(bundle.warnings)")
        XCTAssertTrue(bundle.warnings.contains { $0.contains("trailing comma") && $0.contains("line 10") }, "\(bundle.warnings)")
        XCTAssertTrue(bundle.warnings.contains { $0.contains("main.mlpackage") }, "\(bundle.warnings)")
        XCTAssertEqual(bundle.manifest.main.file, "main.mlpackage")
        XCTAssertEqual(bundle.manifest.main.declaredFile, "main.mlmodel")
        let package = bundle.url(for: bundle.manifest.main)
        XCTAssertEqual(try Data(contentsOf: package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel")), Data([1, 2, 3]))
        XCTAssertEqual(try Data(contentsOf: package.appendingPathComponent("Manifest.json")), Data("{}".utf8))
    }

    func testFolderPrefixWarnsAndUsesTheRootFile() throws {
        let manifest = Fixture.v1(["subModels": ["main": ["file": "models/main.mlmodel", "inputName": "a", "outputName": "b"]]])
        let bundle = try open(zip(manifest: Fixture.json(manifest)))
        XCTAssertEqual(bundle.warnings.count, 1, "\(bundle.warnings)")
        XCTAssertTrue(bundle.warnings[0].contains("folder prefix"), bundle.warnings[0])
        XCTAssertEqual(bundle.manifest.main.file, "main.mlmodel")
        XCTAssertTrue(FileManager.default.fileExists(atPath: bundle.url(for: bundle.manifest.main).path))
    }

    func testUnusedEntriesWarnAndAreNotExtracted() throws {
        var z = zip(manifest: Fixture.json(Fixture.v1()))
        z.add("notes.txt", text: "hello")
        z.add("__MACOSX/._main.mlmodel", [0])
        let bundle = try open(z)
        XCTAssertEqual(bundle.warnings.count, 1, "\(bundle.warnings)")
        XCTAssertTrue(bundle.warnings[0].contains("'notes.txt'"), bundle.warnings[0])
        XCTAssertFalse(FileManager.default.fileExists(atPath: bundle.directory.appendingPathComponent("notes.txt").path))
    }

    func testPackRoundTrip() throws {
        let model = try Fixture.coreMLModel()
        let info = scratch.appendingPathComponent("info.md")
        try Data("# Packed\n".utf8).write(to: info)
        let json = Data(Fixture.json(Fixture.v1(["subModels": ["main": ["file": "up_photo_scale2x_model.mlmodel",
                                                                        "inputName": "input", "outputName": "conv7"]]])).utf8)
        let output = scratch.appendingPathComponent("packed.wifm")
        let warnings = try ModelBundle.pack(manifestJSON: json, files: [model, info], to: output)
        XCTAssertEqual(warnings, [])
        let mode = try FileManager.default.attributesOfItem(atPath: output.path)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o644)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path).filter { $0.hasSuffix(".partial") }, [])

        let bundle = try ModelBundle.open(path: output.path)
        let expected = try WifmManifest.read(json: json, entries: ["up_photo_scale2x_model.mlmodel", "info.md"]).manifest
        XCTAssertEqual(bundle.manifest, expected)
        XCTAssertEqual(bundle.warnings, [])
        XCTAssertEqual(bundle.infoMarkdown, "# Packed\n")
        XCTAssertEqual(try Data(contentsOf: bundle.url(for: bundle.manifest.main)), try Data(contentsOf: model))
    }

    func testPackAddsPackagesRecursively() throws {
        let package = scratch.appendingPathComponent("main.mlpackage")
        let weights = package.appendingPathComponent("Data/com.apple.CoreML/weights")
        try FileManager.default.createDirectory(at: weights, withIntermediateDirectories: true)
        try Data("{\"fileFormatVersion\": \"1.0.0\"}".utf8).write(to: package.appendingPathComponent("Manifest.json"))
        try Data([9, 8, 7]).write(to: package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel"))
        try Data(repeating: 42, count: 4096).write(to: weights.appendingPathComponent("weight.bin"))
        let json = Data(Fixture.json(Fixture.v1(["subModels": ["main": ["file": "main.mlpackage", "inputName": "a", "outputName": "b"]]])).utf8)
        let output = scratch.appendingPathComponent("package.wifm")
        try ModelBundle.pack(manifestJSON: json, files: [package], to: output)

        let bundle = try ModelBundle.open(path: output.path)
        let opened = bundle.url(for: bundle.manifest.main)
        for relative in ["Manifest.json", "Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin"] {
            XCTAssertEqual(try Data(contentsOf: opened.appendingPathComponent(relative)),
                           try Data(contentsOf: package.appendingPathComponent(relative)), relative)
        }
    }

    func testPackRefusesAnInvalidManifest() throws {
        let model = try Fixture.coreMLModel()
        let output = scratch.appendingPathComponent("refused.wifm")
        let badScale = Data(Fixture.json(Fixture.v1(["scale": 1.5, "subModels": ["main": ["file": "up_photo_scale2x_model.mlmodel",
                                                                                          "inputName": "a", "outputName": "b"]]])).utf8)
        assertRefused(.invalidScale, key: "scale") { try ModelBundle.pack(manifestJSON: badScale, files: [model], to: output) }
        // The manifest names a file that is not given.
        assertRefused(.missingFile, key: "subModels.main.file") {
            try ModelBundle.pack(manifestJSON: Data(Fixture.json(Fixture.v1()).utf8), files: [model], to: output)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: output.path))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: scratch.path), [])
    }

    func testPackRefusesBadInfoAndDuplicateNames() throws {
        let model = scratch.appendingPathComponent("main.mlmodel")
        try Data([1]).write(to: model)
        let info = scratch.appendingPathComponent("info.md")
        try Data([0xFF, 0xFE]).write(to: info)
        let json = Data(Fixture.json(Fixture.v1()).utf8)
        let output = scratch.appendingPathComponent("out.wifm")
        assertRefused(.infoNotUTF8, key: "info.md") { try ModelBundle.pack(manifestJSON: json, files: [model, info], to: output) }
        let other = scratch.appendingPathComponent("sub")
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data([2]).write(to: other.appendingPathComponent("main.mlmodel"))
        assertRefused(.invalidPackInput, key: "main.mlmodel") {
            try ModelBundle.pack(manifestJSON: json, files: [model, other.appendingPathComponent("main.mlmodel")], to: output)
        }
    }

    func testSummaryOfAColorizer() throws {
        let manifest: [String: Any] = [
            "version": 1, "name": "Tiny colorizer", "type": "ncnn", "task": "colorize", "inputSize": 64,
            "subModels": ["main": ["file": "c.param", "inputName": "in0", "outputName": "out0"]],
        ]
        let bundle = try open(zip(manifest: Fixture.json(manifest), files: ["c.param": [1], "c.bin": [2]]))
        let summary = bundle.manifest.summary
        XCTAssertTrue(summary.contains("ncnn, colorize"), summary)
        XCTAssertTrue(summary.contains("L at 64×64"), summary)
        XCTAssertTrue(summary.contains("lab-l"), summary)
    }
}
