import ColorScience
import Foundation
import Vivify
import XCTest

/// Resumable segmented jobs through the real binary: a segmented run writes exactly what an
/// unsegmented one writes; SIGKILL during a segment, between segments and during the join,
/// and SIGINT, are all resumed to the same file, reusing the finished segments; changed
/// settings or input and damaged segments are never reused; `plan`/`work`/`join` in any order
/// and in parallel give the same file.
final class SegmentTests: XCTestCase {
    /// 4 s of 320x180 at 30 fps, a keyframe every second, and 4.5 s of AAC audio.
    static func clip(in dir: String, gop: Int = 30, name: String = "src.mp4") throws -> String {
        let path = dir + "/" + name
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=4", "-f", "lavfi", "-i", "sine=frequency=440:duration=4.5",
                        "-c:v", "libx264", "-g", String(gop), "-keyint_min", String(gop), "-pix_fmt", "yuv420p", "-c:a", "aac", path])
        return path
    }

    static let upscaleJob = ["--upscale", "--codec", "ffv1", "--segment-seconds", "1"]

    /// Per frame: pts and the MD5 of its decoded pixels (ffmpeg's framemd5), video and audio.
    static func frameDigests(_ path: String, stream: String = "v") throws -> [String] {
        let r = try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:\(stream)", "-c", stream == "a" ? "copy" : "rawvideo", "-f", "framemd5", "-"])
        XCTAssertEqual(r.code, 0, r.stderr)
        // "stream, dts, pts, duration, size, hash"; the pts and hash are the frame.
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return "\(f[2]) \(f[5])"
        }
    }

    /// The reference: the same job in one piece.
    static func reference(_ source: String, _ dir: String, _ args: [String] = upscaleJob) throws -> String {
        let out = dir + "/reference.mkv"
        var a = args
        if let i = a.firstIndex(of: "--segment-seconds") { a[i + 1] = "0" }
        let r = try CLI.vivify(["run", source, out, "--quiet"] + a)
        XCTAssertEqual(r.code, 0, r.stderr)
        return out
    }

    func assertSameFile(_ a: String, _ b: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let va = try Self.frameDigests(a), vb = try Self.frameDigests(b)
        XCTAssertEqual(va.count, vb.count, "frame count", file: file, line: line)
        XCTAssertEqual(va, vb, "every frame's pts and decoded pixels", file: file, line: line)
        XCTAssertEqual(try Self.frameDigests(a, stream: "a"), try Self.frameDigests(b, stream: "a"), "audio packets", file: file, line: line)
    }

    /// Where the audio ends: the last audio packet's pts + duration, seconds.
    static func audioEnd(_ path: String) throws -> Double {
        let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time,duration_time", "-of", "csv=p=0", path])
        return String(decoding: r.stdout, as: UTF8.self).split(separator: "\n").compactMap { line -> Double? in
            let f = line.split(separator: ",").compactMap { Double($0) }
            return f.count == 2 ? f[0] + f[1] : nil
        }.max() ?? 0
    }

    static func workDirectory(_ output: String) -> String { SegmentedJob.defaultDirectory(forOutput: output).path }

    static func manifest(_ dir: String) -> [String: Any]? {
        guard let data = FileManager.default.contents(atPath: dir + "/manifest.json") else { return nil }
        return try? JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    static func doneCount(_ dir: String) -> Int {
        ((manifest(dir)?["segments"] as? [[String: Any]]) ?? []).filter { $0["done"] != nil }.count
    }

    /// Starts vivify in the background.
    static func start(_ args: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = args
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Polls every millisecond until `condition` holds (true) or the process ends (false).
    /// Runs the upscale job of `source` into `out` and stops it with SIGINT once a segment is
    /// done: exit 130, the finished frames at `out`, the segments kept.
    static func interruptAfterOneSegment(_ source: String, _ out: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let p = try start(["run", source, out, "--quiet"] + upscaleJob)
        XCTAssertTrue(wait(for: p) { doneCount(workDirectory(out)) >= 1 }, file: file, line: line)
        kill(p.processIdentifier, SIGINT)
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 130, file: file, line: line)
    }

    static func wait(for p: Process, timeout: Double = 120, until condition: () -> Bool) -> Bool {
        let end = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < end {
            if condition() { return true }
            usleep(1000)
        }
        return false
    }

    func testSegmentedRunWritesWhatAnUnsegmentedRunWrites() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let reference = try Self.reference(source, dir)
        let out = dir + "/segmented.mkv"
        let r = try CLI.vivify(["run", source, out] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("120 frames; 4 segments"), r.stderr)
        try assertSameFile(out, reference)
        let probe = try CLI.probe(out)
        XCTAssertEqual(CLI.decodedFrames(probe), 120)
        XCTAssertEqual(try Self.audioEnd(out), 4.5, accuracy: 0.05, "audio copied whole")
        XCTAssertFalse(FileManager.default.fileExists(atPath: Self.workDirectory(out)), "the work directory is removed after the join")
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    /// SIGKILL during a segment, between segments and during the join; each re-run resumes,
    /// processes only the unfinished segments, and writes the reference's frames and audio.
    func testKilledRunsResumeToTheSameFile() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let reference = try Self.reference(source, dir)
        let out = dir + "/out.mkv"
        let work = Self.workDirectory(out)
        let points: [(String, () -> Bool)] = [
            ("during segment 2", { Self.doneCount(work) == 1 && ((try? FileManager.default.contentsOfDirectory(atPath: work)) ?? []).contains { $0.hasPrefix(".segment-0001") } }),
            ("between segments", { Self.doneCount(work) == 2 }),
            ("during the join", { Self.doneCount(work) == 4 && !FileManager.default.fileExists(atPath: out) }),
        ]
        for (name, condition) in points {
            try? FileManager.default.removeItem(atPath: out)
            let p = try Self.start(["run", source, out, "--quiet", "--no-resume"] + Self.upscaleJob)
            let hit = Self.wait(for: p, until: condition)
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
            XCTAssertTrue(hit, "the kill \(name) was not reached")
            XCTAssertFalse(FileManager.default.fileExists(atPath: out), "\(name): no output after SIGKILL")
            let done = Self.doneCount(work)
            let r = try CLI.vivify(["run", source, out] + Self.upscaleJob)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("resuming: \(done) of 4 segments done"), "\(name): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("\(done) reused, \(4 - done) processed"), "\(name): only the unfinished segments are processed: \(r.stderr)")
            try assertSameFile(out, reference)
            XCTAssertFalse(FileManager.default.fileExists(atPath: work))
        }
    }

    /// Ctrl-C: exit 130 with a playable output of the frames done (audio trimmed to them), and
    /// the same command, without -y, resumes and replaces it with the whole job.
    func testInterruptKeepsAPlayableFileAndTheSameCommandResumes() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let reference = try Self.reference(source, dir)
        let out = dir + "/out.mkv"
        try Self.interruptAfterOneSegment(source, out)
        let probe = try CLI.probe(out)
        let frames = CLI.decodedFrames(probe) ?? 0
        XCTAssertTrue(frames >= 30 && frames < 120, "the finished frames are in the output: \(frames)")
        XCTAssertEqual(try Self.audioEnd(out), Double(frames) / 30, accuracy: 0.05, "audio trimmed to the frames kept")
        let r = try CLI.vivify(["run", source, out] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("resuming:"), r.stderr)
        try assertSameFile(out, reference)
    }

    /// A report (`--stats`, `--trace`, `--plot`) or `--summary` keeps a run in one pass. Added
    /// to the command of an interrupted segmented run, it said only that the output exists,
    /// and with -y redid everything and left the work folder behind (fifth hunt). It is refused
    /// (64) while the segments are kept, naming the way to resume, with nothing touched; with
    /// --no-resume the segments are discarded, the partial output replaced without -y, and a
    /// note says that the long input runs in one pass.
    func testAOnePassOptionNeitherResumesNorStrandsKeptSegments() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let out = dir + "/out.mkv"
        let work = Self.workDirectory(out)
        try Self.interruptAfterOneSegment(source, out)
        let partial = try Data(contentsOf: URL(fileURLWithPath: out))
        let stats = dir + "/stats.json"
        for extra in [["--summary"], ["--stats", stats], ["--trace", dir + "/trace.json", "--plot", dir + "/plot.svg"]] {
            let r = try CLI.vivify(["run", source, out] + Self.upscaleJob + extra)
            XCTAssertEqual(r.code, 64, "\(extra): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("holds the segments of an interrupted run") && r.stderr.contains("Run the same command without \(extra[0])")
                          && r.stderr.contains("--no-resume"), r.stderr)
            XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: out)), partial, "\(extra): the output is untouched")
            XCTAssertTrue(FileManager.default.fileExists(atPath: work + "/manifest.json"), "\(extra): the segments are kept")
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: stats))
        let r = try CLI.vivify(["run", source, out, "--no-resume", "--stats", stats] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("--no-resume: discarding the segments") && r.stderr.contains("--stats needs the run in one pass"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: work), "no work folder left behind")
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(out)), 120)
        XCTAssertTrue(FileManager.default.fileExists(atPath: stats))
        XCTAssertEqual(CLI.leftovers(dir), [])
    }

    /// Different pixel settings or a changed input never reuse old segments (and say why);
    /// a damaged segment file is redone; --no-resume starts afresh.
    func testChangedSettingsInputOrDamagedSegmentsAreNotReused() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let out = dir + "/out.mkv"
        let work = Self.workDirectory(out)
        func interruptAfterTwo(_ extra: [String] = []) throws {
            let p = try Self.start(["run", source, out, "--quiet", "-y"] + Self.upscaleJob + extra)
            XCTAssertTrue(Self.wait(for: p) { Self.doneCount(work) >= 2 })
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
        // Another saturation-free pixel setting: --resize.
        try interruptAfterTwo()
        var r = try CLI.vivify(["run", source, out, "-y", "--resize", "600x340"] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("not resuming") && r.stderr.contains("resize"), r.stderr)
        XCTAssertTrue(r.stderr.contains("0 reused, 4 processed"), r.stderr)

        // The input modified (same bytes, new mtime).
        try interruptAfterTwo()
        XCTAssertTrue(utimes(source, nil) == 0)
        r = try CLI.vivify(["run", source, out, "-y"] + Self.upscaleJob)
        XCTAssertTrue(r.stderr.contains("not resuming") && r.stderr.contains("input was modified"), r.stderr)
        XCTAssertTrue(r.stderr.contains("0 reused, 4 processed"), r.stderr)

        // A damaged segment: flipped bytes in segment 0 are found by its checksum and redone.
        try interruptAfterTwo()
        let seg0 = work + "/segment-0000.nut"
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: seg0))
        try handle.seek(toOffset: 2000)
        try handle.write(contentsOf: Data(repeating: 0x55, count: 64))
        try handle.close()
        r = try CLI.vivify(["run", source, out, "-y"] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("resuming: 1 of 4 segments done") && r.stderr.contains("1 reused, 3 processed"), r.stderr)
        try assertSameFile(out, try Self.reference(source, dir))

        // --no-resume discards them.
        try interruptAfterTwo()
        r = try CLI.vivify(["run", source, out, "-y", "--no-resume"] + Self.upscaleJob)
        XCTAssertTrue(r.stderr.contains("--no-resume") && r.stderr.contains("0 reused, 4 processed"), r.stderr)
    }

    /// plan / work / join: workers out of order, two at once (one of them on the same
    /// segment), the index from Slurm's or Kubernetes' variable; status and exit 75 before.
    func testPlanWorkJoinInAnyOrderAndInParallel() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let reference = try Self.reference(source, dir)
        let work = dir + "/work"
        let out = dir + "/joined.mkv"
        var r = try CLI.vivify(["plan", source, out, "--work", work] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(String(decoding: r.stdout, as: UTF8.self), "4\n")
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, VivifyExitCode.unfinished.rawValue, r.stderr)
        XCTAssertTrue(r.stderr.contains("4 of 4 segments") && r.stderr.contains("0, 1, 2, 3"), r.stderr)
        r = try CLI.vivify(["work", work])
        XCTAssertEqual(r.code, 64, "no index and no engine variable: \(r.stderr)")

        // Segment 3 first; 1 and 1 again at the same time; 2 via SLURM_ARRAY_TASK_ID, 0 via JOB_COMPLETION_INDEX.
        r = try CLI.vivify(["work", work, "--index", "3"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let a = try Self.start(["work", work, "--index", "1"]), b = try Self.start(["work", work, "--index", "1"])
        let c = Process()
        c.executableURL = URL(fileURLWithPath: CLI.binary)
        c.arguments = ["work", work]
        c.environment = ProcessInfo.processInfo.environment.merging(["SLURM_ARRAY_TASK_ID": "2"]) { $1 }
        try c.run()
        for p in [a, b, c] { p.waitUntilExit(); XCTAssertEqual(p.terminationStatus, 0) }
        r = try CLI.vivify(["status", work, "--json"])
        let status = try JSONSerialization.jsonObject(with: r.stdout) as! [String: Any]
        XCTAssertEqual(status["done"] as? Int, 3)
        XCTAssertEqual(status["missing"] as? [Int], [0])
        let k = Process()
        k.executableURL = URL(fileURLWithPath: CLI.binary)
        k.arguments = ["work", work]
        k.environment = ProcessInfo.processInfo.environment.merging(["JOB_COMPLETION_INDEX": "0"]) { $1 }
        k.standardError = FileHandle.nullDevice
        try k.run()
        k.waitUntilExit()
        XCTAssertEqual(k.terminationStatus, 0)
        r = try CLI.vivify(["work", work, "--index", "2"])
        XCTAssertTrue(r.stderr.contains("already done"), "idempotent: \(r.stderr)")
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        try assertSameFile(out, reference)
        // The segments and manifest are removed; the record of the join stays, so that a
        // join, a worker or a status after it (a retried pod) says the job is done.
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: work)), [SegmentedJob.joinedName, SegmentedJob.joinLockName])
        for args in [["join", work], ["work", work, "--index", "1"]] {
            r = try CLI.vivify(args)
            XCTAssertEqual(r.code, 0, "\(args): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("already joined into \(out) (120 frames); nothing to do"), r.stderr)
        }
        r = try CLI.vivify(["status", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(String(decoding: r.stdout, as: UTF8.self), "joined into \(out) (120 frames)\n")
        try assertSameFile(out, reference)
        // An output changed since is no finished job: plan again (66), in the same folder.
        try Data("not the output".utf8).write(to: URL(fileURLWithPath: out))
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 66, r.stderr)
        XCTAssertTrue(r.stderr.contains("moved, changed or removed since") && r.stderr.contains("Plan the job again"), r.stderr)
        r = try CLI.vivify(["plan", source, out, "--work", work, "-y"] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, "the folder of a joined job takes its new plan: \(r.stderr)")
        XCTAssertTrue(FileManager.default.fileExists(atPath: work + "/manifest.json"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: work + "/" + SegmentedJob.joinedName))
    }

    /// A planned job whose frames exceed the default 40 Mpx limit (`plan --max-pixels`): every
    /// worker and the join run under the planned limit (issue 30: it was recorded in the
    /// manifest but never applied, so every worker refused the job; `work` has no such option).
    func testWorkersHonourThePlannedPixelLimit() throws {
        let dir = try CLI.tempDir()
        let source = dir + "/small.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=160x120:r=2:d=1", "-g", "1", "-c:v", "ffv1", source])
        let work = dir + "/work", out = dir + "/big.mkv"
        // 8000x6000 = 48 Mpx a frame, over the default limit.
        let job = ["--resize", "8000x6000", "--codec", "ffv1", "--segment-seconds", "0.5"]
        // Under the default limit the plan itself refuses the frames and names the option
        // (stop 48: the chain is configured at plan time; before, every worker refused them).
        var r = try CLI.vivify(["plan", source, dir + "/other.mkv", "--work", dir + "/other"] + job)
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("--max-pixels"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/other/manifest.json"))
        r = try CLI.vivify(["plan", source, out, "--work", work, "--max-pixels", "50000000"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(String(decoding: r.stdout, as: UTF8.self), "2\n")
        for i in 0..<2 {
            r = try CLI.vivify(["work", work, "--index", String(i)])
            XCTAssertEqual(r.code, 0, "segment \(i): \(r.stderr)")
        }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        let video = CLI.streams(try CLI.probe(out), "video").first
        XCTAssertEqual(CLI.int(video?["width"]), 8000)
        XCTAssertEqual(CLI.int(video?["height"]), 6000)
        XCTAssertEqual(CLI.int(video?["nb_read_frames"]), 2)
    }

    /// `--precision int8`: the plan calibrates the upscaler on the input's first frame and
    /// records that in the manifest, so workers with model stores of their own (other nodes)
    /// quantise alike: the joined file equals an unsegmented int8 run using the same (stored)
    /// calibration, and differs from fp32.
    func testInt8SegmentsQuantiseAlikeOnEveryNode() throws {
        guard PrecisionChoice.int8.resolved().note == nil else { throw XCTSkip("this CPU has no AVX-512 VNNI") }
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir)
        let work = dir + "/work", out = dir + "/joined.mkv"
        let planner = ["VIVIFY_MODELS": dir + "/store-planner"]
        var r = try CLI.vivify(["plan", source, out, "--work", work, "--precision", "int8"] + Self.upscaleJob, environment: planner)
        XCTAssertEqual(r.code, 0, r.stderr)
        let settings = Self.manifest(work)?["settings"] as? [String: Any]
        let limits = (settings?["configuration"] as? [String: Any])?["limits"] as? [String: Any]
        XCTAssertEqual(limits?["precision"] as? String, "int8")
        XCTAssertFalse((settings?["int8Calibration"] as? String ?? "").isEmpty, "the calibration is in the manifest")
        for i in 0..<4 {
            r = try CLI.vivify(["work", work, "--index", String(i)], environment: ["VIVIFY_MODELS": dir + "/store-node\(i)"])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        let reference = dir + "/reference-int8.mkv"
        var args = Self.upscaleJob
        args[args.firstIndex(of: "--segment-seconds")! + 1] = "0"
        r = try CLI.vivify(["run", source, reference, "--quiet", "--precision", "int8"] + args, environment: planner)
        XCTAssertEqual(r.code, 0, r.stderr)
        try assertSameFile(out, reference)
        let fp32 = try Self.reference(source, dir, Self.upscaleJob + ["--precision", "fp32"])
        XCTAssertNotEqual(try Self.frameDigests(out), try Self.frameDigests(fp32), "int8 computes differently from fp32")
    }

    /// A source with one keyframe still splits evenly: segments start at any frame, their
    /// workers decode from the keyframe and discard what comes before.
    func testLongGOPSourceSplitsEvenly() throws {
        let dir = try CLI.tempDir()
        let source = try Self.clip(in: dir, gop: 1000)
        let reference = try Self.reference(source, dir)
        let work = dir + "/work"
        let out = dir + "/out.mkv"
        let r = try CLI.vivify(["plan", source, out, "--work", work] + Self.upscaleJob)
        XCTAssertEqual(r.code, 0, r.stderr)
        let segments = Self.manifest(work)?["segments"] as? [[String: Any]] ?? []
        XCTAssertEqual(segments.map { $0["frames"] as? Int ?? 0 }, [30, 30, 30, 30])
        XCTAssertEqual(segments.map { ($0["seekCandidates"] as? [Any])?.count ?? -1 }, [0, 1, 1, 1])
        for i in 0..<4 { XCTAssertEqual(try CLI.vivify(["work", work, "--index", String(i)]).code, 0) }
        XCTAssertEqual(try CLI.vivify(["join", work]).code, 0)
        try assertSameFile(out, reference)
    }

    /// Colorize with the temporal stabilizer: each segment warms the stabilizer up on the
    /// frames before it, so frames after a cut are within 1 ΔE of the unsegmented run's.
    func testStabilizerIsWarmedUpAcrossCuts() throws {
        let dir = try CLI.tempDir()
        let source = CLI.sharedVideos.appendingPathComponent("color_davis_bedroom_123f.mp4").path
        let args = ["--colorize", "--codec", "ffv1", "--segment-seconds", "1"]
        let reference = try Self.reference(source, dir, args)
        let out = dir + "/out.mkv"
        let r = try CLI.vivify(["run", source, out] + args)
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("5 segments"), r.stderr)
        let a = try Self.rgbFrames(out), b = try Self.rgbFrames(reference)
        XCTAssertEqual(a.frames.count, 123)
        XCTAssertEqual(a.frames.count, b.frames.count)
        var worstMean = 0.0, worstP99 = 0.0, worstP999 = 0.0, worst = 0.0
        for (x, y) in zip(a.frames, b.frames) {
            // An identical frame adds 0 to every figure (one memcmp, not a pixel loop in a debug build).
            if x == y { continue }
            // ΔE (CIE 1976) per pixel; equal pixels are 0.
            var d = [Double](repeating: 0, count: x.count / 3)
            for i in stride(from: 0, to: x.count, by: 3) where x[i] != y[i] || x[i + 1] != y[i + 1] || x[i + 2] != y[i + 2] {
                let p = LabReference.rgbToLab(Double(x[i]) / 255, Double(x[i + 1]) / 255, Double(x[i + 2]) / 255)
                let q = LabReference.rgbToLab(Double(y[i]) / 255, Double(y[i + 1]) / 255, Double(y[i + 2]) / 255)
                d[i / 3] = ((p.l - q.l) * (p.l - q.l) + (p.a - q.a) * (p.a - q.a) + (p.b - q.b) * (p.b - q.b)).squareRoot()
            }
            worstMean = max(worstMean, d.reduce(0, +) / Double(d.count))
            // Sorted, d is its zeros followed by its sorted non-zero values: sorting only those
            // gives the same percentiles without sorting ~400,000 values a frame in a debug build.
            let nonZero = d.filter { $0 > 0 }.sorted(), zeros = d.count - nonZero.count
            func percentile(_ q: Double) -> Double {
                let k = Int(Double(d.count - 1) * q)
                return k < zeros ? 0 : nonZero[k - zeros]
            }
            worstP99 = max(worstP99, percentile(0.99))
            worstP999 = max(worstP999, percentile(0.999))
            worst = max(worst, nonZero.last ?? 0)
        }
        print("stabilizer across cuts: worst frame mean ΔE \(worstMean), p99 \(worstP99), p99.9 \(worstP999), max \(worst)")
        // The bar: every frame within 1 ΔE of the unsegmented run (mean); what it measures is
        // far below (one 8-bit step where rounding flips), guarded tighter.
        XCTAssertLessThanOrEqual(worstMean, 1.0, "mean ΔE of the worst frame")
        XCTAssertLessThanOrEqual(worstMean, 0.05, "mean ΔE of the worst frame")
        XCTAssertLessThanOrEqual(worstP99, 1.0, "99% of every frame's pixels within 1 ΔE")
    }

    /// The join keeps what an unsegmented run writes besides the pixels: colour tags, sample
    /// aspect ratio and display rotation (rotated 4:3 clip, mp4), and a variable frame rate
    /// with subtitles and audio copied once (mkv); frames and timestamps identical with ffv1.
    func testJoinKeepsTagsSampleAspectRotationAndSubtitles() throws {
        let dir = try CLI.tempDir()
        func tags(_ path: String) throws -> String {
            let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries",
                                                     "stream=sample_aspect_ratio,color_space,color_primaries,color_transfer,color_range:stream_side_data=rotation",
                                                     "-of", "compact", path])
            return String(decoding: r.stdout, as: UTF8.self)
        }
        func packets(_ path: String, _ stream: String) throws -> String {
            let r = try CLI.run("/usr/bin/ffprobe", ["-v", "error", "-select_streams", stream, "-show_entries", "packet=pts,duration,size", "-of", "csv=p=0", path])
            return String(decoding: r.stdout, as: UTF8.self)
        }
        // Lossless both ways: ffv1 in mkv, x264 at QP 0 in mp4 (which cannot hold ffv1).
        for (clip, out, codec) in [("rotated-sar-192x108.mp4", "rotated.mp4", ["--codec", "libx264", "--crf", "0"]),
                                   ("vfr-160x90-subs.mkv", "vfr.mkv", ["--codec", "ffv1"])] {
            let source = CLI.clip(clip)
            let args = codec + ["--segment-seconds", "0.5"]
            let reference = dir + "/reference-" + out
            let one = try CLI.vivify(["run", source, reference, "--quiet", "--segment-seconds", "0"] + codec)
            XCTAssertEqual(one.code, 0, one.stderr)
            let target = dir + "/" + out
            let r = try CLI.vivify(["run", source, target] + args)
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertTrue(r.stderr.contains(" segments ("), "\(clip) was cut into segments: \(r.stderr)")
            XCTAssertEqual(try Self.frameDigests(target), try Self.frameDigests(reference), "\(clip): frames and timestamps")
            XCTAssertEqual(try tags(target), try tags(reference), "\(clip): colour tags, SAR, rotation")
            if clip.hasSuffix(".mkv") {
                XCTAssertEqual(try Self.frameDigests(target, stream: "a"), try Self.frameDigests(reference, stream: "a"), "\(clip): audio packets")
                let subtitles = try packets(target, "s")
                XCTAssertFalse(subtitles.isEmpty, "\(clip): subtitles copied")
                XCTAssertEqual(subtitles, try packets(reference, "s"), "\(clip): subtitle packets")
            }
            if clip.hasSuffix(".mp4") { let t = try tags(target); XCTAssertTrue(t.contains("rotation=90"), t) }
        }
    }

    static func rgbFrames(_ path: String) throws -> (width: Int, height: Int, frames: [[UInt8]]) {
        let probe = try CLI.probe(path, countFrames: false)
        let v = CLI.streams(probe, "video")[0]
        let w = CLI.int(v["width"])!, h = CLI.int(v["height"])!
        let r = try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        let size = w * h * 3
        let bytes = [UInt8](r.stdout)
        return (w, h, stride(from: 0, to: bytes.count - size + 1, by: size).map { Array(bytes[$0..<$0 + size]) })
    }
}

/// A work directory is data, never trusted (issue 33): a manifest whose segment `file` points
/// outside, a segment file that is a symbolic link, and a manifest that says the join may
/// replace the output are all refused; nothing outside the work directory is touched.
final class SegmentTrustTests: XCTestCase {
    func plan(_ dir: String, _ out: String, extra: [String] = []) throws -> String {
        let source = try SegmentTests.clip(in: dir)
        let work = dir + "/work"
        let r = try CLI.vivify(["plan", source, out, "--work", work] + SegmentTests.upscaleJob + extra)
        XCTAssertEqual(r.code, 0, r.stderr)
        return work
    }

    func testManifestPathsLinksAndOverwriteAreNotTrusted() throws {
        let dir = try CLI.tempDir()
        // A segment file named outside the work directory: the manifest is refused (65).
        var work = try plan(dir, dir + "/a.mkv")
        let manifestPath = work + "/manifest.json"
        let original = try String(contentsOfFile: manifestPath, encoding: .utf8)
        try original.replacingOccurrences(of: "\"segment-0001.nut\"", with: "\"..\\/..\\/escaped.nut\"")
            .write(toFile: manifestPath, atomically: true, encoding: .utf8)
        var r = try CLI.vivify(["work", work, "--index", "1"])
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("segment 1's file"), r.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: (dir as NSString).deletingLastPathComponent + "/escaped.nut"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/escaped.nut"))
        try original.write(toFile: manifestPath, atomically: true, encoding: .utf8)

        // A segment file that is a link to a file outside: refused (73), the file unchanged.
        let victim = dir + "/victim.txt"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
        try FileManager.default.createSymbolicLink(atPath: work + "/segment-0001.nut", withDestinationPath: victim)
        r = try CLI.vivify(["work", work, "--index", "1"])
        XCTAssertEqual(r.code, 73, r.stderr)
        XCTAssertTrue(r.stderr.contains("symbolic link"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: victim, encoding: .utf8), "keep me")
        try FileManager.default.removeItem(atPath: work + "/segment-0001.nut")
        try FileManager.default.removeItem(atPath: work)

        // A plan made with -y over an existing file: the join still asks for -y.
        let existing = dir + "/b.mkv"
        try Data("an earlier output".utf8).write(to: URL(fileURLWithPath: existing))
        work = try plan(dir, existing, extra: ["-y"])
        for i in 0..<4 {
            r = try CLI.vivify(["work", work, "--index", "\(i)"])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        r = try CLI.vivify(["join", work])
        XCTAssertNotEqual(r.code, 0, "a manifest does not grant -y: \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("join -y"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: existing, encoding: .utf8), "an earlier output")
        r = try CLI.vivify(["join", work, "-y"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(existing)).map { $0 > 0 }, true)
    }

    /// `plan` into the work directory of another job (another input or output) is refused and
    /// that job kept; planning the same job again replaces its plan.
    func testPlanNeverDiscardsAnotherJob() throws {
        let dir = try CLI.tempDir()
        let work = try plan(dir, dir + "/a.mkv")
        var r = try CLI.vivify(["work", work, "--index", "0"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let before = try String(contentsOfFile: work + "/manifest.json", encoding: .utf8)
        let source = dir + "/src.mp4"
        r = try CLI.vivify(["plan", source, dir + "/b.mkv", "--work", work] + SegmentTests.upscaleJob)
        XCTAssertEqual(r.code, 73, r.stderr)
        XCTAssertTrue(r.stderr.contains("holds another job") && r.stderr.contains("1 of 4 segments done"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: work + "/manifest.json", encoding: .utf8), before, "the other job is kept")
        XCTAssertTrue(FileManager.default.fileExists(atPath: work + "/segment-0000.nut"))
        r = try CLI.vivify(["plan", source, dir + "/a.mkv", "--work", work] + SegmentTests.upscaleJob)
        XCTAssertEqual(r.code, 0, "the same job planned again: \(r.stderr)")
    }
}
