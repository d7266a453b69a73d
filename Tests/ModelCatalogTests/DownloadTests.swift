import Foundation
import XCTest
@testable import ModelCatalog

/// The download path of `fetch`, over a real local HTTP server serving the mirror's files.
final class DownloadTests: XCTestCase {
    /// `entry` with every pinned upstream URL moved onto `server` (same mirror-relative path).
    private func entry(_ entry: ModelEntry, servedBy server: LocalFileServer, path: ((ModelFile) -> String)? = nil) -> ModelEntry {
        func move(_ f: ModelFile) -> ModelFile {
            ModelFile(role: f.role, mirrorPath: f.mirrorPath, sha256: f.sha256, size: f.size,
                      upstreamURL: f.upstreamURL == nil ? nil : server.url(path?(f) ?? f.mirrorPath), name: f.name)
        }
        return ModelEntry(
            name: entry.name, family: entry.family, task: entry.task, scale: entry.scale, denoiseLevel: entry.denoiseLevel,
            description: entry.description, source: entry.source, format: entry.format, files: entry.files.map(move),
            licence: Licence(id: entry.licence.id, files: entry.licence.files.map(move)),
            inputBlob: entry.inputBlob, outputBlob: entry.outputBlob, border: entry.border, padding: entry.padding,
            tileMultiple: entry.tileMultiple, hasGlobalPooling: entry.hasGlobalPooling, tileOverlap: entry.tileOverlap,
            outputIsResidualOverNearest: entry.outputIsResidualOverNearest)
    }

    func testDownloadInstallsVerifiedFilesAndSkipsUnpinnedLicences() throws {
        let mirror = try Fixtures.requireMirror()
        let server = try LocalFileServer(root: mirror)
        defer { server.stop() }
        let model = entry(Catalog.builtIn.entry(named: "waifu2x-art-2x")!, servedBy: server)
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: nil, catalog: Catalog(entries: [model]))

        let report = try store.fetch("waifu2x-art-2x")
        XCTAssertTrue(store.isInstalled(model))
        XCTAssertNoThrow(try store.verify(model))
        let actions = Dictionary(uniqueKeysWithValues: report.files.map { ($0.file.name, $0.action) })
        XCTAssertEqual(actions["scale2.0x_model.param"], .downloaded(from: server.url("ncnn/waifu2x-upconv7-art/scale2.0x_model.param")))
        XCTAssertEqual(actions["scale2.0x_model.bin"], .downloaded(from: server.url("ncnn/waifu2x-upconv7-art/scale2.0x_model.bin")))
        XCTAssertEqual(actions["LICENSE.upstream-nagadomi-waifu2x"], .downloaded(from: server.url("ncnn/waifu2x-upconv7-art/LICENSE.upstream-nagadomi-waifu2x")))
        guard case .skipped(let reason) = actions["LICENSE"] else { return XCTFail("LICENSE has no pinned URL and should be skipped") }
        XCTAssertTrue(reason.contains("MIT"))
        XCTAssertEqual(server.requests.count, 3)
        XCTAssertEqual(Fixtures.files(under: dir), ["waifu2x-art-2x/LICENSE.upstream-nagadomi-waifu2x",
                                                    "waifu2x-art-2x/scale2.0x_model.bin", "waifu2x-art-2x/scale2.0x_model.param"])
    }

    func testHTTPErrorIsANetworkErrorAndInstallsNothing() throws {
        let mirror = try Fixtures.requireMirror()
        let server = try LocalFileServer(root: mirror)
        defer { server.stop() }
        let base = Catalog.builtIn.entry(named: "realesr-animevideov3-3x")!
        // The weights URL points at a file the server does not have.
        let model = entry(base, servedBy: server) { $0.role == .weights ? "missing/\($0.name)" : $0.mirrorPath }
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: nil, catalog: Catalog(entries: [model]))
        XCTAssertThrowsError(try store.fetch(model)) { error in
            guard let e = error as? CatalogError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .network)
            XCTAssertTrue(e.message.contains("HTTP 404"), e.message)
            XCTAssertTrue(e.message.contains("missing/realesr-animevideov3-x3.bin"), e.message)
        }
        XCTAssertEqual(Fixtures.files(under: dir), [])
    }

    func testDownloadOfTheWrongBytesIsAHashMismatch() throws {
        let mirror = try Fixtures.requireMirror()
        let server = try LocalFileServer(root: mirror)
        defer { server.stop() }
        let base = Catalog.builtIn.entry(named: "realesr-animevideov3-3x")!
        // The x3 graph URL serves the x2 graph: a real file, but not the one the catalog pins.
        let model = entry(base, servedBy: server) { $0.role == .param ? "ncnn/realesr-animevideov3/realesr-animevideov3-x2.param" : $0.mirrorPath }
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: nil, catalog: Catalog(entries: [model]))
        XCTAssertThrowsError(try store.fetch(model)) { error in
            guard let e = error as? CatalogError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .hashMismatch)
            XCTAssertTrue(e.message.contains("realesr-animevideov3-x3.param"), e.message)
            XCTAssertTrue(e.message.contains(base.paramFile!.sha256), e.message)
            XCTAssertTrue(e.message.contains("b88ff4f00ebf019a7fdac17fdd45a7fd3665d37509efc5baf2e4da2e24420a04"), "actual hash of the x2 graph: \(e.message)")
        }
        XCTAssertEqual(Fixtures.files(under: dir), [])
    }
}
