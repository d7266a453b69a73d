import Foundation
@testable import ModelFormats
import XCTest

/// Hostile archives are refused from their central directory, before anything is written.
final class WifmArchiveSafetyTests: WifmTestCase {
    private var manifest: String { Fixture.json(Fixture.v1()) }

    func testZipSlipEntryIsRefused() {
        var z = zip(manifest: manifest)
        z.add("../evil", text: "escaped")
        let before = privateFolders()
        assertRefused(.unsafePath, key: "../evil") { try self.open(z) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: (NSTemporaryDirectory() as NSString).appendingPathComponent("evil")))
        XCTAssertEqual(privateFolders(), before, "no private folder may be left behind")

        var nested = zip(manifest: manifest)
        nested.add("main.mlpackage/../../evil", text: "escaped")
        assertRefused(.unsafePath) { try self.open(nested) }

        var windows = zip(manifest: manifest)
        windows.add("..\\evil", text: "escaped")
        assertRefused(.unsafePath) { try self.open(windows) }
    }

    func testAbsolutePathEntryIsRefused() {
        var z = zip(manifest: manifest)
        z.add("/tmp/vivify-wifm-evil", text: "escaped")
        assertRefused(.unsafePath, key: "/tmp/vivify-wifm-evil") { try self.open(z) }
        XCTAssertFalse(FileManager.default.fileExists(atPath: "/tmp/vivify-wifm-evil"))

        var drive = zip(manifest: manifest)
        drive.add("C:/evil", text: "escaped")
        assertRefused(.unsafePath) { try self.open(drive) }
    }

    func testSymlinkEntryIsRefused() {
        var z = zip(manifest: manifest)
        var link = HandZip.Entry(name: "main.mlpackage", data: Array("/etc".utf8))
        link.externalAttributes = 0o120777 << 16
        z.entries.append(link)
        assertRefused(.symlinkEntry, key: "main.mlpackage") { try self.open(z) }
    }

    func testDuplicatePathIsRefused() {
        var z = zip(manifest: manifest)
        z.add("./main.mlmodel", text: "second copy")
        assertRefused(.unsafePath, key: "./main.mlmodel") { try self.open(z) }
    }

    func testTooManyEntries() {
        var z = zip(manifest: manifest)
        for i in 0..<10_000 { z.add("pad/\(i)", []) }
        assertRefused(.tooManyEntries) { try self.open(z) }
    }

    func testNotAZip() throws {
        let path = scratch.appendingPathComponent("garbage.wifm")
        try Data("this is not a zip archive".utf8).write(to: path)
        assertRefused(.unreadableArchive) { try ModelBundle.open(path: path.path) }
        assertRefused(.unreadableArchive) { try ModelBundle.open(path: self.scratch.appendingPathComponent("absent.wifm").path) }
    }

    /// A central directory that claims 3 GB for a two-byte entry: refused from the claim alone.
    func testClaimedHugeSizeIsRefusedBeforeReading() {
        var z = zip(manifest: manifest, files: [:])
        z.entries.append(HandZip.Entry(name: "main.mlmodel", data: [0x03, 0x00], method: 8, declaredSize: 3_000_000_000, crc: 0))
        let start = Date()
        assertRefused(.archiveTooLarge) { try self.open(z) }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
    }

    /// A real zip bomb made with libzip from a streamed source: 300 MB of zeros in ~300 KB.
    /// It is refused by its compression ratio quickly, and nothing near its size is allocated.
    func testZipBombIsRefusedByRatioWithoutExpanding() throws {
        let path = scratch.appendingPathComponent("bomb.wifm").path
        try writeZeroBomb(to: path, name: "main.mlmodel", size: 300_000_000, extra: [("manifest.json", manifest)])
        XCTAssertLessThan(try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int, 1_000_000)
        let before = privateFolders()
        let rssBefore = maxResidentBytes()
        let start = Date()
        assertRefused(.suspiciousCompression, key: "main.mlmodel") { try ModelBundle.open(path: path) }
        XCTAssertLessThan(Date().timeIntervalSince(start), 5)
        XCTAssertLessThan(maxResidentBytes() - rssBefore, 64 << 20, "opening the bomb must not allocate its size")
        XCTAssertEqual(privateFolders(), before)
    }

    /// The same bomb under limits it passes on ratio but not on total size.
    func testZipBombIsRefusedByTotalSize() throws {
        let path = scratch.appendingPathComponent("bomb.wifm").path
        try writeZeroBomb(to: path, name: "main.mlmodel", size: 300_000_000, extra: [("manifest.json", manifest)])
        let limits = ModelBundle.Limits(maxTotalUncompressedBytes: 100_000_000, maxCompressionRatio: 10_000)
        assertRefused(.archiveTooLarge) { try ModelBundle.open(path: path, limits: limits) }
    }

    /// A header that understates the size (100 kB declared, 10 MB inside, ratio check not
    /// reached): caught while expanding, at the declared size, and the folder is removed.
    func testLyingHeaderIsStoppedWhileExtracting() {
        let stream = deflatedZeros(matches: 40_000) // 10,320,001 zeros
        var z = zip(manifest: manifest, files: [:])
        z.entries.append(HandZip.Entry(name: "main.mlmodel", data: stream, method: 8, declaredSize: 100_000, crc: 0))
        let before = privateFolders()
        assertRefused(.sizeMismatch, key: "main.mlmodel") { try self.open(z) }
        XCTAssertEqual(privateFolders(), before, "the private folder must be removed after a failed extraction")
    }

    func testHonestDeflatedEntryExtracts() throws {
        let stream = deflatedZeros(matches: 100) // 25,801 zeros
        let zeros = [UInt8](repeating: 0, count: 1 + 258 * 100)
        var z = zip(manifest: manifest, files: [:])
        z.entries.append(HandZip.Entry(name: "main.mlmodel", data: stream, method: 8, declaredSize: UInt32(zeros.count),
                                       crc: CRC32.checksum(zeros)))
        let bundle = try open(z)
        XCTAssertEqual(try Data(contentsOf: bundle.url(for: bundle.manifest.main)), Data(zeros))
    }

    private func maxResidentBytes() -> Int {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        return usage.ru_maxrss * 1024
    }
}
