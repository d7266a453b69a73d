import Foundation
import XCTest

/// `--backend vulkan` through the binary, on whatever Vulkan device this machine has (Mesa's
/// lavapipe on the CPU in CI): the same pictures as the other backends. Every run is under the
/// Khronos validation layer with synchronization validation (`VIVIFY_VULKAN_VALIDATION=1`: a
/// run without the layer fails rather than runs unvalidated) and must leave no message on
/// standard error. Without a Vulkan device the tests skip, or fail under VIVIFY_REQUIRE_VULKAN=1.
final class VulkanCLITests: XCTestCase {
    override class func setUp() {
        super.setUp()
        setenv("VIVIFY_VULKAN_VALIDATION", "1", 1)
    }

    override class func tearDown() {
        unsetenv("VIVIFY_VULKAN_VALIDATION")
        super.tearDown()
    }

    /// The validation layer said nothing in `r`'s run.
    func assertValidated(_ r: CLI.Result, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(r.stderr.contains("Vulkan validation:"), "\(what): the validation layer spoke: \(r.stderr)", file: file, line: line)
    }

    /// A still picture upscaled (built-in 2x) on Vulkan is the reference backend's picture (the
    /// shaders sum in the reference's order: equal bytes or within rounding), and a community
    /// upscaler in tiles matches oneDNN's.
    func testImagesMatchTheOtherBackends() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=72x48", "-frames:v", "1", picture])
        var outputs: [String: Data] = [:]
        for backend in ["vulkan", "reference", "onednn"] {
            let out = "\(dir)/\(backend).png"
            let r = try CLI.vivify(["image", picture, out, "--upscale", "--backend", backend])
            XCTAssertEqual(r.code, 0, "\(backend): \(r.stderr)")
            assertValidated(r, backend)
            outputs[backend] = try PrecisionCLITests.pixels(out)
        }
        XCTAssertEqual(outputs["vulkan"]?.count, 144 * 96 * 3)
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(outputs["vulkan"]!, outputs["reference"]!), 60, "vulkan against reference")
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(outputs["vulkan"]!, outputs["onednn"]!), 50, "vulkan against onednn")
        // A community model in 32-pixel tiles (seams, borders, tiles of several shapes).
        let models = dir + "/models"
        var tiled: [String: Data] = [:]
        for backend in ["vulkan", "onednn"] {
            let out = "\(dir)/w-\(backend).png"
            let r = try UpscaleCLITests.vivify(["image", picture, out, "--upscale", "waifu2x-photo-2x", "--tile", "32", "--backend", backend,
                                                "--precision", "fp32"], models: models)
            XCTAssertEqual(r.code, 0, "\(backend): \(r.stderr)")
            assertValidated(r, "tiled \(backend)")
            tiled[backend] = try PrecisionCLITests.pixels(out)
        }
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(tiled["vulkan"]!, tiled["onednn"]!), 50, "tiled waifu2x: vulkan against onednn")
    }

    /// `--precision fp16` reaches the Vulkan backend from the command line: the built-in 2x
    /// in fp16 storage is within 45 dB of fp32 on the same device, validated and with no note;
    /// on oneDNN it runs fp32 and says so once; `vivify run --stats` records it.
    func testFP16FromTheCommandLine() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=40x32", "-frames:v", "1", picture])
        var outputs: [String: Data] = [:]
        for precision in ["fp32", "fp16"] {
            let out = "\(dir)/\(precision).png"
            let r = try CLI.vivify(["image", picture, out, "--upscale", "--backend", "vulkan", "--precision", precision])
            XCTAssertEqual(r.code, 0, "\(precision): \(r.stderr)")
            assertValidated(r, precision)
            XCTAssertFalse(r.stderr.contains("note:"), "\(precision): \(r.stderr)")
            outputs[precision] = try PrecisionCLITests.pixels(out)
        }
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(outputs["fp16"]!, outputs["fp32"]!), 45, "fp16 against fp32 on Vulkan")
        let r = try CLI.vivify(["image", picture, dir + "/onednn.png", "--upscale", "--backend", "onednn", "--precision", "fp16"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("note: --precision fp16 is the Vulkan backend's (--backend vulkan): onednn runs in fp32."), r.stderr)
        // `--stats` records fp16 as asked and as run.
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24:rate=5", "-frames:v", "2", "-pix_fmt", "yuv420p", clip])
        let stats = dir + "/stats.json"
        let video = try CLI.vivify(["run", clip, dir + "/out.y4m", "--upscale", "--backend", "vulkan", "--precision", "fp16", "--quiet", "--stats", stats])
        XCTAssertEqual(video.code, 0, video.stderr)
        assertValidated(video, "run")
        let run = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])?["run"] as? [String: Any]
        XCTAssertEqual((run?["settings"] as? [String: String])?["precision"], "fp16")
        XCTAssertEqual((run?["models"] as? [[String: Any]])?.map { $0["precision"] as? String }, ["fp16"])
    }

    /// `--precision auto` (the default) on Vulkan decides per model: on lavapipe everything
    /// stays fp32; on a GPU (taken here with VIVIFY_VULKAN_AUTO_FP16=1) the built-in 2x and a
    /// catalog upscaler given by path store fp16 and keep 45 dB against fp32, while the
    /// colorizer and a model of the user's (the catalog files with one weight changed) stay
    /// fp32. `--stats` records each model's precision, and a planned job's manifest keeps
    /// `auto` so that every worker decides alike.
    func testAutoPrecisionDecidesPerModel() throws {
        _ = try BackendChoiceCLITests.listed()
        guard FileManager.default.fileExists(atPath: UpscaleCLITests.mirror) else { throw XCTSkip("../shared/models is not present") }
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=48x32:rate=5", "-frames:v", "2", "-vf", "format=gray", "-pix_fmt", "yuv420p", clip])
        func models(_ stats: String) throws -> [String] {
            let run = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])?["run"] as? [String: Any]
            return (run?["models"] as? [[String: Any]])?.compactMap { $0["precision"] as? String } ?? []
        }
        var outputs: [String: Data] = [:]
        for (name, env) in [("lavapipe", [String: String]()), ("gpu", ["VIVIFY_VULKAN_AUTO_FP16": "1"])] {
            let stats = "\(dir)/\(name).json", out = "\(dir)/\(name).y4m"
            let r = try CLI.vivify(["run", clip, out, "--colorize", "--upscale", "--backend", "vulkan", "--quiet", "--stats", stats], environment: env)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            assertValidated(r, name)
            XCTAssertFalse(r.stderr.contains("note:"), "\(name): \(r.stderr)")
            XCTAssertEqual(try models(stats), name == "gpu" ? ["fp32", "fp16"] : ["fp32", "fp32"], "\(name): colorizer, then upscaler")
            outputs[name] = try PrecisionCLITests.pixels(out)
        }
        XCTAssertEqual(outputs["gpu"]?.count, outputs["lavapipe"]?.count)
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(outputs["gpu"]!, outputs["lavapipe"]!), 45, "auto on a GPU against fp32")
        // A catalog upscaler by path is known by its files; the same files with one weight
        // changed are a model of the user's, whose fp16 quality nobody measured.
        let source = UpscaleCLITests.mirror + "/ncnn/waifu2x-upconv7-photo"
        let own = dir + "/own"
        try FileManager.default.createDirectory(atPath: own, withIntermediateDirectories: true)
        for file in ["scale2.0x_model.param", "scale2.0x_model.bin"] { try FileManager.default.copyItem(atPath: "\(source)/\(file)", toPath: "\(own)/\(file)") }
        var weights = try Data(contentsOf: URL(fileURLWithPath: own + "/scale2.0x_model.bin"))
        weights[weights.count - 2] ^= 0x01
        try weights.write(to: URL(fileURLWithPath: own + "/scale2.0x_model.bin"))
        for (model, expected) in [(source + "/scale2.0x_model.param", "fp16"), (own + "/scale2.0x_model.param", "fp32")] {
            let stats = dir + "/\(expected).json"
            let r = try CLI.vivify(["run", clip, dir + "/\(expected).y4m", "--upscale", model, "--backend", "vulkan", "--quiet", "--stats", stats],
                                   environment: ["VIVIFY_VULKAN_AUTO_FP16": "1", "VIVIFY_MODEL_MIRROR": UpscaleCLITests.mirror])
            XCTAssertEqual(r.code, 0, "\(model): \(r.stderr)")
            XCTAssertEqual(try models(stats), [expected], model)
        }
        // The plan keeps `auto` and pins what the planner's device stores catalog upscalers in:
        // a worker on a device that decides otherwise (lavapipe: fp32) stores fp16 too, and
        // the joined file is the unsegmented fp16 run's, not the fp32 one's.
        let work = dir + "/work"
        let media = dir + "/in.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=48x32:rate=4", "-frames:v", "8", "-c:v", "ffv1", media])
        let gpu = ["VIVIFY_VULKAN_AUTO_FP16": "1"]
        var r = try CLI.vivify(["plan", media, dir + "/planned.mkv", "--work", work, "--segment-seconds", "1", "--upscale", "--backend", "vulkan",
                                "--codec", "ffv1"], environment: gpu)
        XCTAssertEqual(r.code, 0, r.stderr)
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/manifest.json"))) as? [String: Any]
        let text = String(decoding: try JSONSerialization.data(withJSONObject: manifest ?? [:]), as: UTF8.self)
        XCTAssertTrue(text.contains("\"precision\":\"auto\"") && text.contains("\"vulkanAutoStorage\":\"fp16\""), text)
        for i in 0..<2 { XCTAssertEqual(try CLI.vivify(["work", work, "--index", String(i), "--quiet"]).code, 0) }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        var whole: [String: Data] = [:]
        for (name, env) in [("fp16", gpu), ("fp32", [String: String]())] {
            let out = dir + "/whole-\(name).mkv"
            r = try CLI.vivify(["run", media, out, "--upscale", "--backend", "vulkan", "--codec", "ffv1", "--quiet"], environment: env)
            XCTAssertEqual(r.code, 0, r.stderr)
            whole[name] = try PrecisionCLITests.pixels(out)
        }
        XCTAssertNotEqual(whole["fp16"], whole["fp32"], "fp16 and fp32 differ on this clip, so the comparison below tells them apart")
        XCTAssertEqual(try PrecisionCLITests.pixels(dir + "/planned.mkv"), whole["fp16"], "the workers stored fp16, as planned")
    }

    /// Validation asked for but the layer unavailable (the loader told to hide it): the run
    /// refuses to start (exit 69) rather than run unvalidated, so a silent run above is a
    /// validated one.
    func testValidationWithoutTheLayerRefusesToRun() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24", "-frames:v", "1", picture])
        let r = try CLI.vivify(["image", picture, dir + "/out.png", "--upscale", "--backend", "vulkan"],
                               environment: ["VK_LOADER_LAYERS_DISABLE": "*validation*"])
        XCTAssertEqual(r.code, 69, r.stderr)
        XCTAssertTrue(r.stderr.contains("VIVIFY_VULKAN_VALIDATION=1 asks for the Khronos validation layer"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
    }

    /// A clip colorized and upscaled on Vulkan: every frame, at twice the size, close to
    /// oneDNN's; `--stats` names the backend that ran.
    func testVideoColorizeAndUpscale() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-i", CLI.clip("testsrc-320x180-30fps-audio.mp4"), "-frames:v", "4", "-vf", "scale=96:54,format=gray", "-pix_fmt", "yuv420p", clip])
        for backend in ["vulkan", "onednn"] {
            let out = "\(dir)/\(backend).y4m"
            let stats = "\(dir)/\(backend).json"
            let r = try CLI.vivify(["run", clip, out, "--colorize", "--upscale", "--backend", backend, "--quiet", "--stats", stats])
            XCTAssertEqual(r.code, 0, "\(backend): \(r.stderr)")
            assertValidated(r, backend)
            let run = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])?["run"] as? [String: Any]
            XCTAssertEqual((run?["settings"] as? [String: String])?["backend"], backend)
            XCTAssertEqual((run?["models"] as? [[String: Any]])?.map { $0["backend"] as? String }, [backend, backend])
            let p = try CLI.probe(out)
            XCTAssertEqual(CLI.decodedFrames(p), 4, backend)
            XCTAssertEqual(CLI.int(CLI.streams(p, "video")[0]["width"]), 192, backend)
        }
        let a = try PrecisionCLITests.pixels(dir + "/vulkan.y4m"), b = try PrecisionCLITests.pixels(dir + "/onednn.y4m")
        XCTAssertEqual(a.count, b.count)
        XCTAssertGreaterThanOrEqual(PrecisionCLITests.psnr(a, b), 45, "colorized and upscaled: vulkan against onednn")
    }
}
