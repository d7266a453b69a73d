@testable import Engine
@testable import EngineVulkan
import Foundation
import XCTest

/// Layer times from the device's timestamps (`VulkanBackend.profiling`), and the graph passes
/// the backend runs before it records (batch norms folded, activations fused, upscaler tails
/// as one pass), under the validation layer.
final class VulkanProfileTests: ValidatedVulkanTestCase {
    private var state: UInt64 = 11

    private func values(_ n: Int) -> [Float] {
        (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24) * 2 - 1
        }
    }

    private func conv(_ oc: Int, _ ic: Int, k: Int) -> Engine.Operation {
        .convolution(ConvolutionParameters(outChannels: oc, inChannels: ic, kernelH: k, kernelW: k, padTop: k / 2, padLeft: k / 2,
                                           padBottom: k / 2, padRight: k / 2, weights: values(oc * ic * k * k).map { $0 * 0.2 },
                                           bias: values(oc)))
    }

    /// in (32 channels) → 3×3 convolution 32→32 → batch norm → PReLU → add with the input →
    /// 1×1 convolution 32→3 → ReLU → a host step (an external layer).
    private func graph() -> Graph {
        let nodes = [
            Node(name: "wide", op: conv(32, 32, k: 3), inputs: [0], output: 1),
            Node(name: "bn", op: .channelAffine(scale: values(32).map { 1 + 0.3 * $0 }, bias: values(32)), inputs: [1], output: 2),
            Node(name: "prelu", op: .activation(.prelu(slopes: values(32).map { 0.2 * $0 })), inputs: [2], output: 3),
            Node(name: "skip", op: .binary(.add, coefficients: nil), inputs: [3, 0], output: 4),
            Node(name: "narrow", op: conv(3, 32, k: 1), inputs: [4], output: 5),
            Node(name: "relu", op: .activation(.relu), inputs: [5], output: 6),
            Node(name: "mirror", op: .external(ExternalLayer(MirrorKernel())), inputs: [6], output: 7),
        ]
        return Graph(valueNames: (0...7).map { "v\($0)" }, nodes: nodes, input: 0, output: 7, source: "profile test")
    }

    private func profiledBackend() throws -> VulkanBackend {
        let b = try VulkanTesting.backend()
        try XCTSkipUnless(b.canProfile, "\(b.deviceName): its compute queue writes no timestamps")
        b.profiling = true
        return b
    }

    /// Each layer of the passes' graph gets a time: the dispatches of the device layers are the
    /// recorded shaders in order, the external layer is a host step, the expensive convolution
    /// takes longer than the add over the same values; profiling changes no output.
    func testLayerTimesFollowTheRecordedDispatches() throws {
        let g = graph(), s = Shape(c: 32, h: 48, w: 40)
        let x = Tensor(shape: s, data: values(s.count))
        let plain = try VulkanTesting.backend().prepare(g, input: s)
        let want = try plain.run(x)
        XCTAssertEqual((plain as? VulkanProfiledGraph)?.layerTimes.count, 0, "a graph prepared without profiling has times")

        let prepared = try profiledBackend().prepare(g, input: s)
        let profiled = try XCTUnwrap(prepared as? VulkanPrepared)
        XCTAssertEqual(profiled.layerTimes.count, 0, "times before the first run")
        var fastest = [Double](repeating: .infinity, count: 4)
        for run in 0..<5 {
            let got = try prepared.run(x)
            XCTAssertEqual(got.data, want.data, "run \(run): profiling changed the output")
            let times = profiled.layerTimes
            // bn and prelu are folded and fused into "wide", relu into "narrow".
            XCTAssertEqual(times.map(\.layer), ["wide", "skip", "narrow", "mirror"], "run \(run)")
            XCTAssertEqual(times.filter { !$0.onHost }.flatMap { $0.dispatches.map(\.shader) }, profiled.shaders, "run \(run)")
            for t in times {
                XCTAssertTrue(t.milliseconds.isFinite && t.milliseconds > 0, "run \(run), \(t.layer): \(t.milliseconds) ms")
                XCTAssertEqual(t.milliseconds, t.onHost ? t.milliseconds : t.dispatches.reduce(0) { $0 + $1.milliseconds }, accuracy: 1e-9)
            }
            let mirror = try XCTUnwrap(times.last)
            XCTAssertTrue(mirror.onHost && mirror.dispatches.isEmpty && mirror.operation == "external: mirror")
            for (i, t) in times.enumerated() { fastest[i] = min(fastest[i], t.milliseconds) }
        }
        // 11.8M multiply-adds against 61k additions over the same 61k values (each layer's
        // fastest of five runs: lavapipe's timestamps are the host's clock, which other
        // processes on the machine can stretch for any one dispatch).
        XCTAssertGreaterThan(fastest[0], fastest[1], "\(fastest)")
        let summary = VulkanLayerTime.summary(profiled.layerTimes, top: 2)
        XCTAssertEqual(summary.count, 4, summary.joined(separator: "\n"))
        let slowest = try XCTUnwrap(profiled.layerTimes.max { $0.milliseconds < $1.milliseconds })
        let o = try XCTUnwrap(slowest.output)
        XCTAssertTrue(summary[1].contains(" \(slowest.layer) (\(slowest.operation) → \(o.c)×\(o.h)×\(o.w): "), summary[1])
        XCTAssertEqual(profiled.layerTimes.map { $0.output?.c }, [32, 32, 3, 3])
        XCTAssertTrue(summary[3].hasPrefix("  per shader: "), summary[3])
        for shader in Set(profiled.shaders) { XCTAssertTrue(summary[3].contains(shader + " "), "\(shader) missing in \(summary[3])") }
    }

    /// A graph with no layer on the device writes no timestamp: its one layer is timed by the
    /// host's clock.
    func testAGraphOfHostStepsAloneIsTimedByTheClock() throws {
        let g = Graph(valueNames: ["in", "out"], nodes: [Node(name: "mirror", op: .external(ExternalLayer(MirrorKernel())), inputs: [0], output: 1)],
                      input: 0, output: 1, source: "host only")
        let s = Shape(c: 3, h: 5, w: 7)
        let prepared = try XCTUnwrap(try profiledBackend().prepare(g, input: s) as? VulkanPrepared)
        let x = Tensor(shape: s, data: values(s.count))
        XCTAssertEqual(try prepared.run(x).data, try ReferenceBackend(runsPasses: false).prepare(g, input: s).run(x).data)
        XCTAssertEqual(prepared.layerTimes.map(\.layer), ["mirror"])
        XCTAssertTrue(prepared.layerTimes[0].onHost && prepared.layerTimes[0].milliseconds > 0)
    }

    /// In the staged plan (a discrete GPU's) the input's and the output's transfers, with
    /// fp16's conversions on the device, are timed as "(input)" and "(output)", not as the
    /// first and last layers; a crop read in place has no dispatch and no host time.
    func testTransfersAndCropViewsAreTimedAsThemselves() throws {
        _ = try profiledBackend()
        let nodes = [
            Node(name: "wide", op: conv(8, 4, k: 3), inputs: [0], output: 1),
            Node(name: "crop", op: .crop(top: 1, left: 1, bottom: 1, right: 1), inputs: [1], output: 2),
            Node(name: "narrow", op: .convolution(ConvolutionParameters(outChannels: 8, inChannels: 4, kernelH: 3, kernelW: 3,
                                                                         weights: values(8 * 4 * 9), bias: values(8))), inputs: [0], output: 3),
            Node(name: "add", op: .binary(.add, coefficients: nil), inputs: [3, 2], output: 4),
        ]
        let g = Graph(valueNames: (0...4).map { "v\($0)" }, nodes: nodes, input: 0, output: 4, source: "transfers")
        let s = Shape(c: 4, h: 9, w: 11)
        for precision in [VulkanPrecision.fp32, .fp16] {
            let staged = try VulkanBackend(memoryPlan: .staged, precision: precision)
            staged.profiling = true
            let prepared = try XCTUnwrap(try staged.prepare(g, input: s) as? VulkanPrepared)
            _ = try prepared.run(Tensor(shape: s, data: values(s.count)))
            let times = prepared.layerTimes
            XCTAssertEqual(times.map(\.layer), ["(input)", "wide", "crop", "narrow", "add", "(output)"], "\(precision)")
            let transfer = precision == .fp16 ? ["to_storage", "from_storage"] : ["copy", "copy"]
            XCTAssertEqual(times.first?.dispatches.map(\.shader), [transfer[0]], "\(precision)")
            XCTAssertEqual(times.last?.dispatches.map(\.shader), [transfer[1]], "\(precision)")
            XCTAssertEqual(times[4].dispatches.map(\.shader), ["binary"], "\(precision): the add alone, not the output's transfer")
            XCTAssertTrue(times[2].dispatches.isEmpty && !times[2].onHost && times[2].milliseconds == 0, "\(precision): \(times[2])")
            XCTAssertEqual(times.first?.output, s)
            XCTAssertEqual(times.last?.output, prepared.outputShape)
        }
    }

    /// The passes change no result: the fused graph on the device against the reference on
    /// the graph as written (fp32 bar, relative to max(1, max |reference|)), with no activation
    /// or affine shader recorded.
    func testFoldedAndFusedGraphKeepsParity() throws {
        let g = graph(), s = Shape(c: 32, h: 13, w: 7)
        let prepared = try XCTUnwrap(try VulkanTesting.backend().prepare(g, input: s) as? VulkanPrepared)
        XCTAssertEqual(prepared.graph.nodes.map(\.name), ["wide", "skip", "narrow", "mirror"])
        XCTAssertFalse(prepared.shaders.contains("activation") || prepared.shaders.contains("affine"), "\(prepared.shaders)")
        let reference = try ReferenceBackend(runsPasses: false).prepare(g, input: s)
        let x = Tensor(shape: s, data: values(s.count))
        let want = try reference.run(x), got = try prepared.run(x)
        let scale = max(1, want.data.map(abs).max() ?? 0)
        let worst = zip(got.data, want.data).map { abs($0 - $1) }.max() ?? .infinity
        XCTAssertLessThanOrEqual(worst, 1e-4 * scale, "max difference \(worst)")
    }
}
