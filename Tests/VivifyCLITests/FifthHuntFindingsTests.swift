import Foundation
import XCTest

/// What the fifth round of new-user checks found (2026-11-30, stop 50), each through the binary.
final class FifthHuntFindingsTests: XCTestCase {
    /// `--live-output hold` on an offline run was taken and ignored: the output had every
    /// frame at its own time, as without it. It is refused (64) naming the fix, before any work;
    /// with `--mode live` it is taken.
    func testLiveOutputWithoutLiveModeIsRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24:rate=10", "-frames:v", "3", "-pix_fmt", "yuv420p", clip])
        for value in ["hold", "vfr"] {
            let r = try CLI.vivify(["run", clip, dir + "/out-\(value).y4m", "--live-output", value])
            XCTAssertEqual(r.code, 64, r.stderr)
            XCTAssertTrue(r.stderr.contains("'--live-output \(value)' applies to live mode only") && r.stderr.contains("--mode live"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out-\(value).y4m"))
        }
        let live = try CLI.vivify(["run", clip, dir + "/live.y4m", "--mode", "live", "--live-output", "hold", "--quiet"])
        XCTAssertEqual(live.code, 0, live.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/live.y4m")), 3)
    }

    /// An output that is the run's own reference or keyframe was written over it. Refused
    /// (64) before any work, naming the file, and the file is kept.
    func testAnOutputThatTheRunReadsIsRefused() throws {
        let dir = try CLI.tempDir()
        let reference = dir + "/ref.png", grey = dir + "/grey.png", clip = dir + "/grey.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", reference])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", "-vf", "format=gray", grey])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "3", "-vf", "format=gray", "-c:v", "ffv1", clip])
        let before = try Data(contentsOf: URL(fileURLWithPath: reference))
        let cases: [[String]] = [
            ["image", grey, reference, "--colorize", "--reference", reference, "-y"],
            ["run", clip, reference, "--colorize", "--keyframe", "0=\(reference)", "--max-frames", "1", "-y"],
            ["run", clip, reference, "--colorize", "--hints", reference, "--max-frames", "1", "-y"],
        ]
        for args in cases {
            let r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 64, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("is '\(reference)', which this run reads"), r.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: reference)), before, "\(args): the file it reads is kept")
        }
        // A batch into a folder that holds the reference under an output's name.
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: grey, toPath: dir + "/in/ref.png")
        let batch = try CLI.vivify(["image", dir + "/in", dir, "--colorize", "--reference", reference, "-y"])
        XCTAssertNotEqual(batch.code, 0, batch.stderr)
        XCTAssertTrue(batch.stderr.contains("which this run reads"), batch.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: reference)), before)
    }

    /// An empty VIVIFY_VULKAN_DEVICE= stopped every default run (64) where the kernel switches
    /// take empty as unset; it is unset now. Anything but digits is still refused.
    func testAnEmptyDeviceVariableIsUnset() throws {
        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24", "-frames:v", "1", picture])
        let r = try CLI.vivify(["image", picture, dir + "/out.png", "--upscale"], environment: ["VIVIFY_VULKAN_DEVICE": ""])
        XCTAssertEqual(r.code, 0, r.stderr)
        let probe = try CLI.vivify(["probe", "--devices"], environment: ["VIVIFY_VULKAN_DEVICE": ""])
        XCTAssertEqual(probe.code, 0, probe.stderr)
        for bad in [" 0", "+0"] {
            let b = try CLI.vivify(["image", picture, dir + "/bad.png", "--upscale"], environment: ["VIVIFY_VULKAN_DEVICE": bad])
            XCTAssertEqual(b.code, 64, "'\(bad)': \(b.stderr)")
            XCTAssertTrue(b.stderr.contains("names no Vulkan device"), b.stderr)
        }
    }

    /// `--keyframe 0=a.png --keyframe 0.0s=b.png`: two colours for frame 0, the second dropped
    /// without a word (two numbers for one frame were refused). Refused (64) before any work,
    /// naming both and the frame, as is a time that rounds to a numbered frame.
    func testAKeyframeGivenTwiceAsNumberAndTimeIsRefused() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/grey.mkv", a = dir + "/a.png", b = dir + "/b.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "20", "-vf", "format=gray", "-c:v", "ffv1", clip])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", a])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36", "-frames:v", "1", "-vf", "hue=h=90", b])
        for (first, second, frame) in [("0=\(a)", "0.0s=\(b)", 0), ("1.5s=\(a)", "15=\(b)", 15), ("0.5s=\(a)", "0.52s=\(b)", 5)] {
            let out = dir + "/out.mkv"
            let r = try CLI.vivify(["run", clip, out, "--colorize", "--keyframe", first, "--keyframe", second])
            XCTAssertEqual(r.code, 64, "\(first) \(second): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("are both for frame \(frame)"), r.stderr)
            XCTAssertFalse(FileManager.default.fileExists(atPath: out))
        }
        // Neighbouring frames are two keyframes; 0.55 s, halfway between frames 5 and 6, is
        // frame 6's (a symmetric test gave it to neither).
        var r = try CLI.vivify(["run", clip, dir + "/ok.mkv", "--colorize", "--keyframe", "0=\(a)", "--keyframe", "0.1s=\(b)", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        r = try CLI.vivify(["run", clip, dir + "/tie.mkv", "--colorize", "--keyframe", "6=\(a)", "--keyframe", "0.55s=\(b)"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("are both for frame 6"), r.stderr)
    }

    /// `--keyframe 1.5s=K` on an MPEG-TS file, whose first frame is stamped 1.4 s or later:
    /// the time counts from the first frame (it named the file's own timestamp, so "1.5s" fell
    /// on no frame). It is the frame shown 1.5 s in, frame 15 at 10 fps, and gives the frames
    /// `--keyframe 15=K` gives: in a plain run, a segmented run, and read through a FIFO (not
    /// scanned: the first frame sets the origin; from frame 15 on). The file's own timestamp is
    /// past the end.
    func testKeyframeTimesCountFromTheFirstFrame() throws {
        let dir = try CLI.tempDir()
        let ts = dir + "/late.ts", key = dir + "/key.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "30", "-vf", "format=gray", "-c:v", "libx264",
                        "-g", "10", "-output_ts_offset", "1.4", "-f", "mpegts", ts])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-vf", "select=eq(n\\,15)", "-frames:v", "1", key])
        let probe = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pts_time", "-of", "csv=p=0", ts])
        let first = try XCTUnwrap(String(decoding: probe.stdout, as: UTF8.self).split(whereSeparator: \.isNewline).first.flatMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) })
        XCTAssertGreaterThan(first, 1.3, "the file's first frame is stamped late")
        func run(_ name: String, _ input: String, _ extra: [String]) throws -> Data {
            let out = dir + "/" + name + ".mkv"
            let r = try CLI.vivify(["run", input, out, "--colorize", "--codec", "ffv1", "--pix-fmt", "yuv444p", "--quiet"] + extra)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            return try PrecisionCLITests.pixels(out)
        }
        let automatic = try run("auto", ts, ["--segment-seconds", "0"])
        let byNumber = try run("number", ts, ["--segment-seconds", "0", "--keyframe", "15=\(key)"])
        XCTAssertNotEqual(byNumber, automatic, "the keyframe changes the colour")
        XCTAssertEqual(try run("time", ts, ["--segment-seconds", "0", "--keyframe", "1.5s=\(key)"]), byNumber, "1.5 s in is frame 15")
        XCTAssertEqual(try run("segmented-time", ts, ["--segment-seconds", "1", "--keyframe", "1.5s=\(key)"]),
                       try run("segmented-number", ts, ["--segment-seconds", "1", "--keyframe", "15=\(key)"]), "in segments too")
        // Read through a FIFO: no scan, the first frame sets the origin.
        let fifo = dir + "/fifo.ts"
        let writer = try CLI.fifo(fifo, fedFrom: ts)
        let piped = try run("fifo", fifo, ["--keyframe", "1.5s=\(key)"])
        writer.waitUntilExit()
        // From frame 15 on: a stream cannot be scanned for shots, so the frames before a
        // keyframe take it only when its L histogram is theirs (this strongly coloured one's
        // is not), where the file's scan found no cut before it.
        let frame = byNumber.count / 30
        XCTAssertEqual(piped.count, byNumber.count)
        XCTAssertEqual(piped.suffix(from: 15 * frame), byNumber.suffix(from: 15 * frame), "through a FIFO, 1.5 s in is frame 15")
        // The file's own timestamp of frame 15 is past the 3 s the video lasts; two keyframes
        // for frame 15 are refused.
        var r = try CLI.vivify(["run", ts, dir + "/own.mkv", "--colorize", "--keyframe", String(format: "%.2fs=%@", first + 1.5, key)])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("past the end"), r.stderr)
        r = try CLI.vivify(["run", ts, dir + "/two.mkv", "--colorize", "--keyframe", "15=\(key)", "--keyframe", "1.52s=\(key)"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("are both for frame 15"), r.stderr)
    }

    /// `--codec ffv1`, "lossless", wrote 4:2:0: ffv1 takes 8-bit RGB as bgr0, not gbrp, and
    /// the writer fell back to the encoder's first format. An RGB source now stays RGB, bit
    /// for bit; a model's RGB output is RGB; an odd 4:2:0 frame, which ffv1 refused, becomes
    /// 4:4:4; a 10-bit or alpha source says what reading loses.
    func testFFV1StaysLossless() throws {
        let dir = try CLI.tempDir()
        func format(_ path: String) throws -> String? { CLI.streams(try CLI.probe(path, countFrames: false), "video").first?["pix_fmt"] as? String }
        let rgb = dir + "/rgb.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x54:rate=10", "-frames:v", "3", "-pix_fmt", "gbrp", "-c:v", "ffv1", rgb])
        var r = try CLI.vivify(["run", rgb, dir + "/copy.mkv", "--codec", "ffv1", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(try format(dir + "/copy.mkv"), "bgr0")
        XCTAssertEqual(try PrecisionCLITests.pixels(dir + "/copy.mkv"), try PrecisionCLITests.pixels(rgb), "an RGB source through ffv1 is unchanged")
        let y444 = dir + "/y444.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=48x32:rate=10", "-frames:v", "2", "-pix_fmt", "yuv444p", "-c:v", "ffv1", y444])
        r = try CLI.vivify(["run", y444, dir + "/up.mkv", "--codec", "ffv1", "--upscale", "--quiet"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(try format(dir + "/up.mkv"), "bgr0", "a model's RGB output is kept as RGB")
        let odd = dir + "/odd.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-frames:v", "3", "-vf", "scale=5:3", "-pix_fmt", "yuv420p", "-f", "yuv4mpegpipe", odd])
        r = try CLI.vivify(["run", odd, dir + "/odd.mkv", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("has an odd side") && r.stderr.contains("yuv444p"), r.stderr)
        XCTAssertEqual(try format(dir + "/odd.mkv"), "yuv444p")
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/odd.mkv")), 3)
        for (pixfmt, says) in [("yuv420p10le", "10-bit samples become 8-bit"), ("yuva420p", "its alpha plane is dropped")] {
            let source = dir + "/\(pixfmt).mkv"
            try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24:rate=10", "-frames:v", "2", "-pix_fmt", pixfmt, "-c:v", "ffv1", source])
            r = try CLI.vivify(["run", source, dir + "/out-\(pixfmt).mkv", "--codec", "ffv1"])
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertTrue(r.stderr.contains("is \(pixfmt): Vivify processes video in 8 bits without alpha, so \(says)"), r.stderr)
        }
        r = try CLI.vivify(["run", rgb, dir + "/quiet.mkv", "--codec", "ffv1"])
        XCTAssertFalse(r.stderr.contains("warning"), "an 8-bit source says nothing: \(r.stderr)")
    }

    /// `bench-model --model vivify-color` at its default size, and a U-Net at a size its
    /// crops cannot take, failed at a layer as a damaged model (65). Refused as a setting (64)
    /// naming the size `vivify run` gives the model, which then runs.
    func testBenchModelNamesASizeTheModelTakes() throws {
        var r = try CLI.vivify(["bench-model", "--model", "vivify-color", "--runs", "1"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("cannot take a 640×360 frame") && r.stderr.contains("--size 224x224"), r.stderr)
        r = try CLI.vivify(["bench-model", "--model", "vivify-color", "--runs", "1", "--size", "224x224"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let models = try CLI.tempDir()
        r = try UpscaleCLITests.vivify(["bench-model", "--model", "realcugan-2x", "--size", "64x36", "--runs", "1"], models: models)
        XCTAssertEqual(r.code, 64, r.stderr)
        let advice = try XCTUnwrap(r.stderr.range(of: "time that with ").map { String(r.stderr[$0.upperBound...]).trimmingCharacters(in: .whitespacesAndNewlines) }, r.stderr)
        XCTAssertEqual(advice, "--size 64x36 --pad 18,18,18,18.")
        r = try UpscaleCLITests.vivify(["bench-model", "--model", "realcugan-2x", "--size", "64x36", "--pad", "18,18,18,18", "--runs", "1"], models: models)
        XCTAssertEqual(r.code, 0, r.stderr)
    }

    /// Two joins of one job at once: one removed the segments under the other, which failed
    /// (66, "cannot open segment-0003.nut"). They take turns now: one joins, the other says
    /// the job is done (0). A damaged segment was listed as "missing": it is "damaged", with
    /// what is wrong and the fix, in `status` (text in aligned columns, and JSON) and `join`.
    func testConcurrentJoinsAndDamagedSegments() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mkv", out = dir + "/out.mkv", work = dir + "/job"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=64x36:rate=10", "-t", "2", "-g", "5", "-c:v", "ffv1", clip])
        var r = try CLI.vivify(["plan", clip, out, "--work", work, "--segment-seconds", "0.5", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        for i in 0..<4 { XCTAssertEqual(try CLI.vivify(["work", work, "--index", String(i), "--quiet"]).code, 0) }
        // Segment 1 truncated, segment 2 a link to segment 3.
        let one = work + "/segment-0001.nut", two = work + "/segment-0002.nut"
        let kept = try Data(contentsOf: URL(fileURLWithPath: one))
        try kept.prefix(kept.count / 2).write(to: URL(fileURLWithPath: one))
        try FileManager.default.removeItem(atPath: two)
        try FileManager.default.createSymbolicLink(atPath: two, withDestinationPath: work + "/segment-0003.nut")
        r = try CLI.vivify(["status", work, "--json"])
        let status = try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]
        XCTAssertEqual(status?["damaged"] as? [Int], [1, 2], String(decoding: r.stdout, as: UTF8.self))
        XCTAssertEqual(status?["missing"] as? [Int], [])
        r = try CLI.vivify(["status", work])
        let lines = String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").filter { $0.contains(" frames") && $0.contains("–") }
        XCTAssertEqual(lines.count, 4)
        XCTAssertEqual(Set(lines.map { $0.range(of: " s ")?.lowerBound.utf16Offset(in: $0) }).count, 1, "aligned columns: \(lines)")
        XCTAssertTrue(lines[2].contains("is a link or not a regular file"), "\(lines[2])")
        // Damaged data (65), not "not finished yet" (75), which a waiting join retries forever.
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("segment 1 is damaged") && r.stderr.contains("does not match the size and SHA-256"), r.stderr)
        // Repaired, then joined twice at once.
        try FileManager.default.removeItem(atPath: two)
        XCTAssertEqual(try CLI.vivify(["work", work, "--index", "1", "--quiet"]).code, 0)
        XCTAssertEqual(try CLI.vivify(["work", work, "--index", "2", "--quiet"]).code, 0)
        let joins = try (0..<2).map { _ in try SegmentTests.start(["join", work]) }
        var codes: [Int32] = []
        for p in joins { p.waitUntilExit(); codes.append(p.terminationStatus) }
        XCTAssertEqual(codes, [0, 0])
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 20)
    }

    /// `--stats` on the reference backend left `precision` out of the settings, which list
    /// every option; it is there, with each model's (fp32).
    func testStatsNamePrecisionOnEveryBackend() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=24x16:rate=5", "-frames:v", "1", "-pix_fmt", "yuv420p", clip])
        for backend in ["reference", "onednn"] {
            let stats = dir + "/\(backend).json"
            let r = try CLI.vivify(["run", clip, dir + "/\(backend).y4m", "--upscale", "--backend", backend, "--quiet", "--stats", stats])
            XCTAssertEqual(r.code, 0, r.stderr)
            let run = (try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as? [String: Any])?["run"] as? [String: Any]
            XCTAssertEqual((run?["settings"] as? [String: String])?["precision"], "auto", backend)
            if backend == "reference" { XCTAssertEqual((run?["models"] as? [[String: Any]])?.map { $0["precision"] as? String }, ["fp32"]) }
        }
    }
}
