import Foundation
import XCTest

/// Upscaling through the binary: every model family on video, images with alpha and 16 bits,
/// the models command, and the errors.
final class UpscaleCLITests: XCTestCase {
    static let mirror = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models").path

    /// Runs vivify with a private model directory fed from the shared mirror.
    func vivify(_ args: [String], models: String) throws -> CLI.Result { try Self.vivify(args, models: models) }

    /// Runs vivify with a private model directory fed from the shared mirror.
    static func vivify(_ args: [String], models: String) throws -> CLI.Result {
        guard FileManager.default.fileExists(atPath: Self.mirror) else { throw XCTSkip("../shared/models is not present") }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env["VIVIFY_MODELS"] = models
        env["VIVIFY_MODEL_MIRROR"] = Self.mirror
        p.environment = env
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let o = out.fileHandleForReading.readDataToEndOfFile()
        let e = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return CLI.Result(code: p.terminationStatus, stdout: o, stderr: String(decoding: e, as: UTF8.self))
    }

    /// `--pooling whole`: Real-CUGAN's squeeze-excitation takes the whole picture's averages in
    /// tiles too, and 32-pixel tiles give the whole picture's result (the default, each tile
    /// pooling its own part, differs); `--stats` records it, and a planned job carries it.
    func testWholePicturePoolingGivesTheWholeFramesPicture() throws {
        let dir = try CLI.tempDir()
        let models = dir + "/models"
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64", "-frames:v", "1", picture])
        var rgb: [String: [UInt8]] = [:]
        for (name, extra) in [("whole", ["--tile", "256"]), ("pooled", ["--tile", "32", "--pooling", "whole"]), ("tiles", ["--tile", "32"])] {
            let out = "\(dir)/\(name).png"
            let r = try vivify(["image", picture, out, "--upscale", "realcugan-2x", "--precision", "fp32"] + extra, models: models)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            rgb[name] = try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(out))
        }
        func maxDiff(_ a: String, _ b: String) -> Int { zip(rgb[a]!, rgb[b]!).map { abs(Int($0) - Int($1)) }.max() ?? 255 }
        XCTAssertLessThanOrEqual(maxDiff("pooled", "whole"), 1, "whole-picture pooling in tiles")
        XCTAssertGreaterThan(maxDiff("tiles", "whole"), 1, "each tile pooling its own part differs")
        // A planned job's workers pool as planned.
        let clip = dir + "/clip.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-frames:v", "4", "-c:v", "ffv1", clip])
        let plan = try vivify(["plan", clip, dir + "/o.mkv", "--upscale", "realcugan-2x", "--pooling", "whole", "--work", dir + "/job"], models: models)
        XCTAssertEqual(plan.code, 0, plan.stderr)
        let manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/job/manifest.json"))) as? [String: Any])
        let limits = ((manifest["settings"] as? [String: Any])?["configuration"] as? [String: Any])?["limits"] as? [String: Any]
        XCTAssertEqual(limits?["wholePicturePooling"] as? Bool, true, "\(limits ?? [:])")
        // The default written out is the default: no key, so a resumed job sees no change.
        let tilePlan = try vivify(["plan", clip, dir + "/t.mkv", "--upscale", "realcugan-2x", "--pooling", "tile", "--work", dir + "/job2"], models: models)
        XCTAssertEqual(tilePlan.code, 0, tilePlan.stderr)
        let tileManifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: dir + "/job2/manifest.json"))) as? [String: Any])
        let tileLimits = ((tileManifest["settings"] as? [String: Any])?["configuration"] as? [String: Any])?["limits"] as? [String: Any]
        XCTAssertNil(tileLimits?["wholePicturePooling"], "\(tileLimits ?? [:])")
        // --stats records it.
        let stats = dir + "/stats.json"
        let run = try vivify(["run", clip, dir + "/r.mkv", "--upscale", "realcugan-2x", "--pooling", "whole", "--max-frames", "1", "--codec", "ffv1",
                              "--stats", stats, "--quiet"], models: models)
        XCTAssertEqual(run.code, 0, run.stderr)
        let recorded = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        XCTAssertEqual(((recorded["run"] as? [String: Any])?["settings"] as? [String: Any])?["pooling"] as? String, "whole")
        let bad = try vivify(["image", picture, dir + "/x.png", "--upscale", "realcugan-2x", "--pooling", "all"], models: models)
        XCTAssertEqual(bad.code, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("tile (each tile"), bad.stderr)
    }

    func testEveryFamilyUpscalesVideo() throws {
        let dir = try CLI.tempDir()
        let models = dir + "/models"
        // 3 frames of the 192×108 clip keep this quick (nine models, the 4× ones slow on 2 cores);
        // audio-free, rotated, 4:3 pixels.
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-i", CLI.clip("rotated-sar-192x108.mp4"), "-frames:v", "3", "-c", "copy", clip])
        for (model, scale) in [("waifu2x-photo-2x", 2), ("waifu2x-art-2x-denoise1", 2), ("waifu2x-cunet-2x", 2), ("realcugan-2x", 2),
                               ("realcugan-3x", 3), ("realcugan-4x", 4), ("realesr-animevideov3-2x", 2), ("realesr-animevideov3-3x", 3),
                               ("realesr-animevideov3-4x", 4)] {
            let out = "\(dir)/\(model).mkv"
            let r = try vivify(["run", clip, out, "--upscale", model, "--quiet", "--preset", "ultrafast"], models: models)
            XCTAssertEqual(r.code, 0, "\(model): \(r.stderr)")
            let p = try CLI.probe(out)
            let v = CLI.streams(p, "video")[0]
            XCTAssertEqual(CLI.int(v["width"]), 192 * scale, model)
            XCTAssertEqual(CLI.int(v["height"]), 108 * scale, model)
            XCTAssertEqual(CLI.decodedFrames(p), 3, model)
        }
    }

    /// The upscaled picture is close to the source scaled by ffmpeg (a real picture, not noise).
    func testUpscaledFramesMatchTheSourceContent() throws {
        let dir = try CLI.tempDir()
        let out = dir + "/up.y4m"
        let r = try vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), out, "--upscale", "waifu2x-photo-2x", "--tile", "64"], models: dir + "/m")
        XCTAssertEqual(r.code, 0, r.stderr)
        let ref = dir + "/ref.y4m"
        try CLI.ffmpeg(["-i", CLI.clip("untagged-240x136-24fps.avi"), "-vf", "scale=480:272:flags=bicubic", "-pix_fmt", "yuv444p", "-f", "yuv4mpegpipe", ref])
        let psnr = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", out, "-i", ref, "-lavfi", "[0][1]psnr=stats_file=-", "-f", "null", "-"])
        let text = String(decoding: psnr.stdout, as: UTF8.self)
        let values = text.split(separator: "\n").compactMap { line -> Double? in
            guard let r = line.range(of: "psnr_y:") else { return nil }
            return Double(line[r.upperBound...].split(separator: " ")[0])
        }
        XCTAssertEqual(values.count, 24)
        XCTAssertGreaterThan(values.min() ?? 0, 25, "luma PSNR of every frame against a bicubic upscale: \(values)")
    }

    func testImagesKeepAlphaBitDepthAndGrey() throws {
        let dir = try CLI.tempDir()
        let inputs = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media/images").path
        guard FileManager.default.fileExists(atPath: inputs) else { throw XCTSkip("no shared images") }
        let cases = [("real-inputs/realesrgan_children-alpha.png", "rgba"), ("real-inputs/realesrgan_tree_alpha_16bit.png", "rgba64be"),
                     ("historic-bw/1880Paris.jpg", "gray")]
        for (file, pixfmt) in cases {
            let src = "\(inputs)/\(file)"
            // Keep the test quick: a 96×64 crop of each picture.
            let small = dir + "/" + URL(fileURLWithPath: file).deletingPathExtension().lastPathComponent + (file.hasSuffix(".jpg") ? ".jpg" : ".png")
            try CLI.ffmpeg(["-i", src, "-vf", "crop=96:64:0:0", "-frames:v", "1", "-update", "1"] + (file.hasSuffix("16bit.png") ? ["-pix_fmt", "rgba64be"] : []) + [small])
            let out = small + ".up.png"
            let r = try vivify(["image", small, out, "--upscale", "waifu2x-photo-2x", "--quiet"], models: dir + "/m")
            XCTAssertEqual(r.code, 0, "\(file): \(r.stderr)")
            let v = CLI.streams(try CLI.probe(out, countFrames: false), "video")[0]
            XCTAssertEqual(CLI.int(v["width"]), 192, file)
            XCTAssertEqual(CLI.int(v["height"]), 128, file)
            XCTAssertEqual(v["pix_fmt"] as? String, pixfmt, file)
        }
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testModelsCommand() throws {
        let dir = try CLI.tempDir()
        let list = try vivify(["models", "list"], models: dir)
        XCTAssertEqual(list.code, 0, list.stderr)
        let text = String(decoding: list.stdout, as: UTF8.self)
        for name in ["waifu2x-photo-2x", "waifu2x-art-2x-denoise3", "waifu2x-cunet-2x", "realcugan-2x-conservative", "realcugan-4x", "realesr-animevideov3-3x"] {
            XCTAssertTrue(text.contains(name), name)
        }
        let fetch = try vivify(["models", "fetch", "realesr-animevideov3-4x"], models: dir)
        XCTAssertEqual(fetch.code, 0, fetch.stderr)
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/realesr-animevideov3-4x/realesr-animevideov3-x4.bin"))
        let info = try vivify(["models", "info", "realesr-animevideov3-4x"], models: dir)
        let infoText = String(decoding: info.stdout, as: UTF8.self)
        XCTAssertTrue(infoText.contains("FLOPs per output pixel"), infoText)
        XCTAssertTrue(infoText.contains("BSD-3"), infoText)
    }

    func testModelErrors() throws {
        let dir = try CLI.tempDir()
        let unknown = try vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mp4", "--upscale", "waifu2x-foto-2x"], models: dir)
        XCTAssertEqual(unknown.code, 64, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("waifu2x-photo-2x"), "suggests the close name: \(unknown.stderr)")
        XCTAssertEqual(CLI.leftovers(dir), [])
        // A model with a layer the engine cannot run: the error names the layer, type and file.
        let param = dir + "/odd.param"
        try "7767517\n2 2\nInput in 0 1 data\nLRN norm 1 1 data out 0=1\n".write(toFile: param, atomically: true, encoding: .utf8)
        FileManager.default.createFile(atPath: dir + "/odd.bin", contents: Data())
        let bad = try vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mp4", "--upscale", param], models: dir)
        XCTAssertEqual(bad.code, 69, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("'norm'") && bad.stderr.contains("LRN") && bad.stderr.contains("odd.param"), bad.stderr)
    }

    func testPathToAParamFileWorks() throws {
        let dir = try CLI.tempDir()
        let param = Self.mirror + "/ncnn/waifu2x-upconv7-art/scale2.0x_model.param"
        let r = try vivify(["image", CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets/val/Set5/bird.png").path,
                            dir + "/bird2x.png", "--upscale", param, "--quiet"], models: dir + "/m")
        XCTAssertEqual(r.code, 0, r.stderr)
        let v = CLI.streams(try CLI.probe(dir + "/bird2x.png", countFrames: false), "video")[0]
        XCTAssertEqual(CLI.int(v["width"]), 576)
    }
}
