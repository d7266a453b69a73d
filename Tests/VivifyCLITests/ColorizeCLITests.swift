import Foundation
import XCTest

/// Colorization through the binary with the ECCV16 fixture: video, images, both orders with
/// upscaling.
final class ColorizeCLITests: XCTestCase {
    static let model = CLI.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers/eccv16-tiny.param").path

    /// The first frame of `path` as packed RGB.
    func firstFrame(_ path: String) throws -> (rgb: [UInt8], width: Int, height: Int) {
        let v = CLI.streams(try CLI.probe(path, countFrames: false), "video")[0]
        let w = CLI.int(v["width"])!, h = CLI.int(v["height"])!
        // Pictures are decoded by ffmpeg (`vivify run` takes video only); video by vivify itself.
        let picture = ["png", "jpg", "jpeg"].contains((path as NSString).pathExtension.lowercased())
        let r = picture ? try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
                        : try CLI.vivify(["run", path, "-", "--output-format", "rgb24", "--max-frames", "1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        return ([UInt8](r.stdout), w, h)
    }

    /// Mean spread between the largest and smallest channel of each pixel: 0 for grey.
    func colourfulness(_ rgb: [UInt8]) -> Double {
        var sum = 0
        for i in stride(from: 0, to: rgb.count - 2, by: 3) {
            let c = [Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2])]
            sum += c.max()! - c.min()!
        }
        return Double(sum) / Double(rgb.count / 3)
    }

    func testGreyVideoBecomesColourWithItsLightnessKept() throws {
        let dir = try CLI.tempDir()
        let grey = dir + "/grey.mkv", out = dir + "/colour.mkv"
        try CLI.ffmpeg(["-i", CLI.clip("testsrc-320x180-30fps-audio.mp4"), "-vf", "format=gray,format=yuv420p", "-c:v", "ffv1", "-c:a", "copy", grey])
        let r = try CLI.vivify(["run", grey, out, "--colorize", Self.model, "--codec", "ffv1", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let p = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(p), 60)
        XCTAssertEqual(CLI.streams(p, "audio").count, 1)
        let before = try firstFrame(grey), after = try firstFrame(out)
        XCTAssertEqual(after.width, 320)
        XCTAssertLessThan(colourfulness(before.rgb), 1.5, "the source is grey")
        XCTAssertGreaterThan(colourfulness(after.rgb), 3, "the output has colour")
        // Luma (BT.709 weights on 8-bit RGB) stays close: colour came in, lightness stayed.
        func luma(_ p: [UInt8], _ i: Int) -> Double { 0.2126 * Double(p[i]) + 0.7152 * Double(p[i + 1]) + 0.0722 * Double(p[i + 2]) }
        var worst = 0.0, total = 0.0
        for i in stride(from: 0, to: before.rgb.count, by: 3) {
            let d = abs(luma(before.rgb, i) - luma(after.rgb, i))
            worst = max(worst, d); total += d
        }
        XCTAssertLessThan(total / Double(before.rgb.count / 3), 4, "mean luma change (YUV 4:2:0 round trips included); worst \(worst)")
    }

    /// `--colorize` and `--upscale` alone (before, between or after the paths) use the built-in
    /// vivify-color and vivify-fast-2x: the README's main job, with nothing fetched. The models
    /// command lists both as installed.
    func testBuiltinModelsAreTheDefaults() throws {
        let dir = try CLI.tempDir()
        let models = dir + "/models"
        let grey = dir + "/old.mkv"
        try CLI.ffmpeg(["-i", CLI.clip("testsrc-320x180-30fps-audio.mp4"), "-vf", "format=gray,format=yuv420p", "-frames:v", "8",
                        "-c:v", "ffv1", "-c:a", "copy", grey])
        let forms = [["run", grey, dir + "/a.mkv", "--colorize", "--upscale", "--max-frames", "4"],
                     ["run", "--colorize", grey, dir + "/b.mkv", "--max-frames", "4", "--upscale", "--codec", "ffv1"],
                     ["run", "--max-frames", "4", "--upscale", "--colorize", "--", grey, dir + "/c.mkv"]]
        for (k, args) in forms.enumerated() {
            let r = try UpscaleCLITests.vivify(args, models: models)
            XCTAssertEqual(r.code, 0, "\(args): \(r.stderr)")
            let out = dir + "/\(["a", "b", "c"][k]).mkv"
            guard r.code == 0 else { continue }
            let f = try firstFrame(out)
            XCTAssertEqual(f.width, 640, "\(args)")
            XCTAssertEqual(f.height, 360, "\(args)")
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 4)
            XCTAssertGreaterThan(colourfulness(f.rgb), 3, "\(args): the built-in colorizer put colour in")
        }
        let list = try UpscaleCLITests.vivify(["models", "list"], models: models)
        let text = String(decoding: list.stdout, as: UTF8.self)
        for name in ["vivify-color", "vivify-fast-2x"] {
            let row = text.split(separator: "\n").first { $0.hasPrefix(name + " ") }
            XCTAssertNotNil(row, text)
            XCTAssertTrue(row?.contains("built in") == true && row?.contains(" yes ") == true, String(row ?? ""))
        }
        let info = try UpscaleCLITests.vivify(["models", "info", "vivify-color"], models: models)
        XCTAssertEqual(info.code, 0, info.stderr)
        XCTAssertTrue(String(decoding: info.stdout, as: UTF8.self).contains("colorize"))
    }

    func testBothOrdersWithUpscaling() throws {
        let dir = try CLI.tempDir()
        let models = dir + "/models"
        var outputs: [[UInt8]] = []
        for after in [false, true] {
            let out = dir + "/o-\(after).mkv"
            let p = Process()
            p.executableURL = URL(fileURLWithPath: CLI.binary)
            p.arguments = ["run", CLI.clip("odd-161x91-25fps.webm"), out, "--colorize", Self.model, "--upscale", "waifu2x-photo-2x",
                           "--codec", "ffv1", "--max-frames", "5", "--quiet"] + (after ? ["--colorize-after"] : [])
            var env = ProcessInfo.processInfo.environment
            env["VIVIFY_MODELS"] = models
            env["VIVIFY_MODEL_MIRROR"] = UpscaleCLITests.mirror
            p.environment = env
            let err = Pipe()
            p.standardError = err
            try p.run()
            let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 0, e)
            let f = try firstFrame(out)
            XCTAssertEqual(f.width, 322)
            XCTAssertEqual(f.height, 182)
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 5)
            XCTAssertGreaterThan(colourfulness(f.rgb), 3)
            outputs.append(f.rgb)
        }
        XCTAssertNotEqual(outputs[0], outputs[1], "the two orders are different pipelines")
    }

    /// `vivify image` and `vivify run` go through one processing chain: one frame (a colour PNG
    /// for `image`, the same picture as a one-frame video for `run`) colorized and upscaled by
    /// both gives the same pixels, in both orders.
    func testOneFrameThroughImageAndRunGivesTheSamePixels() throws {
        let dir = try CLI.tempDir()
        let frame = dir + "/frame.png"
        try CLI.ffmpeg(["-i", CLI.clip("odd-161x91-25fps.webm"), "-frames:v", "1", "-pix_fmt", "rgb24", frame])
        // The same pixels as a one-frame video for `run` (PNG in Matroska: lossless, rgb24).
        let video = dir + "/frame.mkv"
        try CLI.ffmpeg(["-i", frame, "-c:v", "png", video])
        for order in [[], ["--colorize-after"]] {
            let png = dir + "/image\(order.count).png"
            let r1 = try CLI.vivify(["image", frame, png, "--colorize", "--upscale", "--quiet"] + order)
            XCTAssertEqual(r1.code, 0, r1.stderr)
            let r2 = try CLI.vivify(["run", video, "-", "--output-format", "rgb24", "--colorize", "--upscale", "--quiet"] + order)
            XCTAssertEqual(r2.code, 0, r2.stderr)
            let decoded = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
            XCTAssertEqual(decoded.stdout.count, 322 * 182 * 3, "\(order)")
            XCTAssertEqual(decoded.stdout.count, r2.stdout.count, "\(order)")
            XCTAssertTrue(decoded.stdout == r2.stdout, "\(order): image and run differ")
            XCTAssertGreaterThan(colourfulness([UInt8](r2.stdout)), 3)
        }
    }

    /// The stats of a model run name each model with the SHA-256 of its files (every file it
    /// was read from), as sha256sum computes it.
    func testStatsRecordTheModelsWithTheirHashes() throws {
        let dir = try CLI.tempDir()
        let stats = dir + "/stats.json"
        let r = try CLI.vivify(["run", CLI.clip("odd-161x91-25fps.webm"), dir + "/o.mkv", "--colorize", Self.model, "--upscale",
                                "--max-frames", "2", "--stats", stats, "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let s = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])
        let models = try XCTUnwrap((s["run"] as? [String: Any])?["models"] as? [[String: Any]])
        XCTAssertEqual(models.map { $0["task"] as? String }, ["colorize", "upscale"])
        XCTAssertEqual(models.map { $0["name"] as? String }, ["eccv16-tiny", "vivify-fast-2x"])
        let files = try XCTUnwrap(models[0]["files"] as? [String: String])
        // The description beside it too: it is part of the model (its abScale, its input size).
        XCTAssertEqual(Set(files.keys), [Self.model, Self.model.replacingOccurrences(of: ".param", with: ".bin"),
                                         Self.model.replacingOccurrences(of: ".param", with: ".json")])
        let sum = String(decoding: try CLI.run("/usr/bin/sha256sum", [Self.model]).stdout, as: UTF8.self).prefix(64)
        XCTAssertEqual(files[Self.model], String(sum))
        XCTAssertEqual((models[1]["files"] as? [String: String])?.count, 1, "the built-in bundle")
    }

    func testGreyPhotoColorized() throws {
        let dir = try CLI.tempDir()
        let photo = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media/images/historic-bw/1890Surfer.jpg").path
        guard FileManager.default.fileExists(atPath: photo) else { throw XCTSkip("no historic photos") }
        let out = dir + "/surfer.png"
        let r = try CLI.vivify(["image", photo, out, "--colorize", Self.model, "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let v = CLI.streams(try CLI.probe(out, countFrames: false), "video")[0]
        let src = CLI.streams(try CLI.probe(photo, countFrames: false), "video")[0]
        XCTAssertEqual(v["pix_fmt"] as? String, "rgb24", "grey in, colour out")
        XCTAssertEqual(CLI.int(v["width"]), CLI.int(src["width"]))
        XCTAssertEqual(CLI.int(v["height"]), CLI.int(src["height"]))
    }

    /// `--saturation` scales the colour: 0 gives grey, 1.6 more colour than 1, on `image` and
    /// `run`; out of range is a usage error (64) naming the value, and nothing is written.
    func testSaturation() throws {
        let dir = try CLI.tempDir()
        let grey = dir + "/grey.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=160x96:rate=1", "-frames:v", "1", "-vf", "format=gray", grey])
        var spread: [String: Double] = [:]
        for s in ["0", "1", "1.6"] {
            let out = "\(dir)/s\(s).png"
            let r = try CLI.vivify(["image", grey, out, "--colorize", "--saturation", s, "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            let f = try firstFrame(out)
            spread[s] = colourfulness(f.rgb)
        }
        XCTAssertLessThan(spread["0"]!, 1.5, "saturation 0 is grey")
        XCTAssertGreaterThan(spread["1.6"]!, spread["1"]! * 1.2, "more saturation, more colour")
        let video = dir + "/v.mkv"
        let r = try CLI.vivify(["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), video, "--colorize", "--saturation", "0",
                                "--codec", "ffv1", "--max-frames", "3", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertLessThan(colourfulness(try firstFrame(video).rgb), 1.5, "run --saturation 0 is grey too")
        let bad = try CLI.vivify(["image", grey, dir + "/bad.png", "--colorize", "--saturation", "5"])
        XCTAssertEqual(bad.code, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("--saturation"), bad.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/bad.png"))
    }

    /// A misspelt built-in colorizer name gets the right name suggested, exit 66.
    func testMisspeltBuiltinNameIsSuggested() throws {
        let dir = try CLI.tempDir()
        let r = try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mkv", "--colorize", "vivify-colour"])
        // An unknown model name is a bad option value (64), as for --upscale; a missing file is 66.
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("Did you mean 'vivify-color'?"), r.stderr)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    func testMissingDescriptionIsAClearError() throws {
        let dir = try CLI.tempDir()
        let fixtures = CLI.packageRoot.appendingPathComponent("Tests/EngineTests/Fixtures/colorizers").path
        for ext in ["param", "bin"] {
            try FileManager.default.copyItem(atPath: "\(fixtures)/eccv16-tiny.\(ext)", toPath: "\(dir)/nodesc.\(ext)")
        }
        let r = try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/o.mkv", "--colorize", dir + "/nodesc.param"])
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertTrue(r.stderr.contains("nodesc.json"), r.stderr)
        XCTAssertEqual(CLI.leftovers(dir), [])
    }
}
