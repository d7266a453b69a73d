import Foundation
import Vivify
import XCTest

/// What a second new-user afternoon found (stop 48), each end to end through the binary.
final class SecondHuntFindingsTests: XCTestCase {
    static let style = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/coreml/style").path

    /// A job's models are hashed by every file they are read from: a Core ML model's custom
    /// layer declarations (NAME.layers.json) changed between two segments made one video of
    /// two models, exit 0 (mean luma 148 then 78). A worker now refuses to go on.
    func testAChangedSideFileIsNeverResumedFrom() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-frames:v", "20", "-pix_fmt", "yuv420p", clip])
        try FileManager.default.createDirectory(atPath: dir + "/m", withIntermediateDirectories: true)
        for ext in ["mlmodel", "layers.json"] {
            try FileManager.default.copyItem(atPath: "\(Self.style)/style_fp32.\(ext)", toPath: "\(dir)/m/style_fp32.\(ext)")
        }
        let work = dir + "/job"
        let plan = try CLI.vivify(["plan", clip, dir + "/out.mp4", "--filter", dir + "/m/style_fp32.mlmodel", "--segment-seconds", "1", "--work", work])
        XCTAssertEqual(plan.code, 0, plan.stderr)
        XCTAssertEqual(try CLI.vivify(["work", work, "--index", "0"]).code, 0)
        let layers = dir + "/m/style_fp32.layers.json"
        let edited = try String(contentsOfFile: layers, encoding: .utf8).replacingOccurrences(of: "127.5", with: "60")
        try edited.write(toFile: layers, atomically: true, encoding: .utf8)
        let second = try CLI.vivify(["work", work, "--index", "1"])
        XCTAssertNotEqual(second.code, 0, second.stderr)
        XCTAssertTrue(second.stderr.contains("has changed since: filter style_fp32"), second.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mp4"))
    }

    /// The README's example bundle (the style network, `"shrinkSize": 0`) failed with exit 65
    /// on every picture whose side is not a multiple of 4 ("output 1x3x88x160 for input
    /// 1x3x90x160", naming its private extraction folder), where the bare model worked. A
    /// bundle's tiles now sit on the model's stride grid, and it gives the bare model's picture.
    func testTheReadmesBundleTakesAnySize() throws {
        let dir = try CLI.tempDir()
        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try XCTUnwrap(readme.range(of: "cat > style.json <<'JSON'\n"))
        let end = try XCTUnwrap(readme.range(of: "\nJSON\n", range: start.upperBound..<readme.endIndex))
        try String(readme[start.upperBound..<end.lowerBound]).write(toFile: dir + "/style.json", atomically: true, encoding: .utf8)
        try FileManager.default.copyItem(atPath: "\(Self.style)/style_fp32.mlmodel", toPath: dir + "/main.mlmodel")
        let pack = try CLI.vivify(["models", "pack", "--manifest", dir + "/style.json", dir + "/main.mlmodel", "-o", dir + "/style.wifm"])
        XCTAssertEqual(pack.code, 0, pack.stderr)
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", picture])
        let bundled = try CLI.vivify(["image", picture, dir + "/bundle.png", "--filter", dir + "/style.wifm"])
        XCTAssertEqual(bundled.code, 0, bundled.stderr)
        let bare = try CLI.vivify(["image", picture, dir + "/bare.png", "--filter", "\(Self.style)/style_fp32.mlmodel"])
        XCTAssertEqual(bare.code, 0, bare.stderr)
        let a = try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(dir + "/bundle.png")), b = try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(dir + "/bare.png"))
        XCTAssertEqual(a.count, 160 * 90 * 3)
        XCTAssertLessThanOrEqual(zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 255, 1, "the bundle gives the bare model's picture")
        let verify = try CLI.vivify(["models", "verify", dir + "/style.wifm", "--size", "160x90"])
        XCTAssertEqual(verify.code, 0, verify.stderr)
        XCTAssertTrue(String(decoding: verify.stdout, as: UTF8.self).contains("input 3x92x160 -> output 3x92x160"))
    }

    /// `--hint X,Y` takes pixel coordinates of the first frame; with `--colorize-after` the
    /// colorizer sees the upscaled frame and put the hint at X,Y of that (a quarter of the way
    /// in), and took 400,300 on a 320x180 input. It now maps them, and refuses what is outside.
    func testAHintStaysOnItsPixelAfterAnUpscale() throws {
        let dir = try CLI.tempDir()
        let grey = dir + "/grey.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10", "-vf", "format=gray", "-frames:v", "2", "-pix_fmt", "yuv420p", grey])
        func magenta(_ rgb: [UInt8], _ width: Int, _ x: Int, _ y: Int) -> Int {
            let i = (y * width + x) * 3
            return (Int(rgb[i]) + Int(rgb[i + 2])) / 2 - Int(rgb[i + 1])
        }
        var pictures: [[UInt8]] = []
        for (name, order) in [("before.mkv", ["--colorize", "--upscale"]), ("after.mkv", ["--upscale", "--colorize", "--colorize-after"])] {
            let out = dir + "/" + name
            let r = try CLI.vivify(["run", grey, out] + order + ["--hint", "120,30=#FF00FF", "--max-frames", "1", "--codec", "ffv1", "--pix-fmt", "yuv444p", "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            pictures.append(try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(out)))
        }
        for (i, rgb) in pictures.enumerated() {
            XCTAssertEqual(rgb.count, 320 * 180 * 3)
            XCTAssertGreaterThan(magenta(rgb, 320, 241, 61), 40, "picture \(i): magenta where the hint's pixel went")
            XCTAssertLessThan(magenta(rgb, 320, 60, 15), 20, "picture \(i): not at the hint's numbers in the upscaled frame")
        }
        let outside = try CLI.vivify(["run", grey, dir + "/o.mkv", "--upscale", "--colorize", "--colorize-after", "--hint", "200,100=#FF00FF"])
        XCTAssertEqual(outside.code, 64, outside.stderr)
        XCTAssertTrue(outside.stderr.contains("outside the 160x90 picture"), outside.stderr)
    }

    /// What an unsegmented run refuses before any work (a keyframe past the end, a keyframe of
    /// another aspect, a hint outside the first frame) was taken by a segmented run and by
    /// `plan`, exit 0: the keyframe never used, or every worker failing. Refused now, 64,
    /// before a segment is planned.
    func testASegmentedJobChecksItsGuideBeforeAnyWork() throws {
        let dir = try CLI.tempDir()
        let grey = dir + "/grey.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=10", "-vf", "format=gray", "-frames:v", "30", "-pix_fmt", "yuv420p", grey])
        let key = dir + "/key.png", square = dir + "/square.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=160x90", "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=120x120", "-frames:v", "1", square])
        let cases: [([String], String)] = [
            (["--keyframe", "400=" + key], "past the end"),
            (["--keyframe", "9s=" + key], "past the end"),
            (["--keyframe", "0=" + square], "aspect"),
            (["--hint", "999,999=#FF0000"], "outside the 160x90 picture"),
        ]
        for (guide, says) in cases {
            let run = try CLI.vivify(["run", grey, dir + "/run.mp4", "--colorize", "--segment-seconds", "1"] + guide)
            XCTAssertEqual(run.code, 64, "run \(guide): \(run.stderr)")
            XCTAssertTrue(run.stderr.contains(says), "run \(guide): \(run.stderr)")
            let plan = try CLI.vivify(["plan", grey, dir + "/plan.mp4", "--colorize", "--segment-seconds", "1", "--work", dir + "/job"] + guide)
            XCTAssertEqual(plan.code, 64, "plan \(guide): \(plan.stderr)")
            XCTAssertTrue(plan.stderr.contains(says), "plan \(guide): \(plan.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/job/manifest.json"), "plan \(guide): no job planned")
        }
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), ["grey.mp4", "key.png", "square.png"], "nothing left behind")
    }

    /// A manifest with its last segments removed joined the rest, exit 0 ("joined 20 frames"
    /// of 40). The segments must tile the job's frames: refused as damaged or edited, 65.
    func testAManifestWithoutSomeSegmentsIsRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-frames:v", "40", "-g", "5", "-pix_fmt", "yuv420p", clip])
        let work = dir + "/job"
        let plan = try CLI.vivify(["plan", clip, dir + "/out.mp4", "--segment-seconds", "1", "--work", work])
        XCTAssertEqual(plan.code, 0, plan.stderr)
        let count = Int(String(decoding: plan.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        XCTAssertEqual(count, 4)
        for i in 0..<count { XCTAssertEqual(try CLI.vivify(["work", work, "--index", String(i)]).code, 0) }
        let url = URL(fileURLWithPath: work + "/manifest.json")
        var manifest = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        manifest["segments"] = Array(try XCTUnwrap(manifest["segments"] as? [Any]).prefix(2))
        try JSONSerialization.data(withJSONObject: manifest).write(to: url)
        for args in [["status", work], ["join", work]] {
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 65, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("damaged or was edited") && r.stderr.contains("totalFrames is 40"), r.stderr)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mp4"))
    }

    /// The README said a folder batch takes `.bmp .tif .tiff .webp` files; they were left out,
    /// and given one by one failed (exit 69). Read now, like the ncnn tools read them: the
    /// lossless ones give exactly the PNG's picture, a lossy WebP about it.
    func testBMPTIFFAndWebPAreRead() throws {
        let dir = try CLI.tempDir()
        let inputs = dir + "/in", outputs = dir + "/out"
        try FileManager.default.createDirectory(atPath: inputs, withIntermediateDirectories: true)
        let png = inputs + "/a.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64", "-frames:v", "1", png])
        try CLI.ffmpeg(["-i", png, inputs + "/b.bmp"])
        try CLI.ffmpeg(["-i", png, "-pix_fmt", "rgba", inputs + "/c.bmp"])
        try CLI.ffmpeg(["-i", png, "-pix_fmt", "rgb24", inputs + "/d.tif"])
        try CLI.ffmpeg(["-i", png, "-pix_fmt", "rgb48le", inputs + "/e.tiff"])
        try CLI.ffmpeg(["-i", png, "-c:v", "libwebp", "-lossless", "1", inputs + "/f.webp"])
        try CLI.ffmpeg(["-i", png, "-c:v", "libwebp", "-quality", "95", inputs + "/g.webp"])
        let r = try CLI.vivify(["image", inputs, outputs, "--upscale", "--format", "png", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: outputs).sorted(),
                       ["a.png", "b.png", "c.png", "d.png", "e.png", "f.png", "g.png"])
        let reference = try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(outputs + "/a.png"))
        for name in ["b", "c", "d", "e", "f", "g"] {
            let v = try XCTUnwrap(CLI.streams(try CLI.probe(outputs + "/\(name).png"), "video").first)
            XCTAssertFalse((v["pix_fmt"] as? String ?? "").contains("a"), "\(name): an alpha the file does not use is dropped: \(v["pix_fmt"] ?? "")")
            let rgb = try XCTUnwrap(FirstUseFindingsTests.firstFrameRGB(outputs + "/\(name).png"))
            let mean = zip(rgb, reference).reduce(0.0) { $0 + abs(Double($1.0) - Double($1.1)) } / Double(reference.count)
            // 16-bit TIFF: the same picture at 16 bits, rounded once more; lossy WebP: 4:2:0
            // chroma on testsrc2's hard colour edges.
            XCTAssertLessThanOrEqual(mean, name == "g" ? 6 : name == "e" ? 0.5 : 0, "\(name): mean difference \(mean) from the PNG's")
        }
        // A grey lossy WebP with transparency keeps it (the neutral-chroma shortcut for grey
        // JPEGs dropped it).
        let greyAlpha = dir + "/grey-alpha.webp"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=gray:size=64x48", "-frames:v", "1", "-vf", "format=rgba,geq=r='128':g='128':b='128':a='4*X'",
                        "-c:v", "libwebp", "-quality", "90", greyAlpha])
        let alpha = try CLI.vivify(["image", greyAlpha, dir + "/grey-alpha.png", "--upscale", "--quiet"])
        XCTAssertEqual(alpha.code, 0, alpha.stderr)
        let ga = try XCTUnwrap(CLI.streams(try CLI.probe(dir + "/grey-alpha.png"), "video").first)
        XCTAssertTrue((ga["pix_fmt"] as? String ?? "").contains("a"), "alpha kept: \(ga["pix_fmt"] ?? "")")
        let gif = dir + "/x.gif"
        try CLI.ffmpeg(["-i", png, gif])
        let refused = try CLI.vivify(["image", gif, dir + "/x.png", "--upscale"])
        XCTAssertEqual(refused.code, 69, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("GIF"), refused.stderr)
    }

    /// The README's ffmpeg way to take a keyframe out stood a turned phone video's frame
    /// upright (108x192 for a 192x108 stored frame), which vivify refused without saying why.
    /// The README's command keeps the frame as stored now, and a turned keyframe is named so.
    func testATurnedKeyframeIsNamedAsSuch() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("rotated-sar-192x108.mp4")
        let upright = dir + "/upright.png", stored = dir + "/stored.png"
        try CLI.ffmpeg(["-i", clip, "-vf", "select=eq(n\\,0)", "-frames:v", "1", upright])
        try CLI.ffmpeg(["-noautorotate", "-i", clip, "-vf", "select=eq(n\\,0)", "-frames:v", "1", stored])
        let turned = try CLI.vivify(["run", clip, dir + "/a.mp4", "--colorize", "--keyframe", "0=" + upright])
        XCTAssertEqual(turned.code, 64, turned.stderr)
        XCTAssertTrue(turned.stderr.contains("turned a quarter"), turned.stderr)
        let ok = try CLI.vivify(["run", clip, dir + "/b.mp4", "--colorize", "--keyframe", "0=" + stored, "--max-frames", "2", "--quiet"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        XCTAssertTrue(readme.contains("ffmpeg -noautorotate -i IN -vf \"select=eq(n\\,N)\" -frames:v 1 frame.png"))
    }

    /// Small things the second hunt found: two keyframes for one frame (the last won, said
    /// nothing), a 2x2 keyframe taken as of a 320x180 frame's aspect, `vivify image DIR
    /// out.png` making a folder named out.png, `infer --output o.png` writing a .npy under a
    /// picture's name. Each refused now, 64, before any work.
    func testSmallThingsAreRefused() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let key = dir + "/key.png", tiny = dir + "/tiny.png"
        try CLI.ffmpeg(["-i", clip, "-frames:v", "1", key])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=2x2", "-frames:v", "1", tiny])
        let twice = try CLI.vivify(["run", clip, dir + "/a.mp4", "--colorize", "--keyframe", "0=" + key, "--keyframe", "0=" + key])
        XCTAssertEqual(twice.code, 64, twice.stderr)
        XCTAssertTrue(twice.stderr.contains("both for one frame"), twice.stderr)
        let small = try CLI.vivify(["run", clip, dir + "/b.mp4", "--colorize", "--keyframe", "0=" + tiny])
        XCTAssertEqual(small.code, 64, small.stderr)
        XCTAssertTrue(small.stderr.contains("aspect"), small.stderr)
        try FileManager.default.createDirectory(atPath: dir + "/pictures", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: key, toPath: dir + "/pictures/k.png")
        let batch = try CLI.vivify(["image", dir + "/pictures", dir + "/out1.png", "--upscale"])
        XCTAssertEqual(batch.code, 64, batch.stderr)
        XCTAssertTrue(batch.stderr.contains("output of a batch is a folder"), batch.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out1.png"))
        let model = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/coreml/style/style_fp32.mlmodel").path
        let infer = try CLI.vivify(["infer", model, "--input", dir + "/missing.npy", "--output", dir + "/o.png"])
        XCTAssertEqual(infer.code, 64, infer.stderr)
        XCTAssertTrue(infer.stderr.contains("NAME.npy"), infer.stderr)
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: dir)), ["key.png", "tiny.png", "pictures"])
    }

    /// A 2x1 keyframe passed the aspect check for 64x36 frames (within the rounding of a
    /// pixel): refused now as too small, before any work; a half-size keyframe still colours.
    func testAKeyframeOfAPixelOrTwoIsRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "3", "-pix_fmt", "yuv420p", clip])
        let tiny = dir + "/tiny.png", half = dir + "/half.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=2x2,format=rgb24,crop=2:1:0:0", "-frames:v", "1", tiny])
        try CLI.ffmpeg(["-i", clip, "-frames:v", "1", "-vf", "scale=32:18", half])
        let small = try CLI.vivify(["run", clip, dir + "/a.mp4", "--colorize", "--keyframe", "0=" + tiny])
        XCTAssertEqual(small.code, 64, small.stderr)
        XCTAssertTrue(small.stderr.contains("'\(tiny)' is 2x1: too small"), small.stderr)
        XCTAssertTrue(small.stderr.contains("from 29x16 up"), small.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/a.mp4"))
        let ok = try CLI.vivify(["run", clip, dir + "/b.mkv", "--colorize", "--keyframe", "0=" + half, "--codec", "ffv1", "--quiet"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/b.mkv")), 3)
    }

    /// A worker whose stop signal came once every frame of its segment was written said
    /// "stopped after 30 frames; run it again to redo it", left the finished file unrecorded,
    /// and the next run redid it. The segment is recorded as done now.
    func testASignalAfterTheLastFrameKeepsTheSegment() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10", "-frames:v", "12", "-g", "4", "-pix_fmt", "yuv420p", clip])
        let work = dir + "/job"
        let plan = try CLI.vivify(["plan", clip, dir + "/out.mkv", "--codec", "ffv1", "--segment-seconds", "100", "--work", work])
        XCTAssertEqual(plan.code, 0, plan.stderr)
        let job = try SegmentedJob(directory: URL(fileURLWithPath: work))
        final class Count: @unchecked Sendable { var frames = 0 }
        let count = Count()
        job.events.progress = { count.frames = $0 }
        job.events.shouldStop = { count.frames >= 12 }
        XCTAssertEqual(try job.work(index: 0), .done(frames: 12))
        let status = try CLI.vivify(["status", work])
        XCTAssertTrue(String(decoding: status.stdout, as: UTF8.self).contains("1 of 1 segments done"), String(decoding: status.stdout, as: UTF8.self) + status.stderr)
        // One frame short of the end, it is an interruption, as before.
        let again = try CLI.vivify(["plan", clip, dir + "/out2.mkv", "--codec", "ffv1", "--segment-seconds", "100", "--work", dir + "/job2"])
        XCTAssertEqual(again.code, 0, again.stderr)
        let short = try SegmentedJob(directory: URL(fileURLWithPath: dir + "/job2"))
        let early = Count()
        short.events.progress = { early.frames = $0 }
        short.events.shouldStop = { early.frames >= 6 }
        if case .done = try short.work(index: 0) { XCTFail("stopped halfway is not done") }
    }
}
