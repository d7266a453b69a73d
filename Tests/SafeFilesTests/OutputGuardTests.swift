import Foundation
import SafeFiles
import XCTest

/// Nothing but a regular file is ever replaced, an input never, and an existing output only
/// with -y.
final class OutputGuardTests: XCTestCase {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-guard-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func kind(_ output: String, inputs: [String] = [], _ existing: ExistingOutput = .replace) -> OutputProblem.Kind? {
        do {
            _ = try OutputGuard.check(output: output, inputs: inputs, existing: existing)
            return nil
        } catch {
            return error.kind
        }
    }

    func testALinkToNothingIsRefused() throws {
        let dir = try folder()
        let dangling = dir.appendingPathComponent("out.mkv").path, a = dir.appendingPathComponent("a").path, b = dir.appendingPathComponent("b").path
        try FileManager.default.createSymbolicLink(atPath: dangling, withDestinationPath: "nowhere.mkv")
        try FileManager.default.createSymbolicLink(atPath: a, withDestinationPath: b)
        try FileManager.default.createSymbolicLink(atPath: b, withDestinationPath: a)
        XCTAssertEqual(kind(dangling), .brokenLink)
        XCTAssertEqual(kind(a), .brokenLink)
        // A link to a file that exists is written through (the file it names is replaced).
        let real = dir.appendingPathComponent("real.mkv").path, link = dir.appendingPathComponent("link.mkv").path
        try Data([1]).write(to: URL(fileURLWithPath: real))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: real)
        XCTAssertNil(kind(link))
    }

    func testDevicesPipesAndFoldersAreNeverReplaced() throws {
        let dir = try folder()
        let fifo = dir.appendingPathComponent("pipe").path
        XCTAssertEqual(mkfifo(fifo, 0o644), 0)
        XCTAssertEqual(kind("/dev/null"), .notRegularFile)
        XCTAssertEqual(kind(fifo), .notRegularFile)
        XCTAssertEqual(kind(dir.path), .notRegularFile)
        // A partial file committed onto a FIFO that appeared meanwhile is refused too.
        let partial = PartialFile(target: URL(fileURLWithPath: fifo))
        try Data([1]).write(to: partial.temporary)
        XCTAssertThrowsError(try partial.commit())
        var info = stat()
        XCTAssertEqual(lstat(fifo, &info), 0)
        XCTAssertEqual(info.st_mode & S_IFMT, S_IFIFO, "the FIFO is still a FIFO")
        partial.discard()
    }

    func testTheInputIsFoundThroughLinksAndDotDot() throws {
        let dir = try folder()
        let input = dir.appendingPathComponent("in.mkv")
        try Data("precious".utf8).write(to: input)
        let link = dir.appendingPathComponent("link.mkv")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: input)
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("sub"), withIntermediateDirectories: true)
        XCTAssertEqual(kind(link.path, inputs: [input.path]), .sameAsInput)
        XCTAssertEqual(kind(dir.path + "/sub/../in.mkv", inputs: [link.path]), .sameAsInput)
        let hard = dir.appendingPathComponent("hard.mkv")
        XCTAssertEqual(Glibc.link(input.path, hard.path), 0)
        XCTAssertEqual(kind(hard.path, inputs: [input.path]), .sameAsInput)
        XCTAssertEqual(try String(contentsOf: input, encoding: .utf8), "precious")
    }

    func testAnExistingOutputNeedsYesOrIsSkipped() throws {
        let dir = try folder()
        let out = dir.appendingPathComponent("out.mkv")
        XCTAssertEqual(try OutputGuard.check(output: out.path, inputs: [], existing: .refuse), .write(out))
        try Data([1]).write(to: out)
        XCTAssertEqual(kind(out.path, .refuse), .exists)
        XCTAssertEqual(try OutputGuard.check(output: out.path, inputs: [], existing: .skip), .skip)
        XCTAssertEqual(try OutputGuard.check(output: out.path, inputs: [], existing: .replace), .write(out))
        // A link to an output: the file it names is the one replaced, the link stays.
        let link = dir.appendingPathComponent("latest.mkv")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: out)
        XCTAssertEqual(try OutputGuard.check(output: link.path, inputs: [], existing: .replace), .write(out.resolvingSymlinksInPath()))
        XCTAssertEqual(kind(dir.appendingPathComponent("missing/o.mkv").path), .missingFolder)
    }
}
