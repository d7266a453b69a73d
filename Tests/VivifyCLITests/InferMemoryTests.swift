import Foundation
import XCTest

/// `vivify infer` runs a whole graph, untiled: the memory its values need is checked before
/// anything is allocated (issue 33: a 96 MiB `.npy` peaked at 8 GB).
final class InferMemoryTests: XCTestCase {
    let model = CLI.packageRoot.appendingPathComponent("Models/vivify-fast-2x.param").path

    /// A float16 `.npy` of zeros, shaped `shape`.
    func writeNPY(_ path: String, shape: [Int]) throws {
        var header = "{'descr': '<f2', 'fortran_order': False, 'shape': (\(shape.map(String.init).joined(separator: ", "))), }"
        header += String(repeating: " ", count: (64 - (10 + header.utf8.count + 1) % 64) % 64) + "\n"
        var data = Data([0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)])
        data.append(contentsOf: Array(header.utf8))
        data.append(Data(count: shape.reduce(2, *)))
        try data.write(to: URL(fileURLWithPath: path))
    }

    func testALargeTensorIsRefusedBeforeItRuns() throws {
        let dir = try CLI.tempDir()
        // The case: 96 MiB of float16, 3×4096×4096, through a 2× upscaler.
        let big = dir + "/big.npy"
        try writeNPY(big, shape: [1, 3, 4096, 4096])
        let started = Date()
        // Its values take about 2.2 GiB at once in this model (3.3 GB of memory in all when it
        // runs); under a 1 GiB budget it is refused before anything is allocated.
        let r = try CLI.vivify(["infer", model, "--input", big, "--output", dir + "/out.npy", "--max-memory", "1G"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("3x4096x4096") && r.stderr.contains("2.2 GiB") && r.stderr.contains("--max-memory 3G"), r.stderr)
        XCTAssertLessThan(Date().timeIntervalSince(started), 20, "refused before the model ran (it runs for over a minute)")
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.npy"))

        // A small tensor runs under the default, and is refused under a budget below its needs.
        let small = dir + "/small.npy"
        try writeNPY(small, shape: [1, 3, 256, 256])
        let ok = try CLI.vivify(["infer", model, "--input", small, "--output", dir + "/small-out.npy"])
        XCTAssertEqual(ok.code, 0, ok.stderr)
        XCTAssertTrue(ok.stderr.contains("1x3x512x512"), ok.stderr)
        let medium = dir + "/medium.npy"
        try writeNPY(medium, shape: [1, 3, 1024, 1024])   // about 150 MiB of values
        let tight = try CLI.vivify(["infer", model, "--input", medium, "--output", dir + "/medium-out.npy", "--max-memory", "64M"])
        XCTAssertEqual(tight.code, 64, tight.stderr)
        XCTAssertTrue(tight.stderr.contains("--max-memory"), tight.stderr)
        let bad = try CLI.vivify(["infer", model, "--input", small, "--output", dir + "/x.npy", "--max-memory", "lots"])
        XCTAssertEqual(bad.code, 64, bad.stderr)
        XCTAssertTrue(bad.stderr.contains("'--max-memory lots'"), bad.stderr)
    }
}
