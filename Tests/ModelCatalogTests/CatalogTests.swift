import Foundation
import XCTest
@testable import ModelCatalog

final class CatalogTests: XCTestCase {
    let catalog = Catalog.builtIn

    func testNamesFromTheIssueAreAllThere() {
        let required = [
            "waifu2x-photo-2x", "waifu2x-photo-2x-denoise1", "waifu2x-photo-2x-denoise2", "waifu2x-photo-2x-denoise3",
            "waifu2x-art-2x", "waifu2x-art-2x-denoise1", "waifu2x-art-2x-denoise2", "waifu2x-art-2x-denoise3",
            "waifu2x-cunet-2x", "waifu2x-cunet-1x-denoise1",
            "realcugan-2x", "realcugan-2x-conservative", "realcugan-3x", "realcugan-4x",
            "realesr-animevideov3-2x", "realesr-animevideov3-3x", "realesr-animevideov3-4x",
            "waifu2x-photo-2x-coreml", "pipersr-2x",
        ]
        for name in required { XCTAssertNotNil(catalog.entry(named: name), name) }
        XCTAssertEqual(Set(catalog.names).count, catalog.names.count)
    }

    /// Facts that follow from the shared models README, checked per family.
    func testEntriesAreConsistent() throws {
        for e in catalog.entries {
            switch e.format {
            case .ncnn:
                XCTAssertEqual(e.files.count, 2, e.name)
                let param = try XCTUnwrap(e.paramFile, e.name), weights = try XCTUnwrap(e.weightsFile, e.name)
                XCTAssertNil(e.modelFile, e.name)
                XCTAssertEqual(e.primaryFile, param)
                XCTAssertTrue(param.name.hasSuffix(".param"), e.name)
                XCTAssertEqual((param.name as NSString).deletingPathExtension, (weights.name as NSString).deletingPathExtension, e.name)
                XCTAssertFalse(e.licence.files.isEmpty, e.name)
            case .coreml:
                XCTAssertEqual(e.files.map(\.role), [.model], e.name)
                XCTAssertTrue(e.modelFile!.name.hasSuffix(".mlmodel"), e.name)
                XCTAssertFalse(e.modelFile!.isDirectory, e.name)
                XCTAssertFalse(e.licence.files.isEmpty, e.name)
            case .mlprogram:
                XCTAssertEqual(e.files.map(\.role), [.model], e.name)
                XCTAssertTrue(e.modelFile!.name.hasSuffix(".mlpackage"), e.name)
                XCTAssertTrue(e.modelFile!.isDirectory, e.name)
                // No licence text to install must be explained.
                if e.licence.files.isEmpty { XCTAssertNotNil(e.licence.note, e.name) }
            }
            XCTAssertTrue(e.name.contains("-\(e.scale)x"), "\(e.name) should say its scale")
            XCTAssertEqual(e.task == .denoise, e.scale == 1, e.name)
            XCTAssertEqual((2 * e.padding) % e.tileMultiple, 0, "\(e.name): padding must keep the tile multiple")
            XCTAssertEqual(e.padding > 0, e.border != .none, e.name)
            for f in e.allFiles {
                XCTAssertEqual(f.sha256.count, 64, f.name)
                XCTAssertTrue(f.sha256.allSatisfy { "0123456789abcdef".contains($0) }, f.name)
                if let archive = f.archive {
                    // A folder unpacked from a pinned release of an archive.
                    XCTAssertEqual(archive.sha256.count, 64, archive.fileName)
                    XCTAssertEqual(f.mirrorPath, archive.mirrorPath)
                    XCTAssertEqual(f.name, (f.archiveMember.map { ($0 as NSString).lastPathComponent }) ?? "")
                    guard case .pythonWheel(let package, let version) = archive.source else { continue }
                    XCTAssertTrue(archive.fileName.hasPrefix("\(package)-\(version)-") && archive.fileName.hasSuffix(".whl"), archive.fileName)
                    XCTAssertEqual(archive.mirrorPath, "pypi/\(archive.fileName)")
                    continue
                }
                if e.format == .ncnn {
                    XCTAssertTrue(f.mirrorPath.hasPrefix("ncnn/\(e.family.rawValue)/"), f.mirrorPath)
                    XCTAssertEqual(f.mirrorPath, "ncnn/\(e.family.rawValue)/\(f.name)")
                } else if f.role == .model {
                    XCTAssertEqual(f.mirrorPath, "coreml/\(f.name)")
                }
                if f.role != .licence {
                    let url = try! XCTUnwrap(f.upstreamURL, f.name)
                    XCTAssertEqual(url.scheme, "https")
                    XCTAssertEqual(url.lastPathComponent, f.name)
                    // Pinned to a commit, never a branch.
                    XCTAssertTrue(url.path.split(separator: "/").contains { $0.count == 40 && $0.allSatisfy(\.isHexDigit) }, url.absoluteString)
                }
            }
            switch e.family {
            case .waifu2xUpconv7Photo, .waifu2xUpconv7Art:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["Input1", "Eltwise4", "replicate"])
                XCTAssertEqual(e.padding, 7); XCTAssertFalse(e.hasGlobalPooling)
            case .waifu2xCunet:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["Input1", "Eltwise4", "replicate"])
                XCTAssertEqual(e.padding, e.scale == 2 ? 18 : 28); XCTAssertTrue(e.hasGlobalPooling)
                XCTAssertEqual(e.tileMultiple, e.scale == 2 ? 2 : 4)
            case .realcuganSE:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["in0", "out0", "reflect"])
                XCTAssertEqual(e.padding, [2: 18, 3: 14, 4: 19][e.scale]); XCTAssertTrue(e.hasGlobalPooling)
                XCTAssertEqual(e.outputIsResidualOverNearest, e.scale == 4)
            case .realesrAnimeVideoV3:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["data", "output", "none"])
                XCTAssertEqual(e.padding, 0); XCTAssertEqual(e.tileOverlap, 10); XCTAssertFalse(e.hasGlobalPooling)
            case .waifu2xUpconv7PhotoCoreML:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["input", "conv7", "replicate"])
                XCTAssertEqual(e.padding, 7); XCTAssertFalse(e.hasGlobalPooling); XCTAssertEqual(e.format, .coreml)
            case .piperSR:
                XCTAssertEqual([e.inputBlob, e.outputBlob, e.border.rawValue], ["input_image", "output_image", "replicate"])
                XCTAssertEqual(e.padding, 14); XCTAssertFalse(e.hasGlobalPooling); XCTAssertEqual(e.format, .mlprogram)
            }
        }
    }

    /// Every file the catalog names exists in the mirror with the catalog's size and SHA-256
    /// (archives, which the mirror may leave to pip, are checked when it has them).
    func testEveryMirrorFileMatchesTheCatalog() throws {
        let mirror = try Fixtures.requireMirror()
        var checked = Set<String>()
        for e in catalog.entries {
            for f in e.allFiles where checked.insert(f.mirrorPath).inserted {
                let url = mirror.appendingPathComponent(f.mirrorPath)
                if let archive = f.archive {
                    guard fileSize(url) != nil else { continue }
                    XCTAssertEqual(fileSize(url), archive.size, "\(f.mirrorPath) size")
                    XCTAssertEqual(try SHA256.hash(fileAt: url).hex, archive.sha256, "\(f.mirrorPath) SHA-256")
                    continue
                }
                XCTAssertEqual(fileSize(url), f.size, "\(f.mirrorPath) size")
                XCTAssertEqual(try SHA256.hash(fileAt: url).hex, f.sha256, "\(f.mirrorPath) SHA-256")
            }
        }
        // The graph text names the blobs the catalog records.
        for e in catalog.entries {
            guard let param = e.paramFile else { continue }
            let text = try String(contentsOf: mirror.appendingPathComponent(param.mirrorPath), encoding: .utf8)
            XCTAssertTrue(text.hasPrefix("7767517\n"), e.name)
            let tokens = Set(text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map(String.init))
            XCTAssertTrue(tokens.contains(e.inputBlob), "\(e.name) input \(e.inputBlob)")
            XCTAssertTrue(tokens.contains(e.outputBlob), "\(e.name) output \(e.outputBlob)")
            XCTAssertEqual(tokens.contains("Pooling"), e.hasGlobalPooling, "\(e.name) pooling")
        }
        XCTAssertGreaterThanOrEqual(checked.count, 42)
    }

    func testUnknownNameSuggestsCloseNames() {
        XCTAssertThrowsError(try catalog.lookup("waifu2x-photo-2x-denoize3")) { error in
            let e = error as? CatalogError
            XCTAssertEqual(e?.kind, .invalid)
            XCTAssertTrue(e?.message.contains("'waifu2x-photo-2x-denoise3'") ?? false, "\(error)")
            XCTAssertTrue(e?.message.contains("vivify models list") ?? false)
        }
        XCTAssertEqual(catalog.suggestions(for: "realcugan2x").first, "realcugan-2x")
        XCTAssertEqual(catalog.suggestions(for: "realcugan").count, 3)
        XCTAssertEqual(catalog.suggestions(for: "zzzzzzzzzzzzzz"), [])
        XCTAssertEqual(try catalog.lookup("RealCUGAN-4x").name, "realcugan-4x")
    }

    func testEditDistance() {
        XCTAssertEqual(editDistance("", ""), 0)
        XCTAssertEqual(editDistance("abc", ""), 3)
        XCTAssertEqual(editDistance("kitten", "sitting"), 3)
        XCTAssertEqual(editDistance("flaw", "lawn"), 2)
    }
}
