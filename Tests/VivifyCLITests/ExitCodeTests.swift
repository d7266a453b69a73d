import Foundation
import ModelCatalog
import Vivify
import XCTest

/// Every documented exit code comes from at least one real case through the binary (70, an
/// error no layer types, in process), and one failure gives the same code in every command.
final class ExitCodeTests: XCTestCase {
    func testEveryDocumentedExitCodeHasARealCase() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let audio = dir + "/tone.m4a"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "sine=duration=0.3", "-c:a", "aac", audio])
        let garbage = dir + "/garbage.wifm"
        try Data("not a zip archive".utf8).write(to: URL(fileURLWithPath: garbage))
        // A models directory that cannot be created: its parent is a file.
        let blocker = dir + "/blocker"
        _ = FileManager.default.createFile(atPath: blocker, contents: Data([1]))
        let unwritableModels = ["VIVIFY_MODELS": blocker + "/models", "VIVIFY_MODEL_MIRROR": UpscaleCLITests.mirror]

        let cases: [(VivifyExitCode, [String], [String: String])] = [
            (.success, ["run", clip, dir + "/ok.mkv", "--max-frames", "2", "--quiet"], [:]),
            (.usage, ["run", clip, dir + "/o.mkv", "--upscale", "waifu2x-foto-2x"], [:]),
            (.usage, ["run", clip, dir + "/o.mp3", "--max-frames", "2"], [:]),
            (.dataError, ["run", clip, dir + "/o.mkv", "--upscale", garbage], [:]),
            (.noInput, ["run", dir + "/absent.mp4", dir + "/o.mkv"], [:]),
            (.unsupported, ["run", audio, dir + "/o.mkv"], [:]),
            (.cannotCreateOutput, ["run", clip, dir + "/no/such/dir/o.mkv"], [:]),
            // A failed first-use fetch is the same I/O error in `run` as in `models fetch`.
            (.ioError, ["run", clip, dir + "/o.mkv", "--upscale", "waifu2x-photo-2x", "--max-frames", "1"], unwritableModels),
            (.ioError, ["models", "fetch", "waifu2x-photo-2x"], unwritableModels),
        ]
        var seen = Set<VivifyExitCode>()
        for (code, args, env) in cases {
            let r = try Self.vivify(args, environment: env)
            XCTAssertEqual(r.code, code.rawValue, "\(args): \(r.stderr)")
            if code != .success {
                XCTAssertTrue(r.stderr.hasPrefix("vivify: error: "), "\(args): one sentence on stderr: \(r.stderr)")
            }
            seen.insert(code)
        }
        // 75: a join before the segments are done.
        XCTAssertEqual(try Self.vivify(["plan", clip, dir + "/planned.mkv", "--work", dir + "/work", "--segment-seconds", "0.5"], environment: [:]).code, 0)
        let unfinished = try Self.vivify(["join", dir + "/work"], environment: [:])
        XCTAssertEqual(unfinished.code, VivifyExitCode.unfinished.rawValue, unfinished.stderr)
        XCTAssertTrue(unfinished.stderr.hasPrefix("vivify: error: "), unfinished.stderr)
        seen.insert(.unfinished)
        XCTAssertEqual(CLI.leftovers(dir), [], "failed runs leave no partial files")
        // 130 (interrupted) comes from BadInputTests.testInterruptLeavesAPlayableFile; 70 from
        // an error no layer types, mapped in process.
        XCTAssertEqual(ErrorReport.exitCode(for: DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "x"))), .software)
        seen.formUnion([.interrupted, .software])
        XCTAssertEqual(seen, Set(VivifyExitCode.allCases), "every documented exit code has a case")
    }

    /// A catalog error's kind decides its exit code: 66 (no input) for a missing model or
    /// file, 65 (data error) for a SHA-256 mismatch, 64 (usage) for an unknown name, 74 (I/O
    /// error) for a failed write or download.
    func testCatalogErrorKindsMapToTheirExitCodes() {
        func code(_ kind: CatalogError.Kind) -> Int32 { ErrorReport.exitCode(for: CatalogError(kind, "x")).rawValue }
        XCTAssertEqual(code(.notFound), 66)
        XCTAssertEqual(code(.hashMismatch), 65)
        XCTAssertEqual(code(.invalid), 64)
        XCTAssertEqual(code(.io), 74)
        XCTAssertEqual(code(.network), 74)
    }

    /// `--version` names vivify's release and the FFmpeg and oneDNN it runs on (for bug reports).
    /// One exit-code table (`VivifyExitCode`): the README's table and `vivify --help` list
    /// exactly its codes (issue 30: the list lived in four places).
    func testREADMEAndHelpListTheExitCodesOfTheTable() throws {
        let table = Set(VivifyExitCode.allCases.map(\.rawValue))
        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = readme.range(of: "## Exit codes\n") else { return XCTFail("README has no 'Exit codes' section") }
        let section = readme[start.upperBound...].prefix { _ in true }
        var documented = Set<Int32>()
        for line in section.split(separator: "\n") {
            if line.hasPrefix("#") { break }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            if line.hasPrefix("|"), let first = cells.first, let code = Int32(first) { documented.insert(code) }
        }
        XCTAssertEqual(documented, table, "README's exit-code table against VivifyExitCode")
        let help = try CLI.vivify(["--help"])
        let text = String(decoding: help.stdout, as: UTF8.self).replacingOccurrences(of: "\n", with: " ")
        guard let list = text.range(of: "Exit codes:") else { return XCTFail("--help lists no exit codes: \(text)") }
        let numbers = text[list.upperBound...].split { !$0.isNumber }.compactMap { Int32($0) }.filter { $0 == 0 || (64...130).contains($0) }
        // The help's list runs "0 success, 64 bad options, … 130 interrupted": its codes in order.
        let listed = Set(numbers.prefix { $0 != 130 } + [130])
        XCTAssertEqual(listed, table, "vivify --help's exit codes against VivifyExitCode")
    }

    func testVersionNamesTheLibraries() throws {
        let r = try CLI.vivify(["--version"])
        XCTAssertEqual(r.code, 0, r.stderr)
        let text = String(decoding: r.stdout, as: UTF8.self)
        let ffmpeg = String(decoding: try CLI.run("/usr/bin/ffmpeg", ["-hide_banner", "-version"]).stdout, as: UTF8.self)
        let ffmpegVersion = ffmpeg.split(separator: " ").dropFirst(2).first.map(String.init) ?? "?"
        XCTAssertTrue(text.hasPrefix("vivify \(VivifyVersion.number) "), text)
        XCTAssertTrue(text.contains("FFmpeg \(ffmpegVersion)"), "\(text) vs \(ffmpeg.prefix(60))")
        XCTAssertTrue(text.contains("oneDNN 2."), text)
    }

    static func vivify(_ args: [String], environment: [String: String]) throws -> CLI.Result {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        for (k, v) in environment { env[k] = v }
        p.environment = env
        let err = Pipe()
        p.standardError = err
        p.standardOutput = FileHandle.nullDevice
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return CLI.Result(code: p.terminationStatus, stdout: Data(), stderr: e)
    }
}
