@testable import Engine
import XCTest

/// The Engine's backend-neutral arena plan: blocks of bounded size (a Vulkan binding's range),
/// any alignment a device asks for, and value lifetimes over a graph's node order
/// (ActivationArenaTests checks the one-block plan oneDNN uses).
final class BufferPlanTests: XCTestCase {
    /// Fails where two buffers alive at the same step share a byte of one block, where an
    /// offset is not aligned, or where a buffer reaches past its block or a block past the limit.
    private func checkPlan(_ requests: [BufferPlan.Request], _ plan: BufferPlan, alignment: Int, limit: Int,
                           file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(plan.places.count, requests.count, file: file, line: line)
        for b in plan.blocks { XCTAssertLessThanOrEqual(b, limit, "a block over the limit", file: file, line: line) }
        for i in requests.indices {
            let p = plan.places[i], a = requests[i]
            XCTAssertEqual(p.offset % alignment, 0, file: file, line: line)
            XCTAssertLessThanOrEqual(p.offset + a.bytes, plan.blocks[p.block], "buffer \(i) past its block", file: file, line: line)
            for j in requests.indices where j > i && plan.places[j].block == p.block {
                let q = plan.places[j], b = requests[j]
                let liveTogether = a.first <= b.last && b.first <= a.last
                let shareBytes = p.offset < q.offset + b.bytes && q.offset < p.offset + a.bytes
                XCTAssertFalse(liveTogether && shareBytes && a.bytes > 0 && b.bytes > 0,
                               "buffers \(i) \(a) and \(j) \(b) overlap in block \(p.block) at \(p.offset), \(q.offset)", file: file, line: line)
            }
        }
    }

    func testBlocksStayWithinTheLimitAndKeepLiveBuffersApart() throws {
        var state: UInt64 = 9
        func next(_ n: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int(state >> 33) % n
        }
        for round in 0..<60 {
            let alignment = [16, 64, 256][round % 3]
            let limit = 100_000 + next(200_000)
            let requests = (0..<(5 + next(60))).map { _ -> BufferPlan.Request in
                let first = next(40)
                return BufferPlan.Request(bytes: next(100_000), first: first, last: first + next(next(4) == 0 ? 40 : 3))
            }
            let plan = try BufferPlan(requests, alignment: alignment, blockLimit: limit)
            checkPlan(requests, plan, alignment: alignment, limit: limit)
            // More than one block only where one could not hold them: what is alive at the
            // busiest step exceeds a block, or first-fit left the space in pieces.
            let unlimited = try BufferPlan(requests, alignment: alignment)
            XCTAssertEqual(unlimited.blocks.count, requests.isEmpty ? 0 : 1)
            if unlimited.total <= limit { XCTAssertEqual(plan.blocks, unlimited.blocks, "round \(round): split though one block fits") }
            XCTAssertLessThanOrEqual(plan.total, requests.reduce(0) { $0 + ($1.bytes + alignment - 1) / alignment * alignment }, "round \(round)")
        }
        // Buffers that each fill most of a block: one per block while they live together, and
        // blocks reused once they are dead.
        let big = [BufferPlan.Request(bytes: 700, first: 0, last: 1), BufferPlan.Request(bytes: 700, first: 1, last: 2),
                   BufferPlan.Request(bytes: 700, first: 2, last: 3), BufferPlan.Request(bytes: 300, first: 0, last: 3)]
        let plan = try BufferPlan(big, alignment: 64, blockLimit: 1024)
        checkPlan(big, plan, alignment: 64, limit: 1024)
        XCTAssertEqual(plan.blocks.count, 2)
        XCTAssertEqual(plan.places[0].block, plan.places[2].block, "the third reuses the first's block")
        // A buffer larger than a block cannot be placed: said, with what to do.
        XCTAssertThrowsError(try BufferPlan([BufferPlan.Request(bytes: 2000, first: 0, last: 0)], blockLimit: 1024)) { error in
            XCTAssertEqual((error as? EngineError)?.kind, .invalidSetting)
            XCTAssertTrue("\(error)".contains("--tile"), "\(error)")
        }
    }

    /// Lifetimes over the node order: values from their writer to their last reader; the input
    /// from step 0, the output until after the last node, constants through every step.
    func testValueLifetimesFollowTheNodeOrder() throws {
        let w = ConvolutionParameters(outChannels: 1, inChannels: 1, kernelH: 1, kernelW: 1, weights: [1])
        //  0 in ─ conv ─▶ 1 ─ relu ─▶ 2 ─┐
        //  3 const ─────────────────────── add ─▶ 4 ─ relu ─▶ 5 (output)
        //  (6: written by a node no one reads)
        let graph = Graph(valueNames: ["in", "a", "b", "k", "c", "out", "dead"], nodes: [
            Node(name: "conv", op: .convolution(w), inputs: [0], output: 1),
            Node(name: "relu", op: .activation(.relu), inputs: [1], output: 2),
            Node(name: "k", op: .constant(Shape(c: 1, h: 1, w: 1), values: [1]), inputs: [], output: 3),
            Node(name: "add", op: .binary(.add, coefficients: nil), inputs: [2, 3], output: 4),
            Node(name: "dead", op: .activation(.relu), inputs: [0], output: 6),
            Node(name: "out", op: .activation(.relu), inputs: [4], output: 5),
        ], input: 0, output: 5, source: "test")
        let l = graph.valueLifetimes()
        XCTAssertEqual(l.map(\.first), [0, 0, 1, 0, 3, 5, 4])
        XCTAssertEqual(l.map(\.last), [4, 1, 3, 6, 5, 6, 4])
        // Planned so: the constant keeps bytes of its own (nothing overwrites it between runs),
        // and the dead value may take the bytes of values dead before step 4.
        let requests = l.map { BufferPlan.Request(bytes: 100, first: $0.first, last: $0.last) }
        let plan = try BufferPlan(requests)
        checkPlan(requests, plan, alignment: 64, limit: .max)
        for v in [0, 1, 2, 4, 5, 6] { XCTAssertNotEqual(plan.places[v].offset, plan.places[3].offset, "value \(v) shares the constant's bytes") }
    }
}
