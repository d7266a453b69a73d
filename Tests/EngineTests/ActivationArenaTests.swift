import Engine
@testable import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The oneDNN backend keeps activations in one block placed by lifetime: the plan never lets
/// two live buffers share bytes, it needs far less than a buffer each, and graphs prepared on
/// one backend (tile shapes) share the block and stay correct when it grows.
final class ActivationArenaTests: XCTestCase {
    private func checkNoLiveOverlap(_ requests: [BufferPlan.Request], file: StaticString = #filePath, line: UInt = #line) {
        let (offsets, total) = BufferPlan.offsets(requests)
        for i in requests.indices {
            XCTAssertEqual(offsets[i] % BufferPlan.alignment, 0, file: file, line: line)
            XCTAssertLessThanOrEqual(offsets[i] + requests[i].bytes, total, file: file, line: line)
            for j in requests.indices where j > i {
                let a = requests[i], b = requests[j]
                let liveTogether = a.first <= b.last && b.first <= a.last
                let shareBytes = offsets[i] < offsets[j] + b.bytes && offsets[j] < offsets[i] + a.bytes
                XCTAssertFalse(liveTogether && shareBytes && a.bytes > 0 && b.bytes > 0,
                               "buffers \(i) \(a) and \(j) \(b) overlap at \(offsets[i]), \(offsets[j])", file: file, line: line)
            }
        }
    }

    func testPlanKeepsLiveBuffersApart() {
        // A chain: each step reads the last value and writes the next one.
        let chain = (0..<10).map { BufferPlan.Request(bytes: 1000 * ($0 % 3 + 1), first: $0, last: $0 + 1) }
        checkNoLiveOverlap(chain)
        // At most two buffers are alive at once (5,056 bytes at the busiest step): far below a
        // buffer each (20,480); greedy placement need not be optimal, but comes within 25%.
        XCTAssertLessThanOrEqual(BufferPlan.offsets(chain).total, 5056 * 5 / 4)
        // Random lifetimes and sizes, with long-lived ones (skip connections) among them.
        var state: UInt64 = 42
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
        for _ in 0..<50 {
            let requests = (0..<(5 + next(60))).map { _ -> BufferPlan.Request in
                let first = next(40)
                return BufferPlan.Request(bytes: 1 + next(100_000), first: first, last: first + next(next(4) == 0 ? 40 : 3))
            }
            checkNoLiveOverlap(requests)
            let total = BufferPlan.offsets(requests).total
            XCTAssertLessThanOrEqual(total, requests.reduce(0) { $0 + ($1.bytes + 63) / 64 * 64 })
            // Never below what is alive at the busiest step.
            let busiest = (0..<90).map { t in requests.filter { $0.first <= t && t <= $0.last }.reduce(0) { $0 + $1.bytes } }.max()!
            XCTAssertGreaterThanOrEqual(total, busiest)
        }
    }

    /// Real models: the plan needs a fraction of a buffer each (measured: in the note), and a
    /// graph whose block moved (another shape grew it) still gives the same result.
    func testRealModelsShareOneBlockAndStayExact() throws {
        let models = TilerTests.models
        for param in ["realesr-animevideov3/realesr-animevideov3-x4.param", "waifu2x-cunet/scale2.0x_model.param",
                      "realcugan-se/up2x-no-denoise.param"] {
            let path = "\(models)/\(param)"
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) not present") }
            let graph = try NCNNImporter.load(paramPath: path)
            let backend = try DNNLBackend()
            // Sizes the U-Nets take (their tiles are 4-aligned interiors plus 18-pixel borders).
            let small = Shape(c: 3, h: 68, w: 76), large = Shape(c: 3, h: 108, w: 140)
            let a = try backend.prepare(graph, input: small) as! DNNLPrepared
            let x = Tensor(shape: small, data: TilerTests.picture(channels: 3, height: small.h, width: small.w))
            let first = try a.run(x)
            let b = try backend.prepare(graph, input: large) as! DNNLPrepared
            let y = Tensor(shape: large, data: TilerTests.picture(channels: 3, height: large.h, width: large.w, seed: 2))
            let big = try b.run(y)
            // The block grew for the larger shape: the small graph's buffers moved with it.
            XCTAssertGreaterThanOrEqual(backend.arena.capacity, b.activationBytes.planned)
            XCTAssertEqual(try a.run(x).data, first.data, "\(param): same result after the block moved")
            // A backend of its own (a block never shared) gives the same pictures.
            XCTAssertEqual(try DNNLBackend().prepare(graph, input: small).run(x).data, first.data, param)
            XCTAssertEqual(try DNNLBackend().prepare(graph, input: large).run(y).data, big.data, param)
            let (planned, separate) = b.activationBytes
            print("\(param) at \(large): activations \(planned >> 10) KiB planned vs \(separate >> 10) KiB separate")
            XCTAssertLessThan(planned * 3, separate, "\(param): the plan reuses buffers")
        }
    }
}
