import Foundation
import XCTest

/// `vivify-gpucheck` (the Vulkan backend alone, to carry to a GPU machine) through its binary on
/// this machine's Vulkan device (lavapipe in CI), on tiny sizes: a real model keeps parity with
/// the reference backend and is timed; a damaged model fails the run; no model is exit 64; and
/// the binary links neither FFmpeg nor oneDNN. (`scripts/gpucheck-bundle --check` proves the
/// static bundle the same way; it needs a release build, so it is not part of the tests.)
final class GPUCheckTests: XCTestCase {
    static var binary: String { URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().appendingPathComponent("vivify-gpucheck").path }

    func testParityAndTimesOnARealModel() throws {
        _ = try BackendChoiceCLITests.listed()
        let source = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn/waifu2x-upconv7-photo").path
        guard FileManager.default.fileExists(atPath: source + "/scale2.0x_model.param") else { throw XCTSkip("../shared/models is not present") }
        let dir = try CLI.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/models/photo", withIntermediateDirectories: true)
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: "\(source)/scale2.0x_model.\(ext)", toPath: "\(dir)/models/photo/waifu2x.\(ext)")
        }
        let r = try CLI.run(Self.binary, [dir + "/models", "--sizes", "12x8", "--parity-tile", "8", "--tolerance", "1e-4"],
                            environment: ["VIVIFY_VULKAN_VALIDATION": "1"])
        let out = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertEqual(r.code, 0, out + r.stderr)
        XCTAssertFalse(r.stderr.contains("Vulkan validation:"), r.stderr)
        XCTAssertTrue(out.contains("waifu2x.param: scale 2, border 7"), out)
        // 8 interior pixels and the border of 7 each side: a 22-pixel tile.
        let parity = out.range(of: #"parity fp32, 22x22 tile against the reference backend: max \|error\| ([0-9.e+-]+) "#, options: .regularExpression)
        XCTAssertNotNil(parity, out)
        if let parity, let value = Float(out[parity].split(separator: " ").dropLast().last ?? "") {
            XCTAssertLessThanOrEqual(value, 1e-4, out)
        }
        XCTAssertNotNil(out.range(of: #"12x8: [0-9]+\.[0-9] ms per frame, median of 1 \(fp32, tiles of 12x8\)"#, options: .regularExpression), out)
        // fp16 storage beside it, within its own tolerance (1e-2 by default).
        XCTAssertNotNil(out.range(of: #"parity fp16, 22x22 tile against the reference backend: max \|error\| [0-9.e+-]+ \(max \|value\| [0-9.e+-]+\) ok"#,
                                  options: .regularExpression), out)
        XCTAssertNotNil(out.range(of: #"12x8: [0-9]+\.[0-9] ms per frame, median of 1 \(fp16, tiles of 12x8\)"#, options: .regularExpression), out)
        XCTAssertTrue(out.hasSuffix("all 1 model(s) ok\n"), out)

        // A damaged model beside it: reported, counted, exit 1; the good one still checked.
        try "7767517\n2 2\nInput data 0 1 data\nConvolution c 1 1 data out 0=3 1=3 6=99999\n".write(toFile: dir + "/models/bad.param", atomically: true, encoding: .utf8)
        try Data(count: 64).write(to: URL(fileURLWithPath: dir + "/models/bad.bin"))
        let bad = try CLI.run(Self.binary, [dir + "/models", "--sizes", "12x8", "--parity-tile", "8"])
        let badOut = String(decoding: bad.stdout, as: UTF8.self)
        XCTAssertEqual(bad.code, 1, badOut)
        XCTAssertTrue(badOut.contains("FAILED") && badOut.hasSuffix("1 of 2 model(s) failed\n"), badOut)
    }

    /// A model with no integer scale (the built-in colorizer: 224×224 in, 56×56 out) is checked
    /// and timed whole at the size its Input layer declares (what vivify runs it at; 640×360
    /// cannot run whole: its skip connections would not line up), in both precisions; with its
    /// 44 1×1 convolutions as matrix products (VIVIFY_VULKAN_GEMM=1; lavapipe runs the
    /// pixel-lane shader unless told); `--profile` times it layer by layer.
    func testAModelWithoutAScaleRunsWhole() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: CLI.packageRoot.appendingPathComponent("Models/vivify-color.\(ext)").path, toPath: "\(dir)/color.\(ext)")
        }
        let r = try CLI.run(Self.binary, [dir, "--sizes", "640x360", "--parity-tile", "32", "--runs", "2", "--no-ncnn", "--tolerance", "1e-4", "--profile"],
                            environment: ["VIVIFY_VULKAN_VALIDATION": "1", "VIVIFY_VULKAN_GEMM": "1"])
        let out = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertEqual(r.code, 0, out + r.stderr)
        XCTAssertFalse(r.stderr.contains("Vulkan validation:"), r.stderr)
        XCTAssertTrue(out.contains("color.param: no integer scale, run whole at its declared input 224x224"), out)
        for precision in ["fp32", "fp16"] {
            XCTAssertNotNil(out.range(of: "parity \(precision), 32x32 whole against the reference backend: max \\|error\\| [0-9.e+-]+ \\(max \\|value\\| [0-9.e+-]+\\) ok",
                                      options: .regularExpression), out)
            XCTAssertNotNil(out.range(of: "224x224: [0-9]+\\.[0-9] ms per run, median of 2 \\(\(precision), whole\\)", options: .regularExpression), out)
            // The profile: every layer but the input timed (the passes leave 90 of the file's
            // 104), the slowest first, the 1×1 matrix-product shader among the shaders.
            XCTAssertNotNil(out.range(of: "profile \(precision), one 224x224 input:\n +[0-9.]+ ms in 90 layers \\(device timestamps", options: .regularExpression), out)
        }
        XCTAssertEqual(out.components(separatedBy: "per shader: ").count, 3, out)
        XCTAssertTrue(out.contains("convolution_1x1 "), out)
        XCTAssertTrue(out.hasSuffix("all 1 model(s) ok\n"), out)
    }

    /// A model whose output has other channels than its input (the built-in colour guide: 8
    /// channels in, 3 out, scale 1) is run whole rather than refused as an upscaler, at each
    /// size rounded up to what its strided stages and skip connections can run (30×18 → 32×20).
    func testAModelOfOtherOutputChannelsRunsWhole() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: CLI.packageRoot.appendingPathComponent("Models/vivify-guide.\(ext)").path, toPath: "\(dir)/guide.\(ext)")
        }
        let r = try CLI.run(Self.binary, [dir, "--sizes", "30x18", "--parity-tile", "32", "--runs", "1", "--no-ncnn", "--precisions", "fp32"])
        let out = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertEqual(r.code, 0, out + r.stderr)
        XCTAssertTrue(out.contains("guide.param: 8 channels in, 3 out, run whole at each size"), out)
        XCTAssertNotNil(out.range(of: "32x20: [0-9]+\\.[0-9] ms per run, median of 1 \\(fp32, whole\\)", options: .regularExpression), out)
        XCTAssertTrue(out.hasSuffix("all 1 model(s) ok\n"), out)
    }

    /// ncnn-Vulkan, the peer, is timed on the same file and device when its Python package is
    /// importable (scripts/install-deps installs it), with our time over its own; a frame
    /// smaller than the model's border, on which ncnn crashes, is said, not fatal.
    func testNCNNIsTimedBesideOurs() throws {
        _ = try BackendChoiceCLITests.listed()
        let source = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn/waifu2x-upconv7-photo").path
        guard FileManager.default.fileExists(atPath: source + "/scale2.0x_model.param") else { throw XCTSkip("../shared/models is not present") }
        let probe = try CLI.run("/usr/bin/env", ["python3", "-c", "import ncnn"])
        guard probe.code == 0 else { throw XCTSkip("the ncnn Python package is not importable (scripts/install-deps installs it)") }
        let dir = try CLI.tempDir()
        for ext in ["param", "bin"] { try FileManager.default.copyItem(atPath: "\(source)/scale2.0x_model.\(ext)", toPath: "\(dir)/w.\(ext)") }
        // Our fp32 alone: the peer is what this test is about (fp16 is testParityAndTimesOnARealModel's).
        let r = try CLI.run(Self.binary, [dir, "--sizes", "24x16", "--parity-tile", "8", "--precisions", "fp32"])
        let out = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertEqual(r.code, 0, out + r.stderr)
        XCTAssertNotNil(out.range(of: #"ncnn-Vulkan 24x16: [0-9]+\.[0-9] ms fp32, [0-9]+\.[0-9] ms fp16 \(whole frame; ours [0-9]+\.[0-9]+x its fp32 time\)"#,
                                  options: .regularExpression), out)
        // With fp16 checked too, its ratio to ncnn's fp16 beside the fp32 one.
        let both = try CLI.run(Self.binary, [dir, "--sizes", "24x16", "--parity-tile", "8", "--runs", "3"])
        let bothOut = String(decoding: both.stdout, as: UTF8.self)
        XCTAssertEqual(both.code, 0, bothOut + both.stderr)
        XCTAssertNotNil(bothOut.range(of: #"24x16: [0-9]+\.[0-9] ms per frame, median of 3, [0-9.]+–[0-9.]+ \(fp16, tiles of 24x16\)"#,
                                      options: .regularExpression), bothOut)
        XCTAssertNotNil(bothOut.range(of: #"\(whole frame; ours [0-9]+\.[0-9]+x its fp32 time, ours fp16 [0-9]+\.[0-9]+x its fp16 time\)"#,
                                      options: .regularExpression), bothOut)
        let tiny = try CLI.run(Self.binary, [dir, "--sizes", "12x8", "--parity-tile", "8", "--precisions", "fp32"])
        let tinyOut = String(decoding: tiny.stdout, as: UTF8.self)
        XCTAssertEqual(tiny.code, 0, tinyOut + tiny.stderr)
        XCTAssertTrue(tinyOut.contains("ncnn-Vulkan: crashed on this model"), tinyOut)
        let skipped = try CLI.run(Self.binary, [dir, "--sizes", "12x8", "--parity-tile", "8", "--no-ncnn", "--precisions", "fp32"])
        XCTAssertFalse(String(decoding: skipped.stdout, as: UTF8.self).contains("ncnn"))
        // A model run whole (the colorizer: one channel in, at its declared 224×224): ncnn is
        // fed the same one-channel input at that size.
        let color = try CLI.tempDir()
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: CLI.packageRoot.appendingPathComponent("Models/vivify-color.\(ext)").path, toPath: "\(color)/color.\(ext)")
        }
        let whole = try CLI.run(Self.binary, [color, "--parity-tile", "32", "--precisions", "fp32"])
        let wholeOut = String(decoding: whole.stdout, as: UTF8.self)
        XCTAssertEqual(whole.code, 0, wholeOut + whole.stderr)
        XCTAssertNotNil(wholeOut.range(of: #"ncnn-Vulkan 224x224: [0-9]+\.[0-9] ms fp32, [0-9]+\.[0-9] ms fp16 \(whole frame; ours [0-9]+\.[0-9]+x its fp32 time\)"#,
                                       options: .regularExpression), wholeOut)
    }

    func testNoModelAndBadArgumentsAre64() throws {
        let dir = try CLI.tempDir()
        let empty = try CLI.run(Self.binary, [dir])
        XCTAssertEqual(empty.code, 64)
        XCTAssertTrue(empty.stderr.contains("no ncnn model"), empty.stderr)
        let bad = try CLI.run(Self.binary, [dir, "--sizes", "640by360"])
        XCTAssertEqual(bad.code, 64)
        XCTAssertTrue(bad.stderr.contains("'640by360' is not WxH"), bad.stderr)
        let precision = try CLI.run(Self.binary, [dir, "--precisions", "fp32,bf16"])
        XCTAssertEqual(precision.code, 64)
        XCTAssertTrue(precision.stderr.contains("'bf16' is not fp32 or fp16"), precision.stderr)
        // Sizes it could not allocate, refused before any work (they crashed it: 120 GB asked).
        for args in [["--parity-tile", "100000"], ["--parity-tile", "3000000000"], ["--sizes", "100000x100000"], ["--sizes", "99999999999x1"], ["--tile", "1"]] {
            let r = try CLI.run(Self.binary, [dir] + args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("'\(args[0])"), r.stderr)
        }
        // A folder that is not there is named as such (66), not as one without models.
        let missing = try CLI.run(Self.binary, [dir + "/no-such-folder"])
        XCTAssertEqual(missing.code, 66)
        XCTAssertTrue(missing.stderr.contains("is not a folder"), missing.stderr)
        // No such Vulkan device: 64, not the exit of a model out of tolerance (1).
        let models = try CLI.tempDir()
        let source = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn/waifu2x-upconv7-photo").path
        guard FileManager.default.fileExists(atPath: source + "/scale2.0x_model.param") else { throw XCTSkip("../shared/models is not present") }
        for ext in ["param", "bin"] { try FileManager.default.copyItem(atPath: "\(source)/scale2.0x_model.\(ext)", toPath: "\(models)/w.\(ext)") }
        let device = try CLI.run(Self.binary, [models, "--no-ncnn", "--sizes", "16x16"], environment: ["VIVIFY_VULKAN_DEVICE": "99"])
        XCTAssertEqual(device.code, 64, device.stderr)
        XCTAssertFalse(device.stderr.contains("--backend"), device.stderr)
        // No Vulkan driver at all: 69. vivify adds its way around it (the CPU backend, the
        // engine's `EngineError.fallback`); the check of a GPU does not.
        let noDriver = ["VK_ICD_FILENAMES": dir + "/no-such-driver.json"]
        let none = try CLI.run(Self.binary, [models, "--no-ncnn", "--sizes", "16x16"], environment: noDriver)
        XCTAssertEqual(none.code, 69, none.stderr)
        XCTAssertTrue(none.stderr.contains("No Vulkan driver answered"), none.stderr)
        XCTAssertFalse(none.stderr.contains("--backend"), none.stderr)
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24", "-frames:v", "1", picture])
        let vivify = try CLI.vivify(["image", picture, dir + "/out.png", "--upscale", "--backend", "vulkan"], environment: noDriver)
        XCTAssertEqual(vivify.code, 69, vivify.stderr)
        XCTAssertTrue(vivify.stderr.contains("No Vulkan driver answered") && vivify.stderr.contains("Or run on the CPU (--backend onednn)."), vivify.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
    }

    /// The point of the tool: no FFmpeg and no oneDNN to carry.
    func testLinksNeitherFFmpegNorOneDNN() throws {
        let r = try CLI.run("/usr/bin/ldd", [Self.binary])
        let libraries = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertEqual(r.code, 0)
        XCTAssertTrue(libraries.contains("libvulkan.so.1"), libraries)
        for unwanted in ["libdnnl", "libavcodec", "libavformat", "libswscale", "libavutil"] {
            XCTAssertFalse(libraries.contains(unwanted), "\(unwanted) in \(libraries)")
        }
    }
}
