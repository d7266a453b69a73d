@testable import Engine
import EngineDNNL
import XCTest

/// Every operation, run alone by the oneDNN backend and by the reference backend on the same
/// seeded random input: max |a − b| ≤ 1e-4 · max(1, |b|) (ncnn's habit of per-op tests).
final class OpParityTests: XCTestCase {
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

    let fast = try! DNNLBackend()
    var rng = SplitMix(state: 42)
    /// The operation cases `check` has run, for `testEveryOperationHasAParityCheck`.
    var covered = Set<Engine.Operation.Kind>()

    /// Runs `op` on inputs of `shapes` (the first is the graph input; the others are made by
    /// a constant-free trick: slices of a concatenated input would complicate things, so extra
    /// inputs are produced from the first by a fixed convolution).
    func check(_ name: String, _ op: Engine.Operation, input: Shape, second: Shape? = nil,
               file: StaticString = #filePath, line: UInt = #line) throws {
        covered.insert(op.kind)
        var nodes: [Node] = []
        var names = ["in"]
        var inputs = [0]
        if let second {
            // Make the second operand from the input with a random 1×1 convolution + resize.
            let w = rng.array(second.c * input.c)
            names.append("b0")
            nodes.append(Node(name: "make-b", op: .convolution(ConvolutionParameters(outChannels: second.c, inChannels: input.c, kernelH: 1, kernelW: 1, weights: w)), inputs: [0], output: 1))
            var last = 1
            if second.h != input.h || second.w != input.w {
                names.append("b1")
                nodes.append(Node(name: "shape-b", op: .resize(.nearest, scaleH: 0, scaleW: 0, outH: second.h, outW: second.w, alignCorners: false), inputs: [1], output: 2))
                last = 2
            }
            inputs.append(last)
        }
        names.append("out")
        nodes.append(Node(name: name, op: op, inputs: inputs, output: names.count - 1))
        let graph = Graph(valueNames: names, nodes: nodes, input: 0, output: names.count - 1, source: "test:\(name)")
        let x = Tensor(shape: input, data: rng.array(input.count))
        let a = try fast.prepare(graph, input: input).run(x)
        let b = try ReferenceBackend().prepare(graph, input: input).run(x)
        XCTAssertEqual(a.shape, b.shape, name, file: file, line: line)
        let worst = zip(a.data, b.data).map { abs($0 - $1) / max(1, abs($1)) }.max() ?? 0
        XCTAssertLessThanOrEqual(worst, 1e-4, "\(name): relative difference \(worst)", file: file, line: line)
    }

    func conv(_ o: Int, _ i: Int, k: Int, stride: Int = 1, dilation: Int = 1, pads: (Int, Int, Int, Int) = (0, 0, 0, 0),
              groups: Int = 1, act: Activation = .identity, transposed: Bool = false, outputPad: Int = 0) -> ConvolutionParameters {
        let count = transposed ? i * (o / groups) * k * k : o * (i / groups) * k * k
        return ConvolutionParameters(outChannels: o, inChannels: i, kernelH: k, kernelW: k, strideH: stride, strideW: stride,
                                     dilationH: dilation, dilationW: dilation, padTop: pads.0, padLeft: pads.1, padBottom: pads.2, padRight: pads.3,
                                     outputPadH: outputPad, outputPadW: outputPad, groups: groups,
                                     weights: rng.array(count).map { $0 * 0.3 }, bias: rng.array(o), activation: act)
    }

    func testConvolutions() throws {
        let s = Shape(c: 8, h: 19, w: 23)
        try check("conv 3x3", .convolution(conv(16, 8, k: 3, pads: (1, 1, 1, 1))), input: s)
        try check("conv valid 3x3 wide", .convolution(conv(32, 16, k: 3)), input: Shape(c: 16, h: 20, w: 21))
        try check("conv stride 2", .convolution(conv(16, 8, k: 3, stride: 2, pads: (1, 1, 1, 1))), input: s)
        try check("conv 2x2 stride 2", .convolution(conv(16, 8, k: 2, stride: 2)), input: s)
        try check("conv dilation 2", .convolution(conv(8, 8, k: 3, dilation: 2, pads: (2, 2, 2, 2))), input: s)
        try check("conv groups 2", .convolution(conv(8, 8, k: 3, pads: (1, 1, 1, 1), groups: 2)), input: s)
        try check("conv depthwise", .convolution(conv(8, 8, k: 3, pads: (1, 1, 1, 1), groups: 8)), input: s)
        try check("conv asymmetric pad", .convolution(conv(4, 8, k: 3, pads: (0, 2, 1, 0))), input: s)
        try check("conv + relu", .convolution(conv(16, 8, k: 3, act: .relu)), input: s)
        try check("conv + leaky", .convolution(conv(16, 8, k: 3, act: .leakyRelu(slope: 0.1))), input: s)
        try check("conv + sigmoid", .convolution(conv(16, 8, k: 1, act: .sigmoid)), input: s)
        try check("conv + silu", .convolution(conv(16, 8, k: 1, act: .silu)), input: s)
        try check("conv + tanh", .convolution(conv(16, 8, k: 1, act: .tanh)), input: s)
        try check("conv + clip", .convolution(conv(16, 8, k: 1, act: .clip(min: -0.2, max: 0.3))), input: s)
        try check("conv + prelu", .convolution(conv(16, 8, k: 3, act: .prelu(slopes: rng.array(16)))), input: s)
    }

    /// The MobileNetV2 encoder's shapes (vivify-color): blocked channel counts, TensorFlow's
    /// 'same' padding of a stride-2 layer (nothing before, one pixel after), ReLU6.
    func testMobileNetShapes() throws {
        let s = Shape(c: 32, h: 28, w: 28)
        let relu6 = Activation.clip(min: 0, max: 6)
        try check("depthwise 3x3 stride 2 same + relu6", .convolution(conv(32, 32, k: 3, stride: 2, pads: (0, 0, 1, 1), groups: 32, act: relu6)), input: s)
        try check("depthwise 3x3 + relu6", .convolution(conv(32, 32, k: 3, pads: (1, 1, 1, 1), groups: 32, act: relu6)), input: s)
        try check("expand 1x1 + relu6", .convolution(conv(96, 32, k: 1, act: relu6)), input: s)
        try check("project 1x1 linear", .convolution(conv(24, 32, k: 1)), input: s)
        try check("first conv 1->32 stride 2 same + relu6", .convolution(conv(32, 1, k: 3, stride: 2, pads: (0, 0, 1, 1), act: relu6)), input: Shape(c: 1, h: 32, w: 32))
        try check("global vector broadcast over a map", .binary(.add, coefficients: nil), input: Shape(c: 128, h: 7, w: 7), second: Shape(c: 128, h: 1, w: 1))
    }

    func testTransposedConvolutions() throws {
        let s = Shape(c: 8, h: 11, w: 13)
        try check("deconv k4 s2 p3", .deconvolution(conv(3, 8, k: 4, stride: 2, pads: (3, 3, 3, 3), transposed: true)), input: s)
        try check("deconv k2 s2", .deconvolution(conv(8, 8, k: 2, stride: 2, act: .leakyRelu(slope: 0.1), transposed: true)), input: s)
        try check("deconv k5 s3 p2", .deconvolution(conv(3, 8, k: 5, stride: 3, pads: (2, 2, 2, 2), transposed: true)), input: s)
        try check("deconv output padding", .deconvolution(conv(4, 8, k: 3, stride: 2, pads: (1, 1, 1, 1), transposed: true, outputPad: 1)), input: s)
    }

    func testActivationsAndElementwise() throws {
        let s = Shape(c: 6, h: 9, w: 10)
        for a: Activation in [.relu, .leakyRelu(slope: 0.2), .prelu(slopes: rng.array(6)), .prelu(slopes: [0.25]), .silu, .sigmoid, .tanh, .clip(min: -0.5, max: 0.5)] {
            try check("activation \(a)", .activation(a), input: s)
        }
        for k: BinaryKind in [.add, .sub, .mul, .div, .max, .min] {
            try check("binary \(k) same shape", .binary(k, coefficients: nil), input: s, second: s)
            try check("binary \(k) per channel", .binary(k, coefficients: nil), input: s, second: Shape(c: 6, h: 1, w: 1))
            try check("binary \(k) per pixel", .binary(k, coefficients: nil), input: s, second: Shape(c: 1, h: 9, w: 10))
        }
        try check("binary add broadcast first", .binary(.add, coefficients: nil), input: Shape(c: 6, h: 1, w: 1), second: s)
        try check("eltwise with coefficients", .binary(.add, coefficients: [0.5, -2]), input: s, second: s)
        try check("scalar sub", .scalar(.sub, 0.25, scalarFirst: false), input: s)
        try check("scalar rdiv", .scalar(.div, 2, scalarFirst: true), input: s)
        try check("batch norm", .channelAffine(scale: rng.array(6), bias: rng.array(6)), input: s)
        try check("softmax", .softmaxChannels, input: s)
    }

    /// A colorizer head: convolutions (blocked layouts) around a bilinear ×2 and ×4 (oneDNN
    /// resampling) and a softmax over many channels (oneDNN softmax on channels-last data).
    func testResamplingAndSoftmaxAfterConvolutions() throws {
        let input = Shape(c: 1, h: 12, w: 16)
        let names = ["in", "c1", "up2", "up4", "logits", "prob", "ab"]
        let nodes = [
            Node(name: "c1", op: .convolution(conv(32, 1, k: 3, pads: (1, 1, 1, 1))), inputs: [0], output: 1),
            Node(name: "up2", op: .resize(.bilinear, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false), inputs: [1], output: 2),
            Node(name: "up4", op: .resize(.bilinear, scaleH: 0, scaleW: 0, outH: 96, outW: 128, alignCorners: false), inputs: [2], output: 3),
            Node(name: "logits", op: .convolution(conv(169, 32, k: 1)), inputs: [3], output: 4),
            Node(name: "prob", op: .softmaxChannels, inputs: [4], output: 5),
            Node(name: "ab", op: .convolution(conv(2, 169, k: 1)), inputs: [5], output: 6),
        ]
        let graph = Graph(valueNames: names, nodes: nodes, input: 0, output: 6, source: "test:head")
        let x = Tensor(shape: input, data: rng.array(input.count))
        for output in [5, 6] {
            var g = graph
            g.output = output
            g.nodes = Array(graph.nodes.prefix(output))
            let a = try fast.prepare(g, input: input).run(x)
            let b = try ReferenceBackend().prepare(g, input: input).run(x)
            XCTAssertEqual(a.shape, b.shape)
            XCTAssertEqual(a.shape, output == 5 ? Shape(c: 169, h: 96, w: 128) : Shape(c: 2, h: 96, w: 128))
            let worst = zip(a.data, b.data).map { abs($0 - $1) / max(1e-3, abs($1)) }.max() ?? 0
            XCTAssertLessThanOrEqual(worst, 1e-3, "output \(names[output]): relative difference \(worst)")
        }
    }

    /// The fused residual-upscaler tail (the upsample-detail pass, then oneDNN's
    /// `UpsampleDetail`) against the three separate operations of the reference backend: bilinear and bicubic, a detail per colour or one
    /// shared luma detail, both shuffle orders, both operand orders, odd sizes.
    func testFusedUpsampleDetailTail() throws {
        let input = Shape(c: 3, h: 7, w: 11)
        for mode: ResizeMode in [.bilinear, .bicubic] {
            for detailChannels in [4, 12] {
                for order: ShuffleOrder in [.crd, .dcr] {
                    for swapped in [false, true] {
                        let names = ["in", "detail", "shuffled", "base", "out"]
                        let add = Node(name: "add", op: .binary(.add, coefficients: nil), inputs: swapped ? [3, 2] : [2, 3], output: 4)
                        let nodes = [
                            Node(name: "conv", op: .convolution(conv(detailChannels, 3, k: 3, pads: (1, 1, 1, 1), act: .leakyRelu(slope: 0.1))), inputs: [0], output: 1),
                            Node(name: "shuffle", op: .pixelShuffle(factor: 2, order: order), inputs: [1], output: 2),
                            Node(name: "resize", op: .resize(mode, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false), inputs: [0], output: 3),
                            add,
                        ]
                        let graph = Graph(valueNames: names, nodes: nodes, input: 0, output: 4, source: "test:tail")
                        let fused = try graph.fusingUpsampleDetailTails(input: input, where: fast.supports)
                        XCTAssertEqual(fused.nodes.map(\.op.kindName), ["convolution", "upsample detail \(mode.rawValue)"])
                        let x = Tensor(shape: input, data: rng.array(input.count))
                        let a = try fast.prepare(graph, input: input).run(x)
                        let b = try ReferenceBackend(runsPasses: false).prepare(graph, input: input).run(x)
                        XCTAssertEqual(a.shape, Shape(c: 3, h: 14, w: 22))
                        XCTAssertEqual(a.shape, b.shape)
                        let worst = zip(a.data, b.data).map { abs($0 - $1) }.max() ?? 1
                        XCTAssertLessThanOrEqual(worst, 1e-4, "\(mode) \(detailChannels) \(order) swapped \(swapped): difference \(worst)")
                    }
                }
            }
        }
    }

    func testLayoutOperations() throws {
        let s = Shape(c: 8, h: 7, w: 9)
        try check("pixel shuffle crd", .pixelShuffle(factor: 2, order: .crd), input: s)
        try check("depth to space dcr", .pixelShuffle(factor: 2, order: .dcr), input: s)
        for align in [false, true] {
            try check("bilinear ×2 align \(align)", .resize(.bilinear, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: align), input: s)
            try check("bilinear to 5x4 align \(align)", .resize(.bilinear, scaleH: 0, scaleW: 0, outH: 5, outW: 4, alignCorners: align), input: s)
        }
        try check("nearest ×4", .resize(.nearest, scaleH: 4, scaleW: 4, outH: 0, outW: 0, alignCorners: false), input: s)
        try check("bicubic ×0.5", .resize(.bicubic, scaleH: 0.5, scaleW: 0.5, outH: 0, outW: 0, alignCorners: false), input: Shape(c: 3, h: 16, w: 20))
        try check("bicubic ×3", .resize(.bicubic, scaleH: 3, scaleW: 3, outH: 0, outW: 0, alignCorners: false), input: s)
        try check("pad constant", .pad(top: 1, left: 2, bottom: 3, right: 0, mode: .constant(0.5)), input: s)
        try check("pad replicate", .pad(top: 2, left: 2, bottom: 2, right: 2, mode: .replicate), input: s)
        try check("pad reflect", .pad(top: 3, left: 1, bottom: 2, right: 4, mode: .reflect), input: s)
        try check("crop", .crop(top: 1, left: 2, bottom: 2, right: 1), input: s)
        try check("crop like", .cropLike(top: 1, left: 2), input: s, second: Shape(c: 2, h: 4, w: 5))
        try check("slice channels", .sliceChannels(start: 2, end: 6), input: s)
        try check("concat", .concatChannels, input: s, second: Shape(c: 3, h: 7, w: 9))
        try check("global average pool", .globalAveragePool, input: s)
        try check("fully connected", .fullyConnected(outFeatures: 5, weights: rng.array(5 * 8), bias: rng.array(5), activation: .sigmoid),
                  input: Shape(c: 8, h: 1, w: 1))
        try check("fully connected over a map", .fullyConnected(outFeatures: 4, weights: rng.array(4 * s.count), bias: [], activation: .relu), input: s)
    }

    /// The operations ONNX models bring: whole-picture ones (instance norm, softmax and concat
    /// along rows or columns, reshape, transpose, row matrix products), pooling, space to
    /// depth, ONNX resampling, the fused upsample-detail tail and constants.
    func testWholePictureAndONNXOperations() throws {
        let s = Shape(c: 4, h: 6, w: 8)
        try check("instance norm", .instanceNorm(scale: rng.array(4), bias: rng.array(4), epsilon: 1e-5), input: s)
        try check("softmax along rows", .softmax(axis: 2), input: s)
        try check("softmax along columns", .softmax(axis: 3), input: s)
        try check("concat along rows", .concat(axis: 2), input: s, second: Shape(c: 4, h: 3, w: 8))
        try check("concat along columns", .concat(axis: 3), input: s, second: Shape(c: 4, h: 6, w: 5))
        try check("reshape", .reshape(Shape(c: 2, h: 12, w: 8)), input: s)
        try check("transpose", .transpose(perm: [1, 2, 0]), input: s)
        try check("row matrix product", .rowMatMul(inFeatures: 8, outFeatures: 5, weights: rng.array(40), bias: rng.array(5)), input: s)
        try check("external kernel", .external(ExternalLayer(FlipCropKernel())), input: s)
        // The external kernel's values, not only the backends' agreement.
        let flip = Graph(valueNames: ["in", "out"], nodes: [Node(name: "flip", op: .external(ExternalLayer(FlipCropKernel())), inputs: [0], output: 1)],
                         input: 0, output: 1, source: "test:external")
        let fx = Tensor(shape: s, data: rng.array(s.count))
        let fy = try fast.prepare(flip, input: s).run(fx)
        XCTAssertEqual(fy.shape, Shape(c: 4, h: 4, w: 6))
        XCTAssertEqual(fy.data[0], fx.data[1 * 8 + 6] * 0.5 + 1, accuracy: 1e-6)
        XCTAssertEqual(fy.data[fy.shape.count - 1], fx.data[3 * 48 + 4 * 8 + 1] * 0.5 + 1, accuracy: 1e-6)
        try check("max pool 3x3 s2 ceil", .pool(PoolParameters(kind: .max, kernelH: 3, kernelW: 3, strideH: 2, strideW: 2, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1, ceilMode: true)), input: s)
        try check("average pool 2x2", .pool(PoolParameters(kind: .average(countPadding: false), kernelH: 2, kernelW: 2, strideH: 2, strideW: 2)), input: s)
        try check("space to depth", .spaceToDepth(factor: 2), input: s)
        try check("onnx resample linear asymmetric ×2", .resample(ResampleParameters(mode: .bilinear, coordinates: .asymmetric, scaleH: 2, scaleW: 2)), input: s)
        try check("onnx resample cubic half pixel to 9x5", .resample(ResampleParameters(mode: .bicubic, outH: 9, outW: 5)), input: s)
        try check("upsample detail tail", .upsampleDetail(.bilinear, order: .crd), input: Shape(c: 3, h: 5, w: 7), second: Shape(c: 12, h: 5, w: 7))
        try check("upsample detail tail nearest x4", .upsampleDetail(.nearest, order: .crd, factor: 4), input: Shape(c: 3, h: 5, w: 7),
                  second: Shape(c: 48, h: 5, w: 7))
        try check("upsample detail tail nearest x3, shared", .upsampleDetail(.nearest, order: .dcr, factor: 3), input: Shape(c: 3, h: 6, w: 5),
                  second: Shape(c: 9, h: 6, w: 5))

        // A constant (no input) broadcast onto the picture.
        covered.insert(.constant)
        let values = rng.array(4)
        let graph = Graph(valueNames: ["in", "k", "out"], nodes: [
            Node(name: "k", op: .constant(Shape(c: 4, h: 1, w: 1), values: values), inputs: [], output: 1),
            Node(name: "add", op: .binary(.add, coefficients: nil), inputs: [0, 1], output: 2),
        ], input: 0, output: 2, source: "test:constant")
        let x = Tensor(shape: s, data: rng.array(s.count))
        let a = try fast.prepare(graph, input: s).run(x)
        let b = try ReferenceBackend().prepare(graph, input: s).run(x)
        XCTAssertEqual(a.shape, s)
        XCTAssertLessThanOrEqual(zip(a.data, b.data).map { abs($0 - $1) }.max() ?? 1, 1e-5)
        XCTAssertEqual(b.data[0], x.data[0] + values[0], accuracy: 1e-6)
    }

    /// Every `Operation` case has a parity check above (issue 30, item 7): a new case fails
    /// here until it is given one.
    func testEveryOperationHasAParityCheck() throws {
        covered = []
        // Each from the seed it has when run alone (a fresh test case), so the inputs are the same.
        for test in [testConvolutions, testMobileNetShapes, testTransposedConvolutions, testActivationsAndElementwise,
                     testLayoutOperations, testWholePictureAndONNXOperations] {
            rng = SplitMix(state: 42)
            try test()
        }
        let missing = Engine.Operation.Kind.allCases.filter { !covered.contains($0) }
        XCTAssertEqual(missing, [], "operations with no parity check: \(missing.map(\.rawValue))")
    }

    func testShapeErrorsNameTheLayerAndFile() {
        let g = Graph(valueNames: ["in", "out"], nodes: [Node(name: "conv9", op: .convolution(conv(4, 5, k: 3)), inputs: [0], output: 1)],
                      input: 0, output: 1, source: "model.param")
        XCTAssertThrowsError(try ReferenceBackend().prepare(g, input: Shape(c: 3, h: 8, w: 8))) { error in
            let m = "\(error)"
            XCTAssertTrue(m.contains("conv9") && m.contains("model.param") && m.contains("5 input channels"), m)
        }
    }
}

extension OpParityTests {
    /// Convolution then batch norm: the oneDNN backend folds the norm into the convolution.
    func testBatchNormFoldsIntoConvolution() throws {
        let s = Shape(c: 4, h: 10, w: 12)
        let p = conv(6, 4, k: 3, pads: (1, 1, 1, 1))
        let g = Graph(valueNames: ["in", "conv", "bn", "act"], nodes: [
            Node(name: "conv", op: .convolution(p), inputs: [0], output: 1),
            Node(name: "bn", op: .channelAffine(scale: rng.array(6), bias: rng.array(6)), inputs: [1], output: 2),
            Node(name: "relu", op: .activation(.relu), inputs: [2], output: 3),
        ], input: 0, output: 3, source: "test:conv+bn")
        let x = Tensor(shape: s, data: rng.array(s.count))
        let a = try fast.prepare(g, input: s).run(x), b = try ReferenceBackend().prepare(g, input: s).run(x)
        XCTAssertLessThanOrEqual(zip(a.data, b.data).map { abs($0 - $1) }.max()!, 1e-4)
    }
}

/// An external kernel in Swift for the parity check: crops one pixel from each side, mirrors
/// left to right and maps v to v / 2 + 1.
final class FlipCropKernel: ExternalKernel {
    let label = "the test's flip-crop kernel"

    func outputShape(for s: Shape) throws -> Shape { Shape(c: s.c, h: s.h - 2, w: s.w - 2) }

    func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws {
        for c in 0..<o.c {
            for i in 0..<o.h {
                for j in 0..<o.w { y[(c * o.h + i) * o.w + j] = x[(c * s.h + i + 1) * s.w + (s.w - 2 - j)] * 0.5 + 1 }
            }
        }
    }
}
