import Foundation
import XCTest

/// What the fourth new-user afternoon found in the GPU-facing options (2026-11-30), each
/// through the binary on this machine's Vulkan device (lavapipe in CI).
final class FourthHuntFindingsTests: XCTestCase {
    func picture(_ dir: String, _ size: String) throws -> String {
        let path = "\(dir)/in-\(size).png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=\(size)", "-frames:v", "1", path])
        return path
    }

    /// `bench-model --backend vulkan --precision fp16` said "fp32" though fp16 ran; it says
    /// what the device stored.
    func testBenchModelSaysTheVulkanPrecisionThatRan() throws {
        _ = try BackendChoiceCLITests.listed()
        for precision in ["fp16", "fp32"] {
            let r = try CLI.vivify(["bench-model", "--model", "vivify-fast-2x", "--size", "32x18", "--runs", "1", "--backend", "vulkan", "--precision", precision])
            XCTAssertEqual(r.code, 0, r.stderr)
            let json = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
            XCTAssertEqual(json?["precision"] as? String, precision, String(decoding: r.stdout, as: UTF8.self))
            XCTAssertEqual(json?["backend"] as? String, "vulkan")
        }
    }

    /// int8 and bf16 are oneDNN's: on Vulkan and the reference backend they ran fp32 without a
    /// word. Each says so once, and the picture is the fp32 one.
    func testPrecisionsABackendDoesNotRunAreSaid() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let input = try picture(dir, "40x24")
        let fp32 = try CLI.vivify(["image", input, dir + "/fp32.png", "--upscale", "--backend", "vulkan", "--precision", "fp32"])
        XCTAssertEqual(fp32.code, 0, fp32.stderr)
        for (backend, precision, says) in [("vulkan", "int8", "--precision int8 is oneDNN's (--backend onednn): the Vulkan backend runs fp32"),
                                           ("vulkan", "bf16", "--precision bf16 is oneDNN's"),
                                           ("reference", "bf16", "--precision bf16: the reference backend runs fp32"),
                                           ("reference", "fp16", "--precision fp16: the reference backend runs fp32")] {
            let out = "\(dir)/\(backend)-\(precision).png"
            let r = try CLI.vivify(["image", input, out, "--upscale", "--backend", backend, "--precision", precision])
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertEqual(r.stderr.components(separatedBy: "vivify: note: ").count - 1, 1, "\(backend) \(precision): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(says), "\(backend) \(precision): \(r.stderr)")
        }
        XCTAssertEqual(try PrecisionCLITests.pixels(dir + "/vulkan-int8.png"), try PrecisionCLITests.pixels(dir + "/fp32.png"))
        // fp32 and auto are no news on any backend.
        let quiet = try CLI.vivify(["image", input, dir + "/q.png", "--upscale", "--backend", "reference", "--precision", "fp32"])
        XCTAssertFalse(quiet.stderr.contains("note:"), quiet.stderr)
    }

    /// A note was printed twice by `run` (its options are validated again for the job); once.
    func testARunSaysANoteOnce() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=48x32:rate=10", "-t", "0.3", clip])
        let r = try CLI.vivify(["run", clip, dir + "/out.mkv", "--upscale", "--backend", "onednn", "--precision", "fp16", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(r.stderr.components(separatedBy: "--precision fp16 is the Vulkan backend's").count - 1, 1, r.stderr)
    }

    /// An explicit --max-memory lifts the automatic tiles' speed cap; on Vulkan the tile it
    /// chose then held values past what one descriptor binds (lavapipe: 128 MiB), and
    /// waifu2x-photo-2x at 400×400 failed with exit 64 where the default ran. Tiles now stay
    /// within the device's limit: the run succeeds, as it does without the option.
    func testAnExplicitBudgetKeepsVulkanTilesWithinOneBuffer() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let input = try picture(dir, "400x400")
        let r = try CLI.vivify(["image", input, dir + "/out.png", "--upscale", "waifu2x-photo-2x", "--backend", "vulkan", "--precision", "fp16",
                                "--max-memory", "2G"], environment: ["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": UpscaleCLITests.mirror])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("does not fit in one buffer"), r.stderr)
        let size = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=width,height", "-of", "csv=p=0", dir + "/out.png"])
        XCTAssertEqual(String(decoding: size.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), "800,800")
    }

    /// VIVIFY_VULKAN_VALIDATION=true ran without the layer, silently: only 1 turns it on, so
    /// any other value but 0 is refused (64), naming the variable and the fix.
    func testAValidationValueOtherThanOneOrZeroIsRefused() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let input = try picture(dir, "24x16")
        for value in ["true", "yes", "2"] {
            let r = try CLI.vivify(["image", input, dir + "/o.png", "--upscale", "--backend", "vulkan"], environment: ["VIVIFY_VULKAN_VALIDATION": value])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("VIVIFY_VULKAN_VALIDATION=\(value) is neither 1 nor 0"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/o.png"))
        }
        let off = try CLI.vivify(["image", input, dir + "/o.png", "--upscale", "--backend", "vulkan"], environment: ["VIVIFY_VULKAN_VALIDATION": "0"])
        XCTAssertEqual(off.code, 0, off.stderr)
    }

    /// The kernel switches took any value as the default (VIVIFY_VULKAN_WINOGRAD=garbage
    /// profiled as the default): anything but 1, 0 or empty is refused, naming the variable.
    func testAKernelSwitchOtherThanOneOrZeroIsRefused() throws {
        _ = try BackendChoiceCLITests.listed()
        let dir = try CLI.tempDir()
        let input = try picture(dir, "24x16")
        for name in ["VIVIFY_VULKAN_WINOGRAD", "VIVIFY_VULKAN_ROWS", "VIVIFY_VULKAN_SUBPIXEL"] {
            let r = try CLI.vivify(["image", input, dir + "/o.png", "--upscale", "--backend", "vulkan"], environment: [name: "on"])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("\(name)=on is neither 1 nor 0"), r.stderr)
        }
        let ok = try CLI.vivify(["image", input, dir + "/o.png", "--upscale", "--backend", "vulkan"], environment: ["VIVIFY_VULKAN_ROWS": "0"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
    }
}
