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
        // A 200×160 crop of Set14's comic: still several of the bundle's 156-px tiles (shrinkSize 7)
        // a side, at a third of the whole picture's time.
        let input = dir + "/comic.png"
        try CLI.ffmpeg(["-i", Self.shared.appendingPathComponent("datasets/val/Set14/comic.png").path, "-vf", "crop=200:160:20:40", input])
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
                // fp32 whatever the default: the ncnn and Core ML files are catalog models, which `auto` runs in int8.
                let r = try CLI.vivify(["image", input, out, "--upscale", model, "--quiet", "--precision", "fp32"])
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

extension BundleCLITests {
    /// An ncnn-type bundle whose alpha channel has its own model (`alphaMode` `separateModel`).
    func testSeparateAlphaModel() throws {
        let ncnn = Self.shared.appendingPathComponent("models/ncnn").path
        let image = Self.shared.appendingPathComponent("media/images/real-inputs/realesrgan_children-alpha.png").path
        guard FileManager.default.fileExists(atPath: image) else { throw XCTSkip("no shared images") }
        let dir = try CLI.tempDir()
        for (name, src) in [("main", "waifu2x-upconv7-photo/scale2.0x_model"), ("alpha", "waifu2x-upconv7-art/scale2.0x_model")] {
            for ext in ["param", "bin"] { try FileManager.default.copyItem(atPath: "\(ncnn)/\(src).\(ext)", toPath: "\(dir)/\(name).\(ext)") }
        }
        var results: [String: [UInt8]] = [:]
        for mode in ["sameAsMain", "separateModel"] {
            let manifest = dir + "/\(mode).json"
            try """
            { "version": 1, "name": "waifu2x with alpha", "type": "ncnn", "task": "upscale",
              "subModels": { "main": { "file": "main.param", "inputName": "Input1", "outputName": "Eltwise4" },
                             "alpha": { "file": "alpha.param", "inputName": "Input1", "outputName": "Eltwise4" } },
              "dataFormat": "chw", "inputShape": [3, 156, 156], "shrinkSize": 7, "scale": 2, "alphaMode": "\(mode)" }
            """.write(toFile: manifest, atomically: true, encoding: .utf8)
            let bundle = dir + "/\(mode).wifm"
            // The .bin files may be named, or found beside their .param (separateModel packs only the .params).
            let files = mode == "sameAsMain" ? [dir + "/main.param", dir + "/main.bin", dir + "/alpha.param", dir + "/alpha.bin"]
                                             : [dir + "/main.param", dir + "/alpha.param"]
            let pack = try CLI.vivify(["models", "pack", "--manifest", manifest] + files + ["-o", bundle])
            XCTAssertEqual(pack.code, 0, pack.stderr)
            // A small copy of the whole picture (kids on a transparent background) keeps it quick.
            let small = dir + "/small.png"
            try CLI.ffmpeg(["-i", image, "-vf", "scale=64:40", "-pix_fmt", "rgba", "-frames:v", "1", "-update", "1", small])
            let out = dir + "/\(mode).png"
            let r = try CLI.vivify(["image", small, out, "--upscale", bundle, "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            let v = CLI.streams(try CLI.probe(out, countFrames: false), "video")[0]
            XCTAssertEqual(v["pix_fmt"] as? String, "rgba")
            XCTAssertEqual(CLI.int(v["width"]), 128)
            let px = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgba", "-"])
            results[mode] = [UInt8](px.stdout)
        }
        let a = results["sameAsMain"]!, b = results["separateModel"]!
        let alphaDiffers = stride(from: 3, to: a.count, by: 4).contains { a[$0] != b[$0] }
        var colourSame = a.count == b.count
        for i in stride(from: 0, to: a.count, by: 4) where a[i] != b[i] || a[i + 1] != b[i + 1] || a[i + 2] != b[i + 2] {
            colourSame = false
        }
        XCTAssertTrue(colourSame, "colour comes from the main model in both modes")
        XCTAssertTrue(alphaDiffers, "the alpha channel went through the other model")
    }
}

extension BundleCLITests {
    /// A manifest naming tensors its model does not have is an error (exit 65) naming the
    /// tensor and the model's real one, and the failed load leaves no extraction folder behind.
    func testManifestNamingAbsentTensorsIsAnError() throws {
        let ncnn = Self.shared.appendingPathComponent("models/ncnn/waifu2x-upconv7-photo").path
        guard FileManager.default.fileExists(atPath: ncnn) else { throw XCTSkip("no shared ncnn models") }
        let dir = try CLI.tempDir()
        for ext in ["param", "bin"] { try FileManager.default.copyItem(atPath: "\(ncnn)/scale2.0x_model.\(ext)", toPath: "\(dir)/main.\(ext)") }
        let image = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=32x24", "-frames:v", "1", "-update", "1", image])
        // Folders vivify-wifm.PID.XXXX of processes that have ended: a leftover of the run
        // below (ended by then), not one of another vivify running on the machine meanwhile
        // (a rehearsal beside other tests failed so).
        func extractions() -> Set<String> {
            Set(((try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []).filter { name in
                let parts = name.split(separator: ".")
                guard name.hasPrefix("vivify-wifm."), parts.count >= 2, let pid = Int32(parts[1]) else { return name.hasPrefix("vivify-wifm.") }
                return kill(pid, 0) != 0 && errno == ESRCH
            })
        }
        for (input, output, named, real) in [("Input1", "Eltwise4", "", ""), ("data", "Eltwise4", "data", "Input1"), ("Input1", "nope", "nope", "Eltwise4")] {
            let manifest = dir + "/m.json"
            try """
            { "version": 1, "name": "waifu2x names test", "type": "ncnn",
              "subModels": { "main": { "file": "main.param", "inputName": "\(input)", "outputName": "\(output)" } },
              "dataFormat": "chw", "inputShape": [3, 156, 156], "shrinkSize": 7, "scale": 2, "alphaMode": "sameAsMain" }
            """.write(toFile: manifest, atomically: true, encoding: .utf8)
            let bundle = dir + "/b.wifm"
            let pack = try CLI.vivify(["models", "pack", "--manifest", manifest, dir + "/main.param", dir + "/main.bin", "-o", bundle, "-y"])
            XCTAssertEqual(pack.code, 0, pack.stderr)
            let before = extractions()
            let r = try CLI.vivify(["image", image, dir + "/out.png", "--upscale", bundle, "--quiet", "-y"])
            XCTAssertEqual(extractions().subtracting(before), [], "no extraction folder is left behind")
            if named.isEmpty {
                XCTAssertEqual(r.code, 0, "the correct names load: \(r.stderr)")
                continue
            }
            XCTAssertEqual(r.code, 65, r.stderr)
            XCTAssertTrue(r.stderr.contains("'\(named)'") && r.stderr.contains("'\(real)'"), "names the wrong and the real tensor: \(r.stderr)")
        }
        // `models pack` follows run and image: an existing bundle needs -y (73 without), -n skips.
        let before = try Data(contentsOf: URL(fileURLWithPath: dir + "/b.wifm"))
        let again = try CLI.vivify(["models", "pack", "--manifest", dir + "/m.json", dir + "/main.param", "-o", dir + "/b.wifm"])
        XCTAssertEqual(again.code, 73, again.stderr)
        XCTAssertTrue(again.stderr.contains("-y"), again.stderr)
        XCTAssertEqual(try CLI.vivify(["models", "pack", "--manifest", dir + "/m.json", dir + "/main.param", "-o", dir + "/b.wifm", "-n"]).code, 0)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/b.wifm")), before)
    }
}
