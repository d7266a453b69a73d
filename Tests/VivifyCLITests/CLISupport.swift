import Foundation
import XCTest

/// Runs the built `vivify` binary and external checkers (ffmpeg, ffprobe) for end-to-end tests.
enum CLI {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let sharedVideos = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/media/videos")
    /// BSD100, held out from every training and tuning run.
    static let sharedVal = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/datasets/val/BSD100")

    /// The vivify executable built beside the test bundle.
    static var binary: String {
        var dir = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("vivify").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        return packageRoot.appendingPathComponent(".build/debug/vivify").path
    }

    static func clip(_ name: String) -> String { packageRoot.appendingPathComponent("Media/\(name)").path }

    struct Result {
        var code: Int32
        var stdout: Data
        var stderr: String
    }

    /// Runs `executable` with `args`, stdin from a file (or nothing), stdout to a file.
    @discardableResult
    static func run(_ executable: String, _ args: [String], stdinFile: String? = nil, environment: [String: String] = [:]) throws -> Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        // Each child starts as a fresh command: the notes said by commands parsed in this
        // process (LimitOptionsTests parses `--precision bf16`) are not carried into it, as
        // a segmented run carries them into its own re-exec (on a CPU without BF16 they
        // silenced PrecisionCLITests' note).
        var inherited = ProcessInfo.processInfo.environment
        inherited["VIVIFY_NOTES_SAID"] = nil
        p.environment = inherited.merging(environment) { $1 }
        let outPath = NSTemporaryDirectory() + "vivify-test-out-\(UUID().uuidString)"
        FileManager.default.createFile(atPath: outPath, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: outPath) }
        let out = FileHandle(forWritingAtPath: outPath)!
        p.standardOutput = out
        let err = Pipe()
        p.standardError = err
        if let stdinFile { p.standardInput = FileHandle(forReadingAtPath: stdinFile)! } else { p.standardInput = FileHandle.nullDevice }
        try p.run()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        try out.close()
        let data = try Data(contentsOf: URL(fileURLWithPath: outPath))
        return Result(code: p.terminationStatus, stdout: data, stderr: String(decoding: errData, as: UTF8.self))
    }

    /// Runs vivify.
    @discardableResult
    /// Starts `executable args` with no input and output, its standard error in the pipe returned.
    static func start(_ executable: String, _ args: [String]) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = args
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        return (p, err)
    }

    static func vivify(_ args: [String], stdinFile: String? = nil, environment: [String: String] = [:]) throws -> Result {
        try run(binary, args, stdinFile: stdinFile, environment: environment)
    }

    /// Runs the ffmpeg CLI (to make fixtures) and fails the test if it fails.
    static func ffmpeg(_ args: [String]) throws {
        let r = try run("/usr/bin/ffmpeg", ["-nostdin", "-hide_banner", "-loglevel", "error", "-y"] + args)
        if r.code != 0 { throw NSError(domain: "ffmpeg", code: Int(r.code), userInfo: [NSLocalizedDescriptionKey: r.stderr]) }
    }

    /// ffprobe's JSON for a file, with frames counted by decoding.
    static func probe(_ path: String, countFrames: Bool = true) throws -> [String: Any] {
        var args = ["-v", "error", "-print_format", "json", "-show_format", "-show_streams"]
        if countFrames { args.append("-count_frames") }
        let r = try run("/usr/bin/ffprobe", args + [path])
        return try JSONSerialization.jsonObject(with: r.stdout) as! [String: Any]
    }

    static func streams(_ probe: [String: Any], _ kind: String) -> [[String: Any]] {
        (probe["streams"] as! [[String: Any]]).filter { $0["codec_type"] as? String == kind }
    }

    static func double(_ v: Any?) -> Double? { (v as? String).flatMap(Double.init) ?? (v as? Double) }
    static func int(_ v: Any?) -> Int? { (v as? String).flatMap { Int($0) } ?? (v as? Int) }

    /// Frames ffprobe decodes from the first video stream.
    static func decodedFrames(_ probe: [String: Any]) -> Int? { int(streams(probe, "video").first?["nb_read_frames"]) }

    /// A fresh temporary directory for one test.
    static func tempDir() throws -> String {
        let dir = NSTemporaryDirectory() + "vivify-e2e-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Runs vivify under /usr/bin/timeout: a run that hangs fails its test (killed, exit 137)
    /// instead of hanging the suite.
    static func vivify(_ args: [String], within seconds: Int) throws -> Result {
        try run("/usr/bin/timeout", ["-s", "KILL", String(seconds), binary] + args)
    }

    /// Makes the FIFO `path` and starts writing the file `source` into it (the writer blocks
    /// until a reader opens it); wait for the returned process after the reader is done.
    static func fifo(_ path: String, fedFrom source: String) throws -> Process {
        XCTAssertEqual(mkfifo(path, 0o600), 0, "mkfifo \(path)")
        let writer = Process()
        writer.executableURL = URL(fileURLWithPath: "/bin/sh")
        writer.arguments = ["-c", "cat '\(source)' > '\(path)'"]
        try writer.run()
        return writer
    }

    /// Files left in `dir` whose names mark them as unfinished temporaries.
    static func leftovers(_ dir: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).filter { $0.contains(".partial") }
    }
}
