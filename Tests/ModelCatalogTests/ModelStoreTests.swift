import Foundation
import XCTest
@testable import ModelCatalog

final class ModelStoreTests: XCTestCase {
    // MARK: - Where the model directory is

    func testDirectoryPrecedence() {
        func dir(_ env: [String: String]) -> String { ModelStore.defaultDirectory(environment: env).path }
        XCTAssertEqual(dir(["VIVIFY_MODELS": "/m", "XDG_DATA_HOME": "/x", "HOME": "/h"]), "/m")
        XCTAssertEqual(dir(["VIVIFY_MODELS": "", "XDG_DATA_HOME": "/x", "HOME": "/h"]), "/x/vivify/models")
        XCTAssertEqual(dir(["XDG_DATA_HOME": "relative/ignored", "HOME": "/h"]), "/h/.local/share/vivify/models")
        XCTAssertEqual(dir(["HOME": "/h"]), "/h/.local/share/vivify/models")

        let store = ModelStore(environment: ["VIVIFY_MODELS": "/m", "VIVIFY_MODEL_MIRROR": "/mirror"])
        XCTAssertEqual(store.mirror?.path, "/mirror")
        XCTAssertNil(ModelStore(environment: ["VIVIFY_MODELS": "/m", "VIVIFY_MODEL_MIRROR": ""]).mirror)

        let entry = Catalog.builtIn.entry(named: "realcugan-2x")!
        XCTAssertEqual(store.paramPath(for: entry)?.path, "/m/realcugan-2x/up2x-no-denoise.param")
        XCTAssertEqual(store.binPath(for: entry)?.path, "/m/realcugan-2x/up2x-no-denoise.bin")
        XCTAssertNil(store.modelPath(for: entry))
        XCTAssertEqual(store.primaryPath(for: entry), store.paramPath(for: entry))
    }

    // MARK: - Fetching from the mirror

    func testFetchFromMirrorInstallsAndVerifies() throws {
        let mirror = try Fixtures.requireMirror()
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: mirror)
        let entry = try store.catalog.lookup("waifu2x-photo-2x-denoise1")
        XCTAssertEqual(store.state(of: entry), .notInstalled)
        XCTAssertFalse(store.list().contains { $0.isInstalled })

        let report = try store.fetch("waifu2x-photo-2x-denoise1")
        XCTAssertEqual(report.files.map(\.file.name), [
            "noise1_scale2.0x_model.param", "noise1_scale2.0x_model.bin",
            "LICENSE", "LICENSE.upstream-nagadomi-waifu2x",
        ])
        for r in report.files {
            XCTAssertEqual(r.action, .copied(from: mirror.appendingPathComponent(r.file.mirrorPath)))
            XCTAssertEqual(try SHA256.hash(fileAt: r.destination).hex, r.file.sha256)
        }
        XCTAssertTrue(store.isInstalled(entry))
        XCTAssertTrue(try store.isInstalled("waifu2x-photo-2x-denoise1"))
        XCTAssertNoThrow(try store.verify(entry))
        XCTAssertEqual(store.list().filter(\.isInstalled).map(\.entry.name), ["waifu2x-photo-2x-denoise1"])
        // Exactly the four files, no temporaries left behind.
        XCTAssertEqual(Fixtures.files(under: dir), report.files.map { "waifu2x-photo-2x-denoise1/\($0.file.name)" }.sorted())

        let resolved = try store.resolve("waifu2x-photo-2x-denoise1")
        XCTAssertEqual(resolved.entry, entry)
        XCTAssertEqual(resolved.format, .ncnn)
        XCTAssertNil(resolved.modelURL)
        XCTAssertEqual(resolved.primaryURL, resolved.paramURL)
        XCTAssertEqual(resolved.paramURL, dir.appendingPathComponent("waifu2x-photo-2x-denoise1/noise1_scale2.0x_model.param"))
        XCTAssertEqual(resolved.binURL, dir.appendingPathComponent("waifu2x-photo-2x-denoise1/noise1_scale2.0x_model.bin"))

        // A second fetch finds everything in place; `force` copies again.
        XCTAssertEqual(Set(try store.fetch(entry).files.map(\.action)), [.alreadyInstalled])
        XCTAssertFalse(try store.fetch(entry, force: true).files.contains { $0.action == .alreadyInstalled })
    }

    func testFetchRepairsAWrongSizedFile() throws {
        let mirror = try Fixtures.requireMirror()
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: mirror)
        let entry = try store.fetch("realesr-animevideov3-2x").entry
        let bin = try XCTUnwrap(store.binPath(for: entry))
        try Data("truncated".utf8).write(to: bin)
        guard case .incomplete(let problems) = store.state(of: entry) else { return XCTFail("expected incomplete") }
        XCTAssertTrue(problems.joined().contains("realesr-animevideov3-x2.bin"))
        XCTAssertThrowsError(try store.resolve(entry.name)) { XCTAssertEqual(($0 as? CatalogError)?.kind, .notFound) }

        let report = try store.fetch(entry)
        XCTAssertEqual(report.files.first { $0.file.role == .weights }?.action, .copied(from: mirror.appendingPathComponent(entry.weightsFile!.mirrorPath)))
        XCTAssertEqual(report.files.first { $0.file.role == .param }?.action, .alreadyInstalled)
        XCTAssertTrue(store.isInstalled(entry))
    }

    func testCorruptedMirrorCopyIsAHashMismatchAndInstallsNothing() throws {
        let mirror = try Fixtures.requireMirror()
        let entry = Catalog.builtIn.entry(named: "realcugan-3x")!
        // A private mirror holding the real files of this model, with one byte of the weights flipped.
        let badMirror = try Fixtures.temporaryDirectory(self, "mirror")
        for f in entry.allFiles {
            let to = badMirror.appendingPathComponent(f.mirrorPath)
            try FileManager.default.createDirectory(at: to.deletingLastPathComponent(), withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: mirror.appendingPathComponent(f.mirrorPath), to: to)
        }
        let damaged = badMirror.appendingPathComponent(entry.weightsFile!.mirrorPath)
        var bytes = try Data(contentsOf: damaged)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: damaged)
        let actual = SHA256.hash(bytes).hex

        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: badMirror)
        XCTAssertThrowsError(try store.fetch(entry)) { error in
            guard let e = error as? CatalogError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .hashMismatch)
            XCTAssertTrue(e.message.contains("up3x-no-denoise.bin"), e.message)
            XCTAssertTrue(e.message.contains(entry.weightsFile!.sha256), e.message)
            XCTAssertTrue(e.message.contains(actual), e.message)
            XCTAssertTrue(e.message.contains(damaged.path), "names the mirror file to replace: \(e.message)")
        }
        XCTAssertEqual(Fixtures.files(under: dir), [], "no file, not even the good .param or a temporary, is installed")
        XCTAssertEqual(store.state(of: entry), .notInstalled)
    }

    func testMissingMirrorFileIsNotFound() throws {
        let emptyMirror = try Fixtures.temporaryDirectory(self, "mirror")
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: emptyMirror)
        XCTAssertThrowsError(try store.fetch("waifu2x-art-2x")) { error in
            let e = error as? CatalogError
            XCTAssertEqual(e?.kind, .notFound)
            XCTAssertTrue(e?.message.contains(emptyMirror.appendingPathComponent("ncnn/waifu2x-upconv7-art/scale2.0x_model.param").path) ?? false, "\(error)")
        }
        XCTAssertEqual(Fixtures.files(under: dir), [])
    }

    func testFetchingAnUnknownNameSuggestsACloseOne() throws {
        let store = ModelStore(directory: try Fixtures.temporaryDirectory(self), mirror: nil)
        XCTAssertThrowsError(try store.fetch("waifu2x-cunet-x2")) { error in
            let e = error as? CatalogError
            XCTAssertEqual(e?.kind, .invalid)
            XCTAssertTrue(e?.message.contains("'waifu2x-cunet-2x'") ?? false, "\(error)")
        }
    }

    // MARK: - Resolving a user's argument

    func testResolvingANameThatIsNotInstalled() throws {
        let dir = try Fixtures.temporaryDirectory(self)
        let store = ModelStore(directory: dir)
        XCTAssertThrowsError(try store.resolve("realcugan-4x")) { error in
            let e = error as? CatalogError
            XCTAssertEqual(e?.kind, .notFound)
            XCTAssertTrue(e?.message.contains("vivify models fetch realcugan-4x") ?? false, "\(error)")
        }
        XCTAssertThrowsError(try store.resolve("realcugan-5x")) { error in
            XCTAssertEqual((error as? CatalogError)?.kind, .invalid)
            XCTAssertTrue("\(error)".contains("realcugan-"), "\(error)")
        }
    }
}
