import Foundation
@testable import ModelFormats
import XCTest

/// Each rule of manifest.json v1 (and of our extensions), broken in a real archive, is
/// refused with its own kind, naming the key.
final class WifmManifestRuleTests: WifmTestCase {
    private func refuse(_ kind: BundleError.Kind, key: String? = nil, _ manifest: [String: Any],
                        files: [String: [UInt8]] = ["main.mlmodel": Array("placeholder".utf8)],
                        file: StaticString = #filePath, line: UInt = #line) {
        assertRefused(kind, key: key, file: file, line: line) {
            try self.open(self.zip(manifest: Fixture.json(manifest), files: files))
        }
    }

    func testTheBaseManifestIsValid() throws {
        let bundle = try open(zip(manifest: Fixture.json(Fixture.v1())))
        XCTAssertEqual(bundle.warnings, [])
        XCTAssertEqual(bundle.manifest.scale, 2)
        XCTAssertEqual(bundle.manifest.outputTileSide, (128 - 14) * 2)
    }

    func testVersion() {
        refuse(.unsupportedVersion, key: "version", Fixture.v1(["version": 2]))
        refuse(.missingKey, key: "version", Fixture.v1(["version": NSNull()]))
        refuse(.wrongType, key: "version", Fixture.v1(["version": "1"]))
    }

    func testNameLength() {
        refuse(.invalidName, key: "name", Fixture.v1(["name": "Tiny"]))
        refuse(.invalidName, key: "name", Fixture.v1(["name": String(repeating: "x", count: 101)]))
        refuse(.missingKey, key: "name", Fixture.v1(["name": NSNull()]))
        refuse(.wrongType, key: "name", Fixture.v1(["name": 12345]))
        XCTAssertNoThrow(try open(zip(manifest: Fixture.json(Fixture.v1(["name": "Fivé"  + "!"]))))) // 5 characters
        XCTAssertNoThrow(try open(zip(manifest: Fixture.json(Fixture.v1(["name": String(repeating: "x", count: 100)])))))
    }

    func testUnknownType() {
        refuse(.unsupportedModelType, key: "type", Fixture.v1(["type": "tflite"]))
        refuse(.unsupportedModelType, key: "type", Fixture.v1(["type": "CoreML"])) // case sensitive
    }

    func testMissingMain() {
        refuse(.missingKey, key: "subModels.main",
               Fixture.v1(["subModels": ["alpha": ["file": "main.mlmodel", "inputName": "a", "outputName": "b"]]]))
        refuse(.missingKey, key: "subModels", Fixture.v1(["subModels": NSNull()]))
        refuse(.unknownSubModel, key: "subModels.extra",
               Fixture.v1(["subModels": ["main": ["file": "main.mlmodel", "inputName": "a", "outputName": "b"],
                                         "extra": ["file": "main.mlmodel", "inputName": "a", "outputName": "b"]]]))
        refuse(.missingKey, key: "subModels.main.inputName",
               Fixture.v1(["subModels": ["main": ["file": "main.mlmodel", "outputName": "b"]]]))
        refuse(.missingKey, key: "subModels.main.outputName",
               Fixture.v1(["subModels": ["main": ["file": "main.mlmodel", "inputName": "a", "outputName": ""]]]))
    }

    func testSubmodelFileExtensionMustFitTheType() {
        refuse(.unsupportedFileType, key: "subModels.main.file",
               Fixture.v1(["subModels": ["main": ["file": "main.onnx", "inputName": "a", "outputName": "b"]]]),
               files: ["main.onnx": [1]])
    }

    func testMissingFile() {
        refuse(.missingFile, key: "subModels.main.file", Fixture.v1(), files: ["other.mlmodel": [1]])
    }

    func testDataFormat() {
        refuse(.unsupportedDataFormat, key: "dataFormat", Fixture.v1(["dataFormat": "nhwc"]))
        refuse(.unsupportedDataFormat, key: "dataFormat", Fixture.v1(["dataFormat": "NCHW"]))
        XCTAssertNoThrow(try open(zip(manifest: Fixture.json(Fixture.v1(["dataFormat": "chw", "inputShape": [3, 64, 64]])))))
    }

    func testInputShape() {
        refuse(.nonSquareInput, key: "inputShape", Fixture.v1(["inputShape": [1, 3, 128, 96]]))
        refuse(.invalidInputShape, key: "inputShape", Fixture.v1(["inputShape": [3, 128, 128]])) // rank 3 with nchw
        refuse(.invalidInputShape, key: "inputShape", Fixture.v1(["inputShape": [1, 1, 128, 128]])) // monochrome
        refuse(.invalidInputShape, key: "inputShape", Fixture.v1(["inputShape": [2, 3, 128, 128]])) // batch
        refuse(.invalidInputShape, key: "inputShape", Fixture.v1(["inputShape": [1, 3, 0, 0]]))
        refuse(.invalidInputShape, key: "inputShape", Fixture.v1(["inputShape": [1, 3, 127.5, 127.5]]))
        refuse(.wrongType, key: "inputShape", Fixture.v1(["inputShape": "1x3x128x128"]))
        refuse(.missingKey, key: "inputShape", Fixture.v1(["inputShape": NSNull()]))
    }

    func testShrinkSize() {
        refuse(.invalidShrinkSize, key: "shrinkSize", Fixture.v1(["shrinkSize": -1]))
        refuse(.invalidShrinkSize, key: "shrinkSize", Fixture.v1(["shrinkSize": 1.5]))
        refuse(.invalidShrinkSize, key: "shrinkSize", Fixture.v1(["shrinkSize": 64])) // nothing of a 128 tile left
        refuse(.missingKey, key: "shrinkSize", Fixture.v1(["shrinkSize": NSNull()]))
    }

    func testScale() throws {
        refuse(.invalidScale, key: "scale", Fixture.v1(["scale": 2.5]))
        refuse(.invalidScale, key: "scale", Fixture.v1(["scale": 0]))
        refuse(.wrongType, key: "scale", Fixture.v1(["scale": "2"]))
        refuse(.wrongType, key: "scale", Fixture.v1(["scale": true]))
        // 2.0 is an integer value, as JSON readers of the reference app take it.
        let bundle = try open(zip(manifest: Fixture.json(Fixture.v1(["scale": 2.0]))))
        XCTAssertEqual(bundle.manifest.scale, 2)
    }

    func testAlphaMode() {
        refuse(.unsupportedAlphaMode, key: "alphaMode", Fixture.v1(["alphaMode": "sameasmain"]))
        refuse(.missingAlphaModel, key: "subModels.alpha", Fixture.v1(["alphaMode": "separateModel"]))
        refuse(.missingKey, key: "alphaMode", Fixture.v1(["alphaMode": NSNull()]))
    }

    func testSeparateAlphaModelIsRead() throws {
        let manifest = Fixture.v1([
            "alphaMode": "separateModel",
            "subModels": ["main": ["file": "main.mlmodel", "inputName": "input_1", "outputName": "Identity"],
                          "alpha": ["file": "alpha.mlmodel", "inputName": "input_1", "outputName": "Identity"]],
        ])
        let bundle = try open(zip(manifest: Fixture.json(manifest), files: ["main.mlmodel": [1, 2], "alpha.mlmodel": [3]]))
        let alpha = try XCTUnwrap(bundle.manifest.alpha)
        XCTAssertEqual(alpha.role, .alpha)
        XCTAssertEqual(try Data(contentsOf: bundle.url(for: alpha)), Data([3]))
        XCTAssertEqual(bundle.manifest.subModels.map(\.role), [.main, .alpha])
    }

    func testInfoMarkdown() throws {
        let manifest = Fixture.json(Fixture.v1())
        var big = zip(manifest: manifest)
        big.add("info.md", [UInt8](repeating: UInt8(ascii: "a"), count: (1 << 20) + 1))
        assertRefused(.infoTooLarge, key: "info.md") { try self.open(big) }

        var latin1 = zip(manifest: manifest)
        latin1.add("info.md", [0x43, 0x61, 0x66, 0xE9, 0x0A]) // "Café" in Latin-1
        assertRefused(.infoNotUTF8, key: "info.md") { try self.open(latin1) }

        var fine = zip(manifest: manifest)
        fine.add("info.md", text: "# Test\nLicence: MIT — ünïcode\n")
        XCTAssertEqual(try open(fine).infoMarkdown, "# Test\nLicence: MIT — ünïcode\n")

        var exactlyOneMiB = zip(manifest: manifest)
        exactlyOneMiB.add("info.md", [UInt8](repeating: UInt8(ascii: "a"), count: 1 << 20))
        XCTAssertEqual(try open(exactlyOneMiB).infoMarkdown?.utf8.count, 1 << 20)
    }

    func testBadJSON() {
        assertRefused(.invalidJSON) { try self.open(self.zip(manifest: "{ \"version\": 1, \"name\": ")) }
        assertRefused(.invalidJSON) { try self.open(self.zip(manifest: "[1, 2, 3]")) }
    }

    func testMissingManifest() {
        var z = HandZip()
        z.add("model/manifest.json", text: Fixture.json(Fixture.v1()))
        z.add("model/main.mlmodel", [1])
        assertRefused(.missingManifest, key: "manifest.json") { try self.open(z) }
    }

    func testErrorsSayWhereAndWhat() {
        do {
            _ = try open(zip(manifest: Fixture.json(Fixture.v1(["scale": 2.5]))))
            XCTFail("2.5 accepted")
        } catch let error as BundleError {
            XCTAssertTrue(error.message.hasPrefix("Cannot open the model bundle '"), error.message)
            XCTAssertTrue(error.message.contains("`scale` is 2.5"), error.message)
            XCTAssertTrue(error.message.contains("integer"), error.message)
            XCTAssertTrue(error.message.contains("set it to"), error.message)
        } catch {
            XCTFail("\(error)")
        }
    }

    func testUnknownKeysAreWarnings() throws {
        let bundle = try open(zip(manifest: Fixture.json(Fixture.v1(["alphamode": "sameAsMain", "author": "me"]))))
        XCTAssertEqual(bundle.warnings.count, 2, "\(bundle.warnings)")
        XCTAssertTrue(bundle.warnings[0].contains("`alphamode`"), bundle.warnings[0])
    }

    // MARK: Extensions

    func testColorizeBundleDefaultsAndKeys() throws {
        let manifest: [String: Any] = [
            "version": 1, "name": "Tiny colorizer", "type": "ncnn", "task": "colorize",
            "subModels": ["main": ["file": "c.param", "inputName": "in0", "outputName": "out0"]],
        ]
        let files: [String: [UInt8]] = ["c.param": Array("7767517\n".utf8), "c.bin": [0]]
        let plain = try open(zip(manifest: Fixture.json(manifest), files: files)).manifest
        XCTAssertEqual(plain.task, .colorize)
        XCTAssertEqual(plain.colorizer, WifmManifest.Colorizer(inputSize: 256, inputMultiple: 8, lCenter: 50, lScale: 100, abScale: 110))
        XCTAssertEqual(plain.scale, 1)
        XCTAssertEqual(plain.input(for: plain.main).role, .labL)
        XCTAssertEqual(plain.output(for: plain.main).role, .labAB)

        var keyed = manifest
        keyed["inputSize"] = 64
        keyed["inputMultiple"] = 16
        keyed["lCenter"] = 0
        keyed["lScale"] = 1
        keyed["abScale"] = 128
        let colorizer = try open(zip(manifest: Fixture.json(keyed), files: files)).manifest.colorizer
        XCTAssertEqual(colorizer, WifmManifest.Colorizer(inputSize: 64, inputMultiple: 16, lCenter: 0, lScale: 1, abScale: 128))

        var frameSize = manifest
        frameSize["inputSize"] = NSNull()
        XCTAssertNil(try open(zip(manifest: Fixture.json(frameSize), files: files)).manifest.colorizer?.inputSize)

        var guided = manifest
        guided["upsample"] = "guided"
        XCTAssertEqual(try open(zip(manifest: Fixture.json(guided), files: files)).manifest.colorizer?.upsample, "guided")
        XCTAssertEqual(plain.colorizer?.upsample, "bilinear")

        for (key, value) in [("inputSize", 0 as Any), ("inputMultiple", 0), ("lScale", 0), ("abScale", 0), ("inputSize", 2.5), ("upsample", "bicubic")] {
            var bad = manifest
            bad[key] = value
            refuse(.invalidColorizerValue, key: key, bad, files: files)
        }
        var scaled = manifest
        scaled["scale"] = 2
        refuse(.invalidScale, key: "scale", scaled, files: files)
        var unknownTask = manifest
        unknownTask["task"] = "denoise"
        refuse(.unsupportedTask, key: "task", unknownTask, files: files)
        var wrongChannels = manifest
        wrongChannels["inputShape"] = [1, 3, 64, 64]
        refuse(.invalidInputShape, key: "inputShape", wrongChannels, files: files)
    }

    func testNcnnBundleNeedsItsBin() {
        let manifest = Fixture.v1(["type": "ncnn", "subModels": ["main": ["file": "m.param", "inputName": "Input1", "outputName": "Eltwise4"]]])
        refuse(.missingFile, key: "subModels.main.file", manifest, files: ["m.param": [1]])
        refuse(.unsupportedFileType, key: "subModels.main.file",
               Fixture.v1(["type": "ncnn"]), files: ["main.mlmodel": [1]])
    }

    func testTensorDescriptions() throws {
        let good = Fixture.v1([
            "inputs": [["name": "input", "type": "image", "shape": [128, 128, 3], "format": "BGR", "role": "rgb",
                        "dtype": "float32", "normalize": ["scale": 0.004, "bias": ["r": -0.485, "g": -0.457, "b": -0.408]]]],
            "outputs": [["name": "conv7", "denormalize": ["standard": "[-1,1]"]]],
        ])
        let m = try open(zip(manifest: Fixture.json(good))).manifest
        let input = m.input(for: m.main)
        XCTAssertEqual(input.format, .bgr)
        XCTAssertEqual(input.shape, [128, 128, 3])
        XCTAssertEqual(input.normalize, PixelNormalization(scale: 0.004, redBias: -0.485, greenBias: -0.457, blueBias: -0.408))
        XCTAssertEqual(m.output(for: m.main).denormalize, .negativeOneToOne)

        let bad: [(String, [String: Any], Bool)] = [
            ("inputs[0].name", ["name": "nope"], true),
            ("inputs[0].format", ["name": "input", "format": "rgb"], true),
            ("inputs[0].role", ["name": "input", "role": "lab-l"], true), // an upscaler reads RGB
            ("inputs[0].dtype", ["name": "input", "dtype": "uint8"], true),
            ("inputs[0].quantize", ["name": "input", "quantize": ["standard": "[0,255]"]], true),
            ("inputs[0].denormalize", ["name": "input", "denormalize": ["standard": "[0,1]"]], true),
            ("inputs[0].normalize.standard", ["name": "input", "normalize": ["standard": "[0, 1]"]], true),
            ("inputs[0].normalize.scale", ["name": "input", "normalize": ["scale": 0]], true),
            ("outputs[0].normalize", ["name": "conv7", "normalize": ["standard": "[0,1]"]], false),
        ]
        for (key, entry, isInput) in bad {
            refuse(.invalidTensorDescription, key: key, Fixture.v1([isInput ? "inputs" : "outputs": [entry]]))
        }
        refuse(.wrongType, key: "inputs[0].normalize.bias",
               Fixture.v1(["inputs": [["name": "input", "normalize": ["scale": 1, "bias": -1]]]]))
    }

    /// `customLayers` (extension): read and checked when the bundle opens; a bad declaration
    /// is refused with the key, an unknown key inside it is an error too (not a warning).
    func testCustomLayerDeclarations() throws {
        let good: [String: Any] = ["Crop2": ["ops": [["op": "crop", "all": 2]]],
                                   "Rescale": ["description": "(x+1)*127.5", "ops": [["op": "expression", "expression": "(x + 1) * 127.5"]]]]
        let bundle = try open(zip(manifest: Fixture.json(Fixture.v1(["customLayers": good]))))
        XCTAssertEqual(bundle.warnings, [])
        let d = try XCTUnwrap(bundle.manifest.customLayers)
        XCTAssertEqual(d.classes["Crop2"], [.crop(CustomLayerSides(top: .value(2), left: .value(2), bottom: .value(2), right: .value(2)))])
        XCTAssertEqual(d.classes["Rescale"], [.expression(.binary("*", .binary("+", .x, .number(1)), .number(127.5)))])
        XCTAssertTrue(bundle.manifest.summary.contains("Custom layers: Crop2 (1 op), Rescale (1 op)"), bundle.manifest.summary)
        XCTAssertNil(try open(zip(manifest: Fixture.json(Fixture.v1()))).manifest.customLayers)
        for bad: Any in [["Crop2": ["ops": [["op": "crop", "all": -2]]]], ["X": ["ops": [["op": "blur"]]]], ["X": ["ops": [], "weights": 1]], "crop"] {
            refuse(.invalidCustomLayers, key: "customLayers", Fixture.v1(["customLayers": bad]))
        }
    }
}
