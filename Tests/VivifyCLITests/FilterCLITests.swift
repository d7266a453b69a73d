import Foundation
import XCTest

/// `--filter MODEL` through the binary: the chapter-shaped style network with its Core ML
/// custom layers (declared beside a bare .mlmodel, or in a bundle's manifest) on a picture
/// against the numpy reference, in a video run among colorize and upscale in the order
/// given, in segments, and the refusals.
final class FilterCLITests: XCTestCase {
    static let fixtures = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/coreml/style")

    static func floats(_ name: String) throws -> [Float] {
        let data = try Data(contentsOf: fixtures.appendingPathComponent(name))
        return data.withUnsafeBytes { raw in (0..<(data.count / 4)).map { Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self))) } }
    }

    /// CHW floats (0–255) as interleaved RGB bytes.
    static func interleaved(_ chw: [Float], width: Int, height: Int) -> [UInt8] {
        let n = width * height
        return (0..<(3 * n)).map { i in UInt8(max(0, min(255, chw[(i % 3) * n + i / 3].rounded()))) }
    }

    static func pixels(_ png: String) throws -> [UInt8] {
        let r = try CLI.run("/usr/bin/ffmpeg", ["-v", "error", "-i", png, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        XCTAssertEqual(r.code, 0, r.stderr)
        return [UInt8](r.stdout)
    }

    /// The fixture's 40×40 input as a PNG, and the fixture model `name` as `dir/style.mlmodel`
    /// (with its declarations beside it unless `declared` is false).
    static func setUp(_ dir: String, model name: String = "style_fp32", declared: Bool = true) throws -> (input: String, model: String) {
        let raw = dir + "/in.rgb"
        FileManager.default.createFile(atPath: raw, contents: Data(interleaved(try floats("style.input.f32"), width: 40, height: 40)))
        let input = dir + "/in.png"
        try CLI.ffmpeg(["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "40x40", "-i", raw, input])
        let model = dir + "/style.mlmodel"
        try? FileManager.default.removeItem(atPath: model)
        try? FileManager.default.removeItem(atPath: dir + "/style.layers.json")
        try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent(name + ".mlmodel").path, toPath: model)
        if declared {
            try FileManager.default.copyItem(atPath: fixtures.appendingPathComponent(name + ".layers.json").path, toPath: dir + "/style.layers.json")
        }
        return (input, model)
    }

    /// The example bundle of the README: the model, its custom layers in the manifest, its
    /// 0–255 output said in `outputs`.
    static func bundle(_ dir: String, model: String) throws -> String {
        let manifest = dir + "/style.json"
        try """
        { "version": 1, "name": "Chapter-shaped style transfer", "type": "coreml", "task": "upscale",
          "subModels": { "main": { "file": "main.mlmodel", "inputName": "image", "outputName": "output" } },
          "dataFormat": "chw", "inputShape": [3, 40, 40], "shrinkSize": 0, "scale": 1, "alphaMode": "sameAsMain",
          "outputs": [ { "name": "output", "denormalize": { "scale": 1 } } ],
          "customLayers": {
            "ResCropBlockLambda": { "ops": [ { "op": "crop", "all": 2 } ] },
            "RescaleOutputLambda": { "ops": [ { "op": "expression", "expression": "(x + 1) * 127.5" } ] } } }
        """.write(toFile: manifest, atomically: true, encoding: .utf8)
        let main = dir + "/main.mlmodel"
        try? FileManager.default.removeItem(atPath: main)
        try FileManager.default.copyItem(atPath: model, toPath: main)
        let out = dir + "/style.wifm"
        let r = try CLI.vivify(["models", "pack", "--manifest", manifest, main, "-o", out, "-y"])
        XCTAssertEqual(r.code, 0, r.stderr)
        return out
    }

    /// `vivify image in.png out.png --filter style` against the numpy reference (rounded to 8
    /// bits: within one level) for every weight format on both backends, as a bare .mlmodel
    /// with its declarations beside it and as a bundle; and `--filter-strength 0.5` as the
    /// blend of reference and input.
    func testStyleFilterOnAPictureMatchesTheReference() throws {
        let dir = try CLI.tempDir()
        var report: [String] = []
        for name in ["style_fp32", "style_fp16", "style_linear8", "style_lut8"] {
            let (input, model) = try Self.setUp(dir, model: name)
            let expected = Self.interleaved(try Self.floats(name + ".output.f32"), width: 40, height: 40)
            let wifm = try Self.bundle(dir, model: model)
            for (label, path) in [("mlmodel", model), ("wifm", wifm)] {
                for backend in ["onednn", "reference"] where label == "mlmodel" || backend == "onednn" {
                    let out = dir + "/\(name)-\(label)-\(backend).png"
                    let r = try CLI.vivify(["image", input, out, "--filter", path, "--backend", backend, "--quiet"])
                    XCTAssertEqual(r.code, 0, "\(name) \(label) \(backend): \(r.stderr)")
                    let got = try Self.pixels(out)
                    XCTAssertEqual(got.count, expected.count, "40x40 RGB out")
                    let worst = zip(got, expected).map { abs(Int($0) - Int($1)) }.max() ?? 255
                    XCTAssertLessThanOrEqual(worst, 1, "\(name) as \(label) on \(backend)")
                    report.append("\(name) \(label) \(backend): \(worst)")
                }
            }
        }
        print("vivify image --filter vs numpy reference, max 8-bit difference: " + report.joined(separator: ", "))
        // Half the model, half the input.
        let (input, model) = try Self.setUp(dir)
        let out = dir + "/half.png"
        let r = try CLI.vivify(["image", input, out, "--filter", model, "--filter-strength", "0.5", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let source = try Self.floats("style.input.f32"), styled = try Self.floats("style_fp32.output.f32")
        let expected = Self.interleaved(zip(source, styled).map { ($0 + $1) / 2 }, width: 40, height: 40)
        let worst = zip(try Self.pixels(out), expected).map { abs(Int($0) - Int($1)) }.max() ?? 255
        XCTAssertLessThanOrEqual(worst, 1)
    }

    /// `vivify image --filter style --tile 24` on a 94×117 picture: the style network's
    /// instance norms get the whole picture's statistics in passes over the tiles (said on
    /// stderr), and the picture is the whole-frame one within an 8-bit level.
    func testStyleFilterInTilesMatchesTheWholePicture() throws {
        let dir = try CLI.tempDir()
        let (_, model) = try Self.setUp(dir)
        let (w, h) = (94, 117)
        let base = try Self.floats("style.input.f32")
        let chw = (0..<(3 * h * w)).map { i -> Float in
            let (c, y, x) = (i / (h * w), i / w % h, i % w)
            return base[c * 1600 + (y * 7 + x / 3) % 40 * 40 + (x + y) % 40]
        }
        FileManager.default.createFile(atPath: dir + "/big.rgb", contents: Data(Self.interleaved(chw, width: w, height: h)))
        let input = dir + "/big.png"
        try CLI.ffmpeg(["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "\(w)x\(h)", "-i", dir + "/big.rgb", input])
        var r = try CLI.vivify(["image", input, dir + "/whole.png", "--filter", model, "--backend", "onednn"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("whole picture"), r.stderr)
        r = try CLI.vivify(["image", input, dir + "/tiled.png", "--filter", model, "--backend", "onednn", "--tile", "24"])
        XCTAssertEqual(r.code, 0, r.stderr)
        for part in ["normalises by statistics of the whole picture", "runs in 10 passes", "tiles 24x24, 10 passes"] {
            XCTAssertTrue(r.stderr.contains(part), "'\(part)' missing: \(r.stderr)")
        }
        let whole = try Self.pixels(dir + "/whole.png"), tiled = try Self.pixels(dir + "/tiled.png")
        XCTAssertEqual(tiled.count, 3 * w * h)
        XCTAssertEqual(whole.count, tiled.count)
        let worst = zip(whole, tiled).map { abs(Int($0) - Int($1)) }.max() ?? 255
        let differing = zip(whole, tiled).filter { $0 != $1 }.count
        XCTAssertLessThanOrEqual(worst, 1, "tiles against the whole picture")
        XCTAssertLessThan(differing, whole.count / 100, "only rounding flips")
        print("vivify image --filter style --tile 24 (94x117, 10 passes) vs whole: max \(worst) level, \(differing) of \(whole.count) values differ")
    }

    /// `vivify run clip --filter style.wifm --colorize --upscale` and the filter last: frames
    /// and size as the chain says, the order recorded in --stats, and different pictures
    /// (the style network sees a 320×180 grey-turned-colour frame, or the 640×360 result).
    func testFilterTakesItsPlaceInAVideoChain() throws {
        let dir = try CLI.tempDir()
        let (_, model) = try Self.setUp(dir)
        let wifm = try Self.bundle(dir, model: model)
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        var digests: [[String]] = []
        for (label, args, order) in [
            ("first", ["--filter", wifm, "--colorize", "--upscale"], ["filter", "colorize", "upscale"]),
            ("last", ["--colorize", "--upscale", "--filter", wifm], ["colorize", "upscale", "filter"]),
            ("between", ["--colorize", "--filter", wifm, "--filter-strength", "0.75", "--upscale"], ["colorize", "filter", "upscale"]),
        ] {
            let out = dir + "/\(label).mkv", stats = dir + "/\(label).json"
            let r = try CLI.vivify(["run", clip, out, "--max-frames", "3", "--codec", "ffv1", "--stats", stats, "--quiet"] + args)
            XCTAssertEqual(r.code, 0, "\(label): \(r.stderr)")
            let probe = try CLI.probe(out)
            XCTAssertEqual(CLI.decodedFrames(probe), 3, label)
            let video = CLI.streams(probe, "video").first
            XCTAssertEqual(CLI.int(video?["width"]), 640, label)
            XCTAssertEqual(CLI.int(video?["height"]), 360, label)
            let s = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any]
            let models = (s?["run"] as? [String: Any])?["models"] as? [[String: Any]] ?? []
            XCTAssertEqual(models.compactMap { $0["task"] as? String }, order, label)
            XCTAssertEqual(models.first { $0["task"] as? String == "filter" }?["name"] as? String, "Chapter-shaped style transfer")
            digests.append(try SegmentTests.frameDigests(out))
        }
        XCTAssertEqual(digests[0].count, 3)
        XCTAssertNotEqual(digests[0], digests[1], "the filter's place changes the pictures")
        XCTAssertNotEqual(digests[1], digests[2])
    }

    /// A segmented job carries its filters: plan records them, the workers run them, the
    /// join equals the run in one piece.
    func testSegmentsCarryTheFilters() throws {
        let dir = try CLI.tempDir()
        let (_, model) = try Self.setUp(dir)
        let source = dir + "/clip.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=96x64:rate=10:duration=2", "-c:v", "ffv1", source])
        let job = ["--filter", model, "--filter-strength", "0.8", "--codec", "ffv1"]
        let reference = dir + "/reference.mkv"
        var r = try CLI.vivify(["run", source, reference, "--quiet"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        let work = dir + "/work", joined = dir + "/joined.mkv"
        r = try CLI.vivify(["plan", source, joined, "--work", work, "--segment-seconds", "1"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(String(decoding: r.stdout, as: UTF8.self), "2\n")
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/manifest.json"))) as? [String: Any]
        let configuration = (manifest?["settings"] as? [String: Any])?["configuration"] as? [String: Any]
        // The stages as their list, each an object keyed by its kind.
        let filters = (configuration?["stages"] as? [[String: Any]])?.compactMap { $0["filter"] as? [String: Any] }
        XCTAssertEqual(filters?.count, 1)
        XCTAssertEqual((filters?.first?["strength"] as? NSNumber)?.floatValue ?? 0, 0.8, accuracy: 1e-6)
        XCTAssertEqual(filters?.first?["model"] as? String, URL(fileURLWithPath: model).standardizedFileURL.path)
        for index in ["0", "1"] {
            r = try CLI.vivify(["work", work, "--index", index])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        let a = try SegmentTests.frameDigests(reference), b = try SegmentTests.frameDigests(joined)
        XCTAssertEqual(a.count, 20)
        XCTAssertEqual(a, b)
    }

    /// Undeclared class: exit 69 naming the class, its description and the key; a bad
    /// declaration: exit 65 naming the key; bad options: exit 64.
    func testRefusals() throws {
        let dir = try CLI.tempDir()
        var (input, model) = try Self.setUp(dir, declared: false)
        var r = try CLI.vivify(["image", input, dir + "/x.png", "--filter", model])
        XCTAssertEqual(r.code, 69, r.stderr)
        for part in ["ResCropBlockLambda", "return x[:, 2:-2, 2:-2]", "customLayers.ResCropBlockLambda", "style.layers.json"] {
            XCTAssertTrue(r.stderr.contains(part), "'\(part)' missing: \(r.stderr)")
        }
        (input, model) = try Self.setUp(dir)
        try #"{"customLayers": {"ResCropBlockLambda": {"ops": [{"op": "crop", "all": 2}]}, "RescaleOutputLambda": {"ops": [{"op": "rescale"}]}}}"#
            .write(toFile: dir + "/style.layers.json", atomically: true, encoding: .utf8)
        r = try CLI.vivify(["image", input, dir + "/x.png", "--filter", model])
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("`customLayers.RescaleOutputLambda.ops[0].op` is \"rescale\""), r.stderr)
        for (args, words) in [
            (["--filter", model, "--filter-strength", "1.5"], "'--filter-strength 1.5' is out of range"),
            (["--filter-strength", "0.5"], "no filter runs"),
            (["--filter", model, "--filter", model, "--filter-strength", "0.1", "--filter-strength", "0.2", "--filter-strength", "0.3"], "3 values of --filter-strength for 2 filters"),
            (["--upscale", "--filter", model, "--colorize"], "give --colorize and --upscale in the order they run"),
        ] {
            r = try CLI.vivify(["image", input, dir + "/y.png"] + args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(words), "\(args): \(r.stderr)")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/x.png"))
    }
}
