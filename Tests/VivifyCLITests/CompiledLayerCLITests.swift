import Foundation
import Vivify
import XCTest

/// `--custom-layers LIB.so` through the binary: the README's examples in C and in Swift
/// (`scripts/build-custom-layer-examples`) run the style network's custom layers like their
/// declarations do, whole and in tiles (their geometry, ABI version 2); a version-1 library
/// runs whole and says so; a library's wrong answers end the run with a clear error.
final class CompiledLayerCLITests: XCTestCase {
    func testExamplesInCAndSwiftRunTheStyleNetwork() throws {
        let dir = try CLI.tempDir()
        let (input, model) = try FilterCLITests.setUp(dir, declared: false)
        let build = try CLI.run(CLI.packageRoot.appendingPathComponent("scripts/build-custom-layer-examples").path, [dir + "/libs"])
        guard build.code == 0 else { throw XCTSkip("the examples did not build here: \(build.stderr)") }
        let expected = FilterCLITests.interleaved(try FilterCLITests.floats("style_fp32.output.f32"), width: 40, height: 40)
        for lib in ["libstyle_layers_c.so", "libstyle_layers_swift.so"] {
            for backend in ["onednn", "reference"] {
                let out = dir + "/\(lib)-\(backend).png"
                let r = try CLI.vivify(["image", input, out, "--filter", model, "--custom-layers", dir + "/libs/" + lib, "--backend", backend, "--quiet"])
                XCTAssertEqual(r.code, 0, "\(lib) on \(backend): \(r.stderr)")
                let worst = zip(try FilterCLITests.pixels(out), expected).map { abs(Int($0) - Int($1)) }.max() ?? 255
                XCTAssertLessThanOrEqual(worst, 1, "\(lib) on \(backend)")
            }
            // In 20-pixel tiles: statistics passes over 2×2 tiles, placed through the geometry.
            let out = dir + "/\(lib)-tiled.png"
            let r = try CLI.vivify(["image", input, out, "--filter", model, "--custom-layers", dir + "/libs/" + lib, "--tile", "20"])
            XCTAssertEqual(r.code, 0, "\(lib) in tiles: \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("passes over its tiles"), r.stderr)
            let worst = zip(try FilterCLITests.pixels(out), expected).map { abs(Int($0) - Int($1)) }.max() ?? 255
            XCTAssertLessThanOrEqual(worst, 1, "\(lib) in tiles")
        }
        // `vivify infer` takes the flag too: the graph's own 0–255 output against the reference.
        let npy = dir + "/x.npy"
        try NPYArray(shape: [3, 40, 40], values: try FilterCLITests.floats("style.input.f32")).fileData.write(to: URL(fileURLWithPath: npy))
        let infer = try CLI.vivify(["infer", model, "--input", npy, "--output", dir + "/y.npy", "--custom-layers", dir + "/libs/libstyle_layers_swift.so"])
        XCTAssertEqual(infer.code, 0, infer.stderr)
        let y = try NPYArray.read(dir + "/y.npy")
        XCTAssertEqual(y.shape, [1, 3, 40, 40])
        let reference = try FilterCLITests.floats("style_fp32.output.f32")
        XCTAssertLessThanOrEqual(zip(y.values, reference).map { abs($0 - $1) }.max() ?? 1, 255e-4 / 10)
        // The flag is needed: without it the layers are undeclared.
        let r = try CLI.vivify(["image", input, dir + "/none.png", "--filter", model])
        XCTAssertEqual(r.code, 69, r.stderr)
    }

    func testWrongAnswersOfALibraryEndTheRun() throws {
        let dir = try CLI.tempDir()
        let (input, model) = try FilterCLITests.setUp(dir, declared: false)
        let source = CLI.packageRoot.appendingPathComponent("Tests/ModelFormatsTests/Fixtures/custom-layers/fault_layers.c").path
        // Version 1 for the answers a geometry's checks would meet first; version 2 for those.
        let lib = dir + "/libfault.so", v1 = dir + "/libv1.so"
        for (out, flags) in [(lib, [String]()), (v1, ["-DABI_VERSION=1"])] {
            let cc = try CLI.run("/usr/bin/env", ["cc", "-shared", "-fPIC", "-o", out, source, "-lm"] + flags)
            guard cc.code == 0 else { throw XCTSkip("cc could not build the test library: \(cc.stderr)") }
        }
        for (fault, code, words) in [("zero", Int32(65), "answers output shape 16x0x14"), ("shape", 65, "add_1"),
                                     ("nan", 65, "gave nan at channel 1, row 2, column 3"), ("fail", 65, "the test library was told to fail")] {
            let r = try CLI.vivify(["image", input, dir + "/x.png", "--filter", model, "--custom-layers", v1], environment: ["VIVIFY_TEST_FAULT": fault])
            XCTAssertEqual(r.code, code, "\(fault): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(words), "\(fault): \(r.stderr)")
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/x.png"), fault)
        }
        var r = try CLI.vivify(["image", input, dir + "/x.png", "--filter", model, "--custom-layers", lib], environment: ["VIVIFY_TEST_FAULT": "geometry-shape"])
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("class 'ResCropBlockLambda' of the custom layer library") && r.stderr.contains("contradicts itself"), r.stderr)
        r = try CLI.vivify(["image", input, dir + "/x.png", "--filter", model, "--custom-layers", dir + "/absent.so"])
        XCTAssertEqual(r.code, 66, r.stderr)
        // A version-1 library still runs, on whole frames, and the log says why.
        r = try CLI.vivify(["image", input, dir + "/v1.png", "--filter", model, "--custom-layers", v1, "--tile", "20"])
        XCTAssertEqual(r.code, 0, r.stderr)
        for part in ["runs on whole frames (--tile 20 is not used)", "libv1.so", "ABI version 1", "vivify_custom_layer_geometry"] {
            XCTAssertTrue(r.stderr.contains(part), "'\(part)' missing: \(r.stderr)")
        }
    }

    /// A segmented job records the library (its path, and its SHA-256 among the models'
    /// digests that every worker compares): the workers load it and join to the same file.
    func testSegmentsCarryTheLibrary() throws {
        let dir = try CLI.tempDir()
        let (_, model) = try FilterCLITests.setUp(dir, declared: false)
        let build = try CLI.run(CLI.packageRoot.appendingPathComponent("scripts/build-custom-layer-examples").path, [dir + "/libs"])
        guard build.code == 0 else { throw XCTSkip("the examples did not build here: \(build.stderr)") }
        let source = dir + "/clip.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=2", "-c:v", "ffv1", source])
        let job = ["--filter", model, "--custom-layers", dir + "/libs/libstyle_layers_c.so", "--codec", "ffv1"]
        let reference = dir + "/reference.mkv", work = dir + "/work", joined = dir + "/joined.mkv"
        var r = try CLI.vivify(["run", source, reference, "--quiet"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        r = try CLI.vivify(["plan", source, joined, "--work", work, "--segment-seconds", "1"] + job)
        XCTAssertEqual(r.code, 0, r.stderr)
        let manifest = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: work + "/manifest.json"))) as? [String: Any]
        let settings = manifest?["settings"] as? [String: Any]
        let limits = (settings?["configuration"] as? [String: Any])?["limits"] as? [String: Any]
        XCTAssertEqual(limits?["customLayers"] as? String, URL(fileURLWithPath: dir + "/libs/libstyle_layers_c.so").standardizedFileURL.path)
        XCTAssertNotNil((settings?["models"] as? [String: String])?["custom layers"])
        for index in ["0", "1"] {
            r = try CLI.vivify(["work", work, "--index", index])
            XCTAssertEqual(r.code, 0, r.stderr)
        }
        r = try CLI.vivify(["join", work])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(try SegmentTests.frameDigests(reference), try SegmentTests.frameDigests(joined))
        XCTAssertEqual(try SegmentTests.frameDigests(joined).count, 20)
    }
}
