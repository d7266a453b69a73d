import Foundation
import Vivify
import XCTest

/// `.npy` headers are untrusted (issue 33): a shape whose ')' comes before its '(' trapped
/// when sliced; every malformed header is an error naming the file, a good file round-trips.
final class NPYHeaderTests: XCTestCase {
    func file(_ header: String, payload: Int = 16) throws -> String {
        var h = header
        let unpadded = 10 + h.utf8.count + 1
        h += String(repeating: " ", count: (64 - unpadded % 64) % 64) + "\n"
        var data = Data([0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(h.utf8.count & 0xFF), UInt8(h.utf8.count >> 8)])
        data.append(contentsOf: Array(h.utf8))
        data.append(Data(count: payload))
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("npy-\(UUID().uuidString).npy").path
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    func testMalformedHeadersAreErrors() throws {
        let good = try file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }")
        XCTAssertEqual(try NPYArray.read(good).shape, [2, 2])
        for header in ["{'descr': '<f4', 'fortran_order': False, 'shape': )2, 2(, }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': ), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (, }",
                       "{'descr': ', 'fortran_order': False, 'shape': (2,), }",
                       "{'descr': <f4, 'fortran_order': False, 'shape': (2,), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }",
                       "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999), }"] {
            let path = try file(header)
            XCTAssertThrowsError(try NPYArray.read(path), header) { XCTAssertTrue("\($0)".contains(path), "names the file: \($0)") }
        }
    }
}
