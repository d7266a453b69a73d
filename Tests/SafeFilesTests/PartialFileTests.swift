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

/// A run killed outright leaves its temporary file (issue 33: never cleaned): the next
/// `PartialFile` for the same target removes those of this host's processes that are gone,
/// and never another host's (a shared work directory) or a living process's.
final class StalePartialTests: XCTestCase {
    func testStaleTemporariesOfDeadProcessesAreSwept() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("stale-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        // A process that has ended: its pid is free.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/true")
        try p.run()
        p.waitUntilExit()
        let dead = p.processIdentifier
        let host = PartialFile(target: dir.appendingPathComponent("probe")).temporary.lastPathComponent
            .components(separatedBy: ".vivify-")[1].components(separatedBy: ".")[0]
        let names = [".out.mkv.vivify-\(host).\(dead)-1.partial",           // this host, dead: swept
                     ".out.mkv.vivify-\(host).\(dead)-2.partial.png",       // with an extension: swept
                     ".out.mkv.vivify-otherhost.\(dead)-1.partial",         // another machine: kept
                     ".out.mkv.vivify-\(host).\(getppid())-1.partial",      // a living process: kept
                     ".other.mkv.vivify-\(host).\(dead)-1.partial"]         // another target: kept
        for n in names { try Data("x".utf8).write(to: dir.appendingPathComponent(n)) }
        _ = PartialFile(target: dir.appendingPathComponent("out.mkv"))
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: dir.path))
        XCTAssertEqual(left, Set(names.suffix(3)))
    }
}
