import Foundation
import XCTest

/// Core ML models and .wifm bundles from the command line, against their ncnn twins.
final class BundleCLITests: XCTestCase {
    static let shared = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared")

    func pixels(_ png: String) throws -> [UInt8] {
        let r = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        return [UInt8](r.stdout)
    }

    func testCoreMLStandaloneAndPackedMatchTheNcnnTwin() throws {
        let coreml = Self.shared.appendingPathComponent("models/coreml").path
        guard FileManager.default.fileExists(atPath: coreml) else { throw XCTSkip("no shared Core ML models") }
        let dir = try CLI.tempDir()
        let input = Self.shared.appendingPathComponent("datasets/val/Set14/comic.png").path
        let pairs = [("up_photo_scale2x_model", "waifu2x-upconv7-photo/scale2.0x_model"),
                     ("up_anime_noise1_scale2x_model", "waifu2x-upconv7-art/noise1_scale2.0x_model")]
        for (ml, ncnn) in pairs {
            // The bundle: manifest v1 with shrinkSize 7, as the waifu2x iOS app packs these models.
            let manifest = dir + "/\(ml).json"
            try """
            { "version": 1, "name": "\(ml)", "type": "coreml",
              "subModels": { "main": { "file": "main.mlmodel", "inputName": "input", "outputName": "conv7" } },
              "dataFormat": "chw", "inputShape": [3, 156, 156], "shrinkSize": 7, "scale": 2, "alphaMode": "sameAsMain" }
            """.write(toFile: manifest, atomically: true, encoding: .utf8)
            try FileManager.default.copyItem(atPath: "\(coreml)/\(ml).mlmodel", toPath: dir + "/main.mlmodel")
            defer { try? FileManager.default.removeItem(atPath: dir + "/main.mlmodel") }
            let bundle = dir + "/\(ml).wifm"
            let pack = try CLI.vivify(["models", "pack", "--manifest", manifest, dir + "/main.mlmodel", "-o", bundle])
            XCTAssertEqual(pack.code, 0, pack.stderr)
            var outputs: [String: [UInt8]] = [:]
            for (label, model) in [("ncnn", Self.shared.appendingPathComponent("models/ncnn/\(ncnn).param").path),
                                   ("mlmodel", "\(coreml)/\(ml).mlmodel"), ("wifm", bundle)] {
                let out = dir + "/\(ml)-\(label).png"
                let r = try CLI.vivify(["image", input, out, "--upscale", model, "--quiet"])
                XCTAssertEqual(r.code, 0, "\(label): \(r.stderr)")
                outputs[label] = try pixels(out)
            }
            for label in ["mlmodel", "wifm"] {
                let a = outputs[label]!, b = outputs["ncnn"]!
                XCTAssertEqual(a.count, b.count, label)
                let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 255
                XCTAssertLessThanOrEqual(worst, 2, "\(ml) as \(label) vs its ncnn twin: max difference \(worst)/255")
            }
        }
    }

    func testMalformedBundleIsAClearError() throws {
        let dir = try CLI.tempDir()
        let manifest = dir + "/m.json"
        try #"{ "version": 1, "name": "abc", "type": "coreml", "subModels": { "main": { "file": "x.mlmodel", "inputName": "a", "outputName": "b" } }, "dataFormat": "chw", "inputShape": [3, 64, 64], "shrinkSize": 7, "scale": 2, "alphaMode": "sameAsMain" }"#
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: dir + "/x.mlmodel", contents: Data([1, 2, 3]))
        let r = try CLI.vivify(["models", "pack", "--manifest", manifest, dir + "/x.mlmodel", "-o", dir + "/bad.wifm"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("name") && r.stderr.contains("abc"), "the error names the key and value: \(r.stderr)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/bad.wifm"))
    }
}
