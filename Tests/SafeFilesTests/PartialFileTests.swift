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
