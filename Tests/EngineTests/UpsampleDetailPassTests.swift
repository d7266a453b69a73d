import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// The upsample-detail pass and the `.upsampleDetail` operation it emits: the reference
/// backend on the original graph, the reference backend on the fused graph and oneDNN (fused)
/// agree on seeded inputs, on a synthetic tail and on the built-in upscaler. Stated
/// tolerances, max |Δ| in [0, 1] units: the reference fused and unfused compute the same sums
/// (≤ 1e-6; measured 0); oneDNN (its one-pass kernel, and on the built-in model its blocked
/// convolutions, which sum in another order) against the reference ≤ 1e-5 (measured ~1e-6).
final class UpsampleDetailPassTests: XCTestCase {
    static let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Models").path

    var rng = OpParityTests.SplitMix(state: 7)
    let fast = try! DNNLBackend()

    static func maxDiff(_ a: Tensor, _ b: Tensor) -> Float {
        precondition(a.shape == b.shape)
        return zip(a.data, b.data).map { abs($0 - $1) }.max() ?? 0
    }

    static func fusedCount(_ g: Graph) -> Int {
        g.nodes.filter { if case .upsampleDetail = $0.op { return true } else { return false } }.count
    }

    /// conv → pixel shuffle ×r and input → resize ×r, added.
    func tail(_ mode: ResizeMode, detailChannels: Int, order: ShuffleOrder, swapped: Bool = false, factor r: Int = 2) -> Graph {
        let w = rng.array(detailChannels * 3 * 9).map { $0 * 0.3 }
        let conv = ConvolutionParameters(outChannels: detailChannels, inChannels: 3, kernelH: 3, kernelW: 3, padTop: 1, padLeft: 1,
                                         padBottom: 1, padRight: 1, weights: w, bias: rng.array(detailChannels), activation: .leakyRelu(slope: 0.1))
        return Graph(valueNames: ["in", "detail", "shuffled", "base", "out"], nodes: [
            Node(name: "conv", op: .convolution(conv), inputs: [0], output: 1),
            Node(name: "shuffle", op: .pixelShuffle(factor: r, order: order), inputs: [1], output: 2),
            Node(name: "resize", op: .resize(mode, scaleH: Float(r), scaleW: Float(r), outH: 0, outW: 0, alignCorners: false), inputs: [0], output: 3),
            Node(name: "add", op: .binary(.add, coefficients: nil), inputs: swapped ? [3, 2] : [2, 3], output: 4),
        ], input: 0, output: 4, source: "test:tail")
    }

    /// Factors 2, 3 and 4 (realesr-animevideov3 ends ×4), every mode, a detail per channel and
    /// one shared, both shuffle orders, the add's operands either way. oneDNN fuses the bilinear
    /// and bicubic ×2 tails (`UpsampleDetail.run`) and the nearest ones at every factor
    /// (`UpsampleDetail.runNearest`); the rest stay three operations there.
    func testSyntheticTailThreeWays() throws {
        let input = Shape(c: 3, h: 9, w: 13)
        var worst: (fused: Float, onednn: Float) = (0, 0)
        for r in 2...4 {
        for mode: ResizeMode in [.bilinear, .bicubic, .nearest] {
            for detailChannels in [r * r, 3 * r * r] {
                for order: ShuffleOrder in [.crd, .dcr] {
                    for swapped in [false, true] {
                        let graph = tail(mode, detailChannels: detailChannels, order: order, swapped: swapped, factor: r)
                        let what = "×\(r) \(mode) \(detailChannels) \(order) swapped \(swapped)"
                        let fused = try graph.fusingUpsampleDetailTails(input: input)
                        XCTAssertEqual(fused.nodes.map(\.op.kindName),
                                       ["convolution", "upsample detail \(mode.rawValue)\(r == 2 ? "" : " ×\(r)")"], what)
                        XCTAssertEqual(fused.nodes[1].inputs, [0, 1], "reads [base, detail]")
                        let forDNNL = try graph.fusingUpsampleDetailTails(input: input, where: fast.supports)
                        XCTAssertEqual(Self.fusedCount(forDNNL), mode == .nearest || r == 2 ? 1 : 0, what)

                        let x = Tensor(shape: input, data: rng.array(input.count))
                        let original = try ReferenceBackend(runsPasses: false).prepare(graph, input: input).run(x)
                        let referenceFused = try ReferenceBackend(runsPasses: false).prepare(fused, input: input).run(x)
                        let onednn = try fast.prepare(graph, input: input).run(x)
                        XCTAssertEqual(original.shape, Shape(c: 3, h: 9 * r, w: 13 * r))
                        let d1 = Self.maxDiff(referenceFused, original), d2 = Self.maxDiff(onednn, original)
                        XCTAssertLessThanOrEqual(d1, 1e-6, "reference fused vs unfused, \(what)")
                        XCTAssertLessThanOrEqual(d2, 1e-5, "oneDNN vs reference, \(what)")
                        worst = (max(worst.fused, d1), max(worst.onednn, d2))
                    }
                }
            }
        }
        }
        print(String(format: "upsample-detail synthetic tail, max |Δ|: reference fused vs unfused %.2e, onednn vs reference %.2e",
                     worst.fused, worst.onednn))
    }

    func testBuiltinUpscalerThreeWays() throws {
        let graph = try NCNNImporter.load(paramPath: "\(Self.models)/vivify-fast-2x.param", inputName: "in0", outputName: "out0")
        let input = Shape(c: 3, h: 37, w: 52)
        let fused = try graph.fusingUpsampleDetailTails(input: input)
        XCTAssertEqual(Self.fusedCount(graph), 0)
        XCTAssertEqual(Self.fusedCount(fused), 1, "the bicubic + pixel-shuffle tail becomes one operation")
        XCTAssertEqual(Self.fusedCount(try graph.fusingUpsampleDetailTails(input: input, where: fast.supports)), 1, "for oneDNN too")
        XCTAssertEqual(fused.nodes.count, graph.nodes.count - 2)
        XCTAssertEqual(fused.receptiveRadius(), graph.receptiveRadius(), "fusing keeps the tile border")
        let x = Tensor(shape: input, data: rng.array(input.count).map { $0 * 0.5 + 0.5 })
        let original = try ReferenceBackend(runsPasses: false).prepare(graph, input: input).run(x)
        let referenceFused = try ReferenceBackend(runsPasses: false).prepare(fused, input: input).run(x)
        let referenceDefault = try ReferenceBackend().prepare(graph, input: input).run(x)
        let onednn = try fast.prepare(graph, input: input).run(x)
        XCTAssertEqual(original.shape, Shape(c: 3, h: 74, w: 104))
        let d1 = Self.maxDiff(referenceFused, original), d2 = Self.maxDiff(onednn, original)
        XCTAssertLessThanOrEqual(d1, 1e-6, "reference fused vs unfused")
        XCTAssertEqual(referenceDefault, referenceFused, "the reference runs the pass by default")
        XCTAssertLessThanOrEqual(d2, 1e-5, "oneDNN (fused) vs reference (unfused)")
        print(String(format: "upsample-detail vivify-fast-2x, max |Δ|: reference fused vs unfused %.2e, onednn vs reference %.2e", d1, d2))
    }

    func testBackendsAnswerWhichOpsTheySupport() throws {
        let reference = ReferenceBackend()
        let ops: [Engine.Operation] = [
            .activation(.relu), .pixelShuffle(factor: 2, order: .crd), .softmaxChannels, .concatChannels,
            .resize(.nearest, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false),
            .upsampleDetail(.bilinear, order: .crd), .upsampleDetail(.bicubic, order: .dcr), .upsampleDetail(.nearest, order: .crd),
            .upsampleDetail(.nearest, order: .dcr, factor: 4), .upsampleDetail(.bilinear, order: .crd, factor: 4),
        ]
        for op in ops { XCTAssertTrue(reference.supports(op), op.kindName) }
        for op in ops.dropLast() { XCTAssertTrue(fast.supports(op), op.kindName) }
        XCTAssertFalse(fast.supports(.upsampleDetail(.bilinear, order: .crd, factor: 4)))

        // A graph that already holds an operation oneDNN lacks: a clear error, naming the layer,
        // the file, the backend and the way out; the reference runs it.
        let input = Shape(c: 3, h: 6, w: 7)
        let graph = tail(.bilinear, detailChannels: 48, order: .crd, factor: 4)
        let fused = try graph.fusingUpsampleDetailTails(input: input)
        XCTAssertThrowsError(try fast.prepare(fused, input: input)) { error in
            let m = "\(error)"
            XCTAssertTrue(m.contains("'add'") && m.contains("upsample detail bilinear ×4") && m.contains("test:tail")
                          && m.contains("onednn backend cannot run") && m.contains("--backend reference"), m)
        }
        let x = Tensor(shape: input, data: rng.array(input.count))
        XCTAssertEqual(try reference.prepare(fused, input: input).run(x), try ReferenceBackend(runsPasses: false).prepare(graph, input: input).run(x))
    }

    func testPassLeavesOtherShapesAlone() throws {
        let input = Shape(c: 3, h: 8, w: 8)
        // The shuffled detail also read elsewhere: not fused (its value must exist).
        var g = tail(.bilinear, detailChannels: 12, order: .crd)
        g.valueNames.append("extra")
        g.nodes.append(Node(name: "extra", op: .binary(.add, coefficients: nil), inputs: [4, 2], output: 5))
        g.output = 5
        XCTAssertEqual(Self.fusedCount(try g.fusingUpsampleDetailTails(input: input)), 0)
        // Align-corners resize, weighted add, ×3 resize: not the operation's arithmetic.
        for (i, op) in [(2, Engine.Operation.resize(.bilinear, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: true)),
                        (3, .binary(.add, coefficients: [1, 2]))] {
            var h = tail(.bilinear, detailChannels: 12, order: .crd)
            h.nodes[i].op = op
            XCTAssertEqual(Self.fusedCount(try h.fusingUpsampleDetailTails(input: input)), 0, op.kindName)
        }
        // A detail that does not fit the base: a shape error naming the layer.
        let bad = Graph(valueNames: ["in", "d", "out"], nodes: [
            Node(name: "d", op: .convolution(ConvolutionParameters(outChannels: 8, inChannels: 3, kernelH: 1, kernelW: 1, weights: rng.array(24))), inputs: [0], output: 1),
            Node(name: "tail", op: .upsampleDetail(.bicubic, order: .crd), inputs: [0, 1], output: 2),
        ], input: 0, output: 2, source: "test:bad")
        XCTAssertThrowsError(try ReferenceBackend().prepare(bad, input: input)) { error in
            XCTAssertTrue("\(error)".contains("'tail'") && "\(error)".contains("4 or 12 channels"), "\(error)")
        }
    }
}
