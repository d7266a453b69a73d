@testable import Engine
@testable import EngineVulkan
import CVulkan
import Foundation
import ModelFormats
import XCTest

/// The Vulkan backend against the reference backend on the same seeded inputs, on whatever
/// Vulkan device this machine has (lavapipe on the CPU in CI): every shader alone, shaders and
/// host steps interleaved, and real models. Tolerance: max |a − b| ≤ 1e-4 · max(1, max |b|)
/// (`tolerance`; VulkanFP16ParityTests runs every test again with fp16 storage and its own).
/// Every test under the Khronos validation layer (synchronization validation on): silent.
class VulkanParityTests: ValidatedVulkanTestCase {
    /// What the backend under test stores values as.
    var precision: VulkanPrecision { .fp32 }
    /// The bar of single operations: max |a − b| ≤ tolerance · max(1, max |b|).
    var tolerance: Float { 1e-4 }
    /// The bar of whole models (testRealModels).
    var modelTolerance: Float { 1e-4 }

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

    /// The backend; the tests need a Vulkan device (scripts/install-deps installs lavapipe):
    /// without one they skip, or fail under VIVIFY_REQUIRE_VULKAN=1.
    func backend() throws -> VulkanBackend { try VulkanTesting.backend(precision: precision) }

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

    /// Runs `graph` on the reference and on `vulkan` (the default backend when nil) and
    /// checks the bar; returns the worst difference relative to max(1, max |reference|).
    /// Inputs are uniform in [−1, 1], or in [0, 1] for `picture`s (what models see).
    /// VIVIFY_PARITY_FIGURES=1 prints it.
    @discardableResult
    func compare(_ graph: Graph, _ input: Shape, _ what: String, on vulkan: VulkanBackend? = nil, runs: Int = 1, picture: Bool = false,
                 tolerance: Float? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> Float {
        let tolerance = tolerance ?? self.tolerance
        let reference = try ReferenceBackend(runsPasses: false).prepare(graph, input: input)
        let prepared = try (vulkan ?? backend()).prepare(graph, input: input)
        var relative: Float = 0
        for run in 0..<runs {
            let x = Tensor(shape: input, data: rng.array(input.count).map { picture ? ($0 + 1) / 2 : $0 })
            let want = try reference.run(x)
            let got = try prepared.run(x)
            XCTAssertEqual(got.shape, want.shape, what, file: file, line: line)
            let scale = max(1, want.data.map(abs).max() ?? 0)
            let worst = zip(got.data, want.data).map { abs($0 - $1) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, tolerance * scale, "\(what), run \(run): max difference \(worst)", file: file, line: line)
            if precision == .fp16 {
                // Proof that fp16 storage ran: every output value is a half float (fp32 results
                // almost never are), so it differs from the reference wherever that is not one.
                let halves = got.data.allSatisfy { Float(Float16($0)) == $0 }
                XCTAssertTrue(halves, "\(what), run \(run): outputs that are not half floats: did fp16 storage run?", file: file, line: line)
                if want.data.contains(where: { Float(Float16($0)) != $0 }) {
                    XCTAssertGreaterThan(worst, 0, "\(what), run \(run): exactly the reference's output: did fp16 storage run?", file: file, line: line)
                }
            }
            XCTAssertFalse(got.data.contains { !$0.isFinite }, what, file: file, line: line)
            relative = max(relative, worst / scale)
        }
        if ProcessInfo.processInfo.environment["VIVIFY_PARITY_FIGURES"] == "1" { print("parity \(what): \(relative)") }
        return relative
    }

    /// A CPU-only kernel switch: on for CPU devices, off for GPUs, and `variable` 1 or 0 forcing
    /// it either way on both.
    func assertCPUOnlySwitch(_ variable: String, _ choice: ([String: String], Bool) -> Bool, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertTrue(choice([:], true), variable, file: file, line: line)
        XCTAssertFalse(choice([:], false), variable, file: file, line: line)
        XCTAssertTrue(choice([variable: "1"], false), variable, file: file, line: line)
        XCTAssertFalse(choice([variable: "0"], true), variable, file: file, line: line)
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

    /// Dense 3×3 stride-1 convolutions by Winograd's F(2×2, 3×3) (winograd_input, _multiply,
    /// _output): channels 3, 4, 5 and 64 in and out (past and short of the multiply's blocks of
    /// 16 output channels), pictures 7×5, 9×11 and 1×1 (2×2 tiles cut by the picture's edge),
    /// padding 0, 1 and unequal, with and without bias, fused ReLU, leaky ReLU, PReLU per
    /// channel and shared, and SiLU. Forced on every such layer and checked to be what ran;
    /// by default only layers of 16 channels or more in and out take it. The products by both
    /// multiply shaders (the GPU's 16 channels × 4 tiles per invocation and the CPU's blocked
    /// 32 × 16, whose weights are padded to 32 channels): every case on each.
    func testWinogradConvolutions() throws {
        let automatic = try backend()
        XCTAssertEqual(VulkanBackend.winograd(environment: [:]), .wide)
        XCTAssertEqual(VulkanBackend.winograd(environment: ["VIVIFY_VULKAN_WINOGRAD": "1"]), .always)
        XCTAssertEqual(VulkanBackend.winograd(environment: ["VIVIFY_VULKAN_WINOGRAD": "0"]), .never)
        assertCPUOnlySwitch("VIVIFY_VULKAN_WINOGRAD_BLOCKED", VulkanBackend.winogradBlocked)
        XCTAssertEqual(automatic.winogradBlocked, automatic.isCPU)
        for blocked in [false, true] {
            try winogradConvolutions(blocked: blocked, automatic.memoryPlan)
        }
    }

    private func winogradConvolutions(blocked: Bool, _ memoryPlan: VulkanMemoryPlan) throws {
        // The direct layers in the pixel-lane shader on every device (the row shaders, the CPU's
        // choice for them, have testConvolutionRows).
        let forced = try VulkanBackend(memoryPlan: memoryPlan, precision: precision, winograd: .always, winogradBlocked: blocked, convolutionRows: false)
        let wide = try VulkanBackend(memoryPlan: memoryPlan, precision: precision, winograd: .wide, winogradBlocked: blocked, convolutionRows: false)
        let never = try VulkanBackend(memoryPlan: memoryPlan, precision: precision, winograd: .never, winogradBlocked: blocked, convolutionRows: false)
        // Blocked in fp32: the weights through a uniform buffer, 64 KiB (some of the 16
        // positions) per dispatch; shaders(_:_:_:) counts a run of those dispatches once.
        let multiply = blocked ? (precision == .fp32 ? "winograd_multiply_uniform" : "winograd_multiply_blocked") : "winograd_multiply"
        let winograd = ["winograd_input", multiply, "winograd_output"]
        func dispatched(_ b: VulkanBackend, _ g: Graph, _ s: Shape) throws -> [String] {
            try XCTUnwrap(try b.prepare(g, input: s) as? VulkanPrepared).shaders
        }
        func shaders(_ b: VulkanBackend, _ g: Graph, _ s: Shape) throws -> [String] {
            let all = try dispatched(b, g, s)
            return all.indices.filter { all[$0] != "winograd_multiply_uniform" || $0 == 0 || all[$0 - 1] != all[$0] }.map { all[$0] }
        }
        if blocked, precision == .fp32 {
            // 64 channels in and out: 16 KiB of weights a position, 4 positions a dispatch.
            let g = chain([(conv(64, 64, k: 3, pads: (1, 1, 1, 1)), [1])])
            XCTAssertEqual(try dispatched(forced, g, Shape(c: 64, h: 5, w: 7)),
                           ["winograd_input"] + Array(repeating: "winograd_multiply_uniform", count: 4) + ["winograd_output"])
        }
        let narrow = chain([(conv(8, 8, k: 3, pads: (1, 1, 1, 1)), [1])])
        XCTAssertEqual(try shaders(wide, narrow, Shape(c: 8, h: 5, w: 7)), ["convolution_pixels"])
        XCTAssertEqual(try shaders(forced, narrow, Shape(c: 8, h: 5, w: 7)), winograd)
        let wideLayer = chain([(conv(16, 16, k: 3, pads: (1, 1, 1, 1)), [1]), (conv(16, 16, k: 3, stride: 2), [1])])
        XCTAssertEqual(try shaders(wide, wideLayer, Shape(c: 16, h: 21, w: 21)), winograd + ["convolution_pixels"])
        XCTAssertEqual(try shaders(never, wideLayer, Shape(c: 16, h: 21, w: 21)), ["convolution_pixels", "convolution_pixels"])
        // Blocked (the CPU's), a picture of fewer than 400 outputs runs direct unless forced.
        XCTAssertEqual(VulkanPrepared.blockedWinogradMinimumPlane, 400)
        XCTAssertEqual(try shaders(wide, wideLayer, Shape(c: 16, h: 19, w: 21)), (blocked ? [] : winograd) + ["convolution_pixels"]
                       + (blocked ? ["convolution_pixels"] : []))
        XCTAssertEqual(try shaders(forced, wideLayer, Shape(c: 16, h: 19, w: 21)), winograd + ["convolution_pixels"])
        let activations: [((Int, Int, Int, Int), Bool, Activation)] = [
            ((1, 1, 1, 1), true, .identity), ((0, 0, 0, 0), true, .relu), ((1, 0, 2, 1), false, .leakyRelu(slope: 0.1)),
            ((1, 1, 1, 1), true, .prelu(slopes: [0.25])), ((0, 1, 1, 0), true, .silu),
        ]
        for (ic, oc) in [(3, 5), (4, 4), (5, 3), (64, 64), (3, 64), (64, 5)] {
            for (h, w) in [(5, 7), (11, 9), (1, 1)] {
                for (i, (pads, bias, activation)) in activations.enumerated() {
                    guard h + pads.0 + pads.2 >= 3, w + pads.1 + pads.3 >= 3 else { continue }
                    let act = i == 3 && oc > 4 ? Activation.prelu(slopes: rng.array(oc)) : activation
                    let g = chain([(conv(oc, ic, k: 3, pads: pads, bias: bias, activation: act), [1])])
                    let s = Shape(c: ic, h: h, w: w)
                    XCTAssertEqual(try shaders(forced, g, s), winograd)
                    try compare(g, s, "Winograd \(ic)→\(oc) \(w)x\(h) pads \(pads) \(act)\(blocked ? " blocked" : "")", on: forced)
                }
            }
        }
        // More tiles than one invocation's 16 and than one workgroup's 1,024 (37×21: 19 tiles a
        // row padded to 20, 220 tiles, 55 quads, the last invocation's quads partly past the
        // end; 68×66: 1,188), 48 output channels (three blocks of 16: half a block of 32
        // padded), and rows of a multiple of 4 outputs (68, 8: the output transform's vec4 stores).
        for (ic, oc, h, w) in [(5, 48, 21, 37), (16, 16, 66, 68), (64, 64, 21, 37), (4, 5, 5, 8)] {
            let g = chain([(conv(oc, ic, k: 3, pads: (1, 1, 1, 1), activation: .prelu(slopes: rng.array(oc))), [1])])
            let s = Shape(c: ic, h: h, w: w)
            XCTAssertEqual(try shaders(forced, g, s), winograd)
            try compare(g, s, "Winograd \(ic)→\(oc) \(w)x\(h)\(blocked ? " blocked" : "")", on: forced)
        }
        // Two in a row (the second's scratch the first's, reused) and a wider one after them.
        let three = chain([(conv(16, 4, k: 3, pads: (1, 1, 1, 1)), [1]), (conv(16, 16, k: 3, pads: (1, 1, 1, 1), activation: .relu), [1]),
                           (conv(32, 16, k: 3, pads: (1, 1, 1, 1)), [1])])
        XCTAssertEqual(try shaders(forced, three, Shape(c: 4, h: 11, w: 9)), winograd + winograd + winograd)
        try compare(three, Shape(c: 4, h: 11, w: 9), "Winograd three in a row", on: forced, runs: 2)
    }

    /// Dense 1×1 stride-1 convolutions run as a tiled matrix product (convolution_1x1.comp):
    /// channels below, at and past its 16-channel tiles (3, 4, 5, 16, 17, 33, 64), pixel counts
    /// a multiple of 4 (vec4 loads and stores) and not (7×5, 9×11), tiles cut by the picture's
    /// end, with and without bias, PReLU per channel and shared, and two in a row. Chosen on
    /// GPUs; on the CPU (this device in CI) forced, and checked to be the shader that ran. The
    /// CPU's 1×1 shader (pixel lanes without a window) on the same cases.
    func testPointwiseConvolutionsAsMatrixProducts() throws {
        let automatic = try backend()
        let gemm = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: true, convolutionRows: false)
        XCTAssertTrue(VulkanBackend.pointwiseGEMM(environment: [:], isCPU: false))
        XCTAssertFalse(VulkanBackend.pointwiseGEMM(environment: [:], isCPU: true))
        XCTAssertTrue(VulkanBackend.pointwiseGEMM(environment: ["VIVIFY_VULKAN_GEMM": "1"], isCPU: true))
        XCTAssertFalse(VulkanBackend.pointwiseGEMM(environment: ["VIVIFY_VULKAN_GEMM": "0"], isCPU: false))
        let one = chain([(conv(8, 4, k: 1), [1]), (conv(8, 8, k: 3, pads: (1, 1, 1, 1)), [1])])
        let shaders = try XCTUnwrap(try gemm.prepare(one, input: Shape(c: 4, h: 5, w: 7)) as? VulkanPrepared).shaders
        XCTAssertEqual(shaders, ["convolution_1x1", "convolution_pixels"])
        let lanes = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: false, convolutionRows: false)
        XCTAssertEqual(try XCTUnwrap(try lanes.prepare(one, input: Shape(c: 4, h: 5, w: 7)) as? VulkanPrepared).shaders,
                       ["convolution_1x1_lanes", "convolution_pixels"])
        func params(_ op: Engine.Operation) -> ConvolutionParameters {
            guard case .convolution(let p) = op else { preconditionFailure() }
            return p
        }
        XCTAssertTrue(VulkanPrepared.isPointwise(params(conv(8, 4, k: 1))))
        XCTAssertFalse(VulkanPrepared.isPointwise(params(conv(8, 4, k: 1, stride: 2))))
        XCTAssertFalse(VulkanPrepared.isPointwise(params(conv(8, 4, k: 1, pads: (0, 1, 0, 0)))))
        XCTAssertFalse(VulkanPrepared.isPointwise(params(conv(8, 4, k: 1, groups: 2))))
        XCTAssertFalse(VulkanPrepared.isPointwise(params(conv(8, 4, k: 3))))
        for (name, backend) in [("matrix product", gemm), ("pixel lanes", lanes)] {
            for s in oddShapes + [Shape(c: 17, h: 4, w: 8), Shape(c: 33, h: 12, w: 12)] {
                for oc in [3, 5, 16, 17, 64] {
                    try compare(chain([(conv(oc, s.c, k: 1, bias: oc != 5), [1])]), s, "\(name): 1x1 \(s.c)->\(oc) at \(s.h)x\(s.w)", on: backend)
                }
            }
            let s = Shape(c: 5, h: 7, w: 5)
            try compare(chain([(conv(64, 5, k: 1, activation: .prelu(slopes: rng.array(64))), [1]), (conv(4, 64, k: 1, activation: .prelu(slopes: [0.2])), [1])]),
                        s, "\(name): 1x1 5->64->4 with PReLU", on: backend)
            try compare(chain([(conv(16, 5, k: 1, activation: .leakyRelu(slope: 0.1)), [1]), (conv(3, 16, k: 1, activation: .sigmoid), [1])]),
                        Shape(c: 5, h: 8, w: 8), "\(name): 1x1 5->16->3, leaky ReLU and sigmoid", on: backend)
        }
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
        // Operands of the output's shape: four values an invocation where the count is a
        // multiple of 4 (binary4.comp), else one (binary.comp). Positive bases for pow, a
        // positive divisor for div.
        let automatic = try backend()
        for shape in [Shape(c: 4, h: 6, w: 8), Shape(c: 3, h: 7, w: 5), Shape(c: 64, h: 7, w: 5), Shape(c: 1, h: 1, w: 1)] {
            for kind in [BinaryKind.add, .sub, .mul, .div, .max, .min, .pow] {
                let g = chain([(.activation(.sigmoid), [1]), (.binary(kind, coefficients: [0.5, 2]), kind == .div ? [2, 1] : [1, 2])])
                let what = "\(kind), operands of one shape \(shape)"
                try compare(g, shape, what)
                let shaders = try XCTUnwrap(automatic.prepare(g, input: shape) as? VulkanPrepared).shaders
                XCTAssertEqual(shaders.last, shape.count % 4 == 0 ? "binary4" : "binary", what)
            }
        }
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

    /// Odd shapes every new shader is checked on: channels 3, 4, 5 and 64, sides like 7×5.
    let oddShapes = [Shape(c: 3, h: 7, w: 5), Shape(c: 4, h: 9, w: 11), Shape(c: 5, h: 6, w: 7), Shape(c: 64, h: 7, w: 5)]

    func deconv(_ oc: Int, _ ic: Int, k: Int, kw: Int? = nil, stride: Int = 1, strideW: Int? = nil, dilation: Int = 1,
                pads: (Int, Int, Int, Int) = (0, 0, 0, 0), outputPad: (Int, Int) = (0, 0), groups: Int = 1, bias: Bool = true,
                activation: Activation = .identity) -> Engine.Operation {
        let kw = kw ?? k
        return .deconvolution(ConvolutionParameters(outChannels: oc, inChannels: ic, kernelH: k, kernelW: kw, strideH: stride, strideW: strideW ?? stride,
                                                    dilationH: dilation, dilationW: dilation, padTop: pads.0, padLeft: pads.1, padBottom: pads.2,
                                                    padRight: pads.3, outputPadH: outputPad.0, outputPadW: outputPad.1, groups: groups,
                                                    weights: rng.array(ic * (oc / groups) * k * kw), bias: bias ? rng.array(oc) : [],
                                                    activation: activation))
    }

    /// Every operation but external layers runs on the device.
    func testEveryOperationButExternalLayersRunsOnTheDevice() {
        let p = ConvolutionParameters(outChannels: 1, inChannels: 1, kernelH: 1, kernelW: 1, weights: [1])
        let ops: [Engine.Operation] = [
            .convolution(p), .deconvolution(p), .activation(.relu), .binary(.add, coefficients: nil), .scalar(.add, 1, scalarFirst: false),
            .channelAffine(scale: [1], bias: [0]), .softmaxChannels, .pixelShuffle(factor: 2, order: .crd),
            .resize(.bilinear, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false), .pad(top: 1, left: 1, bottom: 1, right: 1, mode: .replicate),
            .crop(top: 1, left: 1, bottom: 1, right: 1), .cropLike(top: 0, left: 0), .sliceChannels(start: 0, end: 1), .concatChannels,
            .globalAveragePool, .fullyConnected(outFeatures: 1, weights: [1], bias: [], activation: .identity),
            .upsampleDetail(.bilinear, order: .crd), .instanceNorm(scale: [1], bias: [0], epsilon: 1e-5), .pool(PoolParameters(kind: .max, kernelH: 2, kernelW: 2)),
            .spaceToDepth(factor: 2), .resample(ResampleParameters(mode: .nearest, scaleH: 2, scaleW: 2)), .constant(Shape(c: 1, h: 1, w: 1), values: [1]),
            .reshape(Shape(c: 1, h: 1, w: 1)), .softmax(axis: 3), .concat(axis: 2), .transpose(perm: [0, 2, 1]),
            .rowMatMul(inFeatures: 1, outFeatures: 1, weights: [1], bias: []),
        ]
        for op in ops { XCTAssertTrue(VulkanBackend.runsOnDevice(op), op.kindName) }
    }

    func testPooling() throws {
        for s in oddShapes {
            for kind in [PoolParameters.Kind.max, .average(countPadding: false), .average(countPadding: true)] {
                try compare(chain([(.pool(PoolParameters(kind: kind, kernelH: 2, kernelW: 2, strideH: 2, strideW: 2)), [1])]), s, "\(kind) 2x2/2 \(s)")
                try compare(chain([(.pool(PoolParameters(kind: kind, kernelH: 3, kernelW: 3, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1)), [1])]), s,
                            "\(kind) 3x3/1 pad 1 \(s)")
                try compare(chain([(.pool(PoolParameters(kind: kind, kernelH: 3, kernelW: 2, strideH: 2, strideW: 3, padTop: 1, padLeft: 0, padBottom: 0,
                                                         padRight: 1, ceilMode: true)), [1])]), s, "\(kind) 3x2 strides 2,3 ceil \(s)")
                try compare(chain([(.pool(PoolParameters(kind: kind, kernelH: 2, kernelW: 3, dilationH: 2, dilationW: 1, padTop: 1, padLeft: 1,
                                                         padBottom: 0, padRight: 1)), [1])]), s, "\(kind) dilated \(s)")
            }
            try compare(chain([(.globalAveragePool, [1])]), s, "global average \(s)")
        }
        // Planes far larger than a workgroup's 64 lanes, and more channels than a row of groups.
        try compare(chain([(.globalAveragePool, [1])]), Shape(c: 3, h: 67, w: 45), "global average 67x45")
        try compare(chain([(.globalAveragePool, [1])]), Shape(c: 300, h: 3, w: 2), "global average of 300 channels")
    }

    func testResize() throws {
        for s in [Shape(c: 3, h: 7, w: 5), Shape(c: 64, h: 4, w: 6)] {
            for mode in [ResizeMode.nearest, .bilinear, .bicubic] {
                for align in [false, true] {
                    for (sh, sw, oh, ow) in [(Float(2), Float(2), 0, 0), (0.5, 0.5, 0, 0), (1.5, 3, 0, 0), (0, 0, 11, 3), (0, 0, 1, 1)] {
                        try compare(chain([(.resize(mode, scaleH: sh, scaleW: sw, outH: oh, outW: ow, alignCorners: align), [1])]), s,
                                    "\(mode) align \(align) \(sh)x\(sw) to \(oh)x\(ow) \(s)")
                    }
                }
            }
        }
    }

    func testResample() throws {
        let s = Shape(c: 5, h: 7, w: 5)
        for mode in [ResizeMode.nearest, .bilinear, .bicubic] {
            for coordinates in ResampleParameters.Coordinates.allCases {
                for (sh, sw, oh, ow) in [(Float(2), Float(1.5), 0, 0), (0.6, 0.5, 0, 0), (0, 0, 12, 9)] {
                    var p = ResampleParameters(mode: mode, coordinates: coordinates, scaleH: sh, scaleW: sw, outH: oh, outW: ow)
                    if coordinates == .tfCropAndResize {
                        p.roi = [0.1, 0.9, -0.2, 1.1]
                        p.extrapolation = 0.25
                    }
                    try compare(chain([(.resample(p), [1])]), s, "resample \(mode) \(coordinates) \(sh)x\(sw) to \(oh)x\(ow)")
                }
            }
        }
        for rounding in ResampleParameters.Rounding.allCases {
            let p = ResampleParameters(mode: .nearest, coordinates: .asymmetric, rounding: rounding, scaleH: 1.7, scaleW: 2.5)
            try compare(chain([(.resample(p), [1])]), Shape(c: 64, h: 7, w: 5), "resample nearest \(rounding)")
        }
        for mode in [ResizeMode.bilinear, .bicubic] {
            let p = ResampleParameters(mode: mode, coordinates: .halfPixel, cubicA: -0.5, excludeOutside: true, scaleH: 2, scaleW: 3)
            try compare(chain([(.resample(p), [1])]), Shape(c: 3, h: 7, w: 5), "resample \(mode) excluding outside, A -0.5")
        }
    }

    /// The upscaler tail: a detail per channel (r²·C) or one for all (r²), both shuffle orders,
    /// factors 2, 3 and 4.
    func testUpsampleDetail() throws {
        for s in [Shape(c: 3, h: 7, w: 5), Shape(c: 4, h: 5, w: 6)] {
            for mode in [ResizeMode.nearest, .bilinear, .bicubic] {
                for order in [ShuffleOrder.crd, .dcr] {
                    for (perChannel, r) in [(true, 2), (false, 2), (true, 3), (false, 4), (true, 4)] {
                        let detail = conv(perChannel ? r * r * s.c : r * r, s.c, k: 1)
                        try compare(chain([(detail, [1]), (.upsampleDetail(mode, order: order, factor: r), [2, 1])]), s,
                                    "upsample detail ×\(r) \(mode) \(order) \(perChannel ? "per channel" : "shared") \(s)")
                    }
                }
            }
        }
    }

    func testPad() throws {
        for s in oddShapes {
            for mode in [PaddingMode.constant(0), .constant(-0.5), .replicate, .reflect] {
                try compare(chain([(.pad(top: 1, left: 2, bottom: 3, right: 0, mode: mode), [1])]), s, "pad \(mode) \(s)")
                try compare(chain([(.pad(top: 4, left: 4, bottom: 4, right: 4, mode: mode), [1])]), s, "pad 4 \(mode) \(s)")
            }
        }
    }

    func testDeconvolution() throws {
        for s in oddShapes {
            let c = s.c
            try compare(chain([(deconv(c, c, k: 2, stride: 2), [1])]), s, "deconvolution 2x2/2 \(s)")
            try compare(chain([(deconv(3, c, k: 4, stride: 2, pads: (3, 3, 3, 3)), [1])]), s, "deconvolution 4x4/2 cropped 3 (realcugan's tail) \(s)")
            try compare(chain([(deconv(5, c, k: 3, pads: (1, 1, 1, 1), activation: .leakyRelu(slope: 0.1)), [1])]), s, "deconvolution 3x3/1 + leaky \(s)")
            try compare(chain([(deconv(4, c, k: 3, kw: 2, stride: 3, strideW: 2, dilation: 2, pads: (1, 0, 2, 1), outputPad: (1, 1), bias: false), [1])]), s,
                        "deconvolution 3x2, strides 3,2, dilation 2, output padding \(s)")
            try compare(chain([(deconv(c, c, k: 3, stride: 2, pads: (1, 1, 1, 1), groups: c, activation: .prelu(slopes: rng.array(c))), [1])]), s,
                        "depthwise deconvolution + PReLU \(s)")
        }
        try compare(chain([(deconv(6, 4, k: 3, stride: 2, groups: 2), [1])]), Shape(c: 4, h: 7, w: 5), "grouped deconvolution")
        try compare(chain([(deconv(64, 64, k: 2, stride: 2, activation: .leakyRelu(slope: 0.1)), [1])]), Shape(c: 64, h: 12, w: 10), "64 to 64, 2x2/2")
    }

    /// Transposed convolutions per output phase (deconvolution_phases.comp, the CPU's default;
    /// deconvolution_phases1.comp where the kernel is no larger than the stride),
    /// forced on and off and checked to be what ran: channels 3, 4, 5 and 64 in and out (one
    /// block of 4 output channels, a partial second, many), strides 2 and 3 and 3 × 2, kernels
    /// 2 to 6 (phases with one tap and with two), 3 × 4, cropping equal, unequal and larger than
    /// the stride, output padding, with and without bias, leaky ReLU and PReLU per channel;
    /// pictures 7×5, 1×1 and 37×21 (blocks of 4 × 8 outputs cut by the picture's edge, more
    /// than one workgroup). Grouped, dilated and kernels past twice the stride keep
    /// deconvolution.comp.
    /// Dense convolutions in runs of a row (convolution_rows4.comp for at most 4 output
    /// channels, convolution_rows16.comp for more but 1×1, and 1×1 ones with their weights in a
    /// uniform buffer in fp32, convolution_1x1_uniform.comp: the CPU's choice) and one pixel per
    /// invocation (convolution_pixels.comp, convolution_1x1_lanes.comp: the GPUs'):
    /// both against the reference on odd shapes — output channels 1, 3, 4 (the narrow shader),
    /// 5, 17, 64; strides, dilations, unequal pads, 1×1 (flattened to one row); widths that
    /// leave a run partly outside the picture — and the shader each records.
    func testConvolutionRows() throws {
        assertCPUOnlySwitch("VIVIFY_VULKAN_ROWS", VulkanBackend.convolutionRows)
        // The dense row kernels on every device (measured faster on an H200 too) unless 0.
        XCTAssertTrue(VulkanBackend.denseRows(environment: [:]))
        XCTAssertTrue(VulkanBackend.denseRows(environment: ["VIVIFY_VULKAN_ROWS": "1"]))
        XCTAssertFalse(VulkanBackend.denseRows(environment: ["VIVIFY_VULKAN_ROWS": "0"]))
        let automatic = try backend()
        XCTAssertEqual(automatic.convolutionRows, automatic.isCPU)
        XCTAssertEqual(automatic.denseRows, VulkanBackend.denseRows(environment: ProcessInfo.processInfo.environment))
        for rows in [true, false] {
            let b = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: false, winograd: .never, convolutionRows: rows)
            typealias Case = (k: Int, stride: Int, dilation: Int, pads: (Int, Int, Int, Int))
            let cases: [Case] = [(3, 1, 1, (1, 1, 1, 1)), (1, 1, 1, (0, 0, 0, 0)), (2, 2, 1, (0, 0, 0, 0)), (3, 2, 2, (2, 1, 0, 3)), (5, 1, 1, (2, 2, 2, 2))]
            for (ic, oc) in [(3, 1), (5, 3), (64, 3), (3, 4), (4, 5), (17, 17), (8, 64)] {
                for (h, w) in [(7, 5), (1, 1), (9, 13)] {
                    for (i, c) in cases.enumerated() {
                        let act: Activation = i % 3 == 0 ? .identity : i % 3 == 1 ? .leakyRelu(slope: 0.1) : .prelu(slopes: rng.array(oc))
                        let g = chain([(conv(oc, ic, k: c.k, stride: c.stride, dilation: c.dilation, pads: c.pads, activation: act), [1])])
                        let what = "\(rows ? "rows" : "pixels"): \(ic)→\(oc), \(c.k)x\(c.k) stride \(c.stride) dilation \(c.dilation), \(w)x\(h)"
                        let s = Shape(c: ic, h: h, w: w)
                        guard (try? g.inferShapes(input: s)) != nil else { continue }
                        try compare(g, s, what, on: b)
                        let shaders = try XCTUnwrap(b.prepare(g, input: s) as? VulkanPrepared).shaders
                        let pointwise = c.k == 1
                        let want = rows && oc <= 4 ? "convolution_rows4"
                            : pointwise ? (rows && precision == .fp32 ? "convolution_1x1_uniform" : "convolution_1x1_lanes")
                            : rows ? "convolution_rows16" : "convolution_pixels"
                        XCTAssertEqual(shaders, [want], what)
                    }
                }
            }
        }
        // A 1×1 layer whose weights pass the 64 KiB one uniform binding holds (600 input
        // channels: 37.5 KiB a block of 16 output channels): one dispatch per block in fp32.
        let rows = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: false, winograd: .never, convolutionRows: true)
        let wide = chain([(conv(40, 600, k: 1, activation: .prelu(slopes: rng.array(40))), [1])])
        let s = Shape(c: 600, h: 5, w: 7)
        try compare(wide, s, "1x1 600→40", on: rows)
        XCTAssertEqual(try XCTUnwrap(rows.prepare(wide, input: s) as? VulkanPrepared).shaders,
                       precision == .fp32 ? Array(repeating: "convolution_1x1_uniform", count: 3) : ["convolution_1x1_lanes"])
        // 1100 input channels: 68.75 KiB a block, more than a binding holds: from a storage buffer.
        let wider = chain([(conv(20, 1100, k: 1), [1])])
        let t = Shape(c: 1100, h: 3, w: 5)
        try compare(wider, t, "1x1 1100→20", on: rows)
        XCTAssertEqual(try XCTUnwrap(rows.prepare(wider, input: t) as? VulkanPrepared).shaders, ["convolution_1x1_lanes"])
    }

    /// Dense convolutions as implicit matrix products (convolution_gemm.comp, 64 output channels
    /// a tile; convolution_gemm16.comp for at most 16), written for GPUs for what Winograd and
    /// the 1×1 product do not take, forced here, against the reference and checked to be what
    /// ran. Kernels 1 (strided), 2, 3, 5, 7 × 3 and 9; strides 1 to 3,
    /// dilation 2, pads equal, unequal and none; output channels 1, 3, 16 (one whole small
    /// tile), 17, 64 (one whole tile) and 65 (a partial second); input channels 3 to 64, so the
    /// taps are below, at and past the 16 of a slice and not a multiple of it; pictures 1×1, 7×5
    /// (a pixel count not a multiple of 4), 8×9 and 37×21 (more than one tile of 64 pixels,
    /// the last cut); fused activations. Off unless VIVIFY_VULKAN_IMPLICIT_GEMM=1 (no GPU has
    /// timed it yet); pointwise, grouped and Winograd layers keep their shaders with it on.
    func testImplicitGEMM() throws {
        XCTAssertFalse(VulkanBackend.implicitGEMM(environment: [:], isCPU: false), "off until a GPU has timed it")
        XCTAssertFalse(VulkanBackend.implicitGEMM(environment: [:], isCPU: true))
        XCTAssertTrue(VulkanBackend.implicitGEMM(environment: ["VIVIFY_VULKAN_IMPLICIT_GEMM": "1"], isCPU: true))
        XCTAssertTrue(VulkanBackend.implicitGEMM(environment: ["VIVIFY_VULKAN_IMPLICIT_GEMM": "1"], isCPU: false))
        let automatic = try backend()
        XCTAssertFalse(automatic.implicitGEMM)
        let b = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: false, winograd: .wide, winogradBlocked: false,
                                  convolutionRows: false, implicitGEMM: true)
        let cases: [ConvolutionCase] = [(3, 3, 1, 1, (1, 1, 1, 1)), (1, 1, 2, 1, (0, 0, 0, 0)), (2, 2, 2, 1, (0, 0, 0, 0)), (3, 3, 2, 2, (2, 1, 0, 3)),
                                        (5, 5, 1, 1, (2, 2, 2, 2)), (7, 3, 3, 1, (3, 1, 2, 0)), (9, 9, 1, 1, (4, 4, 4, 4))]
        try checkConvolutions(on: b, "implicit GEMM", channels: [(3, 1), (5, 3), (3, 16), (4, 17), (64, 3), (17, 64), (8, 65)],
                              sizes: { _ in [(1, 1), (5, 7), (9, 8), (21, 37)] }, cases: cases) { ic, oc, c, shaders, what in
            let winograd = c.k == 3 && c.kw == 3 && c.stride == 1 && c.dilation == 1 && ic >= 16 && oc >= 16
            XCTAssertEqual(shaders.count == 1 ? shaders[0] : "Winograd",
                           winograd ? "Winograd" : oc <= 16 ? "convolution_gemm16" : "convolution_gemm", what)
        }
        // Two in a row, the second reading what the first wrote, more taps than a slice (64 · 9).
        let two = chain([(conv(64, 5, k: 5, pads: (2, 2, 2, 2), activation: .relu), [1]), (conv(24, 64, k: 3, stride: 2, pads: (1, 1, 1, 1)), [1])])
        try compare(two, Shape(c: 5, h: 19, w: 23), "implicit GEMM two in a row", on: b, runs: 2)
        XCTAssertEqual(try XCTUnwrap(b.prepare(two, input: Shape(c: 5, h: 19, w: 23)) as? VulkanPrepared).shaders,
                       ["convolution_gemm", "convolution_gemm"])
        // What it does not take.
        for (op, want) in [(conv(8, 4, k: 1), "convolution_1x1_lanes"), (conv(8, 4, k: 3, pads: (1, 1, 1, 1), groups: 2), "convolution4")] {
            let g = chain([(op, [1])])
            XCTAssertEqual(try XCTUnwrap(b.prepare(g, input: Shape(c: 4, h: 5, w: 7)) as? VulkanPrepared).shaders, [want])
        }
    }

    /// The implicit matrix product on cooperative matrices (convolution_gemm_coop.glsl), forced:
    /// on this device, which has none, its `_emulated` build (the same staging of weights and
    /// inputs in shared memory, the same output, the products lane by lane), in fp16 storage
    /// only — in fp32 the layers keep their other shaders. Output channels 17, 64, 65 and 130
    /// (partial and whole 64-channel tiles; 16 or fewer keep convolution_gemm16.comp), 1×1
    /// layers (taken too), kernels 3×3 to 7×3 with strides, dilation and unequal pads, pictures
    /// 1×1 to 37×21, and 1,000 input channels (63 slices of taps: a first emulation, one pixel
    /// × 64 sums per lane, read garbage past about 40 slices on Debian 12's lavapipe, Mesa
    /// 22.3, and was right on Mesa 25.0). And the device check: lavapipe has no
    /// VK_NV_cooperative_matrix.
    func testCooperativeGEMM() throws {
        XCTAssertTrue(VulkanCooperativeMatrix.isRequested(["VIVIFY_VULKAN_COOPMAT": "1"]))
        XCTAssertFalse(VulkanCooperativeMatrix.isRequested([:]))
        let automatic = try backend()
        let context = automatic.context
        if context.isCPU {
            XCTAssertFalse(context.hasCooperativeMatrix)
            var props = VkPhysicalDeviceProperties()
            vkGetPhysicalDeviceProperties(context.physical, &props)
            XCTAssertNotNil(VulkanCooperativeMatrix.check(context.instance, context.physical, apiVersion: props.apiVersion))
        }
        let b = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, pointwiseGEMM: false, winograd: .never,
                                  convolutionRows: false, implicitGEMM: true, cooperativeGEMM: true)
        let coop = context.hasCooperativeMatrix ? "convolution_gemm_coop" : "convolution_gemm_coop_emulated"
        let cases: [ConvolutionCase] = [(1, 1, 1, 1, (0, 0, 0, 0)), (3, 3, 1, 1, (1, 1, 1, 1)), (3, 3, 2, 2, (2, 1, 0, 3)), (7, 3, 3, 1, (3, 1, 2, 0))]
        try checkConvolutions(on: b, "cooperative GEMM", channels: [(3, 17), (20, 64), (8, 65), (64, 130), (5, 16), (1000, 64)],
                              sizes: { ic in ic == 1000 ? [(5, 7)] : [(1, 1), (5, 7), (21, 37)] }, cases: cases) { _, oc, c, shaders, what in
            let want = precision == .fp16 && oc > 16 ? coop
                : c.k == 1 ? "convolution_1x1_lanes" : oc <= 16 ? "convolution_gemm16" : "convolution_gemm"
            XCTAssertEqual(shaders, [want], what)
        }
    }

    /// A convolution case: kernel height and width, stride, dilation, pads (top, left, bottom, right).
    typealias ConvolutionCase = (k: Int, kw: Int, stride: Int, dilation: Int, pads: (Int, Int, Int, Int))

    /// Every convolution of `cases` × `channels` (in → out) × `sizes(in)` (height, width) whose
    /// output is not empty — identity, leaky ReLU and PReLU by turns, no bias in the second case
    /// — on `b` against the reference; `check` is given the shaders each recorded.
    func checkConvolutions(on b: VulkanBackend, _ label: String, channels: [(Int, Int)], sizes: (Int) -> [(Int, Int)], cases: [ConvolutionCase],
                           check: (Int, Int, ConvolutionCase, [String], String) -> Void) throws {
        for (ic, oc) in channels {
            for (h, w) in sizes(ic) {
                for (i, c) in cases.enumerated() {
                    let act: Activation = i % 3 == 0 ? .identity : i % 3 == 1 ? .leakyRelu(slope: 0.1) : .prelu(slopes: rng.array(oc))
                    let g = chain([(conv(oc, ic, k: c.k, kw: c.kw, stride: c.stride, dilation: c.dilation, pads: c.pads, bias: i != 1,
                                         activation: act), [1])])
                    let s = Shape(c: ic, h: h, w: w)
                    guard (try? g.inferShapes(input: s)) != nil else { continue }
                    let what = "\(label): \(ic)→\(oc), \(c.k)x\(c.kw) stride \(c.stride) dilation \(c.dilation) pads \(c.pads), \(w)x\(h)"
                    try compare(g, s, what, on: b)
                    check(ic, oc, c, try XCTUnwrap(b.prepare(g, input: s) as? VulkanPrepared).shaders, what)
                }
            }
        }
    }

    /// Depthwise 3×3 convolutions in runs of 8 pixels of a row (convolution_depthwise_s1 and
    /// _s2, with the row shaders: the CPU's choice) and one value per invocation
    /// (convolution.comp) against the reference: channels 3, 4, 5 and 64, channel multipliers 1
    /// and 2, strides 1 and 2, equal, unequal and no padding, pictures 7×5, 1×1, 9×13 and
    /// 37×21 (runs cut by the picture's edge, more than one workgroup), bias or none, fused
    /// activations — and the shader each records. Dilated and 5×5 depthwise layers, which it
    /// does not take, keep convolution.comp.
    func testDepthwiseRows() throws {
        let automatic = try backend()
        for rows in [true, false] {
            let b = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, convolutionRows: rows)
            typealias Case = (k: Int, stride: Int, dilation: Int, pads: (Int, Int, Int, Int))
            let cases: [Case] = [(3, 1, 1, (1, 1, 1, 1)), (3, 2, 1, (1, 1, 1, 1)), (3, 2, 1, (0, 0, 1, 1)), (3, 1, 1, (0, 2, 1, 0)),
                                 (3, 1, 2, (2, 2, 2, 2)), (5, 1, 1, (2, 2, 2, 2))]
            for c in [3, 4, 5, 64] {
                for multiplier in [1, 2] {
                    for (h, w) in [(7, 5), (1, 1), (9, 13), (21, 37)] {
                        for (i, k) in cases.enumerated() {
                            let oc = c * multiplier
                            let act: Activation = i % 3 == 0 ? .identity : i % 3 == 1 ? .relu : .prelu(slopes: rng.array(oc))
                            let g = chain([(conv(oc, c, k: k.k, stride: k.stride, dilation: k.dilation, pads: k.pads, groups: c, bias: i != 3,
                                                 activation: act), [1])])
                            let s = Shape(c: c, h: h, w: w)
                            guard (try? g.inferShapes(input: s)) != nil else { continue }
                            let what = "\(rows ? "rows" : "one value"): depthwise \(c)×\(multiplier), \(k.k)x\(k.k) stride \(k.stride) dilation \(k.dilation) pads \(k.pads), \(w)x\(h)"
                            try compare(g, s, what, on: b)
                            let shaders = try XCTUnwrap(b.prepare(g, input: s) as? VulkanPrepared).shaders
                            let want = rows && k.k == 3 && k.dilation == 1 ? "convolution_depthwise_s\(k.stride)" : "convolution"
                            XCTAssertEqual(shaders, [want], what)
                        }
                    }
                }
            }
        }
    }

    func testPhasedDeconvolution() throws {
        assertCPUOnlySwitch("VIVIFY_VULKAN_DECONV_PHASES", VulkanBackend.deconvolutionPhases)
        let automatic = try backend()
        XCTAssertEqual(automatic.deconvolutionPhases, automatic.isCPU)
        let phased = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, deconvolutionPhases: true)
        let gathered = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, deconvolutionPhases: false)
        func shaders(_ b: VulkanBackend, _ g: Graph, _ s: Shape) throws -> [String] {
            guard let prepared = try b.prepare(g, input: s) as? VulkanPrepared else {
                XCTFail("the Vulkan backend prepared no VulkanPrepared")
                return []
            }
            return prepared.shaders
        }
        typealias Case = (k: Int, kw: Int, stride: Int, strideW: Int, pads: (Int, Int, Int, Int), outputPad: (Int, Int), bias: Bool)
        let cases: [Case] = [
            (4, 4, 2, 2, (3, 3, 3, 3), (0, 0), true),   // waifu2x-upconv7's tail
            (4, 4, 2, 2, (1, 1, 1, 1), (0, 0), true),
            (3, 3, 2, 2, (1, 0, 2, 1), (1, 1), false),
            (2, 2, 2, 2, (0, 0, 0, 0), (0, 0), true),
            (3, 3, 3, 3, (0, 1, 1, 0), (2, 0), true),
            (6, 5, 3, 3, (4, 2, 1, 3), (0, 1), true),
            (3, 4, 3, 2, (1, 2, 0, 1), (1, 1), true),
            // Kernels no larger than the stride: one tap a phase (deconvolution_phases1).
            (3, 3, 3, 3, (1, 1, 0, 2), (0, 0), true),
            (2, 3, 2, 3, (0, 1, 1, 0), (1, 2), true),
            (2, 2, 3, 3, (0, 0, 0, 0), (2, 1), false),
        ]
        for (ic, oc) in [(3, 3), (5, 5), (64, 3), (3, 64), (4, 5)] {
            for (h, w) in [(7, 5), (1, 1), (21, 37)] {
                for (i, c) in cases.enumerated() {
                    let act: Activation = i % 3 == 0 ? .identity : i % 3 == 1 ? .leakyRelu(slope: 0.1) : .prelu(slopes: rng.array(oc))
                    let g = chain([(deconv(oc, ic, k: c.k, kw: c.kw, stride: c.stride, strideW: c.strideW, pads: c.pads, outputPad: c.outputPad,
                                           bias: c.bias, activation: act), [1])])
                    let s = Shape(c: ic, h: h, w: w)
                    guard (try? g.inferShapes(input: s)) != nil else { continue }
                    let what = "phased deconvolution \(ic)→\(oc) \(c.k)x\(c.kw)/\(c.stride),\(c.strideW) pads \(c.pads) \(w)x\(h)"
                    let one = c.k <= c.stride && c.kw <= c.strideW
                    XCTAssertEqual(try shaders(phased, g, s), [one ? "deconvolution_phases1" : "deconvolution_phases"], what)
                    XCTAssertEqual(try shaders(gathered, g, s), ["deconvolution"], what)
                    try compare(g, s, what, on: phased)
                }
            }
        }
        let s = Shape(c: 4, h: 7, w: 5)
        for op in [deconv(6, 4, k: 3, stride: 2, groups: 2), deconv(4, 4, k: 3, stride: 2, dilation: 2), deconv(4, 4, k: 5, stride: 2)] {
            XCTAssertEqual(try shaders(phased, chain([(op, [1])]), s), ["deconvolution"])
        }
    }

    /// Automatic tiles: the CPU device keeps the CPU backends' 192 pixels within 1 GiB; a GPU
    /// takes up to 1024 within a quarter of its memory, at least 1 GiB and at most 16 GiB.
    func testTileBudget() throws {
        let automatic = try backend()
        if automatic.isCPU {
            XCTAssertEqual(automatic.tileMemoryBudget, TiledRunner.standardMemoryBudget)
            XCTAssertEqual(automatic.preferredTile, TiledRunner.preferredTile)
        } else {
            XCTAssertEqual(automatic.preferredTile, VulkanBackend.gpuPreferredTile)
        }
        XCTAssertEqual(VulkanBackend.gpuTileMemoryBudget(deviceLocalBytes: 2 << 30), 1 << 30)
        XCTAssertEqual(VulkanBackend.gpuTileMemoryBudget(deviceLocalBytes: 24 << 30), 6 << 30)
        XCTAssertEqual(VulkanBackend.gpuTileMemoryBudget(deviceLocalBytes: 141 << 30), 16 << 30)
        XCTAssertEqual(VulkanBackend.gpuPreferredTile, 1024)
    }

    /// Crops read by binary operations only are read in place (`VulkanPrepared.cropViews`):
    /// a U-Net's skip connection cropped and added after other layers that the arena would
    /// place over its source if the source's life ended at the crop (it fails so), read twice, cropped to one row and broadcast, and a crop
    /// like another value; the same values as the reference, and no copy. A crop that anything
    /// else reads is still copied.
    func testCropsReadInPlace() throws {
        func node(_ i: Int, _ op: Engine.Operation, _ inputs: [Int]) -> Node { Node(name: "n\(i)", op: op, inputs: inputs, output: i + 1) }
        let s = Shape(c: 5, h: 11, w: 13)
        let nodes = [
            node(0, conv(5, 5, k: 1), [0]),                                                     // v1: the skip connection, 5×11×13
            node(1, .crop(top: 2, left: 1, bottom: 2, right: 3), [1]),                         // v2: 7×9
            node(2, conv(5, 5, k: 3), [0]),                                                     // v3: 9×11
            node(3, conv(5, 5, k: 3, activation: .leakyRelu(slope: 0.1)), [3]),                         // v4: 7×9
            node(4, .activation(.sigmoid), [4]),                                                // v5
            node(5, .binary(.add, coefficients: [0.5, 2]), [5, 2]),                             // v6 = v5 + v2
            node(6, .binary(.mul, coefficients: nil), [2, 6]),                                  // v7 = v2 · v6
            node(7, .crop(top: 4, left: 1, bottom: 4, right: 1), [3]),                         // v8: one row of v3, 1×9
            node(8, .binary(.sub, coefficients: nil), [7, 8]),                                  // v9 = v7 − v8, the row broadcast
            node(9, .cropLike(top: 1, left: 2), [3, 9]),                                        // v10: v3 cropped like v9
            node(10, .binary(.max, coefficients: nil), [10, 9]),                                // v11
        ]
        let g = Graph(valueNames: ["in"] + nodes.indices.map { "v\($0)" }, nodes: nodes, input: 0, output: nodes.count, source: "test")
        try compare(g, s, "crops read in place")
        let prepared = try XCTUnwrap(try backend().prepare(g, input: s) as? VulkanPrepared)
        XCTAssertEqual(Set(prepared.cropViews.keys), [2, 8, 10])
        XCTAssertFalse(prepared.shaders.contains("window"), "\(prepared.shaders)")
        // VIVIFY_VULKAN_CROP_VIEWS=0 copies them, with the same values.
        XCTAssertTrue(VulkanBackend.cropViews(environment: [:]))
        XCTAssertFalse(VulkanBackend.cropViews(environment: ["VIVIFY_VULKAN_CROP_VIEWS": "0"]))
        let copying = try VulkanBackend(memoryPlan: try backend().memoryPlan, precision: precision, cropViews: false)
        try compare(g, s, "crops copied by request", on: copying)
        let copiedAll = try XCTUnwrap(try copying.prepare(g, input: s) as? VulkanPrepared)
        XCTAssertTrue(copiedAll.cropViews.isEmpty)
        XCTAssertEqual(copiedAll.shaders.filter { $0 == "window" }.count, 3)
        // A crop a convolution reads, and a crop that is the output, are copied.
        let copied = chain([(conv(5, 5, k: 1), [1]), (.crop(top: 1, left: 1, bottom: 1, right: 1), [1]), (conv(3, 5, k: 1), [1]),
                            (.crop(top: 1, left: 1, bottom: 1, right: 1), [1])])
        try compare(copied, s, "crops copied")
        let copies = try XCTUnwrap(try backend().prepare(copied, input: s) as? VulkanPrepared)
        XCTAssertTrue(copies.cropViews.isEmpty)
        XCTAssertEqual(copies.shaders.filter { $0 == "window" }.count, 2)
    }

    /// What `--precision auto` stores a measured model in: fp16 on a GPU with 16-bit storage,
    /// fp32 on the CPU (lavapipe) and without 16-bit storage; VIVIFY_VULKAN_AUTO_FP16 forces
    /// either, but never fp16 on a device that cannot store it; other values are refused.
    func testAutomaticPrecision() throws {
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: [:], isCPU: false, hasFP16Storage: true), .fp16)
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: [:], isCPU: true, hasFP16Storage: true), .fp32)
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: [:], isCPU: false, hasFP16Storage: false), .fp32)
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: ["VIVIFY_VULKAN_AUTO_FP16": "1"], isCPU: true, hasFP16Storage: true), .fp16)
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: ["VIVIFY_VULKAN_AUTO_FP16": "1"], isCPU: false, hasFP16Storage: false), .fp32)
        XCTAssertEqual(VulkanBackend.automaticPrecision(environment: ["VIVIFY_VULKAN_AUTO_FP16": "0"], isCPU: false, hasFP16Storage: true), .fp32)
        XCTAssertThrowsError(try VulkanBackend.checkSwitches(["VIVIFY_VULKAN_AUTO_FP16": "yes"]))
        let automatic = try backend()
        if automatic.isCPU && ProcessInfo.processInfo.environment["VIVIFY_VULKAN_AUTO_FP16"] == nil {
            XCTAssertEqual(automatic.automaticPrecision, .fp32, "lavapipe keeps fp32 under auto")
        }
    }

    /// Strided transposed convolutions rewritten as a convolution, a pixel shuffle and a crop
    /// before preparing (on GPUs by default): the same values as the reference within the
    /// precision's tolerance, for square strides with padding, output padding, kernels smaller
    /// and larger than the stride and every activation; the rewrite really ran (the
    /// gathering shader is gone), and what it cannot take (groups, dilation, unequal strides)
    /// still gathers.
    func testSubpixelDeconvolution() throws {
        XCTAssertFalse(VulkanBackend.subpixelDeconvolutions(environment: [:], isCPU: true))
        XCTAssertTrue(VulkanBackend.subpixelDeconvolutions(environment: [:], isCPU: false))
        XCTAssertTrue(VulkanBackend.subpixelDeconvolutions(environment: ["VIVIFY_VULKAN_SUBPIXEL": "1"], isCPU: true))
        XCTAssertFalse(VulkanBackend.subpixelDeconvolutions(environment: ["VIVIFY_VULKAN_SUBPIXEL": "0"], isCPU: false))
        let automatic = try backend()
        XCTAssertEqual(automatic.subpixelDeconvolutions,
                       VulkanBackend.subpixelDeconvolutions(environment: ProcessInfo.processInfo.environment, isCPU: automatic.isCPU))
        let subpixel = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, subpixelDeconvolutions: true)
        func shaders(_ g: Graph, _ s: Shape) throws -> [String] {
            (try subpixel.prepare(g, input: s) as? VulkanPrepared)?.shaders ?? ["no VulkanPrepared"]
        }
        typealias Case = (k: Int, stride: Int, pads: (Int, Int, Int, Int), outputPad: (Int, Int), bias: Bool)
        let cases: [Case] = [
            (4, 2, (3, 3, 3, 3), (0, 0), true),   // waifu2x-upconv7's tail
            (4, 2, (1, 1, 1, 1), (0, 0), true),   // Real-CUGAN's last layer
            (2, 2, (0, 0, 0, 0), (0, 0), true),   // Real-CUGAN's upsamplers: a 1×1 product per phase
            (3, 2, (1, 0, 2, 1), (0, 0), false),
            (3, 3, (0, 1, 1, 0), (0, 0), true),
            (5, 2, (2, 2, 2, 2), (0, 0), true),
            (2, 3, (0, 0, 0, 0), (0, 0), true),   // a kernel smaller than the stride: one tap, a row cropped
        ]
        for (ic, oc) in [(3, 3), (5, 5), (64, 3), (3, 64), (4, 5)] {
            for (h, w) in [(7, 5), (1, 1), (21, 37)] {
                for (i, c) in cases.enumerated() {
                    let act: Activation = i % 3 == 0 ? .identity : i % 3 == 1 ? .leakyRelu(slope: 0.1) : .prelu(slopes: rng.array(oc))
                    let g = chain([(deconv(oc, ic, k: c.k, stride: c.stride, pads: c.pads, outputPad: c.outputPad, bias: c.bias, activation: act), [1])])
                    let s = Shape(c: ic, h: h, w: w)
                    guard (try? g.inferShapes(input: s)) != nil else { continue }
                    let what = "sub-pixel deconvolution \(ic)→\(oc) \(c.k)x\(c.k)/\(c.stride) pads \(c.pads) \(w)x\(h)"
                    let used = try shaders(g, s)
                    XCTAssertFalse(used.contains { $0.hasPrefix("deconvolution") }, "\(what): \(used)")
                    XCTAssertTrue(used.contains("shuffle"), "\(what): \(used)")
                    // Nothing to crop (k = s, no padding): the shuffle writes the output, no copy after it.
                    XCTAssertEqual(used.contains("window"), !(c.k == c.stride && c.pads == (0, 0, 0, 0)), "\(what): \(used)")
                    try compare(g, s, what, on: subpixel)
                }
            }
        }
        let s = Shape(c: 4, h: 7, w: 5)
        for op in [deconv(6, 4, k: 3, stride: 2, groups: 2), deconv(4, 4, k: 3, stride: 2, dilation: 2), deconv(4, 4, k: 3, kw: 4, stride: 3, strideW: 2),
                   deconv(4, 4, k: 3, stride: 2, outputPad: (1, 1))] {
            let g = chain([(op, [1])])
            XCTAssertTrue(try shaders(g, s).contains { $0.hasPrefix("deconvolution") }, "\(op.kindName) not rewritten")
            try compare(g, s, "deconvolution left as it is", on: subpixel)
        }
        // A k = s layer ends at its pixel shuffle, which an upscaler's tail (the shuffle plus a
        // resized input) may then fuse into one pass: still the same values.
        let tail = chain([(deconv(3, 3, k: 2, stride: 2), [1]),
                          (.resize(.bilinear, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false), [2]),
                          (.binary(.add, coefficients: nil), [2, 1])])
        for shape in [Shape(c: 3, h: 7, w: 5), Shape(c: 3, h: 21, w: 37)] {
            try compare(tail, shape, "sub-pixel deconvolution and a resized input added \(shape)", on: subpixel)
        }
    }

    func testInstanceNormAndSoftmax() throws {
        for s in oddShapes + [Shape(c: 3, h: 67, w: 45)] {
            try compare(chain([(.instanceNorm(scale: rng.array(s.c), bias: rng.array(s.c), epsilon: 1e-5), [1])]), s, "instance norm \(s)")
            try compare(chain([(.softmaxChannels, [1])]), s, "softmax over channels \(s)")
            try compare(chain([(.softmax(axis: 2), [1])]), s, "softmax along columns \(s)")
            try compare(chain([(.softmax(axis: 3), [1])]), s, "softmax along rows \(s)")
        }
        // A constant channel: variance 0, epsilon alone under the root.
        try compare(chain([(.globalAveragePool, [1]), (.instanceNorm(scale: [1, 2, 3], bias: [0.5, 0, -1], epsilon: 1e-3), [1])]),
                    Shape(c: 3, h: 7, w: 5), "instance norm of a constant")
    }

    func testSpaceToDepthReshapeTransposeConcat() throws {
        try compare(chain([(.spaceToDepth(factor: 2), [1])]), Shape(c: 3, h: 8, w: 6), "space to depth 2")
        try compare(chain([(.spaceToDepth(factor: 3), [1])]), Shape(c: 5, h: 9, w: 6), "space to depth 3")
        try compare(chain([(.spaceToDepth(factor: 2), [1]), (.pixelShuffle(factor: 2, order: .dcr), [1])]), Shape(c: 64, h: 4, w: 6),
                    "space to depth, then back")
        try compare(chain([(.reshape(Shape(c: 5, h: 3, w: 7)), [1]), (.activation(.tanh), [1])]), Shape(c: 3, h: 7, w: 5), "reshape")
        for perm in [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            try compare(chain([(.transpose(perm: perm), [1])]), Shape(c: 3, h: 7, w: 5), "transpose \(perm)")
        }
        for axis in [2, 3] {
            try compare(chain([(.activation(.sigmoid), [1]), (.concat(axis: axis), [1, 2, 1])]), Shape(c: 4, h: 7, w: 5), "concat along \(axis)")
        }
        let k = Shape(c: 5, h: 1, w: 7)
        try compare(chain([(.constant(k, values: rng.array(k.count)), []), (.binary(.mul, coefficients: nil), [2, 1])]), Shape(c: 5, h: 6, w: 7),
                    "constant broadcast")
    }

    func testFullyConnected() throws {
        // Squeeze and excitation as realcugan has it: pool, two layers, a product.
        let s = Shape(c: 64, h: 7, w: 5)
        try compare(chain([
            (.globalAveragePool, [1]),
            (.fullyConnected(outFeatures: 8, weights: rng.array(8 * 64), bias: rng.array(8), activation: .relu), [1]),
            (.fullyConnected(outFeatures: 64, weights: rng.array(64 * 8), bias: rng.array(64), activation: .sigmoid), [1]),
            (.binary(.mul, coefficients: nil), [4, 1]),
        ]), s, "squeeze and excitation")
        let x = Shape(c: 3, h: 7, w: 5)
        try compare(chain([(.fullyConnected(outFeatures: 5, weights: rng.array(5 * x.count), bias: [], activation: .prelu(slopes: rng.array(5))), [1])]), x,
                    "fully connected over a whole picture")
        try compare(chain([(.rowMatMul(inFeatures: 5, outFeatures: 4, weights: rng.array(20), bias: rng.array(4)), [1])]), x, "row matmul")
        try compare(chain([(.rowMatMul(inFeatures: 5, outFeatures: 64, weights: rng.array(320), bias: []), [1])]), x, "row matmul, no bias")
    }

    /// Device-local buffers with staging, as on a discrete GPU, forced on this device (whose
    /// memory may be device-local and host-visible at once): weights and constants uploaded
    /// through staging buffers, the input copied in and the output out, runs repeated on the
    /// same recorded commands; an external layer in the middle keeps its values host-visible.
    func testStagedMemory() throws {
        let staged = try VulkanBackend(memoryPlan: .staged, precision: precision)
        XCTAssertEqual(staged.precision, precision)
        XCTAssertEqual(try backend().memoryPlan, VulkanMemoryPlan.automatic(for: staged.context))
        let s = Shape(c: 4, h: 9, w: 7)
        let k = Shape(c: 8, h: 1, w: 1)
        let g = chain([
            (conv(8, 4, k: 3, pads: (1, 1, 1, 1), activation: .leakyRelu(slope: 0.2)), [1]),
            (.pool(PoolParameters(kind: .max, kernelH: 2, kernelW: 2, strideH: 2, strideW: 2, ceilMode: true)), [1]),
            (deconv(8, 8, k: 2, stride: 2), [1]),
            (.constant(k, values: rng.array(k.count)), []),
            (.binary(.add, coefficients: nil), [2, 1]),
            (.resize(.bicubic, scaleH: 0.5, scaleW: 0.5, outH: 0, outW: 0, alignCorners: false), [1]),
            (.instanceNorm(scale: rng.array(8), bias: rng.array(8), epsilon: 1e-5), [1]),
        ])
        try compare(g, s, "staged chain", on: staged, runs: 3)
        // The input and output cross as floats: in fp16 converted by the device, not the host.
        let used = (try staged.prepare(g, input: s) as? VulkanPrepared)?.shaders ?? []
        XCTAssertEqual(used.first == "to_storage" && used.last == "from_storage", precision == .fp16, "\(used)")
        XCTAssertEqual((try staged.prepare(g, input: s) as? VulkanPrepared)?.inputStaging?.storage, .fp32)
        try compare(chain([(.activation(.relu), [1])]), s, "staged, one shader", on: staged, runs: 2)
        // Nothing but the input: copied in, then out.
        try compare(Graph(valueNames: ["in"], nodes: [], input: 0, output: 0, source: "test"), s, "staged identity", on: staged)
        let external = Engine.Operation.external(ExternalLayer(MirrorKernel()))
        try compare(chain([(conv(4, 4, k: 3, pads: (1, 1, 1, 1)), [1]), (external, [1]), (.activation(.sigmoid), [1])]), s,
                    "staged, external layer between shaders", on: staged, runs: 2)
        try compare(chain([(external, [1]), (conv(3, 4, k: 1), [1]), (external, [1])]), s, "staged, external layers first and last", on: staged, runs: 2)
    }

    /// The packed 4-channel layout (VIVIFY_VULKAN_PACK4=1; pack4.glsl), forced. Every dense
    /// and depthwise case with a packed operand: between two 1×1 layers (so its input is packed
    /// where it has 4 channels or more, and its output likewise), channels 3, 4, 5 and 64 in and
    /// out, kernels 1×1 to 5×3 with strides, dilation and unequal pads, pictures 1×1, 7×5 and
    /// 21×37 (runs of 4 cut by the row's end, more than one workgroup), fused activations
    /// (sigmoid too, which is not 0 at 0: the pad lanes must still be stored as 0); a layer with
    /// both operands plain keeps its plain shader. Then chains whose values between pack4
    /// shaders are packed, read by convolutions, depthwise ones, activations (PReLU per
    /// channel) and binaries (division of two 5-channel packed values, whose pad lanes would be
    /// 0 / 0 or 0.5 / 0), beside values that must stay plain (read by a pixel shuffle too); the
    /// pad lanes of values written by each writer, filled with NaN before the run, read back as
    /// zeros; Winograd on packed values; the arena-block rule; the choice of values and shaders
    /// checked; and the catalog models and the colorizer whole with it.
    func testPackedLayout() throws {
        XCTAssertFalse(VulkanBackend.packed(environment: [:]), "off until a GPU has timed it")
        XCTAssertTrue(VulkanBackend.packed(environment: ["VIVIFY_VULKAN_PACK4": "1"]))
        XCTAssertFalse(VulkanBackend.packed(environment: ["VIVIFY_VULKAN_PACK4": "0"]))
        XCTAssertThrowsError(try VulkanBackend.checkSwitches(["VIVIFY_VULKAN_PACK4": "on"]))
        let automatic = try backend()
        XCTAssertFalse(automatic.packed)
        let b = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, winograd: .wide, packed: true)
        let cases: [ConvolutionCase] = [(1, 1, 1, 1, (0, 0, 0, 0)), (3, 3, 1, 1, (1, 1, 1, 1)), (3, 3, 2, 1, (1, 0, 1, 2)),
                                        (5, 3, 1, 2, (4, 2, 3, 1)), (2, 2, 2, 1, (0, 0, 0, 0))]
        for (ic, oc) in [(3, 5), (4, 4), (5, 3), (64, 64), (3, 64)] {
            for (h, w) in [(1, 1), (7, 5), (21, 37)] {
                for (i, c) in cases.enumerated() {
                    let act: Activation = i % 3 == 0 ? .sigmoid : i % 3 == 1 ? .leakyRelu(slope: 0.1) : .prelu(slopes: rng.array(oc))
                    let layer = conv(oc, ic, k: c.k, kw: c.kw, stride: c.stride, dilation: c.dilation, pads: c.pads, bias: i != 1, activation: act)
                    let g = chain([(conv(ic, ic, k: 1), [1]), (layer, [1]), (conv(oc, oc, k: 1), [1])])
                    let s = Shape(c: ic, h: h, w: w)
                    guard (try? g.inferShapes(input: s)) != nil else { continue }
                    let what = "pack4: \(ic)→\(oc), \(c.k)x\(c.kw) stride \(c.stride) dilation \(c.dilation) pads \(c.pads), \(w)x\(h)"
                    try compare(g, s, what, on: b)
                    let p = try XCTUnwrap(b.prepare(g, input: s) as? VulkanPrepared)
                    XCTAssertEqual(p.packed, Set([1, 2].filter { $0 == 1 ? ic >= 4 : oc >= 4 }), what)
                    // The middle layer's dispatches: Winograd's (blocked, the CPU's, from 400 output
                    // pixels) or the pack4 shader.
                    let o = try XCTUnwrap(g.inferShapes(input: s)[2])
                    let winograd = c.k == 3 && c.kw == 3 && c.stride == 1 && c.dilation == 1 && ic >= 16 && oc >= 16
                        && (!b.winogradBlocked || o.h * o.w >= VulkanPrepared.blockedWinogradMinimumPlane)
                    let middle = Array(p.shaders.dropFirst().dropLast())
                    if winograd {
                        XCTAssertEqual([middle.first, middle.last], ["winograd_input", "winograd_output"], what)
                        XCTAssertTrue(middle.allSatisfy { $0.hasPrefix("winograd") }, "\(what): \(middle)")
                    } else {
                        XCTAssertEqual(middle, ["convolution_pack4"], what)
                    }
                }
            }
        }
        // Every operand plain: the plain shaders, as without pack4 (convolutions, activations
        // and binaries alike).
        for (op, want) in [(conv(8, 4, k: 3, pads: (1, 1, 1, 1), groups: 4), "convolution_depthwise_s1"), (conv(3, 4, k: 3), "convolution_rows4"),
                           (.activation(.sigmoid), "activation"), (.binary(.add, coefficients: nil), "binary4")] {
            let g = chain([(op, op.kindName.hasPrefix("binary") ? [1, 1] : [1])])
            let plain = try XCTUnwrap(b.prepare(g, input: Shape(c: 4, h: 9, w: 11)) as? VulkanPrepared)
            XCTAssertEqual(plain.packed, [])
            if b.convolutionRows || op.kindName != "convolution" { XCTAssertEqual(plain.shaders, [want], op.kindName) }
        }
        for c in [3, 5, 64] {
            for (k, stride, dilation, pads) in [(3, 1, 1, (1, 1, 1, 1)), (3, 2, 1, (0, 1, 1, 0)), (5, 1, 2, (4, 4, 4, 4))] {
                let g = chain([(conv(c, c, k: 1), [1]),
                               (conv(c, c, k: k, stride: stride, dilation: dilation, pads: pads, groups: c, activation: .sigmoid), [1]),
                               (conv(c, c, k: 1), [1])])
                for (h, w) in [(1, 1), (7, 5), (21, 37)] where (try? g.inferShapes(input: Shape(c: c, h: h, w: w))) != nil {
                    let s = Shape(c: c, h: h, w: w)
                    let what = "pack4 depthwise \(c), \(k)x\(k) stride \(stride) dilation \(dilation), \(w)x\(h)"
                    try compare(g, s, what, on: b)
                    let p = try XCTUnwrap(b.prepare(g, input: s) as? VulkanPrepared)
                    XCTAssertEqual(p.packed, c >= 4 ? [1, 2] : [], what)
                    if c >= 4 { XCTAssertEqual(p.shaders, ["convolution_pack4", "convolution_depthwise_pack4", "convolution_pack4"], what) }
                }
            }
        }
        // The pad lanes of values written by convolution_pack4 (v1) and activation_pack4 (v2),
        // both alive to the last layer (so the output never reuses their bytes), filled with NaN
        // before the run: zeros after it, every other lane written.
        let writers = chain([(conv(5, 3, k: 3, pads: (1, 1, 1, 1)), [1]), (.activation(.sigmoid), [1]), (.binary(.add, coefficients: nil), [1, 2])])
        let mapped = try VulkanBackend(memoryPlan: .mapped, precision: precision, packed: true)
        let wr = try XCTUnwrap(mapped.prepare(writers, input: Shape(c: 3, h: 7, w: 9)) as? VulkanPrepared)
        XCTAssertEqual(wr.packed, [1, 2])
        XCTAssertEqual(wr.shaders, ["convolution_pack4", "activation_pack4", "binary_pack4"])
        for v in [1, 2] { [Float](repeating: .nan, count: wr.buffers[v].count).withUnsafeBufferPointer { wr.buffers[v].write($0) } }
        _ = try wr.run(Tensor(shape: Shape(c: 3, h: 7, w: 9), data: rng.array(3 * 7 * 9)))
        for v in [1, 2] {
            var stored = [Float](repeating: 0, count: wr.buffers[v].count)
            stored.withUnsafeMutableBufferPointer { wr.buffers[v].read(into: $0) }
            XCTAssertEqual(stored.count, 8 * 7 * 9)
            let pads = stored.enumerated().filter { $0.offset >= 7 * 9 * 4 && $0.offset % 4 >= 1 }.map(\.element)
            XCTAssertEqual(pads, [Float](repeating: 0, count: 3 * 7 * 9), "v\(v)'s pad lanes")
            XCTAssertFalse(stored.contains { $0.isNaN }, "v\(v): every lane written")
        }
        // Values between pack4 shaders packed: v1 (5 channels, sigmoid: 0.5 where a pad lane
        // were not stored as 0), v2 (5, at least 2: its pad lanes 0 either way), v3 = v1 / v2
        // (its pad lanes 0 / 0 or 0.5 / 0 unless stored as 0, and the next convolution's
        // 0 · NaN or 0 · ∞ would reach the output), v4 … v7 (7 channels); v8 is the output.
        let denominator = Engine.Operation.convolution(ConvolutionParameters(
            outChannels: 5, inChannels: 5, kernelH: 1, kernelW: 1, strideH: 1, strideW: 1, dilationH: 1, dilationW: 1, padTop: 0, padLeft: 0,
            padBottom: 0, padRight: 0, groups: 1, weights: rng.array(25).map { $0 / 10 }, bias: [3, 2.5, 3, 3.5, 3], activation: .identity))
        let packedChain = chain([
            (conv(5, 3, k: 3, pads: (1, 1, 1, 1), activation: .sigmoid), [1]),
            (denominator, [1]),
            (.binary(.div, coefficients: nil), [2, 1]),
            (conv(7, 5, k: 3, stride: 2, pads: (1, 1, 1, 1), activation: .relu), [1]),
            (conv(7, 7, k: 3, pads: (1, 1, 1, 1), groups: 7), [1]),
            (.activation(.prelu(slopes: rng.array(7))), [1]),
            (.binary(.add, coefficients: [0.5, 2]), [1, 2]),
            (conv(3, 7, k: 3, pads: (1, 1, 1, 1)), [1]),
        ])
        for (h, w) in [(7, 5), (21, 37)] {
            try compare(packedChain, Shape(c: 3, h: h, w: w), "pack4 chain, \(w)x\(h)", on: b, runs: 2)
        }
        // The staged plan too (device-local arena, the input and output through staging
        // buffers: a GPU's), which the tests otherwise leave to the mapped one on lavapipe.
        let staged = try VulkanBackend(memoryPlan: .staged, precision: precision, packed: true)
        try compare(packedChain, Shape(c: 3, h: 21, w: 37), "pack4 chain, staged", on: staged, runs: 2)
        let prepared = try XCTUnwrap(b.prepare(packedChain, input: Shape(c: 3, h: 21, w: 37)) as? VulkanPrepared)
        XCTAssertEqual(prepared.packed, [1, 2, 3, 4, 5, 6, 7])
        XCTAssertEqual(prepared.shaders, ["convolution_pack4", "convolution_pack4", "binary_pack4", "convolution_pack4",
                                          "convolution_depthwise_pack4", "activation_pack4", "binary_pack4", "convolution_pack4"])
        XCTAssertEqual(prepared.storedCount(4), 8 * 11 * 19)
        // v1 is read by a pixel shuffle too: plain. v3 and v4, written by Winograd's convolutions
        // (and v3 read by one), and v5, written by a 1×1 convolution and read by an add whose
        // other operand (v6, a space-to-depth's) is plain, are packed.
        let mixed = chain([
            (conv(16, 4, k: 1, activation: .relu), [1]),
            (.pixelShuffle(factor: 2, order: .crd), [1]),
            (conv(16, 16, k: 3, pads: (1, 1, 1, 1)), [2]),
            (conv(16, 16, k: 3, pads: (1, 1, 1, 1)), [1]),
            (conv(16, 16, k: 1), [1]),
            (.spaceToDepth(factor: 2), [4]),
            (.binary(.add, coefficients: nil), [2, 1]),
        ])
        let mixedShape = Shape(c: 4, h: 21, w: 23)
        try compare(mixed, mixedShape, "pack4 beside plain values", on: b, runs: 2)
        let mixedPrepared = try XCTUnwrap(b.prepare(mixed, input: mixedShape) as? VulkanPrepared)
        XCTAssertEqual(mixedPrepared.packed, [3, 4, 5])
        XCTAssertEqual(mixedPrepared.shaders.filter { $0.hasPrefix("winograd") }.count, 6, "n2 and n3 by Winograd")
        // Winograd's transforms on packed values of 5 and 6 channels (forced on layers of few
        // channels), 1×1 layers by the pack4 shader before and after (a 7×7 one first made the
        // chain too ill-conditioned for fp16's tolerance, with or without pack4). The pad lanes
        // of v2 (channels 6 and 7), filled with NaN before the run, must come out as zeros: its
        // transform stores them (sigmoid(0) would be 0.5).
        let w = try VulkanBackend(memoryPlan: .mapped, precision: precision, winograd: .always, packed: true)
        let winogradChain = chain([
            (conv(5, 3, k: 1), [1]),
            (conv(6, 5, k: 3, pads: (1, 1, 1, 1), activation: .sigmoid), [1]),
            (conv(3, 6, k: 1), [1]),
        ])
        for (h, wd) in [(7, 5), (1, 1), (21, 37)] {
            try compare(winogradChain, Shape(c: 3, h: h, w: wd), "pack4 Winograd, \(wd)x\(h)", on: w, runs: 2)
        }
        let wp = try XCTUnwrap(w.prepare(winogradChain, input: Shape(c: 3, h: 9, w: 11)) as? VulkanPrepared)
        XCTAssertEqual(wp.packed, [1, 2])
        XCTAssertEqual(wp.shaders.first, "convolution_pack4")
        XCTAssertEqual(wp.shaders.last, "convolution_pack4")
        let transforms = Array(wp.shaders.dropFirst().dropLast())
        XCTAssertEqual([transforms.first, transforms.last], ["winograd_input", "winograd_output"])
        XCTAssertTrue(transforms.allSatisfy { $0.hasPrefix("winograd") }, "\(transforms)")
        let v2 = wp.buffers[2]
        XCTAssertEqual(v2.count, 8 * 9 * 11)
        [Float](repeating: .nan, count: v2.count).withUnsafeBufferPointer { v2.write($0) }
        _ = try wp.run(Tensor(shape: Shape(c: 3, h: 9, w: 11), data: rng.array(3 * 9 * 11)))
        var stored = [Float](repeating: 0, count: v2.count)
        stored.withUnsafeMutableBufferPointer { v2.read(into: $0) }
        let quad1 = stored[(9 * 11 * 4)...]
        XCTAssertEqual(quad1.enumerated().filter { $0.offset % 4 >= 2 }.map(\.element), [Float](repeating: 0, count: 2 * 9 * 11), "pad lanes")
        XCTAssertTrue(stored.enumerated().allSatisfy { $0.offset >= 9 * 11 * 4 && $0.offset % 4 >= 2 || ($0.element >= 0 && $0.element <= 1) },
                      "every channel's value written (a sigmoid's, not NaN)")
        // A 5-channel value whose 8 packed channels would pass what one arena block holds stays
        // plain (the tiler sizes tiles by plain values); with room for them it is packed.
        let stride = precision == .fp16 ? 2 : 4
        let narrow = chain([(conv(5, 3, k: 1), [1]), (conv(3, 5, k: 1), [1])])
        for (limit, want) in [(6 * 256 * stride, Set<Int>()), (8 * 256 * stride, Set([1]))] {
            let small = try VulkanBackend(memoryPlan: automatic.memoryPlan, precision: precision, arenaBlockLimit: limit, packed: true)
            try compare(narrow, Shape(c: 3, h: 16, w: 16), "pack4, arena blocks of \(limit) bytes", on: small)
            XCTAssertEqual(try XCTUnwrap(small.prepare(narrow, input: Shape(c: 3, h: 16, w: 16)) as? VulkanPrepared).packed, want, "\(limit)")
        }
        // Whole models: the catalog's upscalers and the colorizer.
        for (param, graph, shape) in try catalogUpscalers() {
            try compare(graph, shape, "pack4 \(param)", on: b, picture: true, tolerance: modelTolerance)
            let p = try XCTUnwrap(b.prepare(graph, input: shape) as? VulkanPrepared)
            XCTAssertTrue(p.shaders.contains("convolution_pack4"), param)
        }
        let colorizer = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Models/vivify-color.param").standardized.path
        let graph = try NCNNImporter.load(paramPath: colorizer, inputName: "in0", outputName: "out0")
        let shape = Shape(c: 1, h: 64, w: 64)
        try compare(graph, shape, "pack4 vivify-color", on: b, picture: true, tolerance: modelTolerance)
        let p = try XCTUnwrap(b.prepare(graph, input: shape) as? VulkanPrepared)
        XCTAssertGreaterThan(p.packed.count, 40, "most of the colorizer's values are between pack4 shaders")
        XCTAssertTrue(p.shaders.contains("convolution_depthwise_pack4"))
    }

    /// Three catalog upscalers from ../shared/models (realesr-animevideov3-x2, waifu2x-upconv7
    /// photo 2x, realcugan-2x conservative) with the small picture each is checked on; a skip
    /// where ../shared/models is not beside the checkout.
    func catalogUpscalers() throws -> [(param: String, graph: Graph, shape: Shape)] {
        let models = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../../shared/models/ncnn").standardized.path
        return try [("realesr-animevideov3/realesr-animevideov3-x2.param", Shape(c: 3, h: 24, w: 32)),
                    ("waifu2x-upconv7-photo/scale2.0x_model.param", Shape(c: 3, h: 24, w: 32)),
                    ("realcugan-se/up2x-conservative.param", Shape(c: 3, h: 44, w: 40))].map { param, shape in
            let path = "\(models)/\(param)"
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is not here: ../shared/models is needed") }
            return (param, try NCNNImporter.load(paramPath: path), shape)
        }
    }

    /// Real upscalers from ../shared/models, whole graphs on small pictures (values in [0, 1]:
    /// on values in [−1, 1] realcugan's output reaches about 220 and rounding differences grow
    /// with it: 2.4e-4 relative there, 3.0e-5 even with only its convolutions as shaders).
    func testRealModels() throws {
        // realcugan-2x: global means, fully connected layers and transposed convolutions, all
        // on the device now.
        for (param, graph, shape) in try catalogUpscalers() {
            try compare(graph, shape, param, picture: true, tolerance: modelTolerance)
            if param.hasPrefix("realcugan") {
                // Its four skip connections, cropped and added, are read in place.
                let prepared = try XCTUnwrap(try backend().prepare(graph, input: shape) as? VulkanPrepared)
                XCTAssertEqual(prepared.cropViews.count, 4, param)
            }
        }
    }
}

/// An external layer for the tests: each row mirrored left to right (a host step).
final class MirrorKernel: ExternalKernel {
    var label: String { "mirror" }
    func outputShape(for input: Shape) throws -> Shape { input }
    func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws {
        for row in 0..<(s.c * s.h) { for i in 0..<s.w { y[row * s.w + i] = x[row * s.w + s.w - 1 - i] } }
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
