import Foundation
import SafeFiles
import XCTest

/// Writing beside the target and renaming: the target is replaced whole or not at all.
final class PartialFileTests: XCTestCase {
    func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-partial-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func testAFailedWriteLeavesTheOldFileAndNoTemporary() throws {
        let dir = try folder()
        let target = dir.appendingPathComponent("out.png")
        try Data("old".utf8).write(to: target)
        struct Boom: Error {}
        XCTAssertThrowsError(try PartialFile(target: target, keepExtension: true).write { url in
            XCTAssertTrue(url.lastPathComponent.hasPrefix(".out.vivify-") && url.pathExtension == "png", url.lastPathComponent)
            try Data("half".utf8).write(to: url)
            throw Boom()
        })
        XCTAssertEqual(try Data(contentsOf: target), Data("old".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["out.png"])
        try PartialFile(target: target).write { try Data("new".utf8).write(to: $0) }
        XCTAssertEqual(try Data(contentsOf: target), Data("new".utf8))
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), ["out.png"])
    }

    func testNamesAreUniqueAndACommitIntoAMissingFolderFails() throws {
        let dir = try folder()
        let target = dir.appendingPathComponent("a.mkv")
        XCTAssertNotEqual(PartialFile(target: target).temporary, PartialFile(target: target).temporary)
        let lost = PartialFile(target: dir.appendingPathComponent("missing/a.mkv"))
        XCTAssertThrowsError(try lost.commit()) { error in
            XCTAssertTrue("\(error)".contains("a.mkv"), "\(error)")
        }
    }
}

/// Without -y an output is created, never replaced (issue 33): when a file appears at the
/// target while a run writes (a second run to the same new name), the commit fails and leaves
/// it; with -y it is replaced.
final class NoReplaceCommitTests: XCTestCase {
    func testCommitWithoutReplacingNeverReplaces() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("noreplace-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let target = dir.appendingPathComponent("out.txt")
        let first = PartialFile(target: target, replacing: false)
        try Data("mine".utf8).write(to: first.temporary)
        try first.commit()
        XCTAssertEqual(try String(contentsOf: target, encoding: .utf8), "mine")
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.temporary.path), "no temporary left")
        let second = PartialFile(target: target, replacing: false)
        try Data("theirs".utf8).write(to: second.temporary)
        XCTAssertThrowsError(try second.commit()) { XCTAssertTrue("\($0)".contains("appeared"), "\($0)") }
        XCTAssertEqual(try String(contentsOf: target, encoding: .utf8), "mine", "left as it is")
        let third = PartialFile(target: target, replacing: true)
        try Data("replaced".utf8).write(to: third.temporary)
        try third.commit()
        XCTAssertEqual(try String(contentsOf: target, encoding: .utf8), "replaced")
        second.discard()
    }
}
