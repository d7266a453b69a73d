import Engine
import Foundation

// NeuralNetworkLayer (NeuralNetwork.proto) → graph nodes. Field numbers are those of
// apple/coremltools mlmodel/format/NeuralNetwork.proto; each case says which it reads.

extension CoreMLImporter {
    /// The `oneof layer` members of NeuralNetworkLayer by field number, for messages.
    static let layerTypes: [Int: String] = [
        100: "convolution", 120: "pooling", 130: "activation", 140: "innerProduct", 150: "embedding",
        160: "batchnorm", 165: "mvn", 170: "l2normalize", 175: "softmax", 180: "lrn", 190: "crop", 200: "padding",
        210: "upsample", 211: "resizeBilinear", 212: "cropResize", 220: "unary", 230: "add", 231: "multiply",
        240: "average", 245: "scale", 250: "bias", 260: "max", 261: "min", 270: "dot", 280: "reduce",
        290: "loadConstant", 300: "reshape", 301: "flatten", 310: "permute", 320: "concat", 330: "split",
        340: "sequenceRepeat", 345: "reorganizeData", 350: "slice", 400: "simpleRecurrent", 410: "gru",
        420: "uniDirectionalLSTM", 430: "biDirectionalLSTM", 500: "custom", 600: "copy", 605: "branch", 615: "loop",
        620: "loopBreak", 625: "loopContinue", 635: "rangeStatic", 640: "rangeDynamic", 660: "clip", 665: "ceil",
        670: "floor", 680: "sign", 685: "round", 700: "exp2", 710: "sin", 715: "cos", 720: "tan", 730: "asin",
        735: "acos", 740: "atan", 750: "sinh", 755: "cosh", 760: "tanh", 770: "asinh", 775: "acosh", 780: "atanh",
        790: "erf", 795: "gelu", 815: "equal", 820: "notEqual", 825: "lessThan", 827: "lessEqual",
        830: "greaterThan", 832: "greaterEqual", 840: "logicalOr", 845: "logicalXor", 850: "logicalNot",
        855: "logicalAnd", 865: "modBroadcastable", 870: "minBroadcastable", 875: "maxBroadcastable",
        880: "addBroadcastable", 885: "powBroadcastable", 890: "divideBroadcastable", 895: "floorDivBroadcastable",
        900: "multiplyBroadcastable", 905: "subtractBroadcastable", 920: "tile", 925: "stack", 930: "gather",
        935: "scatter", 940: "gatherND", 945: "scatterND", 950: "softmaxND", 952: "gatherAlongAxis",
        954: "scatterAlongAxis", 960: "reverse", 965: "reverseSeq", 975: "splitND", 980: "concatND",
        985: "transpose", 995: "sliceStatic", 1000: "sliceDynamic", 1005: "slidingWindows", 1015: "topK",
        1020: "argMin", 1025: "argMax", 1040: "embeddingND", 1045: "batchedMatmul", 1065: "getShape",
        1070: "loadConstantND", 1080: "fillLike", 1085: "fillStatic", 1090: "fillDynamic", 1100: "broadcastToLike",
        1105: "broadcastToStatic", 1110: "broadcastToDynamic", 1120: "squeeze", 1125: "expandDims",
        1130: "flattenTo2D", 1135: "reshapeLike", 1140: "reshapeStatic", 1145: "reshapeDynamic",
        1150: "rankPreservingReshape", 1155: "constantPad", 1170: "randomNormalLike", 1175: "randomNormalStatic",
        1180: "randomNormalDynamic", 1190: "randomUniformLike", 1195: "randomUniformStatic",
        1200: "randomUniformDynamic", 1210: "randomBernoulliLike", 1215: "randomBernoulliStatic",
        1220: "randomBernoulliDynamic", 1230: "categoricalDistribution", 1250: "reduceL1", 1255: "reduceL2",
        1260: "reduceMax", 1265: "reduceMin", 1270: "reduceSum", 1275: "reduceProd", 1280: "reduceMean",
        1285: "reduceLogSum", 1290: "reduceSumSquare", 1295: "reduceLogSumExp", 1313: "whereNonZero",
        1315: "matrixBandPart", 1320: "lowerTriangular", 1325: "upperTriangular", 1330: "whereBroadcastable",
        1350: "layerNormalization", 1400: "NonMaximumSuppression", 1450: "oneHot", 1455: "cumSum",
        1460: "clampedReLU", 1461: "argSort", 1465: "pooling3d", 1466: "globalPooling3d", 1470: "sliceBySize",
        1471: "convolution3d",
    ]

    /// The layer types this importer translates, for the unsupported-layer message.
    static let supportedLayerTypes = "convolution (and deconvolution), activation (linear, ReLU, leakyReLU, PReLU, "
        + "sigmoid, tanh, scaledTanh, sigmoidHard), add, multiply, average, max, min, batchnorm, scale, bias, "
        + "loadConstant (folded into add/multiply), softmax, upsample, reorganizeData, padding, crop, concat, "
        + "innerProduct, global average pooling, clip, instance normalisation (batchnorm computing its statistics), "
        + "the tanh layer, and custom layers that are declared (`customLayers`, see README)"

    /// One layer being translated: its name, type, blobs and parameters message.
    struct Layer {
        var name: String
        var type: String
        var inputs: [String]
        var outputs: [String]
        var params: Message
        let source: String

        func fail(_ why: String) -> ModelFormatError {
            ModelFormatError(.malformed, "Layer '\(name)' (\(type)) in \(source): \(why).")
        }

        func unsupported(_ what: String) -> ModelFormatError {
            ModelFormatError(.unsupported, "Layer '\(name)' (\(type)) in \(source): \(what) is not supported by Vivify's engine.")
        }

        /// A nested message of the parameters.
        func message(_ field: Int, _ what: String) throws -> Message? {
            try params.message(field, what: "\(what) of layer '\(name)'", source: source)
        }

        /// A WeightParams field of the parameters, decoded to `count` floats.
        func weights(_ field: Int, count: Int, axis: ChannelAxis? = nil, _ what: String) throws -> [Float] {
            try CoreMLImporter.weights(message(field, what), count: count, axis: axis, param: what, layer: name, type: type, source: source)
        }
    }

    /// A loadConstant output, kept aside until an add or multiply folds it in.
    struct Constant {
        var layer: String
        /// [C, H, W].
        var shape: [Int]
        var values: [Float]
    }

    /// Builds the graph layer by layer.
    struct NetworkBuilder {
        let source: String
        let declaredInput: Shape?
        var inputChannels: Int?
        var graph = GraphBuilder()
        var blobs: [String: Int] = [:]
        var names: [String] { graph.names }
        var nodes: [Node] { graph.nodes }
        var input = 0
        var constants: [String: Constant] = [:]
        /// The first output of the last layer (a classifier's default probability blob).
        var lastOutput: String?
        /// Conditions the description must mention (each once).
        var notes: [String] = []
        /// What the model's custom layers compute (`customLayers`), if declared.
        var customLayers: CustomLayerDeclarations?
        /// The compiled custom layer library (`--custom-layers`) for custom layers no
        /// declaration covers; nil: none.
        var customLayerLibrary: String?

        init(source: String, inputName: String, declaredInput: Shape?) {
            self.source = source
            self.declaredInput = declaredInput
            inputChannels = declaredInput?.c
            input = newValue(inputName)
        }

        mutating func newValue(_ name: String) -> Int {
            let v = graph.newValue(name)
            blobs[name] = v
            return v
        }

        mutating func note(_ s: String) {
            if !notes.contains(s) { notes.append(s) }
        }

        /// The scaler (or per-channel mean) as the graph's first node.
        mutating func addPreprocessing(_ p: Preprocessing) {
            let op: Engine.Operation
            if let scale = p.scale, let biases = p.biases {
                op = .channelAffine(scale: [Float](repeating: scale, count: biases.count), bias: biases)
            } else if let mean = p.mean {
                op = .channelAffine(scale: [Float](repeating: 1, count: mean.count), bias: mean.map { -$0 })
            } else {
                return
            }
            // The raw input keeps the feature's name for messages; layers read the scaled value.
            let name = names[input]
            let out = newValue(name + "#preprocessed")
            blobs[name] = out
            graph.append(Node(name: "preprocessing", op: op, inputs: [input], output: out))
        }

        func value(_ blob: String, _ l: Layer) throws -> Int {
            if let c = constants[blob] {
                throw l.unsupported("reading the constant '\(blob)' of loadConstant layer '\(c.layer)' other than as a per-channel addend or factor of an add or multiply layer")
            }
            guard let v = blobs[blob] else {
                throw l.fail("reads blob '\(blob)', which neither the input nor an earlier layer produces; the layers are out of order or the file is damaged")
            }
            return v
        }

        /// The shape of `v` for the declared input (or, when the model declares no size, for
        /// a 512×512 probe, which is only good for the channel count).
        func shape(of v: Int, _ l: Layer, needsSize: Bool, for what: String) throws -> Shape {
            guard let probe = declaredInput ?? inputChannels.map({ Shape(c: $0, h: 512, w: 512) }) else {
                throw l.unsupported("\(what) in a model whose input declares no shape")
            }
            if needsSize && declaredInput == nil {
                throw l.unsupported("\(what) in a model whose input declares no size")
            }
            let partial = graph.graph(input: input, output: v, source: source)
            guard let s = try partial.inferShapes(input: probe)[v] else {
                throw l.fail("reads a blob whose shape cannot be told")
            }
            return s
        }

        /// Appends `ops` as a chain from `from`; the last writes the layer's output blob.
        mutating func emit(_ l: Layer, _ ops: [Engine.Operation], from: Int) {
            guard !ops.isEmpty else {
                blobs[l.outputs[0]] = from
                return
            }
            var current = from
            for (k, op) in ops.enumerated() {
                let out = newValue(k == ops.count - 1 ? l.outputs[0] : "\(l.outputs[0])#\(k)")
                graph.append(Node(name: l.name, op: op, inputs: [current], output: out))
                current = out
            }
        }

        /// Appends a node with several inputs writing the layer's output blob (or `name`).
        mutating func emit(_ l: Layer, _ op: Engine.Operation, inputs: [Int], name: String? = nil) -> Int {
            let out = newValue(name ?? l.outputs[0])
            graph.append(Node(name: l.name, op: op, inputs: inputs, output: out))
            return out
        }

        mutating func add(_ m: Message, index: Int) throws {
            let name = m.string(1).isEmpty ? "#\(index)" : m.string(1)
            guard let field = m.numbers.first(where: { $0 >= 100 }) else {
                throw ModelFormatError(.malformed, "Layer '\(name)' in \(source) has no layer parameters. The file is damaged.")
            }
            guard let type = CoreMLImporter.layerTypes[field] else {
                throw ModelFormatError(.unsupported, "Layer '\(name)' in \(source): the Core ML layer type with field number \(field) is unknown to Vivify (newer than its schema) and not supported. Supported layer types: \(CoreMLImporter.supportedLayerTypes).")
            }
            let params = try m.message(field, what: "the \(type) parameters of layer '\(name)'", source: source)
                ?? Message(Data(), what: "", source: source)
            let l = Layer(name: name, type: type, inputs: m.strings(2), outputs: m.strings(3), params: params, source: source)
            guard !l.outputs.isEmpty else { throw l.fail("has no output blob") }
            if l.outputs.count > 1 { throw l.unsupported("a layer with \(l.outputs.count) outputs") }
            if field != 290 && l.inputs.isEmpty { throw l.fail("has no input blob") }
            lastOutput = l.outputs[0]
            switch field {
            case 100: try convolution(l)
            case 120:
                // PoolingLayerParams: type 1 (0 max, 1 average, 2 L2), globalPooling 60.
                guard l.params.bool(60), l.params.int(1) == 1 else {
                    let kinds = ["max", "average", "L2"]
                    let t = l.params.int(1)
                    throw l.unsupported((l.params.bool(60) ? "global " : "windowed ") + (kinds.indices.contains(t) ? kinds[t] : "type \(t)") + " pooling (only global average pooling is)")
                }
                emit(l, [.globalAveragePool], from: try value(l.inputs[0], l))
            case 130: try activation(l)
            case 140: try innerProduct(l)
            case 160: try batchnorm(l)
            case 175: emit(l, [.softmaxChannels], from: try value(l.inputs[0], l))
            case 190: try crop(l)
            case 200: try padding(l)
            case 210: try upsample(l)
            case 230, 231, 240, 260, 261: try elementwise(l, field)
            case 245: try scale(l)
            case 250: try bias(l)
            case 290:
                // LoadConstantLayerParams: shape 1 ([C, H, W]), data 2.
                let shape = l.params.ints(1)
                guard shape.count == 3, shape.allSatisfy({ $0 > 0 }) else { throw l.fail("has constant shape \(shape), expected [C, H, W]") }
                guard let count = ModelLimits.elementCount(shape) else {
                    throw l.fail("has constant shape \(shape), beyond \(ModelLimits.maxTensorElements) values")
                }
                let values = try l.weights(2, count: count, "data")
                constants[l.outputs[0]] = Constant(layer: l.name, shape: shape, values: values)
            case 320:
                // ConcatLayerParams: sequenceConcat 100.
                if l.params.bool(100) { throw l.unsupported("concatenation along the sequence axis") }
                let ins = try l.inputs.map { try value($0, l) }
                if ins.count == 1 { blobs[l.outputs[0]] = ins[0] } else { _ = emit(l, .concatChannels, inputs: ins) }
            case 345: try reorganize(l)
            case 500: try custom(l)
            case 660:
                // ClipLayerParams: minVal 1, maxVal 2.
                emit(l, [.activation(.clip(min: l.params.float(1), max: l.params.float(2)))], from: try value(l.inputs[0], l))
            case 760:
                emit(l, [.activation(.tanh)], from: try value(l.inputs[0], l))
            default:
                throw ModelFormatError(.unsupported, "Layer '\(name)' in \(source): the Core ML layer type '\(type)' is not supported by Vivify's engine. Supported layer types: \(CoreMLImporter.supportedLayerTypes).")
            }
        }

        /// BorderAmounts (borderAmounts 10: [H, W] of EdgeSizes startEdgeSize 1, endEdgeSize 2)
        /// as (top, left, bottom, right).
        func borders(_ m: Message?, _ l: Layer) throws -> (Int, Int, Int, Int) {
            guard let m else { return (0, 0, 0, 0) }
            let edges = try m.messages(10, what: "the border amounts of layer '\(l.name)'", source: source)
            guard edges.isEmpty || edges.count == 2 else { throw l.fail("has \(edges.count) border amounts, expected 2 ([H, W])") }
            if edges.isEmpty { return (0, 0, 0, 0) }
            return (edges[0].int(1), edges[1].int(1), edges[0].int(2), edges[1].int(2))
        }

        /// ConvolutionLayerParams: outputChannels 1, kernelChannels 2, nGroups 10, kernelSize 20,
        /// stride 30, dilationFactor 40, valid 50 / same 51, isDeconvolution 60, hasBias 70,
        /// weights 90, bias 91, outputShape 100.
        mutating func convolution(_ l: Layer) throws {
            let p = l.params
            guard l.inputs.count == 1 else { throw l.unsupported("a convolution whose weights come from a second input") }
            let x = try value(l.inputs[0], l)
            let out = p.int(1), kc = p.int(2), groups = max(p.int(10), 1)
            let ks = p.ints(20), st = p.ints(30), dl = p.ints(40)
            let kh = ks.count == 2 ? ks[0] : 3, kw = ks.count == 2 ? ks[1] : 3
            let sh = st.count == 2 ? st[0] : 1, sw = st.count == 2 ? st[1] : 1
            let deconv = p.bool(60)
            // Core ML ignores dilation for deconvolutions.
            let dh = deconv || dl.count != 2 ? 1 : dl[0], dw = deconv || dl.count != 2 ? 1 : dl[1]
            let L = ModelLimits.self
            guard (1...L.maxChannels).contains(out), (1...L.maxChannels).contains(kc), (1...L.maxChannels).contains(groups),
                  (1...L.maxKernel).contains(kh), (1...L.maxKernel).contains(kw), (1...L.maxStride).contains(sh),
                  (1...L.maxStride).contains(sw), (1...L.maxDilation).contains(dh), (1...L.maxDilation).contains(dw),
                  (kc * groups) <= L.maxChannels else {
                throw l.fail("has sizes out of range (outputChannels \(out), kernelChannels \(kc), groups \(groups), kernel \(kh)x\(kw), stride \(sh)x\(sw), dilation \(dh)x\(dw); limits: channels 1–\(L.maxChannels), kernel 1–\(L.maxKernel), stride 1–\(L.maxStride), dilation 1–\(L.maxDilation))")
            }
            guard out % groups == 0, !deconv || kc % groups == 0 else { throw l.fail("has \(groups) groups, which do not divide its channels") }
            let inChannels = deconv ? kc : kc * groups
            let count = deconv ? kc * (out / groups) * kh * kw : out * kc * kh * kw
            let axis = deconv ? ChannelAxis(outer: kc, channels: out / groups, inner: kh * kw) : ChannelAxis(outer: 1, channels: out, inner: kc * kh * kw)
            let weights = try l.weights(90, count: count, axis: axis, "weights")
            let bias = p.bool(70) ? try l.weights(91, count: out, "bias") : []

            var (top, left, bottom, right) = (0, 0, 0, 0)
            var outPadH = 0, outPadW = 0
            if let valid = try l.message(50, "the valid padding") {
                (top, left, bottom, right) = try borders(try valid.message(1, what: "the padding amounts of layer '\(l.name)'", source: source), l)
            } else if let same = try l.message(51, "the same padding") {
                let topLeftHeavy = same.int(1) == 1
                func split(_ total: Int) -> (Int, Int) {
                    let small = total / 2
                    return topLeftHeavy ? (total - small, small) : (small, total - small)
                }
                if deconv {
                    // H_out = H_in · stride: crop k − s from the full (H_in − 1)·s + k rows (or add s − k).
                    let th = kh - sh, tw = kw - sw
                    if th >= 0 { (top, bottom) = split(th) } else { outPadH = -th }
                    if tw >= 0 { (left, right) = split(tw) } else { outPadW = -tw }
                } else {
                    // H_out = ⌈H_in / s⌉ needs (⌈H_in/s⌉ − 1)·s + k − H_in rows of padding, which is
                    // k − s whenever s divides H_in; the IR's padding is fixed, so that case is taken.
                    let ekh = dh * (kh - 1) + 1, ekw = dw * (kw - 1) + 1
                    (top, bottom) = split(max(0, ekh - sh))
                    (left, right) = split(max(0, ekw - sw))
                    if sh > 1 || sw > 1 {
                        note("Its strided 'same' convolutions (layer '\(l.name)', stride \(sh)×\(sw)) pad as Core ML does only when the input height is a multiple of \(sh) and the width a multiple of \(sw): give such sizes.")
                    }
                }
            }
            let outputShape = p.ints(100)
            if deconv && outputShape.count == 2 {
                // An explicit output size: the top/left crop stays, the bottom/right is cropped or
                // extended (PyTorch's output_padding) to reach it for the declared input size.
                let s = try shape(of: x, l, needsSize: true, for: "a deconvolution with an explicit outputShape")
                let fullH = (s.h - 1) * sh + kh - top, fullW = (s.w - 1) * sw + kw - left
                (bottom, outPadH) = outputShape[0] <= fullH ? (fullH - outputShape[0], 0) : (0, outputShape[0] - fullH)
                (right, outPadW) = outputShape[1] <= fullW ? (fullW - outputShape[1], 0) : (0, outputShape[1] - fullW)
            }
            let params = ConvolutionParameters(
                outChannels: out, inChannels: inChannels, kernelH: kh, kernelW: kw, strideH: sh, strideW: sw,
                dilationH: dh, dilationW: dw, padTop: top, padLeft: left, padBottom: bottom, padRight: right,
                outputPadH: outPadH, outputPadW: outPadW, groups: groups, weights: weights, bias: bias)
            let op: Engine.Operation = deconv ? .deconvolution(params) : .convolution(params)
            emit(l, [op], from: x)
        }

        /// ActivationParams: linear 5 (alpha 1, beta 2), ReLU 10, leakyReLU 15 (alpha 1),
        /// PReLU 25 (alpha 1: WeightParams), tanh 30, scaledTanh 31 (alpha 1, beta 2),
        /// sigmoid 40, sigmoidHard 41 (alpha 1, beta 2).
        mutating func activation(_ l: Layer) throws {
            let x = try value(l.inputs[0], l)
            guard let kind = l.params.numbers.first else { throw l.fail("names no activation function") }
            let a = try l.message(kind, "the activation") ?? Message(Data(), what: "", source: source)
            func affine(_ alpha: Float, _ beta: Float) -> [Engine.Operation] {
                (alpha == 1 ? [] : [.scalar(.mul, alpha, scalarFirst: false)]) + (beta == 0 ? [] : [.scalar(.add, beta, scalarFirst: false)])
            }
            switch kind {
            case 5: emit(l, affine(a.float(1), a.float(2)), from: x)
            case 10: emit(l, [.activation(.relu)], from: x)
            case 15: emit(l, [.activation(a.float(1) == 0 ? .relu : .leakyRelu(slope: a.float(1)))], from: x)
            case 25:
                let m = try a.message(1, what: "the PReLU slopes of layer '\(l.name)'", source: source)
                // Length C or 1; the count is whatever the file holds, checked against the input later.
                let n = m.map { $0.floats(1).count + ($0.bytes(2)?.count ?? 0) / 2 + ($0.bytes(30)?.count ?? 0) / 4 } ?? 0
                let slopes = try CoreMLImporter.weights(m, count: n, param: "alpha", layer: l.name, type: l.type, source: source)
                guard !slopes.isEmpty else { throw l.fail("has no PReLU slopes") }
                emit(l, [.activation(.prelu(slopes: slopes))], from: x)
            case 30: emit(l, [.activation(.tanh)], from: x)
            case 31: emit(l, [.scalar(.mul, a.float(2), scalarFirst: false), .activation(.tanh), .scalar(.mul, a.float(1), scalarFirst: false)], from: x)
            case 40: emit(l, [.activation(.sigmoid)], from: x)
            case 41: emit(l, affine(a.float(1), a.float(2)) + [.activation(.clip(min: 0, max: 1))], from: x)
            default:
                let names = [20: "thresholdedReLU", 50: "ELU", 60: "softsign", 70: "softplus", 71: "parametricSoftplus"]
                throw l.unsupported("the \(names[kind] ?? "activation with field number \(kind)") activation")
            }
        }

        /// InnerProductLayerParams: inputChannels 1, outputChannels 2, hasBias 10, weights 20
        /// ([C_out][C_in]), bias 21, int8DynamicQuantize 22.
        mutating func innerProduct(_ l: Layer) throws {
            let p = l.params
            if p.bool(22) { throw l.unsupported("an inner product with int8 dynamic quantization") }
            let cin = p.int(1), cout = p.int(2)
            guard (1...ModelLimits.maxChannels).contains(cin), (1...ModelLimits.maxChannels).contains(cout) else {
                throw l.fail("has \(cin) inputs and \(cout) outputs; each must be 1–\(ModelLimits.maxChannels)")
            }
            let w = try l.weights(20, count: cin * cout, axis: ChannelAxis(outer: 1, channels: cout, inner: cin), "weights")
            let b = p.bool(10) ? try l.weights(21, count: cout, "bias") : []
            emit(l, [.fullyConnected(outFeatures: cout, weights: w, bias: b, activation: .identity)], from: try value(l.inputs[0], l))
        }

        /// BatchnormLayerParams: channels 1, computeMeanVar 5, instanceNormalization 6,
        /// epsilon 10 (0 means 1e-5), gamma 15, beta 16, mean 17, variance 18; folded to
        /// x · γ/√(σ² + ε) + (β − μ · γ/√(σ² + ε)), or instance normalisation when the layer
        /// computes its mean and variance.
        mutating func batchnorm(_ l: Layer) throws {
            let p = l.params
            let n = p.int(1)
            guard (1...ModelLimits.maxChannels).contains(n) else { throw l.fail("has \(n) channels; it must be 1–\(ModelLimits.maxChannels)") }
            let eps = p.float(10) == 0 ? 1e-5 : p.float(10)
            guard eps.isFinite, eps > 0 else { throw l.fail("has epsilon \(eps); it must be a positive number") }
            let gamma = try l.weights(15, count: n, "gamma"), beta = try l.weights(16, count: n, "beta")
            if p.bool(5) {
                // Statistics computed at run time: with batch 1, over the batch (computeMeanVar)
                // or per instance, both are each channel's own mean and biased variance.
                emit(l, [.instanceNorm(scale: gamma, bias: beta, epsilon: eps)], from: try value(l.inputs[0], l))
                return
            }
            let mean = try l.weights(17, count: n, "mean"), variance = try l.weights(18, count: n, "variance")
            var scale = [Float](repeating: 0, count: n), shift = [Float](repeating: 0, count: n)
            for c in 0..<n {
                scale[c] = gamma[c] / (variance[c] + eps).squareRoot()
                shift[c] = beta[c] - mean[c] * scale[c]
            }
            emit(l, [.channelAffine(scale: scale, bias: shift)], from: try value(l.inputs[0], l))
        }

        /// CropLayerParams: cropAmounts 1 (one input), offset 5 ([H, W], two inputs).
        mutating func crop(_ l: Layer) throws {
            let ins = try l.inputs.map { try value($0, l) }
            switch ins.count {
            case 1:
                let (t, left, b, r) = try borders(try l.message(1, "the crop amounts"), l)
                emit(l, [.crop(top: t, left: left, bottom: b, right: r)], from: ins[0])
            case 2:
                let offset = l.params.ints(5)
                guard offset.isEmpty || offset.count == 2 else { throw l.fail("has \(offset.count) offsets, expected 2 ([H, W])") }
                _ = emit(l, .cropLike(top: offset.first ?? 0, left: offset.last ?? 0), inputs: ins)
            default:
                throw l.fail("has \(ins.count) inputs, expected 1 or 2")
            }
        }

        /// PaddingLayerParams: constant 1 (value 1), reflection 2, replication 3,
        /// paddingAmounts 10.
        mutating func padding(_ l: Layer) throws {
            let (t, left, b, r) = try borders(try l.message(10, "the padding amounts"), l)
            let mode: PaddingMode
            if l.params.has(2) {
                mode = .reflect
            } else if l.params.has(3) {
                mode = .replicate
            } else {
                mode = .constant(try l.message(1, "the padding constant")?.float(1) ?? 0)
            }
            emit(l, [.pad(top: t, left: left, bottom: b, right: r, mode: mode)], from: try value(l.inputs[0], l))
        }

        /// UpsampleLayerParams: scalingFactor 1 ([H, W] integers), fractionalScalingFactor 7,
        /// mode 5 (0 NN, 1 BILINEAR), linearUpsampleMode 6 (0 DEFAULT, 1 ALIGN_CORNERS_TRUE,
        /// 2 ALIGN_CORNERS_FALSE).
        mutating func upsample(_ l: Layer) throws {
            let p = l.params
            let x = try value(l.inputs[0], l)
            let integral = p.ints(1), fractional = p.floats(7)
            var sh: Float = 1, sw: Float = 1
            var whole = true
            if integral.count == 2 {
                (sh, sw) = (Float(integral[0]), Float(integral[1]))
            } else if fractional.count == 2 {
                (sh, sw) = (fractional[0], fractional[1])
                whole = sh == sh.rounded() && sw == sw.rounded()
            }
            guard sh >= 1, sw >= 1, sh <= Float(ModelLimits.maxScale), sw <= Float(ModelLimits.maxScale) else {
                throw l.fail("has scaling factor \(sh)×\(sw); upsampling factors are 1–\(ModelLimits.maxScale)")
            }
            if p.int(5) == 0 {
                guard whole else { throw l.unsupported("nearest-neighbour upsampling by a fractional factor \(sh)×\(sw)") }
                emit(l, [.resize(.nearest, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: false)], from: x)
                return
            }
            switch p.int(6) {
            case 1: emit(l, [.resize(.bilinear, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: true)], from: x)
            case 2: emit(l, [.resize(.bilinear, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: false)], from: x)
            default:
                // DEFAULT samples output i at input i/s (ends clamped), a convention the IR's
                // resize lacks. For a whole factor s it equals a nearest ×s upsample, s − 1
                // replicated rows/columns at the bottom/right, and an s×s box average:
                // (x[j]·(s − r) + x[j+1]·r)/s = x[j] + (r/s)·(x[j+1] − x[j]).
                guard whole else { throw l.unsupported("bilinear upsampling in DEFAULT mode by a fractional factor \(sh)×\(sw)") }
                let ih = Int(sh), iw = Int(sw)
                let c = try shape(of: x, l, needsSize: false, for: "DEFAULT-mode bilinear upsampling").c
                let kernel = [Float](repeating: 1 / Float(ih * iw), count: c * ih * iw)
                let box = ConvolutionParameters(outChannels: c, inChannels: c, kernelH: ih, kernelW: iw, groups: c, weights: kernel)
                emit(l, [
                    .resize(.nearest, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: false),
                    .pad(top: 0, left: 0, bottom: ih - 1, right: iw - 1, mode: .replicate),
                    .convolution(box),
                ], from: x)
            }
        }

        /// ReorganizeDataLayerParams: mode 1 (0 SPACE_TO_DEPTH, 1 DEPTH_TO_SPACE, 2 PIXEL_SHUFFLE),
        /// blockSize 2. Core ML's DEPTH_TO_SPACE is DCR (output channel c at block offset (dy, dx)
        /// reads channel (dy·r + dx)·C + c), PIXEL_SHUFFLE is CRD (channel c·r² + dy·r + dx), as
        /// the example in NeuralNetwork.proto shows.
        mutating func reorganize(_ l: Layer) throws {
            let r = l.params.int(2)
            guard (1...ModelLimits.maxScale).contains(r) else { throw l.fail("has block size \(r); it must be 1–\(ModelLimits.maxScale)") }
            let x = try value(l.inputs[0], l)
            switch l.params.int(1) {
            case 1: emit(l, [.pixelShuffle(factor: r, order: .dcr)], from: x)
            case 2: emit(l, [.pixelShuffle(factor: r, order: .crd)], from: x)
            case 0:
                // SPACE_TO_DEPTH, the inverse of DEPTH_TO_SPACE, as an r×r stride-r convolution
                // whose weights pick one pixel each (exact: every sum has one non-zero term).
                let c = try shape(of: x, l, needsSize: false, for: "space-to-depth").c
                let n = r * r
                guard ModelLimits.elementCount([c, n, c, n]) != nil else {
                    throw l.fail("would need a \(c * n)×\(c * n) weight matrix for space-to-depth, beyond \(ModelLimits.maxTensorElements) values")
                }
                var w = [Float](repeating: 0, count: c * n * c * n)
                for dy in 0..<r {
                    for dx in 0..<r {
                        for ch in 0..<c {
                            let oc = (dy * r + dx) * c + ch
                            w[(oc * c + ch) * n + dy * r + dx] = 1
                        }
                    }
                }
                emit(l, [.convolution(ConvolutionParameters(outChannels: c * n, inChannels: c, kernelH: r, kernelW: r, strideH: r, strideW: r, weights: w))], from: x)
                note("Its space-to-depth layer '\(l.name)' needs an input height and width that are multiples of \(r).")
            case let m:
                throw l.unsupported("reorganizeData mode \(m)")
            }
        }

        /// The finished graph reading `output`: nodes the output does not need are dropped and
        /// activations that follow a convolution or inner product alone are fused into it.
        func finish(output: String) throws -> Graph {
            if let c = constants[output] {
                throw ModelFormatError(.unsupported, "'\(source)': the output '\(output)' is the constant of loadConstant layer '\(c.layer)', which Vivify's engine cannot produce as a result.")
            }
            guard let out = blobs[output] else {
                throw ModelFormatError(.malformed, "'\(source)' declares the output '\(output)', but no layer produces it. The file is inconsistent.")
            }
            var needed = Set([out])
            var kept: [Node] = []
            for node in nodes.reversed() where needed.contains(node.output) {
                kept.append(node)
                needed.formUnion(node.inputs)
            }
            kept.reverse()
            var readers = [Int](repeating: 0, count: names.count)
            for node in kept { for i in node.inputs { readers[i] += 1 } }
            readers[out] += 1
            var fused: [Node] = []
            var producer: [Int: Int] = [:]
            for node in kept {
                if case .activation(let a) = node.op, let k = producer[node.inputs[0]], readers[node.inputs[0]] == 1 {
                    var target = fused[k]
                    // Only these three take a fused activation; any other operation (a new one
                    // included) keeps the activation as its own node.
                    var merged = true
                    if case .convolution(var p) = target.op, p.activation == .identity {
                        p.activation = a
                        target.op = .convolution(p)
                    } else if case .deconvolution(var p) = target.op, p.activation == .identity {
                        p.activation = a
                        target.op = .deconvolution(p)
                    } else if case .fullyConnected(let o, let w, let b, .identity) = target.op {
                        target.op = .fullyConnected(outFeatures: o, weights: w, bias: b, activation: a)
                    } else {
                        merged = false
                    }
                    if merged {
                        target.output = node.output
                        fused[k] = target
                        producer[node.output] = k
                        continue
                    }
                }
                producer[node.output] = fused.count
                fused.append(node)
            }
            return graph.graph(input: input, output: out, source: source, nodes: fused)
        }
    }
}
