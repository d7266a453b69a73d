@testable import Engine
@testable import EngineVulkan
import Foundation
import ModelFormats
import XCTest

/// The Vulkan backend against the reference backend on the same seeded inputs, on whatever
/// Vulkan device this machine has (lavapipe on the CPU in CI): every shader alone, shaders and
/// host steps interleaved, and real models. Tolerance: max |a − b| ≤ 1e-4 · max(1, max |b|).
final class VulkanParityTests: XCTestCase {
    struct SplitMix {
        var state: UInt64
        mutating func next() -> Float {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return Float(z >> 40) / Float(1 << 24) * 2 - 1
        }
        mutating func array(_ n: Int) -> [Float] { (0..<n).map { _ in next() } }
    }
    var rng = SplitMix(state: 7)

    override class func setUp() {
        super.setUp()
        VulkanTesting.enableValidation()
    }

    /// Every test under the Khronos validation layer (synchronization validation on): silent.
    override func tearDown() {
        VulkanTesting.assertSilent()
        super.tearDown()
    }

    /// The backend; the tests need a Vulkan device (scripts/install-deps installs lavapipe):
    /// without one they skip, or fail under VIVIFY_REQUIRE_VULKAN=1.
    func backend() throws -> VulkanBackend { try VulkanTesting.backend() }

    /// A chain: the input, then `ops` in order, each reading the previous value (and, for
    /// two-input operations, the value `second` steps back).
    func chain(_ ops: [(Engine.Operation, [Int])]) -> Graph {
        var nodes: [Node] = []
        for (i, (op, back)) in ops.enumerated() {
            let inputs = back.map { i + 1 - $0 }
            nodes.append(Node(name: "n\(i)", op: op, inputs: inputs, output: i + 1))
        }
        return Graph(valueNames: ["in"] + ops.indices.map { "v\($0)" }, nodes: nodes, input: 0, output: ops.count, source: "test")
    }

    func compare(_ graph: Graph, _ input: Shape, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws {
        let x = Tensor(shape: input, data: rng.array(input.count))
        let want = try ReferenceBackend(runsPasses: false).prepare(graph, input: input).run(x)
        let got = try backend().prepare(graph, input: input).run(x)
        XCTAssertEqual(got.shape, want.shape, what, file: file, line: line)
        let scale = max(1, want.data.map(abs).max() ?? 0)
        let worst = zip(got.data, want.data).map { abs($0 - $1) }.max() ?? 0
        XCTAssertLessThanOrEqual(worst, 1e-4 * scale, "\(what): max difference \(worst)", file: file, line: line)
        XCTAssertFalse(got.data.contains { !$0.isFinite }, what, file: file, line: line)
    }

    func conv(_ oc: Int, _ ic: Int, k: Int, kw: Int? = nil, stride: Int = 1, dilation: Int = 1, pads: (Int, Int, Int, Int) = (0, 0, 0, 0),
              groups: Int = 1, bias: Bool = true, activation: Activation = .identity) -> Engine.Operation {
        let kw = kw ?? k
        return .convolution(ConvolutionParameters(outChannels: oc, inChannels: ic, kernelH: k, kernelW: kw, strideH: stride, strideW: stride,
                                                  dilationH: dilation, dilationW: dilation, padTop: pads.0, padLeft: pads.1, padBottom: pads.2,
                                                  padRight: pads.3, groups: groups, weights: rng.array(oc * ic / groups * k * kw),
                                                  bias: bias ? rng.array(oc) : [], activation: activation))
    }

    func testDeviceOpens() throws {
        let b = try backend()
        XCTAssertFalse(b.deviceName.isEmpty)
    }

    func testConvolutions() throws {
        let s = Shape(c: 4, h: 13, w: 17)
        try compare(chain([(conv(6, 4, k: 3, pads: (1, 1, 1, 1)), [1])]), s, "3x3 pad 1")
        try compare(chain([(conv(5, 4, k: 3, stride: 2, pads: (1, 0, 1, 2)), [1])]), s, "3x3 stride 2, unequal pads")
        try compare(chain([(conv(4, 4, k: 3, dilation: 2, pads: (2, 2, 2, 2), bias: false), [1])]), s, "3x3 dilation 2, no bias")
        try compare(chain([(conv(6, 4, k: 3, pads: (1, 1, 1, 1), groups: 2), [1])]), s, "grouped")
        try compare(chain([(conv(4, 4, k: 3, pads: (1, 1, 1, 1), groups: 4), [1])]), s, "depthwise")
        try compare(chain([(conv(8, 4, k: 1), [1])]), s, "1x1")
        // Four output channels per invocation (channels per group a multiple of 4).
        try compare(chain([(conv(8, 4, k: 3, stride: 2, pads: (1, 1, 0, 0), groups: 2), [1])]), s, "grouped, 4 channels per group")
        try compare(chain([(conv(12, 4, k: 3, pads: (1, 1, 1, 1), activation: .prelu(slopes: rng.array(12))), [1])]), s, "12 channels + PReLU")
        try compare(chain([(conv(8, 4, k: 3, pads: (1, 1, 1, 1), activation: .prelu(slopes: [0.3])), [1])]), s, "8 channels + one slope")
        try compare(chain([(conv(3, 4, k: 5, kw: 3, pads: (2, 1, 2, 1)), [1])]), s, "5x3")
        try compare(chain([(conv(3, 4, k: 9, pads: (4, 4, 4, 4)), [1])]), Shape(c: 4, h: 6, w: 5), "kernel larger than the picture")
    }

    func testFusedAndStandaloneActivations() throws {
        let s = Shape(c: 3, h: 9, w: 11)
        let activations: [Activation] = [.relu, .leakyRelu(slope: 0.1), .prelu(slopes: [0.2, -0.3, 0.5]), .prelu(slopes: [0.25]), .silu,
                                         .sigmoid, .tanh, .clip(min: -0.3, max: 0.4), .elu(alpha: 0.7)]
        for a in activations {
            try compare(chain([(conv(3, 3, k: 3, pads: (1, 1, 1, 1), activation: a), [1])]), s, "convolution + \(a)")
            try compare(chain([(.activation(a), [1])]), s, "\(a)")
        }
        // sqrt and pow on positive values.
        try compare(chain([(.activation(.sigmoid), [1]), (.activation(.sqrt), [1]), (.activation(.pow(exponent: 1.7)), [1])]), s, "sqrt, pow")
    }

    func testBinaryScalarAffineShuffleWindows() throws {
        let s = Shape(c: 4, h: 6, w: 8)
        for kind in [BinaryKind.add, .sub, .mul, .max, .min] {
            // The second operand is the input itself, or a broadcast made by a convolution.
            try compare(chain([(conv(4, 4, k: 1), [1]), (.binary(kind, coefficients: [0.5, 2]), [1, 2])]), s, "\(kind) same shape")
            try compare(chain([(conv(1, 4, k: 1), [1]), (.binary(kind, coefficients: nil), [2, 1])]), s, "\(kind) broadcast channel")
            try compare(chain([(.globalAveragePool, [1]), (.binary(kind, coefficients: nil), [2, 1])]), s, "\(kind) broadcast plane")
        }
        try compare(chain([(.activation(.sigmoid), [1]), (.binary(.div, coefficients: nil), [2, 1])]), s, "div")
        for kind in [BinaryKind.add, .sub, .mul, .div, .max] {
            try compare(chain([(.scalar(kind, 0.75, scalarFirst: true), [1])]), s, "scalar \(kind) first")
            try compare(chain([(.scalar(kind, -1.25, scalarFirst: false), [1])]), s, "scalar \(kind)")
        }
        try compare(chain([(.channelAffine(scale: rng.array(4), bias: rng.array(4)), [1])]), s, "channel affine")
        // Two output channels at least, or CRD and DCR read the same planes.
        try compare(chain([(.pixelShuffle(factor: 2, order: .crd), [1])]), Shape(c: 12, h: 5, w: 7), "pixel shuffle CRD")
        try compare(chain([(.pixelShuffle(factor: 2, order: .dcr), [1])]), Shape(c: 12, h: 5, w: 7), "pixel shuffle DCR")
        try compare(chain([(.pixelShuffle(factor: 3, order: .crd), [1])]), Shape(c: 18, h: 4, w: 3), "pixel shuffle by 3")
        try compare(chain([(.crop(top: 1, left: 2, bottom: 2, right: 1), [1])]), s, "crop")
        try compare(chain([(.sliceChannels(start: 1, end: 3), [1])]), s, "channel slice")
        try compare(chain([(conv(3, 4, k: 1), [1]), (.concatChannels, [1, 2])]), s, "concatenation")
        try compare(chain([(conv(2, 4, k: 1), [1]), (conv(3, 2, k: 1), [1]), (.concatChannels, [1, 2, 3])]), s, "three-way concatenation")
        // More dispatches than twice the nodes (each concatenated input is one): descriptor sets
        // are counted per dispatch.
        try compare(chain([(conv(2, 4, k: 1), [1]), (conv(3, 2, k: 1), [1]), (.concatChannels, [1, 2, 3]), (.concatChannels, [1, 1, 1, 1])]), s,
                    "concatenations of four and three")
    }

    /// Shaders and host steps interleaved (a host step ends a command buffer; the next shader
    /// reads what the host wrote), and a run repeated on new input (recorded commands reused).
    func testHostStepsBetweenShaders() throws {
        let s = Shape(c: 3, h: 10, w: 12)
        let g = chain([
            (conv(8, 3, k: 3, pads: (1, 1, 1, 1), activation: .leakyRelu(slope: 0.2)), [1]),
            (.pad(top: 1, left: 2, bottom: 0, right: 1, mode: .reflect), [1]),
            (conv(12, 8, k: 3, activation: .prelu(slopes: rng.array(12))), [1]),
            (.pixelShuffle(factor: 2, order: .crd), [1]),
            (.resize(.bilinear, scaleH: 0.5, scaleW: 0.5, outH: 0, outW: 0, alignCorners: false), [1]),
            (conv(3, 3, k: 3, pads: (1, 1, 1, 1)), [1]),
        ])
        for seed in 0..<3 {
            rng = SplitMix(state: UInt64(seed))
            try compare(g, s, "mixed chain, run \(seed)")
        }
    }

    /// Real upscalers from ../shared/models, whole graphs on small pictures.
    func testRealModels() throws {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/models/ncnn").standardized.path
        for param in ["realesr-animevideov3/realesr-animevideov3-x2.param", "waifu2x-upconv7-photo/scale2.0x_model.param"] {
            let path = "\(models)/\(param)"
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is not here: ../shared/models is needed") }
            let graph = try NCNNImporter.load(paramPath: path)
            try compare(graph, Shape(c: 3, h: 24, w: 32), param)
        }
    }
}

/// The committed SPIR-V is what the committed GLSL compiles to (glslangValidator from Debian's
/// glslang-tools, which scripts/install-deps installs).
final class VulkanShaderSourceTests: XCTestCase {
    func testCommittedSPIRVMatchesTheGLSL() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-shaders-\(getpid()).swift")
        defer { try? FileManager.default.removeItem(at: out) }
        let p = Process()
        p.executableURL = root.appendingPathComponent("scripts/build-shaders")
        p.arguments = [out.path]
        p.standardOutput = FileHandle.nullDevice
        try p.run()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "scripts/build-shaders failed: is glslang-tools installed (scripts/install-deps)?")
        let fresh = try String(contentsOf: out, encoding: .utf8)
        let committed = try String(contentsOf: root.appendingPathComponent("Sources/EngineVulkan/VulkanShaders+SPIRV.swift"), encoding: .utf8)
        XCTAssertEqual(fresh, committed, "Sources/EngineVulkan/VulkanShaders+SPIRV.swift is stale: run scripts/build-shaders and commit it")
    }
}
