import Engine
import EngineDNNL
import Foundation
import XCTest

/// Instance normalisation in tiles: statistics passes over the tiles give every norm the
/// whole picture's mean and variance, so tiles match the whole frame (`TiledRunner`,
/// `StatisticsTiling`); a picture that fits one tile runs whole, exactly as before.
final class InstanceNormTilingTests: XCTestCase {
    /// Seeded values in [−amplitude, amplitude].
    static func values(_ n: Int, seed: UInt64, amplitude: Float = 0.5) -> [Float] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (Float(state >> 40) / Float(1 << 24) * 2 - 1) * amplitude
        }
    }

    /// A scale-1 graph with two stacked instance norms after a stride-2 valid convolution:
    /// reflect pad 3 → conv 3→8 3×3 stride 2 (valid) → IN → leaky ReLU → IN → conv 8→8 3×3
    /// (same) → ReLU → conv 8→12 3×3 (valid) → crop-free pixel shuffle ×2 → 3 channels at
    /// the input's size (a multiple of 4).
    static func stackedNorms() -> Graph {
        func conv(_ i: Int, _ o: Int, stride: Int = 1, pad: Int, seed: UInt64) -> Engine.Operation {
            .convolution(ConvolutionParameters(outChannels: o, inChannels: i, kernelH: 3, kernelW: 3, strideH: stride, strideW: stride,
                                               padTop: pad, padLeft: pad, padBottom: pad, padRight: pad,
                                               weights: values(o * i * 9, seed: seed), bias: values(o, seed: seed + 100, amplitude: 0.2)))
        }
        let gamma = values(8, seed: 7).map { 1 + $0 }, beta = values(8, seed: 8)
        let gamma2 = values(8, seed: 9).map { 1 + $0 }, beta2 = values(8, seed: 10)
        let ops: [Engine.Operation] = [
            .pad(top: 3, left: 3, bottom: 3, right: 3, mode: .reflect),
            conv(3, 8, stride: 2, pad: 0, seed: 1),
            .instanceNorm(scale: gamma, bias: beta, epsilon: 1e-5),
            .activation(.leakyRelu(slope: 0.1)),
            .instanceNorm(scale: gamma2, bias: beta2, epsilon: 1e-5),
            conv(8, 8, pad: 1, seed: 2),
            .activation(.relu),
            conv(8, 12, pad: 0, seed: 3),
            .pixelShuffle(factor: 2, order: .crd),
        ]
        let nodes = ops.enumerated().map { Node(name: "n\($0.offset)", op: $0.element, inputs: [$0.offset], output: $0.offset + 1) }
        return Graph(valueNames: (0...ops.count).map { "v\($0)" }, nodes: nodes, input: 0, output: ops.count, source: "stacked-norms")
    }

    static func run(_ runner: TiledRunner, _ input: [Float], channels: Int = 3, height: Int, width: Int) throws -> [Float] {
        let s = runner.spec.scale
        var out = [Float](repeating: .nan, count: channels * height * s * width * s)
        try input.withUnsafeBufferPointer { i in
            try out.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: channels, height: height, width: width, output: $0) }
        }
        return out
    }

    static func maxDiff(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).map { abs($0 - $1) }.max() ?? 0
    }

    /// The spec the resolver infers: one multiple of 4, no border (the one-tile path).
    let spec = TilingSpec(scale: 1, padding: 0, border: .reflect, multiple: 4)

    /// Tiles of odd pictures (several per axis, a flush last one) against the whole frame on
    /// the reference backend; and the statistics really are the picture's: tiles normalised
    /// by their own statistics (each tile run as a picture of its own) land far away.
    func testStackedNormsAfterStridedConvolutionTileLikeTheWholeFrame() throws {
        let graph = Self.stackedNorms()
        XCTAssertTrue(graph.needsWholeFrame)
        let backend = ReferenceBackend()
        var report: [String] = []
        for (h, w, tile) in [(53, 47, 12), (61, 90, 20), (29, 33, 8)] {
            let input = Self.values(3 * h * w, seed: UInt64(h * w), amplitude: 1).map { $0 * 0.5 + 0.5 }
            let tiled = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: tile)
            let whole = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 4096)
            XCTAssertEqual(tiled.passes(height: h, width: w), 3, "two norms: two statistics passes and the output")
            XCTAssertEqual(whole.passes(height: h, width: w), 1)
            let a = try Self.run(tiled, input, height: h, width: w), b = try Self.run(whole, input, height: h, width: w)
            XCTAssertFalse(a.contains { $0.isNaN }, "every output pixel written")
            let d = Self.maxDiff(a, b)
            XCTAssertLessThanOrEqual(d, 1e-5, "\(w)x\(h) in \(tile)-pixel tiles")
            report.append(String(format: "%dx%d/%d %.1e", w, h, tile, d))
        }
        // Control: the same tiles normalised each by its own statistics differ by far more.
        let (h, w) = (53, 47)
        let input = Self.values(3 * h * w, seed: UInt64(h * w), amplitude: 1).map { $0 * 0.5 + 0.5 }
        let whole = try Self.run(try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 4096), input, height: h, width: w)
        let ownStatistics = try TiledRunner(graph: graph, spec: TilingSpec(scale: 1, padding: 8, border: .reflect, multiple: 4),
                                            backend: backend, tileSize: 4096)
        var patch = [Float](repeating: 0, count: 3 * 16 * 16)
        for c in 0..<3 { for y in 0..<16 { for x in 0..<16 { patch[(c * 16 + y) * 16 + x] = input[(c * h + 20 + y) * w + 20 + x] } } }
        let local = try Self.run(ownStatistics, patch, height: 16, width: 16)
        var far: Float = 0
        for c in 0..<3 { for y in 0..<16 { for x in 0..<16 { far = max(far, abs(local[(c * 16 + y) * 16 + x] - whole[(c * h + 20 + y) * w + 20 + x])) } } }
        XCTAssertGreaterThan(far, 0.05, "a tile's own statistics are not the picture's")
        print("stacked norms tiled vs whole, reference, max |Δ|: " + report.joined(separator: ", ") + String(format: "; own-statistics tile %.2f", far))
    }

    /// A picture that fits one tile takes the one-tile path: bit for bit the whole-frame run
    /// of the prepared graph, in one pass.
    func testOneTilePictureIsTheWholeFrameBitForBit() throws {
        let graph = Self.stackedNorms()
        for backend in [ReferenceBackend(), try DNNLBackend()] as [InferenceBackend] {
            let (h, w) = (40, 36)
            let input = Self.values(3 * h * w, seed: 3, amplitude: 1)
            let runner = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: 40)
            XCTAssertEqual(runner.passes(height: h, width: w), 1)
            let shape = Shape(c: 3, h: h, w: w)
            let whole = try backend.prepare(graph, input: shape).run(Tensor(shape: shape, data: input)).data
            XCTAssertEqual(try Self.run(runner, input, height: h, width: w), whole, backend.name)
        }
    }

    /// The statistics rewrite: a frozen norm is the per-channel affine of the statistics it
    /// was given, and a truncated graph ends at the value asked for with only what it needs.
    func testFrozenNormsAndTruncation() throws {
        let graph = Self.stackedNorms()
        XCTAssertEqual(graph.instanceNormIndices, [2, 4])
        let frozen = graph.freezingInstanceNorms([2: ChannelStatistics(mean: [Double](repeating: 2, count: 8), variance: [Double](repeating: 4, count: 8))])
        guard case .channelAffine(let k, let b) = frozen.nodes[2].op, case .instanceNorm(let gamma, let beta, let eps) = graph.nodes[2].op else {
            return XCTFail("node 2 should become a channel affine")
        }
        for c in 0..<8 {
            let kc = Double(gamma[c]) / (4 + Double(eps)).squareRoot()
            XCTAssertEqual(Double(k[c]), kc, accuracy: 1e-6)
            XCTAssertEqual(Double(b[c]), Double(beta[c]) - 2 * kc, accuracy: 1e-6)
        }
        if case .instanceNorm = frozen.nodes[4].op {} else { XCTFail("node 4 has no statistics given and stays a norm") }
        let cut = graph.truncated(at: 4)
        XCTAssertEqual(cut.nodes.map(\.name), ["n0", "n1", "n2", "n3"])
        XCTAssertEqual(cut.output, 4)
        XCTAssertEqual(try cut.inferShapes(input: Shape(c: 3, h: 20, w: 20))[4], Shape(c: 8, h: 12, w: 12))
    }

    /// Where values lie: a stride-2 valid convolution after a 3-row pad, a pixel shuffle back;
    /// and graphs no border makes exact have no placement.
    func testPlacements() throws {
        let graph = Self.stackedNorms()
        let placed = try XCTUnwrap(graph.placements())
        // After pad 3: position j is input j − 3; the valid stride-2 conv centres output j on
        // padded 2j + 1, input 2j − 2: j = x/2 + 1.
        XCTAssertEqual(placed[2]?.rows, AxisPlacement(numerator: 1, denominator: 2, offset: 1))
        // The same conv keeps it, the valid one takes 1 (offset 0), the shuffle ×2 spreads
        // each position over two outputs centred half a pixel on: output j is input j − ½.
        XCTAssertEqual(placed[9]?.rows, AxisPlacement(numerator: 1, denominator: 1, offset: 0.5))
        var global = graph
        global.nodes[3].op = .globalAveragePool
        XCTAssertNil(global.placements(), "global pooling sees everything")
        var sized = graph
        sized.nodes[8] = Node(name: "n8", op: .resize(.nearest, scaleH: 0, scaleW: 0, outH: 64, outW: 64, alignCorners: false), inputs: [8], output: 9)
        XCTAssertNil(sized.placements(), "a resize to a fixed size depends on the picture's size")
    }
}
