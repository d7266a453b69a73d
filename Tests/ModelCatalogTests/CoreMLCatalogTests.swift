import Foundation
import XCTest
@testable import ModelCatalog

/// The two Core ML catalog entries: the waifu2x `.mlmodel` (from the mirror) and PiperSR's
/// `.mlpackage` (a folder in a PyPI wheel, fetched through pip), fetched for real, verified,
/// resolved, and run through the built `vivify` binary (which loads them with `Upscaler`).
final class CoreMLCatalogTests: XCTestCase {
    static let coreml = "waifu2x-photo-2x-coreml"
    static let piper = "pipersr-2x"

    // MARK: - Catalog facts

    func testCoreMLEntriesHaveNoParamOrBinAndDoNotCrash() throws {
        for name in [Self.coreml, Self.piper] {
            let e = try Catalog.builtIn.lookup(name)
            XCTAssertNil(e.paramFile, name)
            XCTAssertNil(e.weightsFile, name)
            let model = try XCTUnwrap(e.modelFile, name)
            XCTAssertEqual(e.primaryFile, model)
            XCTAssertEqual(e.files, [model])
            XCTAssertEqual(e.scale, 2)
            XCTAssertEqual(e.task, .upscale)
            XCTAssertEqual(e.border, .replicate)
            XCTAssertEqual(e.tileMultiple, 1)
            XCTAssertFalse(e.hasGlobalPooling)
            let store = ModelStore(directory: URL(fileURLWithPath: "/m"))
            XCTAssertNil(store.paramPath(for: e))
            XCTAssertNil(store.binPath(for: e))
            XCTAssertEqual(store.modelPath(for: e)?.path, "/m/\(name)/\(model.name)")
            XCTAssertEqual(store.state(of: e), .notInstalled)
        }
        let c = Catalog.builtIn.entry(named: Self.coreml)!
        XCTAssertEqual(c.format, .coreml)
        XCTAssertEqual(c.family, .waifu2xUpconv7PhotoCoreML)
        XCTAssertEqual(c.padding, 7, "six valid 3×3 convolutions and a k4 s2 p3 deconvolution: out = 2·(in − 14)")
        XCTAssertEqual(c.licence.id, "MIT")
        XCTAssertEqual(c.licence.files.map(\.mirrorPath), ["coreml/LICENSE", "ncnn/waifu2x-upconv7-photo/LICENSE.upstream-nagadomi-waifu2x"])

        let p = Catalog.builtIn.entry(named: Self.piper)!
        XCTAssertEqual(p.format, .mlprogram)
        XCTAssertEqual(p.padding, 14, "14 same 3×3 convolutions see 14 pixels each way")
        XCTAssertTrue(p.licence.files.isEmpty)
        XCTAssertTrue(p.licence.id.contains("AGPL-3.0") && p.licence.id.contains("CC BY 4.0"), p.licence.id)
        XCTAssertTrue(p.licence.note?.contains("Powered by PiperSR from ModelPiper") ?? false)
        let file = try XCTUnwrap(p.modelFile)
        XCTAssertTrue(file.isDirectory)
        XCTAssertEqual(file.name, "PiperSR_2x.mlpackage")
        XCTAssertEqual(file.archiveMember, "pipersr/PiperSR_2x.mlpackage")
        let wheel = try XCTUnwrap(file.archive)
        XCTAssertEqual(wheel.requirement, "pipersr==1.0.3", "pinned, never the latest release")
        XCTAssertEqual(wheel.fileName, "pipersr-1.0.3-py3-none-any.whl")
        XCTAssertEqual(wheel.mirrorPath, "pypi/pipersr-1.0.3-py3-none-any.whl")
        XCTAssertEqual(file.mirrorPath, wheel.mirrorPath)
        // PyPI's files.pythonhosted.org path embeds the file's hash: a pinned location.
        XCTAssertTrue(wheel.upstreamURL?.absoluteString.hasSuffix("/" + wheel.fileName) ?? false)
    }

    /// The `.mlmodel` and its licence in the mirror match the catalog, and the model's
    /// protobuf names the input and output features the catalog records.
    func testCoreMLEntryMatchesTheMirror() throws {
        let mirror = try Fixtures.requireMirror()
        let e = Catalog.builtIn.entry(named: Self.coreml)!
        for f in e.allFiles {
            let url = mirror.appendingPathComponent(f.mirrorPath)
            XCTAssertEqual(fileSize(url), f.size, f.mirrorPath)
            XCTAssertEqual(try SHA256.hash(fileAt: url).hex, f.sha256, f.mirrorPath)
            XCTAssertEqual(try Fixtures.sha256sum(url), f.sha256, "sha256sum agrees: \(f.mirrorPath)")
        }
        let bytes = try Data(contentsOf: mirror.appendingPathComponent(e.modelFile!.mirrorPath))
        for feature in [e.inputBlob, e.outputBlob] {
            // A protobuf string field: tag, length, then the UTF-8 bytes.
            XCTAssertNotNil(bytes.range(of: Data([UInt8(feature.utf8.count)]) + Data(feature.utf8)), "\(feature) in the .mlmodel")
        }
    }

    // MARK: - waifu2x .mlmodel from the mirror

    func testFetchCoreMLFromMirrorThenResolve() throws {
        let mirror = try Fixtures.requireMirror()
        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: mirror)
        let entry = try store.catalog.lookup(Self.coreml)
        XCTAssertThrowsError(try store.resolve(Self.coreml)) { XCTAssertEqual(($0 as? CatalogError)?.kind, .notFound) }

        let report = try store.fetch(Self.coreml)
        XCTAssertEqual(report.files.map(\.file.name), ["up_photo_scale2x_model.mlmodel", "LICENSE", "LICENSE.upstream-nagadomi-waifu2x"])
        for r in report.files {
            XCTAssertEqual(r.action, .copied(from: mirror.appendingPathComponent(r.file.mirrorPath)))
        }
        XCTAssertEqual(Fixtures.files(under: dir), report.files.map { "\(Self.coreml)/\($0.file.name)" }.sorted())
        XCTAssertTrue(store.isInstalled(entry))
        XCTAssertNoThrow(try store.verify(entry))

        let resolved = try store.resolve(Self.coreml)
        XCTAssertEqual(resolved.format, .coreml)
        XCTAssertEqual(resolved.entry, entry)
        XCTAssertNil(resolved.paramURL)
        XCTAssertNil(resolved.binURL)
        XCTAssertEqual(resolved.modelURL, dir.appendingPathComponent("\(Self.coreml)/up_photo_scale2x_model.mlmodel"))
        XCTAssertEqual(resolved.primaryURL, resolved.modelURL)

        XCTAssertEqual(Set(try store.fetch(entry).files.map(\.action)), [.alreadyInstalled])
    }

    /// `vivify image --upscale waifu2x-photo-2x-coreml` on a fresh model directory: fetched
    /// from the mirror on first use, loaded by `Upscaler` through the Core ML importer, 2×.
    func testCoreMLModelUpscalesAnImageTo2x() throws {
        let mirror = try Fixtures.requireMirror()
        let dir = try Fixtures.temporaryDirectory(self, "upscale")
        let input = dir.appendingPathComponent("in.png")
        try Fixtures.writeTestPNG(to: input, width: 37, height: 22)
        let output = dir.appendingPathComponent("out.png")
        let r = try Fixtures.vivify(["image", input.path, output.path, "--upscale", Self.coreml, "--tile", "16"],
                                    models: dir.appendingPathComponent("models"), mirror: mirror)
        XCTAssertEqual(r.status, 0, r.stderr)
        let size = try XCTUnwrap(Fixtures.pngSize(output))
        XCTAssertEqual(size.width, 74)
        XCTAssertEqual(size.height, 44)
        XCTAssertTrue(ModelStore(directory: dir.appendingPathComponent("models")).isInstalled(Catalog.builtIn.entry(named: Self.coreml)!))
    }

    // MARK: - PiperSR .mlpackage from a wheel

    func testPiperSRFetchThroughPipInstallsTheMLPackage() throws {
        try Fixtures.requirePip()
        let dir = try Fixtures.temporaryDirectory(self, "models")
        // An empty mirror: the wheel is not there, so pip downloads it.
        let store = ModelStore(directory: dir, mirror: try Fixtures.temporaryDirectory(self, "mirror"))
        let entry = try store.catalog.lookup(Self.piper)
        let report = try Fixtures.fetchOrSkip(Self.piper, store: store)
        XCTAssertEqual(report.files.count, 1)
        guard case .unpacked(let member, .pip(let command)) = report.files[0].action else {
            return XCTFail("expected an unpack of a pip download, got \(report.files[0].action)")
        }
        XCTAssertEqual(member, "pipersr/PiperSR_2x.mlpackage")
        XCTAssertTrue(command.contains("pip download --no-deps") && command.contains("pipersr==1.0.3"), command)

        // Exactly the package's files: no wheel, no temporaries.
        XCTAssertEqual(Fixtures.files(under: dir), [
            "pipersr-2x/PiperSR_2x.mlpackage/Data/com.apple.CoreML/model.mlmodel",
            "pipersr-2x/PiperSR_2x.mlpackage/Data/com.apple.CoreML/weights/weight.bin",
            "pipersr-2x/PiperSR_2x.mlpackage/Manifest.json",
        ])
        XCTAssertTrue(store.isInstalled(entry))
        XCTAssertNoThrow(try store.verify(entry))
        let package = dir.appendingPathComponent("pipersr-2x/PiperSR_2x.mlpackage")
        XCTAssertEqual(try SHA256.treeDigest(directoryAt: package).digest.hex, entry.modelFile!.sha256)
        XCTAssertEqual(try Fixtures.treeDigestWithShellTools(package), entry.modelFile!.sha256)

        let resolved = try store.resolve(Self.piper)
        XCTAssertEqual(resolved.format, .mlprogram)
        XCTAssertEqual(resolved.modelURL, package)
        XCTAssertNil(resolved.paramURL)

        XCTAssertEqual(try store.fetch(entry).files.map(\.action), [.alreadyInstalled])

        // The installed package loads and upscales 2× (Upscaler with the catalog's tiling).
        let image = try Fixtures.temporaryDirectory(self, "image")
        try Fixtures.writeTestPNG(to: image.appendingPathComponent("in.png"), width: 30, height: 20)
        let r = try Fixtures.vivify(["image", image.appendingPathComponent("in.png").path, image.appendingPathComponent("out.png").path,
                                     "--upscale", Self.piper], models: dir, mirror: nil)
        XCTAssertEqual(r.status, 0, r.stderr)
        let size = try XCTUnwrap(Fixtures.pngSize(image.appendingPathComponent("out.png")))
        XCTAssertEqual([size.width, size.height], [60, 40])
        let verify = try Fixtures.vivify(["models", "verify", Self.piper, "--size", "64x48"], models: dir, mirror: nil)
        XCTAssertEqual(verify.status, 0, verify.stderr)
        XCTAssertTrue(verify.stdout.contains("scale: 2x, border 14 px per side"), verify.stdout)
        let info = try Fixtures.vivify(["models", "info", Self.piper], models: dir, mirror: nil)
        XCTAssertEqual(info.status, 0, info.stderr)
        XCTAssertTrue(info.stdout.contains("FLOPs per output pixel:") && !info.stdout.contains("known once installed"),
                      "FLOPs from the installed package: \(info.stdout)")
        XCTAssertTrue(info.stdout.contains("no licence file is fetched"), info.stdout)
    }

    /// A wheel in the mirror is used instead of pip; a damaged one is a hash mismatch that
    /// installs nothing; a damaged installed package is repaired by the next fetch.
    func testPiperSRFromAMirrorWheelAndRepairs() throws {
        try Fixtures.requirePip()
        let entry = Catalog.builtIn.entry(named: Self.piper)!
        let wheel = try XCTUnwrap(entry.modelFile?.archive)
        let mirror = try Fixtures.temporaryDirectory(self, "mirror")
        let mirrored = mirror.appendingPathComponent(wheel.mirrorPath)
        try FileManager.default.createDirectory(at: mirrored.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.copyItem(at: try Fixtures.piperSRWheel(self), to: mirrored)

        let dir = try Fixtures.temporaryDirectory(self, "models")
        let store = ModelStore(directory: dir, mirror: mirror)
        let report = try store.fetch(entry)
        XCTAssertEqual(report.files.map(\.action), [.unpacked(member: "pipersr/PiperSR_2x.mlpackage", from: .mirror(mirrored))])
        XCTAssertNoThrow(try store.verify(entry))

        // A truncated weight file: incomplete by size, repaired by fetch (the directory is replaced).
        let weights = dir.appendingPathComponent("pipersr-2x/PiperSR_2x.mlpackage/Data/com.apple.CoreML/weights/weight.bin")
        try Data("truncated".utf8).write(to: weights)
        guard case .incomplete(let problems) = store.state(of: entry) else { return XCTFail("expected incomplete") }
        XCTAssertTrue(problems.joined().contains("PiperSR_2x.mlpackage"), "\(problems)")
        XCTAssertThrowsError(try store.verify(entry)) { XCTAssertEqual(($0 as? CatalogError)?.kind, .hashMismatch) }
        XCTAssertEqual(try store.fetch(entry).files.map(\.action), [.unpacked(member: "pipersr/PiperSR_2x.mlpackage", from: .mirror(mirrored))])
        XCTAssertNoThrow(try store.verify(entry))
        XCTAssertEqual(Fixtures.files(under: dir).count, 3, "the old copy and the temporaries are gone: \(Fixtures.files(under: dir))")

        // One flipped byte in the mirror's wheel: refused before unpacking, nothing installed.
        var bytes = try Data(contentsOf: mirrored)
        bytes[bytes.count / 2] ^= 0x01
        try FileManager.default.removeItem(at: mirrored)
        try bytes.write(to: mirrored)
        let fresh = try Fixtures.temporaryDirectory(self, "models")
        XCTAssertThrowsError(try ModelStore(directory: fresh, mirror: mirror).fetch(entry)) { error in
            guard let e = error as? CatalogError else { return XCTFail("\(error)") }
            XCTAssertEqual(e.kind, .hashMismatch)
            XCTAssertTrue(e.message.contains(wheel.sha256), e.message)
            XCTAssertTrue(e.message.contains(SHA256.hash(bytes).hex), e.message)
            XCTAssertTrue(e.message.contains(mirrored.path), e.message)
        }
        XCTAssertEqual(Fixtures.files(under: fresh), [])
    }

    /// Without pip (or without python3) the error says so and names the command to run by hand.
    func testMissingPipOrPythonIsAClearError() throws {
        let scripts = try Fixtures.temporaryDirectory(self, "python")
        let noPip = scripts.appendingPathComponent("python-without-pip")
        try "#!/bin/sh\necho \"$0: No module named pip\" >&2\nexit 1\n".write(to: noPip, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: noPip.path)
        for (python, says) in [(noPip.path, "has no pip module"), ("vivify-test-no-such-python3", "not installed")] {
            let dir = try Fixtures.temporaryDirectory(self, "models")
            let store = ModelStore(directory: dir, mirror: nil, python: python)
            XCTAssertThrowsError(try store.fetch(Self.piper)) { error in
                guard let e = error as? CatalogError else { return XCTFail("\(error)") }
                XCTAssertEqual(e.kind, .notFound)
                XCTAssertTrue(e.message.contains(says), e.message)
                XCTAssertTrue(e.message.contains("-m pip download --no-deps --only-binary=:all: pipersr==1.0.3 -d DIR"), e.message)
                XCTAssertTrue(e.message.contains("pypi/pipersr-1.0.3-py3-none-any.whl"), e.message)
            }
            XCTAssertEqual(Fixtures.files(under: dir), [])
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir.path), [], "no model folder left behind")
        }
    }

    // MARK: - Tree digest

    /// The tree digest is what the shell pipeline documented in DirectoryTree.swift prints.
    func testTreeDigestMatchesTheShellTools() throws {
        let dir = try Fixtures.temporaryDirectory(self, "tree")
        let files = ["b.txt": "bee\n", "a/z.bin": "zed", "a/B": "", "A.json": "{}", "a/sub/deep.txt": String(repeating: "x", count: 5000)]
        for (path, text) in files {
            let url = dir.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: false, encoding: .utf8)
        }
        try FileManager.default.createDirectory(at: dir.appendingPathComponent("empty"), withIntermediateDirectories: true)
        let tree = try SHA256.treeDigest(directoryAt: dir)
        XCTAssertEqual(tree.files, 5)
        XCTAssertEqual(tree.size, Int64(files.values.map(\.utf8.count).reduce(0, +)))
        XCTAssertEqual(tree.digest.hex, try Fixtures.treeDigestWithShellTools(dir))

        try FileManager.default.createSymbolicLink(atPath: dir.appendingPathComponent("link").path, withDestinationPath: "b.txt")
        XCTAssertThrowsError(try SHA256.treeDigest(directoryAt: dir)) { XCTAssertEqual(($0 as? CatalogError)?.kind, .hashMismatch) }
        XCTAssertThrowsError(try SHA256.treeDigest(directoryAt: dir.appendingPathComponent("b.txt"))) {
            XCTAssertEqual(($0 as? CatalogError)?.kind, .notFound)
        }
    }
}

// MARK: - Helpers for the Core ML tests

extension Fixtures {
    /// Skips unless `python3 -m pip` runs.
    static func requirePip() throws {
        let r = try? run("/usr/bin/env", ["python3", "-m", "pip", "--version"])
        guard r?.status == 0 else { throw XCTSkip("python3 -m pip is not available; the PiperSR fetch needs it") }
    }

    /// Fetches `name`, turning a pip download failure (no network, PyPI unreachable) into a skip.
    static func fetchOrSkip(_ name: String, store: ModelStore) throws -> FetchReport {
        do {
            return try store.fetch(name)
        } catch let e as CatalogError where e.kind == .network {
            throw XCTSkip("PyPI is not reachable: \(e.message)")
        }
    }

    /// The PiperSR wheel, downloaded by pip once per test run into a folder removed with `test`.
    static func piperSRWheel(_ test: XCTestCase) throws -> URL {
        let wheel = Catalog.builtIn.entry(named: "pipersr-2x")!.modelFile!.archive!
        let folder = try temporaryDirectory(test, "wheel")
        let r = try run("/usr/bin/env", ["python3", "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                                         wheel.requirement, "-d", folder.path])
        guard r.status == 0 else { throw XCTSkip("pip could not download \(wheel.requirement): \(r.stderr)") }
        return folder.appendingPathComponent(wheel.fileName)
    }

    /// The tree digest of `url` by `find | sort | sha256sum`, as DirectoryTree.swift documents it.
    static func treeDigestWithShellTools(_ url: URL) throws -> String {
        let script = "cd \"$1\" && find . -type f -print0 | LC_ALL=C sort -z | sed -z 's|^\\./||' | xargs -0 sha256sum | sha256sum"
        let r = try run("/bin/bash", ["-c", script, "bash", url.path])
        XCTAssertEqual(r.status, 0, r.stderr)
        return String(r.stdout.prefix(64))
    }

    struct ProcessOutput {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs `executable` with `arguments` and `environment` (nil: this process's).
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> ProcessOutput {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let environment { p.environment = environment }
        p.standardInput = FileHandle.nullDevice
        // Files, not pipes: neither stream can fill up and stall the child.
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-catalog-tests-run-\(UUID().uuidString)")
        let outURL = base.appendingPathExtension("out"), errURL = base.appendingPathExtension("err")
        _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
        _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
        defer { try? FileManager.default.removeItem(at: outURL); try? FileManager.default.removeItem(at: errURL) }
        let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
        p.standardOutput = out
        p.standardError = err
        try p.run()
        p.waitUntilExit()
        try out.close()
        try err.close()
        return ProcessOutput(status: p.terminationStatus,
                             stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
                             stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// The `vivify` executable built beside this test bundle (same build folder), or a skip.
    static func vivifyBinary() throws -> String {
        var dir = Bundle.main.bundleURL
        for _ in 0..<4 {
            let candidate = dir.appendingPathComponent("vivify").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
            let candidate = bundle.bundleURL.deletingLastPathComponent().appendingPathComponent("vivify").path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        throw XCTSkip("the vivify executable is not built beside the tests (run `swift build --build-tests`)")
    }

    /// Runs the built `vivify` with `VIVIFY_MODELS=models` and the mirror set (or unset).
    static func vivify(_ arguments: [String], models: URL, mirror: URL?) throws -> ProcessOutput {
        var env = ProcessInfo.processInfo.environment
        env[ModelStore.directoryVariable] = models.path
        env[ModelStore.mirrorVariable] = mirror?.path
        return try run(try vivifyBinary(), arguments, environment: env)
    }

    /// Writes a `width`×`height` 8-bit RGB PNG of smooth gradients and a hard edge (stored
    /// deflate blocks: no compressor needed).
    static func writeTestPNG(to url: URL, width: Int, height: Int) throws {
        var raw: [UInt8] = []
        for y in 0..<height {
            raw.append(0)  // filter: none
            for x in 0..<width {
                let edge = x > width / 2 ? 200 : 40
                raw += [UInt8((x * 255) / max(width - 1, 1)), UInt8((y * 255) / max(height - 1, 1)), UInt8(edge)]
            }
        }
        // zlib: header, stored blocks of at most 65535 bytes, Adler-32.
        var z: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let n = min(65535, raw.count - offset)
            let last: UInt8 = offset + n == raw.count ? 1 : 0
            z += [last, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            z += raw[offset..<offset + n]
            offset += n
        } while offset < raw.count
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in raw { a = (a + UInt32(byte)) % 65521; b = (b + a) % 65521 }
        z += be32((b << 16) | a)

        func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }
        func crc32(_ bytes: [UInt8]) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                c ^= UInt32(byte)
                for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            }
            return ~c
        }
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            return be32(UInt32(body.count)) + typed + be32(crc32(typed))
        }
        let ihdr = be32(UInt32(width)) + be32(UInt32(height)) + [8, 2, 0, 0, 0]
        let png = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", ihdr) + chunk("IDAT", z) + chunk("IEND", [])
        try Data(png).write(to: url)
    }

    /// Width and height from a PNG's IHDR, or nil when `url` is not a PNG.
    static func pngSize(_ url: URL) -> (width: Int, height: Int)? {
        guard let d = try? Data(contentsOf: url), d.count >= 24, d.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) else { return nil }
        let bytes = [UInt8](d[16..<24])
        func be(_ i: Int) -> Int { bytes[i..<i + 4].reduce(0) { $0 << 8 | Int($1) } }
        return (be(0), be(4))
    }
}
