import Foundation
import Vivify
import XCTest

/// The exit codes are listed once, in `VivifyExitCode`: `vivify --help` prints that list, and
/// the README's table has a row for each code and for no other.
final class ExitCodeTableTests: XCTestCase {
    func testHelpAndReadmeListExactlyTheExitCodes() throws {
        let help = try CLI.vivify(["--help"])
        XCTAssertEqual(help.code, 0, help.stderr)
        // ArgumentParser wraps the discussion: compared with the line breaks taken out.
        let text = String(decoding: help.stdout, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ")
        XCTAssertTrue(text.contains(VivifyExitCode.helpText), text)

        let readme = try String(contentsOf: CLI.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let section = try XCTUnwrap(readme.components(separatedBy: "## Exit codes").dropFirst().first?.components(separatedBy: "\n#").first)
        let rows = section.split(separator: "\n").compactMap { line -> Int32? in
            let cells = line.split(separator: "|", omittingEmptySubsequences: true).map { $0.trimmingCharacters(in: .whitespaces) }
            return cells.first.flatMap { Int32($0) }
        }
        XCTAssertEqual(rows, VivifyExitCode.allCases.map(\.rawValue))
    }
}
