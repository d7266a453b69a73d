import Foundation
import XCTest

/// ONNX models everywhere a model goes: `--upscale model.onnx`, a `.wifm` with `type: onnx`,
/// `vivify models info`; the pictures equal those of the same weights as ncnn.
final class ONNXCLITests: XCTestCase {
    static let sharedModels = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models")

    /// A folder of fresh ONNX fixtures (scripts/onnx_fixtures.py) and the animevideov3 ncnn twin's
    /// .param; skipped without ../shared or the onnx packages (failed on CI).
    static func fixtures() throws -> (dir: String, ncnn: String) {
        let ncnn = sharedModels.appendingPathComponent("ncnn/realesr-animevideov3/realesr-animevideov3-x2.param").path
        guard FileManager.default.fileExists(atPath: ncnn) else { throw XCTSkip("../shared/models is not beside the checkout") }
        let dir = try CLI.tempDir()
        let made = try CLI.run("/usr/bin/env", ["python3", CLI.packageRoot.appendingPathComponent("scripts/onnx_fixtures.py").path,
                                                "--models-dir", sharedModels.appendingPathComponent("ncnn").path, "--out", dir])
        guard made.code == 0 else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(made.stderr) }
            throw XCTSkip("scripts/onnx_fixtures.py needs onnx and onnxruntime: \(made.stderr.suffix(300))")
        }
        return (dir, ncnn)
    }

    func testONNXUpscalerAndBundleGiveTheNCNNTwinsPicture() throws {
        let (dir, ncnn) = try Self.fixtures()
        let onnx = dir + "/animevideov3-x2.onnx"
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=120x80:rate=1", "-frames:v", "1", picture])

        let info = try CLI.vivify(["models", "info", onnx])
        XCTAssertEqual(info.code, 0, info.stderr)
        let said = String(decoding: info.stdout, as: UTF8.self)
        XCTAssertTrue(said.contains("opset ai.onnx 17") && said.contains("DepthToSpace ×1"), said)
        // 16 3×3 convolutions of 64 → 64 channels, one 3 → 64 and one 64 → 48, on 640×360:
        // 2 × 619,200 multiply-adds per pixel × 230,400 pixels = 285.3 GFLOP.
        let flops = said.components(separatedBy: "; ").first { $0.hasSuffix("GFLOP at 640x360") }
        XCTAssertEqual(flops.flatMap { Double($0.split(separator: " ")[0]) } ?? 0, 285.3, accuracy: 0.5, said)

        // A bundle of the waifu2x upconv_7 net as ONNX: valid convolutions, 7 pixels lost per
        // side (the spec's shrinkSize), like the Core ML bundles the spec was written for.
        let manifest = dir + "/manifest-wifm.json"
        try """
        {"version": 1, "name": "upconv7 photo 2x onnx", "type": "onnx", "dataFormat": "nchw", "inputShape": [1, 3, 128, 128],
         "shrinkSize": 7, "scale": 2, "alphaMode": "sameAsMain",
         "subModels": {"main": {"file": "main.onnx", "inputName": "input", "outputName": "convtranspose_13"}}}
        """.write(toFile: manifest, atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: dir + "/upconv7-photo.onnx", toPath: dir + "/main.onnx")
        try "# waifu2x upconv_7 photo as ONNX\n".write(toFile: dir + "/info.md", atomically: true, encoding: .utf8)
        let pack = try CLI.vivify(["models", "pack", "--manifest", manifest, dir + "/main.onnx", dir + "/info.md", "-o", dir + "/upconv7.wifm"])
        XCTAssertEqual(pack.code, 0, pack.stderr)
        let upconv7 = Self.sharedModels.appendingPathComponent("ncnn/waifu2x-upconv7-photo/scale2.0x_model.param").path

        func upscaled(_ name: String, _ model: String) throws -> [UInt8] {
            let out = dir + "/\(name).png"
            // fp32 whatever the default: the ncnn twins are catalog files, which `auto` runs in int8.
            let r = try CLI.vivify(["image", picture, out, "--upscale", model, "--precision", "fp32"])
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            let raw = try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            XCTAssertEqual(raw.stdout.count, 240 * 160 * 3, "\(name): 2× the picture")
            return [UInt8](raw.stdout)
        }
        func worst(_ a: [UInt8], _ b: [UInt8]) -> Int { a.count == b.count ? zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 0 : 255 }
        XCTAssertLessThanOrEqual(worst(try upscaled("onnx", onnx), try upscaled("ncnn", ncnn)), 2, ".onnx against the ncnn twin, 8-bit levels")
        XCTAssertLessThanOrEqual(worst(try upscaled("wifm", dir + "/upconv7.wifm"), try upscaled("upconv7", upconv7)), 2,
                                 ".wifm of type onnx against the ncnn twin, 8-bit levels")
    }

    /// `vivify infer`: the ONNX file and its ncnn twin on a tensor numpy wrote (float32, and
    /// float16 named by the model's input), read back by numpy, against ONNX Runtime.
    func testInferRunsModelFilesOnNumpyTensors() throws {
        let (dir, ncnn) = try Self.fixtures()
        func python(_ code: String) throws -> String {
            let r = try CLI.run("/usr/bin/env", ["python3", "-c", "import numpy as np; d = '\(dir)'\n" + code])
            XCTAssertEqual(r.code, 0, r.stderr)
            return String(decoding: r.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        _ = try python("""
        x = np.fromfile(d + '/animevideov3-x2.input.f32', dtype='<f4').reshape(1, 3, 32, 40)
        np.save(d + '/in.npy', x); np.save(d + '/in16.npy', x.astype(np.float16)[0])
        """)
        let onnx = dir + "/animevideov3-x2.onnx"
        for (model, input, out) in [(onnx, dir + "/in.npy", "onnx.npy"), (ncnn, dir + "/in.npy", "ncnn.npy"), (onnx, "input=" + dir + "/in16.npy", "onnx16.npy")] {
            let r = try CLI.vivify(["infer", model, "--input", input, "--output", dir + "/" + out])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        let diffs = try python("""
        ort = np.fromfile(d + '/animevideov3-x2.output.f32', dtype='<f4').reshape(1, 3, 64, 80)
        a, b, h = (np.load(d + '/' + n) for n in ('onnx.npy', 'ncnn.npy', 'onnx16.npy'))
        assert a.dtype == np.float32 and a.shape == (1, 3, 64, 80), (a.dtype, a.shape)
        print(np.abs(a - ort).max(), np.abs(b - a).max(), np.abs(h - a).max())
        """).split(separator: " ").compactMap { Double($0) }
        guard diffs.count == 3 else { return XCTFail("no differences measured") }
        print("vivify infer: ONNX vs ONNX Runtime \(diffs[0]), ncnn twin vs ONNX \(diffs[1]), float16 input vs float32 \(diffs[2])")
        XCTAssertLessThanOrEqual(diffs[0], 1e-4)
        XCTAssertLessThanOrEqual(diffs[1], 2.0 / 255)
        XCTAssertLessThanOrEqual(diffs[2], 0.02, "the same result from the float16-rounded input")
        XCTAssertGreaterThan(diffs[2], 0, "the float16 file was read as float16")
        // A wrong input name and an existing output without -y are refused.
        let wrong = try CLI.vivify(["infer", onnx, "--input", "pixels=" + dir + "/in.npy", "--output", dir + "/x.npy"])
        XCTAssertEqual(wrong.code, 64, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("'input'"), wrong.stderr)
        let exists = try CLI.vivify(["infer", onnx, "--input", dir + "/in.npy", "--output", dir + "/onnx.npy"])
        XCTAssertEqual(exists.code, 73, exists.stderr)
    }

    /// `--colorize model.onnx` with its .json description beside it, as for ncnn colorizers: the
    /// repository's test colorizer as ONNX gives the ncnn file's picture; without the
    /// description it is a clear error naming the .json.
    func testONNXColorizerGivesTheNCNNColorizersPicture() throws {
        let (dir, _) = try Self.fixtures()
        let fixtures = CLI.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers").path
        let grey = dir + "/grey.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=128x96:rate=1", "-frames:v", "1", "-vf", "format=gray", grey])
        let missing = try CLI.vivify(["image", grey, dir + "/none.png", "--colorize", dir + "/eccv16-tiny.onnx"])
        XCTAssertEqual(missing.code, 66, missing.stderr)
        XCTAssertTrue(missing.stderr.contains("eccv16-tiny.json"), missing.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/none.png"))
        try FileManager.default.copyItem(atPath: fixtures + "/eccv16-tiny.json", toPath: dir + "/eccv16-tiny.json")
        func colorized(_ model: String, _ name: String) throws -> [UInt8] {
            let out = dir + "/\(name).png"
            let r = try CLI.vivify(["image", grey, out, "--colorize", model, "--quiet"])
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            let raw = try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", out, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            XCTAssertEqual(raw.stdout.count, 128 * 96 * 3, name)
            return [UInt8](raw.stdout)
        }
        let onnx = try colorized(dir + "/eccv16-tiny.onnx", "onnx"), ncnn = try colorized(fixtures + "/eccv16-tiny.param", "ncnn")
        XCTAssertEqual(onnx.count, ncnn.count)
        let worst = zip(onnx, ncnn).map { abs(Int($0) - Int($1)) }.max() ?? 255
        XCTAssertLessThanOrEqual(worst, 1, "ONNX and ncnn colorizers, 8-bit levels")
        // Colour, not grey: the channels differ somewhere.
        var chroma = 0
        for i in stride(from: 0, to: onnx.count, by: 3) {
            let r = Int(onnx[i]), g = Int(onnx[i + 1]), b = Int(onnx[i + 2])
            chroma = max(chroma, abs(r - g) + abs(g - b))
        }
        XCTAssertGreaterThan(chroma, 4, "the ONNX colorizer adds colour")
    }

    /// `vivify infer` with a second named input bound to its values, on ONNX's own node tests:
    /// Pow of x [3, 4, 5] by y [3, 4, 5], and Gemm with its weights and bias as inputs; the
    /// outputs keep the models' ranks and match the expected tensors.
    func testInferBindsFurtherONNXInputs() throws {
        let root = "/usr/share/libonnx-testdata/data/node"
        guard FileManager.default.fileExists(atPath: root) else {
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail("libonnx-testdata is not installed") }
            throw XCTSkip("libonnx-testdata is not installed (scripts/install-deps)")
        }
        let dir = try CLI.tempDir()
        for (test, names) in [("test_pow", ["x", "y"]), ("test_gemm_default_vector_bias", ["a", "b", "c"])] {
            let convert = try CLI.run("/usr/bin/env", ["python3", "-c", """
            import numpy as np, onnx, sys
            from onnx import numpy_helper
            d, out = sys.argv[1], sys.argv[2]
            for i, n in enumerate(sys.argv[3:]):
                t = onnx.TensorProto(); t.ParseFromString(open(f'{d}/test_data_set_0/input_{i}.pb', 'rb').read())
                np.save(f'{out}/{n}.npy', numpy_helper.to_array(t))
            t = onnx.TensorProto(); t.ParseFromString(open(f'{d}/test_data_set_0/output_0.pb', 'rb').read())
            np.save(f'{out}/expected.npy', numpy_helper.to_array(t))
            """, root + "/" + test, dir] + names)
            XCTAssertEqual(convert.code, 0, convert.stderr)
            let args = ["infer", root + "/" + test + "/model.onnx", "--input", dir + "/\(names[0]).npy"]
                + names.dropFirst().flatMap { ["--input", "\($0)=\(dir)/\($0).npy"] } + ["--output", dir + "/\(test).npy", "-y"]
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 0, "\(test): \(r.stderr)")
            let check = try CLI.run("/usr/bin/env", ["python3", "-c", """
            import numpy as np, sys
            a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
            assert a.shape == b.shape, (a.shape, b.shape)
            print(float(np.abs(a - b).max() / max(1.0, float(np.abs(b).max()))))
            """, dir + "/\(test).npy", dir + "/expected.npy"])
            XCTAssertEqual(check.code, 0, "\(test): \(check.stderr)")
            let d = Double(String(decoding: check.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 1
            XCTAssertLessThanOrEqual(d, 1e-5, test)
        }
        let wrong = try CLI.vivify(["infer", root + "/test_pow/model.onnx", "--input", dir + "/x.npy", "--input", "z=" + dir + "/y.npy", "--output", dir + "/w.npy"])
        XCTAssertEqual(wrong.code, 64, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("no input 'z'"), wrong.stderr)
    }
}
