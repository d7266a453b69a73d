import Foundation
import Glibc
@testable import ModelFormats
import XCTest

/// Paths named inside model files are data (issue 33): an `.mlpackage`'s Manifest.json path,
/// an ML Program's weight file and ONNX external data must stay inside their folder once
/// links are resolved, and be regular files (a FIFO hung the read).
final class ContainedPathTests: XCTestCase {
    static let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/mlprogram/conv_fp32.mlpackage")

    func temp() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("contained-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    func testResolveKeepsPathsInsideAndRegular() throws {
        let dir = try temp()
        let root = dir + "/model", outside = dir + "/outside"
        for d in [root, outside] { try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true) }
        try Data("w".utf8).write(to: URL(fileURLWithPath: root + "/w.bin"))
        try Data("secret".utf8).write(to: URL(fileURLWithPath: outside + "/w.bin"))
        XCTAssertEqual(try ContainedPath.resolve("w.bin", inside: root, what: "data", source: "m.onnx"), ContainedPath.realPath(root + "/w.bin"))
        try FileManager.default.createSymbolicLink(atPath: root + "/sub", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: root + "/link.bin", withDestinationPath: outside + "/w.bin")
        mkfifo(root + "/fifo.bin", 0o600)
        try FileManager.default.createDirectory(atPath: root + "/folder", withIntermediateDirectories: true)
        for bad in ["sub/w.bin", "link.bin", "../outside/w.bin", "/etc/hostname", "fifo.bin", "folder", "missing.bin", ""] {
            XCTAssertThrowsError(try ContainedPath.resolve(bad, inside: root, what: "the external data", source: "m.onnx"), bad)
        }
    }

    func testPackagePathsStayInsideThePackage() throws {
        let dir = try temp()
        let package = dir + "/m.mlpackage"
        try FileManager.default.copyItem(atPath: Self.fixture.path, toPath: package)
        XCTAssertNoThrow(try CoreMLProgramImporter.load(path: package), "the package as exported")
        // Manifest.json naming a model outside the package.
        let manifest = package + "/Manifest.json"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try FileManager.default.copyItem(atPath: package + "/Data/com.apple.CoreML/model.mlmodel", toPath: dir + "/outside.mlmodel")
        try text.replacingOccurrences(of: "com.apple.CoreML/model.mlmodel", with: "../../outside.mlmodel").write(toFile: manifest, atomically: true, encoding: .utf8)
        XCTAssertThrowsError(try CoreMLProgramImporter.load(path: package)) { XCTAssertTrue("\($0)".contains("outside"), "\($0)") }
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        // The weight file replaced by a link to a copy outside the package.
        let weights = package + "/Data/com.apple.CoreML/weights/weight.bin"
        try FileManager.default.moveItem(atPath: weights, toPath: dir + "/weight.bin")
        try FileManager.default.createSymbolicLink(atPath: weights, withDestinationPath: dir + "/weight.bin")
        XCTAssertThrowsError(try CoreMLProgramImporter.load(path: package)) { XCTAssertTrue("\($0)".contains("symbolic link"), "\($0)") }
        // A FIFO as the weight file: refused at once, not a hang.
        try FileManager.default.removeItem(atPath: weights)
        mkfifo(weights, 0o600)
        XCTAssertThrowsError(try CoreMLProgramImporter.load(path: package)) { XCTAssertTrue("\($0)".contains("regular file"), "\($0)") }
    }
}
