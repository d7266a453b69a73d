import CZip
import Foundation
@testable import ModelFormats
import XCTest

/// A zip archive written byte by byte, so tests control everything a hostile archive can
/// lie about: names, sizes, host system and Unix attributes.
struct HandZip {
    struct Entry {
        var name: String
        /// The bytes stored in the archive (already deflated when `method` is 8).
        var data: [UInt8]
        /// 0 stored, 8 deflate.
        var method: UInt16 = 0
        /// The uncompressed size written in both headers; `data.count` when nil.
        var declaredSize: UInt32?
        /// CRC-32 written in both headers; computed over `data` when nil.
        var crc: UInt32?
        /// Unix mode in the high 16 bits.
        var externalAttributes: UInt32 = 0o100644 << 16
    }

    var entries: [Entry] = []

    mutating func add(_ name: String, _ data: [UInt8]) {
        entries.append(Entry(name: name, data: data))
    }

    mutating func add(_ name: String, text: String) {
        add(name, Array(text.utf8))
    }

    mutating func add(_ name: String, contentsOf url: URL) throws {
        add(name, Array(try Data(contentsOf: url)))
    }

    /// A folder entry `name/`.
    mutating func addDirectory(_ name: String) {
        entries.append(Entry(name: name.hasSuffix("/") ? name : name + "/", data: [], externalAttributes: 0o040755 << 16))
    }

    func bytes() -> [UInt8] {
        var out: [UInt8] = []
        var central: [UInt8] = []
        for e in entries {
            let name = Array(e.name.utf8)
            let crc = e.crc ?? (e.method == 0 ? CRC32.checksum(e.data) : 0)
            let size = e.declaredSize ?? UInt32(e.data.count)
            let offset = UInt32(out.count)
            out.le32(0x0403_4B50); out.le16(20); out.le16(0x0800); out.le16(e.method); out.le16(0); out.le16(0x21)
            out.le32(crc); out.le32(UInt32(e.data.count)); out.le32(size); out.le16(UInt16(name.count)); out.le16(0)
            out += name
            out += e.data
            central.le32(0x0201_4B50); central.le16(3 << 8 | 20); central.le16(20); central.le16(0x0800); central.le16(e.method)
            central.le16(0); central.le16(0x21); central.le32(crc); central.le32(UInt32(e.data.count)); central.le32(size)
            central.le16(UInt16(name.count)); central.le16(0); central.le16(0); central.le16(0); central.le16(0)
            central.le32(e.externalAttributes); central.le32(offset)
            central += name
        }
        let centralOffset = UInt32(out.count)
        out += central
        out.le32(0x0605_4B50); out.le16(0); out.le16(0); out.le16(UInt16(entries.count)); out.le16(UInt16(entries.count))
        out.le32(UInt32(central.count)); out.le32(centralOffset); out.le16(0)
        return out
    }

    func write(to url: URL) throws {
        try Data(bytes()).write(to: url)
    }
}

extension [UInt8] {
    mutating func le16(_ v: UInt16) { append(UInt8(v & 0xFF)); append(UInt8(v >> 8)) }
    mutating func le32(_ v: UInt32) { for s in stride(from: 0, to: 32, by: 8) { append(UInt8((v >> UInt32(s)) & 0xFF)) } }
}

enum CRC32 {
    static let table: [UInt32] = (0..<256).map { n in
        var c = UInt32(n)
        for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        return c
    }

    static func checksum(_ data: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in data { c = table[Int((c ^ UInt32(b)) & 0xFF)] ^ (c >> 8) }
        return c ^ 0xFFFF_FFFF
    }
}

/// A raw deflate stream (one fixed-Huffman block) that expands to `1 + 258 · matches` zero
/// bytes: a literal 0, then `matches` copies of length 258 at distance 1, 13 bits each.
func deflatedZeros(matches: Int) -> [UInt8] {
    var out: [UInt8] = []
    var bitBuffer: UInt32 = 0, bitCount: UInt32 = 0
    func bits(_ value: UInt32, _ n: UInt32) { // LSB first, as deflate packs header fields
        bitBuffer |= value << bitCount
        bitCount += n
        while bitCount >= 8 { out.append(UInt8(bitBuffer & 0xFF)); bitBuffer >>= 8; bitCount -= 8 }
    }
    func code(_ value: UInt32, _ n: UInt32) { // Huffman codes go MSB first
        for i in (0..<n).reversed() { bits((value >> i) & 1, 1) }
    }
    bits(1, 1) // BFINAL
    bits(1, 2) // BTYPE 01: fixed Huffman
    code(0x30, 8) // literal 0
    for _ in 0..<matches {
        code(0xC5, 8) // length code 285: 258 bytes
        code(0, 5) // distance code 0: distance 1
    }
    code(0, 7) // end of block (256)
    if bitCount > 0 { out.append(UInt8(bitBuffer & 0xFF)) }
    return out
}

/// Writes with libzip an archive holding `name`: `size` zero bytes deflated at level 9,
/// streamed from a callback so the zeros are never in memory.
func writeZeroBomb(to path: String, name: String, size: UInt64, extra: [(String, String)] = []) throws {
    var code: Int32 = 0
    let archive = try XCTUnwrap(zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &code))
    let state = UnsafeMutablePointer<UInt64>.allocate(capacity: 2)
    defer { state.deallocate() }
    state[0] = size
    state[1] = size
    let callback: zip_source_callback = { userdata, data, length, command in
        let state = userdata!.assumingMemoryBound(to: UInt64.self)
        switch command {
        case ZIP_SOURCE_OPEN:
            state[1] = state[0]
            return 0
        case ZIP_SOURCE_READ:
            let n = min(length, state[1])
            data!.initializeMemory(as: UInt8.self, repeating: 0, count: Int(n))
            state[1] -= n
            return Int64(n)
        case ZIP_SOURCE_CLOSE, ZIP_SOURCE_FREE:
            return 0
        case ZIP_SOURCE_STAT:
            let stat = data!.assumingMemoryBound(to: zip_stat_t.self)
            zip_stat_init(stat)
            stat.pointee.size = state[0]
            stat.pointee.valid |= UInt64(ZIP_STAT_SIZE)
            return Int64(MemoryLayout<zip_stat_t>.size)
        case ZIP_SOURCE_ERROR:
            data!.initializeMemory(as: Int32.self, repeating: 0, count: 2)
            return Int64(2 * MemoryLayout<Int32>.size)
        case ZIP_SOURCE_SUPPORTS:
            let commands = [ZIP_SOURCE_OPEN, ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT, ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, ZIP_SOURCE_SUPPORTS]
            return commands.reduce(Int64(0)) { $0 | (Int64(1) << Int64($1.rawValue)) }
        default:
            return -1
        }
    }
    let source = try XCTUnwrap(zip_source_function(archive, callback, state))
    let index = zip_file_add(archive, name, source, zip_flags_t(ZIP_FL_ENC_UTF_8))
    XCTAssertGreaterThanOrEqual(index, 0)
    XCTAssertEqual(zip_set_file_compression(archive, zip_uint64_t(index), ZIP_CM_DEFLATE, 9), 0)
    var buffers: [UnsafeMutableRawPointer] = []
    for (entryName, text) in extra {
        let bytes = Array(text.utf8)
        let copy = malloc(bytes.count)!
        copy.copyMemory(from: bytes, byteCount: bytes.count)
        buffers.append(copy)
        let s = try XCTUnwrap(zip_source_buffer(archive, copy, zip_uint64_t(bytes.count), 1))
        XCTAssertGreaterThanOrEqual(zip_file_add(archive, entryName, s, zip_flags_t(ZIP_FL_ENC_UTF_8)), 0)
    }
    guard zip_close(archive) == 0 else {
        let message = String(cString: zip_strerror(archive))
        zip_discard(archive)
        throw XCTSkip("libzip could not write the test archive: \(message)")
    }
}

/// Manifests and folders shared by the tests.
enum Fixture {
    /// `shared/models` beside the package root.
    static let sharedModels = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/models")

    static func coreMLModel() throws -> URL {
        let url = sharedModels.appendingPathComponent("coreml/up_photo_scale2x_model.mlmodel")
        guard FileManager.default.fileExists(atPath: url.path) else { throw XCTSkip("\(url.path) is absent") }
        return url
    }

    static func ncnnModel() throws -> (param: URL, bin: URL) {
        let folder = sharedModels.appendingPathComponent("ncnn/waifu2x-upconv7-photo")
        let param = folder.appendingPathComponent("scale2.0x_model.param"), bin = folder.appendingPathComponent("scale2.0x_model.bin")
        guard FileManager.default.fileExists(atPath: param.path), FileManager.default.fileExists(atPath: bin.path) else {
            throw XCTSkip("\(folder.path) has no scale2.0x_model.param/.bin")
        }
        return (param, bin)
    }

    /// A valid v1 manifest for `main.mlmodel`, with `changes` applied (NSNull removes a key).
    static func v1(_ changes: [String: Any] = [:]) -> [String: Any] {
        var m: [String: Any] = [
            "version": 1,
            "name": "Test 2x Model",
            "type": "coreml",
            "subModels": ["main": ["file": "main.mlmodel", "inputName": "input", "outputName": "conv7"]],
            "dataFormat": "nchw",
            "inputShape": [1, 3, 128, 128],
            "shrinkSize": 7,
            "scale": 2,
            "alphaMode": "sameAsMain",
        ]
        for (k, v) in changes { m[k] = v is NSNull ? nil : v }
        return m
    }

    static func json(_ object: [String: Any]) -> String {
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])
        return String(decoding: data, as: UTF8.self)
    }
}

/// A scratch folder removed at the end of the test.
class WifmTestCase: XCTestCase {
    var scratch: URL!

    override func setUpWithError() throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("wifm-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Writes `zip` and opens it.
    func open(_ zip: HandZip, limits: ModelBundle.Limits = .default) throws -> ModelBundle {
        let path = scratch.appendingPathComponent("bundle-\(UUID().uuidString).wifm").path
        try zip.write(to: URL(fileURLWithPath: path))
        return try ModelBundle.open(path: path, limits: limits)
    }

    /// An archive with `manifest` and a placeholder `main.mlmodel`, plus `extra` entries.
    func zip(manifest: String, files: [String: [UInt8]] = ["main.mlmodel": Array("not really Core ML".utf8)]) -> HandZip {
        var z = HandZip()
        z.add("manifest.json", text: manifest)
        for name in files.keys.sorted() { z.add(name, files[name]!) }
        return z
    }

    /// Asserts that `body` throws a `BundleError` of `kind` (and `key`, when given) whose
    /// message names the key.
    func assertRefused(_ kind: BundleError.Kind, key: String? = nil, file: StaticString = #filePath, line: UInt = #line,
                       _ body: () throws -> Any) {
        do {
            _ = try body()
            XCTFail("expected \(kind), but it succeeded", file: file, line: line)
        } catch let error as BundleError {
            XCTAssertEqual(error.kind, kind, error.message, file: file, line: line)
            if let key {
                XCTAssertEqual(error.key, key, error.message, file: file, line: line)
                XCTAssertTrue(error.message.contains(key), "message should name \(key): \(error.message)", file: file, line: line)
            }
            XCTAssertTrue(error.message.hasSuffix("."), error.message, file: file, line: line)
        } catch {
            XCTFail("expected BundleError \(kind), got \(error)", file: file, line: line)
        }
    }

    /// Folders `ModelBundle` made under the temporary directory.
    func privateFolders() -> Set<String> {
        let tmp = NSTemporaryDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: tmp)) ?? []
        return Set(names.filter { $0.hasPrefix("vivify-wifm.") })
    }
}
