import Foundation
import XCTest
@testable import ModelCatalog

/// Paths and scratch folders shared by the ModelCatalog tests.
enum Fixtures {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The project's model mirror, `../shared/models` beside the checkout.
    static let mirror = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models", isDirectory: true)

    /// The mirror, or an `XCTSkip` when this checkout has no `../shared/models`.
    static func requireMirror() throws -> URL {
        guard FileManager.default.fileExists(atPath: mirror.appendingPathComponent("ncnn").path) else {
            throw XCTSkip("\(mirror.path) is absent; the mirror tests need the shared model files beside the checkout.")
        }
        return mirror
    }

    /// A new empty directory, removed when the test ends.
    static func temporaryDirectory(_ test: XCTestCase, _ label: String = "dir") throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("vivify-catalog-tests-\(label)-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    /// Files (not directories) below `url`, relative paths, sorted; hidden files included.
    static func files(under url: URL) -> [String] {
        guard let e = FileManager.default.enumerator(atPath: url.path) else { return [] }
        var out: [String] = []
        while let p = e.nextObject() as? String {
            var isDir: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.appendingPathComponent(p).path, isDirectory: &isDir), !isDir.boolValue {
                out.append(p)
            }
        }
        return out.sorted()
    }

    /// Runs `sha256sum` on `url` and returns the hex digest it prints.
    static func sha256sum(_ url: URL) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/sha256sum")
        p.arguments = [url.path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        return String(String(decoding: data, as: UTF8.self).prefix(64))
    }
}
