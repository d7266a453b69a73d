import Foundation
import XCTest
@testable import ModelCatalog

final class SHA256Tests: XCTestCase {
    private func hex(_ s: String) -> String { SHA256.hash(Data(s.utf8)).hex }

    // FIPS 180-4 / NIST CSRC example vectors.
    func testStandardVectors() {
        XCTAssertEqual(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        XCTAssertEqual(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        XCTAssertEqual(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
                       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        XCTAssertEqual(hex("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
                       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    func testOneMillionA() {
        var h = SHA256()
        // Fed in uneven pieces so block carry-over between `update` calls is exercised too.
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 999)
        var left = 1_000_000
        while left > 0 {
            let n = min(left, piece.count)
            h.update(Array(piece[0..<n]))
            left -= n
        }
        XCTAssertEqual(h.finalize().hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Every split point of a message around the 55/56/64-byte padding edges hashes the same as
    /// the message in one piece.
    func testIncrementalUpdatesMatchOneShot() {
        for length in [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 128, 200] {
            let message = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
            let whole = SHA256.hash(Data(message)).hex
            for split in stride(from: 0, through: length, by: max(1, length / 7)) {
                var h = SHA256()
                h.update(Array(message[0..<split]))
                h.update(Array(message[split...]))
                XCTAssertEqual(h.finalize().hex, whole, "length \(length) split at \(split)")
            }
        }
    }

    func testFileHashMatchesSha256sum() throws {
        let mirror = try Fixtures.requireMirror()
        let file = mirror.appendingPathComponent("ncnn/waifu2x-upconv7-photo/scale2.0x_model.bin")
        let expected = try Fixtures.sha256sum(file)
        XCTAssertEqual(try SHA256.hash(fileAt: file).hex, expected)
        // A chunk size that is not a multiple of the block size.
        XCTAssertEqual(try SHA256.hash(fileAt: file, chunkSize: 1000).hex, expected)
    }

    func testHashingAMissingFileIsNotFound() {
        XCTAssertThrowsError(try SHA256.hash(fileAt: URL(fileURLWithPath: "/nonexistent/vivify/x.bin"))) { error in
            XCTAssertEqual((error as? CatalogError)?.kind, .notFound)
            XCTAssertTrue("\(error)".contains("/nonexistent/vivify/x.bin"))
        }
    }
}
