import Foundation
import XCTest

/// What a new user was told that was wrong or no help (found on a first afternoon with the CLI,
/// stop 47; fixed stop 48), each end to end through the binary.
final class MessagesThatNameTheFixTests: XCTestCase {
    /// `models verify vivify-color` said "use it with --colorize": verify timed upscalers only.
    /// A colorizer is now dry-run as one: its model pass on its own input and a whole frame
    /// through the stage.
    func testVerifyDryRunsAColorizer() throws {
        let r = try CLI.vivify(["models", "verify", "vivify-color", "--size", "320x180", "--threads", "1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let out = String(decoding: r.stdout, as: UTF8.self)
        XCTAssertTrue(out.contains("task: colorize"), out)
        XCTAssertTrue(out.contains("model pass: input 1x224x224 -> output 2x"), out)
        let perFrame = try XCTUnwrap(out.split(separator: "\n").first { $0.hasPrefix("measured for 320x180:") })
        let ms = try XCTUnwrap(Double(perFrame.split(separator: " ")[3]), String(perFrame))
        XCTAssertGreaterThan(ms, 0)
        // An upscaler is still dry-run per tile.
        let up = try CLI.vivify(["models", "verify", "2", "--size", "320x180", "--threads", "1"])
        XCTAssertEqual(up.code, 0, up.stderr)
        XCTAssertTrue(String(decoding: up.stdout, as: UTF8.self).contains("scale: 2x"))
    }

    /// `probe still.png` said "`vivify run` is for video": probe now describes a picture, as a
    /// still (no rate or frame count), naming `vivify image`; `run` still refuses it.
    func testProbeDescribesAPicture() throws {
        let dir = try CLI.tempDir()
        let still = dir + "/still.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=96x64", "-frames:v", "1", still])
        let text = try CLI.vivify(["probe", still])
        XCTAssertEqual(text.code, 0, text.stderr)
        let described = String(decoding: text.stdout, as: UTF8.self)
        XCTAssertTrue(described.contains("video: png 96x64"), described)
        XCTAssertTrue(described.contains("still picture"), described)
        XCTAssertTrue(described.contains("vivify image"), described)
        XCTAssertFalse(described.contains("frame rate"), "a picture has no rate: \(described)")
        let json = try CLI.vivify(["probe", "--json", still])
        XCTAssertEqual(json.code, 0, json.stderr)
        let root = try XCTUnwrap(JSONSerialization.jsonObject(with: json.stdout) as? [String: Any])
        XCTAssertEqual(root["still"] as? Bool, true)
        XCTAssertEqual((root["video"] as? [String: Any])?["width"] as? Int, 96)
        let video = try CLI.vivify(["probe", "--json", CLI.clip("testsrc-320x180-30fps-audio.mp4")])
        let videoRoot = try XCTUnwrap(JSONSerialization.jsonObject(with: video.stdout) as? [String: Any])
        XCTAssertEqual(videoRoot["still"] as? Bool, false)
        let run = try CLI.vivify(["run", still, dir + "/out.mp4"])
        XCTAssertEqual(run.code, 64, run.stderr)
        XCTAssertTrue(run.stderr.contains("vivify image"), run.stderr)
    }

    /// `--keyframe -1=k.png` got the parser's "Missing value" (it took -1=… for an option):
    /// a value that starts with a minus sign now reaches our own check, which names the form.
    func testANegativeKeyframeOrHintGetsOurMessage() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let key = dir + "/k.png"
        try CLI.ffmpeg(["-i", clip, "-frames:v", "1", key])
        let k = try CLI.vivify(["run", clip, dir + "/a.mp4", "--colorize", "--keyframe", "-1=" + key])
        XCTAssertEqual(k.code, 64, k.stderr)
        XCTAssertFalse(k.stderr.contains("Missing value"), k.stderr)
        XCTAssertTrue(k.stderr.contains("0-based frame number"), k.stderr)
        let h = try CLI.vivify(["run", clip, dir + "/b.mp4", "--colorize", "--hint", "-5,3=#ff0000"])
        XCTAssertEqual(h.code, 64, h.stderr)
        XCTAssertFalse(h.stderr.contains("Missing value"), h.stderr)
        XCTAssertTrue(h.stderr.contains("X,Y=#RRGGBB"), h.stderr)
        // A keyframe value that is a value, not an option, is unchanged by the joining.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), ["k.png"])
    }

    /// `--live` was answered "Did you mean '--size'?"; options other tools spell so now get
    /// vivify's spelling.
    func testOptionsOtherToolsSpellOtherwiseNameOurs() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        for (args, fix) in [(["run", clip, dir + "/a.mp4", "--live"], "--mode live"),
                            (["run", clip, "-o", dir + "/a.mp4"], "second argument"),
                            (["run", clip, dir + "/a.mp4", "--gpu"], "--backend vulkan"),
                            (["image", "a.png", "b.png", "--scale", "2"], "--upscale 2")] {
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(fix), "\(args): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("Did you mean"), "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("Usage:"), "the usage lines stay: \(r.stderr)")
        }
        // Advice for run and image is not given to a command it does not fit.
        let verify = try CLI.vivify(["models", "verify", "x.param", "--model", "y"])
        XCTAssertEqual(verify.code, 64)
        XCTAssertFalse(verify.stderr.contains("--upscale MODEL"), verify.stderr)
        let probe = try CLI.vivify(["probe", clip, "-o", "x"])
        XCTAssertFalse(probe.stderr.contains("second argument"), probe.stderr)
        // Another unknown option keeps the parser's own suggestion.
        let other = try CLI.vivify(["run", clip, dir + "/a.mp4", "--sise", "2x2"])
        XCTAssertEqual(other.code, 64)
        XCTAssertTrue(other.stderr.contains("Did you mean '--size'"), other.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir), [])
    }

    /// SVT-AV1's 64-pixel minimum was reported as "check --crf, --preset and --pix-fmt"; the
    /// error now names the size and the codecs that take it, before anything is written.
    func testAnEncodersSmallestFrameIsNamed() throws {
        let dir = try CLI.tempDir()
        let thin = dir + "/thin.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=128x32:rate=10", "-frames:v", "3", thin])
        for (codec, least) in [("libsvtav1", 64), ("libx265", 16)] {
            let source = codec == "libx265" ? dir + "/strip.mp4" : thin
            if codec == "libx265" {
                try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=128x8:rate=10", "-frames:v", "3", source])
            }
            let out = dir + "/out-\(codec).mkv"
            let r = try CLI.vivify(["run", source, out, "--codec", codec])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("at least \(least)x\(least)"), r.stderr)
            XCTAssertFalse(r.stderr.contains("--crf"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        }
        // At the smallest size it encodes.
        let square = dir + "/square.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x64:rate=10", "-frames:v", "3", square])
        let ok = try CLI.vivify(["run", square, dir + "/ok.mkv", "--codec", "libsvtav1", "--quiet"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/ok.mkv")), 3)
    }

    /// libx265 and SVT-AV1 print to stderr past FFmpeg's log (x265's settings and statistics,
    /// about 25 lines, even under --quiet); they are quiet now unless --verbose.
    func testEncodersThatLogOnTheirOwnAreQuiet() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=128x96:rate=10", "-frames:v", "3", source])
        for (codec, marker) in [("libx265", "x265 [info]"), ("libsvtav1", "Svt[info]")] {
            let quiet = try CLI.vivify(["run", source, dir + "/q-\(codec).mkv", "--codec", codec, "--quiet"])
            XCTAssertEqual(quiet.code, 0, quiet.stderr)
            XCTAssertEqual(quiet.stderr, "", "\(codec) under --quiet")
            let plain = try CLI.vivify(["run", source, dir + "/p-\(codec).mkv", "--codec", codec])
            XCTAssertEqual(plain.code, 0, plain.stderr)
            XCTAssertFalse(plain.stderr.contains(marker), "\(codec): \(plain.stderr)")
            let verbose = try CLI.vivify(["run", source, dir + "/v-\(codec).mkv", "--codec", codec, "--verbose"])
            XCTAssertEqual(verbose.code, 0, verbose.stderr)
            XCTAssertTrue(verbose.stderr.contains(marker), "--verbose shows the encoder's own log: \(verbose.stderr)")
        }
    }

    /// The second hunt's messages (stop 48): negative numbers after any option got the
    /// parser's "Missing value"; a broken SLURM_ARRAY_TASK_ID "No segment named"; `plan
    /// --quiet` "Did you mean '--hint'"; a missing filter was "the upscaler"; a tensor of the
    /// wrong channels blamed the model (65); `infer` suggested the -n it did not have.
    func testTheSecondHuntsMessages() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let work = dir + "/job"
        XCTAssertEqual(try CLI.vivify(["plan", clip, dir + "/p.mp4", "--segment-seconds", "100", "--work", work]).code, 0)
        for (args, says) in [(["work", work, "--index", "-1"], "no segment -1"),
                             (["run", clip, dir + "/o.mp4", "--segment-seconds", "-1"], "must be from 0"),
                             (["run", clip, dir + "/o.mp4", "--upscale", "--saturation", "-2"], "out of range"),
                             (["plan", clip, dir + "/q.mp4", "--quiet", "--work", dir + "/j2"], "has no --quiet"),
                             (["run", clip, dir + "/o.mp4", "--filter", dir + "/nonexist.onnx"], "Cannot open the filter")] {
            let r = try CLI.vivify(args)
            XCTAssertNotEqual(r.code, 0, "\(args)")
            XCTAssertTrue(r.stderr.contains(says), "\(args): \(r.stderr)")
            XCTAssertFalse(r.stderr.contains("Missing value") || r.stderr.contains("Did you mean"), "\(args): \(r.stderr)")
        }
        let slurm = try CLI.vivify(["work", work], environment: ["SLURM_ARRAY_TASK_ID": "abc"])
        XCTAssertEqual(slurm.code, 64, slurm.stderr)
        XCTAssertTrue(slurm.stderr.contains("SLURM_ARRAY_TASK_ID is 'abc', not a segment number"), slurm.stderr)
        // infer: the input's channels named (64), and -n as everywhere else.
        let model = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/coreml/style/style_fp32.mlmodel").path
        let npy = dir + "/one.npy"
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 4), }"
        while (10 + header.count + 1) % 64 != 0 { header += " " }
        var data = Data([0x93]) + Data("NUMPY".utf8) + Data([1, 0, UInt8(header.count + 1), 0]) + Data((header + "\n").utf8)
        data += Data(count: 16 * 4)
        try data.write(to: URL(fileURLWithPath: npy))
        let channels = try CLI.vivify(["infer", model, "--input", npy, "--output", dir + "/o.npy"])
        XCTAssertEqual(channels.code, 64, channels.stderr)
        XCTAssertTrue(channels.stderr.contains("takes 3 channels, but the input array has 1"), channels.stderr)
        try Data("keep".utf8).write(to: URL(fileURLWithPath: dir + "/exists.npy"))
        let skip = try CLI.vivify(["infer", model, "--input", npy, "--output", dir + "/exists.npy", "-n"])
        XCTAssertEqual(skip.code, 0, skip.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: dir + "/exists.npy")), Data("keep".utf8))
    }
}
