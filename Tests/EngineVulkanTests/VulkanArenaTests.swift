@testable import Engine
@testable import EngineVulkan
import Foundation
import ModelFormats
import XCTest

/// A prepared graph's values live in one arena per kind of memory, placed by lifetime over the
/// node order (`BufferPlan`): no two values alive at the same node share bytes, offsets are
/// aligned as descriptors need, blocks stay within what one descriptor binds (split where the
/// values outgrow it), far fewer bytes than a buffer per value, and the same results as the
/// reference run after run (synchronization validation, on in every test here, reports a
/// reused range written before its last reader is done).
final class VulkanArenaTests: ValidatedVulkanTestCase {
    private func seeded(_ n: Int, seed: UInt64) -> [Float] {
        var state = seed
        return (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    private func conv(_ oc: Int, _ ic: Int, k: Int, seed: UInt64) -> Engine.Operation {
        .convolution(ConvolutionParameters(outChannels: oc, inChannels: ic, kernelH: k, kernelW: k, padTop: k / 2, padLeft: k / 2,
                                           padBottom: k / 2, padRight: k / 2, weights: seeded(oc * ic * k * k, seed: seed).map { $0 * 0.4 },
                                           bias: seeded(oc, seed: seed + 1), activation: .leakyRelu(slope: 0.1)))
    }

    /// Ten 8-channel convolutions with two skip connections (values alive across many nodes)
    /// and a constant (alive at every node), from 3 channels back to 3.
    private func deepChain() -> Graph {
        var nodes = [Node(name: "c0", op: conv(8, 3, k: 3, seed: 1), inputs: [0], output: 1)]
        for i in 1..<10 { nodes.append(Node(name: "c\(i)", op: conv(8, 8, k: i % 2 == 0 ? 3 : 1, seed: UInt64(10 * i)), inputs: [i], output: i + 1)) }
        nodes.append(Node(name: "skip", op: .binary(.add, coefficients: nil), inputs: [10, 2], output: 11))
        nodes.append(Node(name: "k", op: .constant(Shape(c: 8, h: 1, w: 1), values: seeded(8, seed: 5)), inputs: [], output: 12))
        nodes.append(Node(name: "bias", op: .binary(.add, coefficients: nil), inputs: [11, 12], output: 13))
        nodes.append(Node(name: "out", op: conv(3, 8, k: 3, seed: 99), inputs: [13], output: 14))
        nodes.append(Node(name: "long", op: .binary(.add, coefficients: nil), inputs: [14, 0], output: 15))
        return Graph(valueNames: (0...15).map { "v\($0)" }, nodes: nodes, input: 0, output: 15, source: "deep chain")
    }

    /// Fails where two values alive at the same node share bytes of one block, where an offset
    /// is not aligned as the arena asks, or where a block is over `limit`.
    private func checkPlacement(_ p: VulkanPrepared, limit: Int, file: StaticString = #filePath, line: UInt = #line) {
        let lifetimes = p.graph.valueLifetimes()
        XCTAssertEqual(p.context.arenaAlignment % 64, 0, file: file, line: line)
        for block in p.arenas { XCTAssertLessThanOrEqual(Int(VulkanBuffer.bytes(block.count, block.storage)), limit, file: file, line: line) }
        for (i, a) in p.buffers.enumerated() {
            XCTAssertEqual(a.offset % p.context.arenaAlignment, 0, "value \(i)", file: file, line: line)
            XCTAssertLessThanOrEqual(a.offset + Int(a.bytes), Int(VulkanBuffer.bytes(a.block.count, a.block.storage)), "value \(i) past its block",
                                     file: file, line: line)
            XCTAssertTrue(p.arenas.contains { $0 === a.block }, "value \(i) outside the arenas", file: file, line: line)
            for (j, b) in p.buffers.enumerated() where j > i && a.block === b.block {
                let live = lifetimes[i].first <= lifetimes[j].last && lifetimes[j].first <= lifetimes[i].last
                let shared = a.offset < b.offset + Int(b.bytes) && b.offset < a.offset + Int(a.bytes)
                XCTAssertFalse(live && shared, "values \(i) and \(j), alive together, share bytes", file: file, line: line)
            }
        }
    }

    /// Runs `prepared` three times on new inputs against the reference (the recorded commands
    /// replayed: each run's first writes reuse ranges the last run read); returns the outputs.
    @discardableResult
    private func compare(_ prepared: PreparedGraph, _ graph: Graph, _ s: Shape, tolerance: Float, _ what: String,
                         file: StaticString = #filePath, line: UInt = #line) throws -> [[Float]] {
        let reference = try ReferenceBackend(runsPasses: false).prepare(graph, input: s)
        return try (0..<3).map { run in
            let x = Tensor(shape: s, data: seeded(s.count, seed: UInt64(100 + run)))
            let want = try reference.run(x), got = try prepared.run(x)
            let scale = max(1, want.data.map(abs).max() ?? 0)
            let worst = zip(got.data, want.data).map { abs($0 - $1) }.max() ?? .infinity
            XCTAssertLessThanOrEqual(worst, tolerance * scale, "\(what), run \(run)", file: file, line: line)
            return got.data
        }
    }

    func testValuesShareOneArenaByLifetime() throws {
        let graph = deepChain(), s = Shape(c: 3, h: 9, w: 7)
        for (plan, precision) in [(VulkanMemoryPlan.mapped, VulkanPrecision.fp32), (.staged, .fp32), (.mapped, .fp16)] {
            _ = try VulkanTesting.backend()
            let backend = try VulkanBackend(memoryPlan: plan, precision: precision)
            let p = try XCTUnwrap(try backend.prepare(graph, input: s) as? VulkanPrepared)
            let what = "\(plan) \(precision)"
            checkPlacement(p, limit: p.context.arenaBlockLimit)
            XCTAssertEqual(p.arenas.count, 1, "\(what): one block holds them all")
            XCTAssertEqual(p.arenas[0].placement, plan == .mapped ? .shared : .device, what)
            // At most four 8-channel values are alive at once (two skips, the constant, a
            // step's input and output): well under half of a buffer each.
            let (planned, separate) = p.activationBytes
            XCTAssertLessThan(planned * 2, separate, "\(what): \(planned) bytes planned against \(separate)")
            try compare(p, graph, s, tolerance: precision == .fp16 ? 1e-2 : 1e-4, what)
        }
    }

    /// Blocks smaller than the values together (a device binding less than they need): the
    /// arena splits, each block within the limit, and gives exactly the one-block results;
    /// a value larger than a block is refused with what to do.
    func testSmallBlocksSplitTheArena() throws {
        let graph = deepChain(), s = Shape(c: 3, h: 9, w: 7)
        let one = try VulkanTesting.backend().prepare(graph, input: s)
        let x = Tensor(shape: s, data: seeded(s.count, seed: 3))
        let want = try one.run(x).data
        // 8 × 9 × 7 floats are 2,016 bytes: one such value to a 2,048-byte block, and three
        // are alive at the skip (with the input and the constant beside them): four blocks.
        for plan in [VulkanMemoryPlan.mapped, .staged] {
            let small = try VulkanBackend(memoryPlan: plan, arenaBlockLimit: 2048)
            let p = try XCTUnwrap(try small.prepare(graph, input: s) as? VulkanPrepared)
            checkPlacement(p, limit: 2048)
            XCTAssertGreaterThanOrEqual(p.arenas.count, 4, "\(plan)")
            for _ in 0..<2 { XCTAssertEqual(try p.run(x).data, want, "\(plan): split arena against one block") }
        }
        let tiny = try VulkanBackend(memoryPlan: .mapped, arenaBlockLimit: 1024)
        XCTAssertThrowsError(try tiny.prepare(graph, input: s)) { error in
            XCTAssertEqual((error as? EngineError)?.kind, .invalidSetting)
            XCTAssertTrue("\(error)".contains("deep chain") && "\(error)".contains("--tile"), "\(error)")
        }
    }

    /// Host steps (external layers) keep their values in a host-visible arena of their own in
    /// the staged plan; the rest stays in the device-local one.
    func testHostStepValuesGetAHostVisibleArena() throws {
        _ = try VulkanTesting.backend()
        let staged = try VulkanBackend(memoryPlan: .staged)
        let external = Engine.Operation.external(ExternalLayer(MirrorKernel()))
        let graph = Graph(valueNames: (0...5).map { "v\($0)" }, nodes: [
            Node(name: "a", op: conv(8, 3, k: 3, seed: 1), inputs: [0], output: 1),
            Node(name: "b", op: conv(8, 8, k: 1, seed: 2), inputs: [1], output: 2),
            Node(name: "mirror", op: external, inputs: [2], output: 3),
            Node(name: "c", op: conv(8, 8, k: 3, seed: 3), inputs: [3], output: 4),
            Node(name: "d", op: conv(3, 8, k: 1, seed: 4), inputs: [4], output: 5),
        ], input: 0, output: 5, source: "host step")
        let s = Shape(c: 3, h: 7, w: 5)
        let p = try XCTUnwrap(try staged.prepare(graph, input: s) as? VulkanPrepared)
        checkPlacement(p, limit: p.context.arenaBlockLimit)
        XCTAssertEqual(p.buffers.map(\.placement), [.device, .device, .staging, .staging, .device, .device])
        XCTAssertEqual(Set(p.arenas.map(\.placement)), [.device, .staging])
        try compare(p, graph, s, tolerance: 1e-4, "staged with a host step")
    }

    /// Real upscalers: a fraction of a buffer per value. VIVIFY_ARENA_FIGURES=1 prints the
    /// bytes for realesr-animevideov3-x4 and realcugan-2x at a 640×360 tile and at 400-pixel
    /// tiles (their borders added, as the tiler feeds them; prepared, not run), or that a tile
    /// is refused where one value is more than a descriptor binds on this device.
    func testRealModelsNeedAFractionOfABufferEach() throws {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/models/ncnn").standardized.path
        let figures = ProcessInfo.processInfo.environment["VIVIFY_ARENA_FIGURES"] == "1"
        _ = try VulkanTesting.backend()
        for param in ["realesr-animevideov3/realesr-animevideov3-x4.param", "realcugan-se/up2x-no-denoise.param"] {
            let path = "\(models)/\(param)"
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is not here: ../shared/models is needed") }
            let graph = try NCNNImporter.load(paramPath: path)
            let border = try TilingSpec.inferred(for: graph).padding
            let tiles = figures ? [(36, 40), (360, 640), (400, 400)] : [(36, 40)]
            for precision in figures ? [VulkanPrecision.fp32, .fp16] : [.fp32] {
                let backend = try VulkanTesting.backend(precision: precision)
                for (h, w) in tiles {
                    let s = Shape(c: 3, h: h + 2 * border, w: w + 2 * border)
                    let prepared: PreparedGraph
                    do { prepared = try backend.prepare(graph, input: s) } catch let e as EngineError where figures && e.kind == .invalidSetting {
                        // A value over what one descriptor binds on this device (128 MiB on lavapipe).
                        print("arena \(param) \(precision.rawValue) tile \(w)x\(h): refused: \(e.message)")
                        continue
                    }
                    let p = try XCTUnwrap(prepared as? VulkanPrepared)
                    checkPlacement(p, limit: p.context.arenaBlockLimit)
                    let (planned, separate) = p.activationBytes
                    XCTAssertLessThan(planned * 3, separate, "\(param) at \(s)")
                    if figures {
                        print(String(format: "arena %@ %@ tile %dx%d (input %dx%d): %.1f MiB in %d block(s) vs %.1f MiB a buffer per value (%.1fx)",
                                     param, precision.rawValue, w, h, s.w, s.h, Double(planned) / 1048576, p.arenas.count,
                                     Double(separate) / 1048576, Double(separate) / Double(planned)))
                    }
                }
            }
        }
    }
}
