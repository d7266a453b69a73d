import Engine
import Foundation

// MIL operations onto the engine's graph IR, one op at a time in program order.
//
//   const, constexpr_*  ──► constants (never nodes): weights, biases, scalars, parameters
//   conv, conv_transpose ─► convolution / transposed convolution with folded weights and bias
//   add sub mul real_div ─► binary (two tensors), scalar (a constant scalar), or channelAffine
//   maximum minimum          (a per-channel constant)
//   activations, batch_norm, softmax, pixel_shuffle, upsample_*, pad, concat, slice_*,
//   reduce_mean          ─► the matching IR op
//   cast, identity       ─► aliases (the engine computes in fp32 whatever the program's type)
//
// Every tensor the engine sees is 1×C×H×W; shapes the IR leaves open (same padding with
// strides, slice ends, transposed-convolution output sizes) are taken from the types the
// program declares for each value.

extension CoreMLProgramImporter {
    /// What a MIL name stands for while the graph is built.
    enum Symbol {
        /// A constant tensor (const or constexpr output, or a value written in an op).
        case constant(Constant)
        /// A graph value and its declared type.
        case variable(Int, TensorType)
    }

    /// The op types this importer turns into graph nodes or constants.
    static let supportedOps: [String] = [
        "const", "constexpr_affine_dequantize", "constexpr_blockwise_shift_scale", "constexpr_cast", "constexpr_lut_to_dense",
        "constexpr_sparse_to_dense", "conv", "conv_transpose", "add", "sub", "mul", "real_div", "maximum", "minimum",
        "relu", "relu6", "leaky_relu", "prelu", "silu", "sigmoid", "tanh", "clip", "batch_norm", "softmax", "pixel_shuffle",
        "upsample_bilinear", "upsample_nearest_neighbor", "pad", "concat", "slice_by_index", "slice_by_size", "reduce_mean",
        "cast", "identity",
    ]

    /// Builds a `Graph` from a MIL function's ops.
    struct ProgramBuilder {
        let source: String
        let blobs: BlobFiles
        var graph = GraphBuilder()
        var names: [String] { graph.names }
        var nodes: [Node] { graph.nodes }
        var symbols: [String: Symbol] = [:]
        /// Element types of the float tensors read and the decompression ops used, for the
        /// description ("fp16", "lut to dense").
        var weightTypes: Set<String> = []

        init(source: String, blobs: BlobFiles) {
            self.source = source
            self.blobs = blobs
        }

        // MARK: errors

        func fail(_ op: Op, _ why: String) -> ModelFormatError {
            ModelFormatError(.malformed, "The \(op.type) op '\(op.name)' in \(source): \(why).")
        }

        func unsupported(_ op: Op, _ what: String) -> ModelFormatError {
            ModelFormatError(.unsupported, "The \(op.type) op '\(op.name)' in \(source): \(what) is not supported by Vivify's engine.")
        }

        // MARK: values

        mutating func newValue(_ name: String) -> Int {
            graph.newValue(name)
        }

        /// Declares the function input `name` of `type` (must be a 1×C×H×W float tensor).
        mutating func addInput(_ name: String, _ type: TensorType) throws -> Int {
            guard type.shape.count == 4, type.shape[0] == nil || type.shape[0] == 1, type.dataType.isFloat else {
                throw ModelFormatError(.unsupported, "The ML Program input '\(name)' in \(source) is \(type); Vivify's engine runs models whose input is a 1×C×H×W float tensor or image.")
            }
            let v = newValue(name)
            symbols[name] = .variable(v, type)
            return v
        }

        /// Appends a node computing `operation` from `inputs` into the op's output.
        mutating func emit(_ op: Op, _ operation: Engine.Operation, inputs: [Int], name: String? = nil) -> Int {
            let out = newValue(name ?? op.name)
            graph.append(Node(name: op.name, op: operation, inputs: inputs, output: out))
            if name == nil { symbols[op.name] = .variable(out, op.outputs.first?.type ?? TensorType(dataType: .float32, shape: [])) }
            return out
        }

        // MARK: parameters

        func decode(_ v: Value, _ op: Op, _ key: String) throws -> Constant {
            do {
                switch v.source {
                case .immediate(let m): return try decodeImmediate(m, type: v.type, source: source)
                case .blob(let file, let offset): return try blobs.constant(file: file, offset: offset, type: v.type)
                case .none: throw DecodeFailure("has no value")
                }
            } catch let f as DecodeFailure {
                throw fail(op, "'\(key)' \(f.why)")
            }
        }

        func resolve(_ b: Binding, _ op: Op, _ key: String) throws -> Symbol {
            switch b {
            case .name(let n):
                guard let s = symbols[n] else { throw fail(op, "'\(key)' reads '\(n)', which no earlier op produces") }
                return s
            case .value(let v):
                return .constant(try decode(v, op, key))
            }
        }

        /// An input (or, for constexpr ops of iOS 16, an attribute) of `op`.
        func symbol(_ op: Op, _ key: String) throws -> Symbol? {
            if let bindings = op.inputs[key] {
                guard bindings.count == 1 else { throw fail(op, "'\(key)' has \(bindings.count) values, expected one") }
                return try resolve(bindings[0], op, key)
            }
            if let v = op.attributes[key] { return .constant(try decode(v, op, key)) }
            return nil
        }

        func constant(_ op: Op, _ key: String) throws -> Constant? {
            switch try symbol(op, key) {
            case nil: return nil
            case .constant(let c): return c
            case .variable(let v, _):
                throw unsupported(op, "'\(key)' computed at run time (from '\(names[v])') instead of a constant")
            }
        }

        func required(_ op: Op, _ key: String) throws -> Constant {
            guard let c = try constant(op, key) else { throw fail(op, "the required input '\(key)' is missing") }
            return c
        }

        func floats(_ op: Op, _ key: String) throws -> [Float]? {
            guard let c = try constant(op, key) else { return nil }
            guard let v = c.floats else { throw fail(op, "'\(key)' is \(c.summary), not numbers") }
            return v
        }

        func ints(_ op: Op, _ key: String, _ fallback: [Int]) throws -> [Int] {
            guard let c = try constant(op, key) else { return fallback }
            guard let v = c.ints else { throw fail(op, "'\(key)' is \(c.summary), not integers") }
            return v
        }

        func int(_ op: Op, _ key: String, _ fallback: Int) throws -> Int {
            let v = try ints(op, key, [fallback])
            guard v.count == 1 else { throw fail(op, "'\(key)' has \(v.count) values, expected one") }
            return v[0]
        }

        func float(_ op: Op, _ key: String, _ fallback: Float) throws -> Float {
            guard let v = try floats(op, key) else { return fallback }
            guard v.count == 1 else { throw fail(op, "'\(key)' has \(v.count) values, expected one") }
            return v[0]
        }

        func bools(_ op: Op, _ key: String, _ fallback: [Bool]) throws -> [Bool] {
            try ints(op, key, fallback.map { $0 ? 1 : 0 }).map { $0 != 0 }
        }

        func bool(_ op: Op, _ key: String, _ fallback: Bool) throws -> Bool {
            try int(op, key, fallback ? 1 : 0) != 0
        }

        func string(_ op: Op, _ key: String, _ fallback: String) throws -> String {
            guard let c = try constant(op, key) else { return fallback }
            guard let s = c.string else { throw fail(op, "'\(key)' is \(c.summary), not a string") }
            return s
        }

        /// A tensor computed at run time: its graph value and declared type.
        func variable(_ op: Op, _ key: String = "x") throws -> (Int, TensorType) {
            switch try symbol(op, key) {
            case nil: throw fail(op, "the required input '\(key)' is missing")
            case .variable(let v, let t):
                return (v, t)
            case .constant(let c):
                throw unsupported(op, "a constant \(c.summary) as '\(key)' (Vivify's graph has no constant tensors)")
            }
        }

        /// Channels, height and width of a declared 1×C×H×W type (nil where unknown).
        func chw(_ t: TensorType, _ op: Op) throws -> (c: Int?, h: Int?, w: Int?) {
            guard t.shape.count == 4 else { throw unsupported(op, "a tensor of rank \(t.shape.count) (\(t))") }
            return (t.shape[1], t.shape[2], t.shape[3])
        }

        // MARK: ops

        mutating func add(_ op: Op) throws {
            guard !op.hasBlocks else { throw unsupported(op, "control flow (an op with nested blocks)") }
            switch op.type {
            case "const":
                guard let v = op.attributes["val"] else { throw fail(op, "it has no 'val' attribute") }
                try setConstant(op, decode(v, op, "val"))
            case "constexpr_affine_dequantize", "constexpr_blockwise_shift_scale", "constexpr_cast", "constexpr_lut_to_dense",
                 "constexpr_sparse_to_dense":
                try setConstant(op, decompress(op))
            case "cast", "identity":
                if op.type == "cast" {
                    let dtype = try string(op, "dtype", "fp32")
                    guard ["fp16", "fp32", "fp64"].contains(dtype) else { throw unsupported(op, "a cast to \(dtype)") }
                }
                switch try symbol(op, "x") {
                case .variable(let v, _): symbols[op.name] = .variable(v, op.outputs.first?.type ?? TensorType(dataType: .float32, shape: []))
                case .constant(let c): symbols[op.name] = .constant(c)
                case nil: throw fail(op, "the required input 'x' is missing")
                }
            case "conv": try convolution(op)
            case "conv_transpose": try transposedConvolution(op)
            case "add", "sub", "mul", "real_div", "maximum", "minimum": try binary(op)
            case "relu": try activation(op, .relu)
            case "relu6": try activation(op, .clip(min: 0, max: 6))
            case "leaky_relu": try activation(op, .leakyRelu(slope: float(op, "alpha", 0.01)))
            case "prelu":
                guard let slopes = try floats(op, "alpha") else { throw fail(op, "the required input 'alpha' is missing") }
                try activation(op, .prelu(slopes: slopes))
            case "silu": try activation(op, .silu)
            case "sigmoid": try activation(op, .sigmoid)
            case "tanh": try activation(op, .tanh)
            case "clip":
                try activation(op, .clip(min: float(op, "alpha", -.greatestFiniteMagnitude), max: float(op, "beta", .greatestFiniteMagnitude)))
            case "batch_norm": try batchNorm(op)
            case "softmax":
                let (x, t) = try variable(op)
                let axis = try int(op, "axis", -1)
                guard axis == 1 || axis == -t.shape.count + 1 else { throw unsupported(op, "softmax along axis \(axis) (only the channel axis 1)") }
                _ = emit(op, .softmaxChannels, inputs: [x])
            case "pixel_shuffle":
                let (x, _) = try variable(op)
                _ = emit(op, .pixelShuffle(factor: try int(op, "upscale_factor", 1), order: .crd), inputs: [x])
            case "upsample_bilinear", "upsample_nearest_neighbor": try upsample(op)
            case "pad": try pad(op)
            case "concat": try concat(op)
            case "slice_by_index", "slice_by_size": try slice(op)
            case "reduce_mean":
                let (x, t) = try variable(op)
                let axes = Set(try ints(op, "axes", []).map { $0 < 0 ? $0 + t.shape.count : $0 })
                guard axes == [2, 3], try bool(op, "keep_dims", false) else {
                    throw unsupported(op, "a mean over axes \(axes.sorted()) (only over height and width with keep_dims)")
                }
                _ = emit(op, .globalAveragePool, inputs: [x])
            default:
                throw ModelFormatError(.unsupported, "The ML Program op type '\(op.type)' (output '\(op.name)') in \(source) is not supported by Vivify's engine. Supported op types: \(CoreMLProgramImporter.supportedOps.joined(separator: ", ")).")
            }
        }

        mutating func setConstant(_ op: Op, _ c: Constant) throws {
            if let declared = op.outputs.first?.type, let n = declared.count, n != c.count {
                throw fail(op, "the value has shape \(c.shape) but the op declares \(declared)")
            }
            if op.type.hasPrefix("constexpr_") {
                weightTypes.insert(op.type.dropFirst("constexpr_".count).replacingOccurrences(of: "_", with: " "))
            } else if c.count > 1, c.dataType.isFloat {
                weightTypes.insert(c.dataType.name)
            }
            symbols[op.name] = .constant(c)
        }

        /// The constant a constexpr op stands for.
        func decompress(_ op: Op) throws -> Constant {
            do {
                switch op.type {
                case "constexpr_affine_dequantize":
                    return try affineDequantize(data: required(op, "quantized_data"), zeroPoint: required(op, "zero_point"),
                                                scale: required(op, "scale"), axis: int(op, "axis", 0))
                case "constexpr_blockwise_shift_scale":
                    return try shiftScale(data: required(op, "data"), scale: required(op, "scale"), offset: constant(op, "offset"))
                case "constexpr_cast":
                    var c = try required(op, "source_val")
                    c.dataType = .float32
                    return c
                case "constexpr_lut_to_dense":
                    if let shape = try constant(op, "shape") {
                        return try lutToDense(indices: required(op, "indices"), lut: required(op, "lut"), shape: shape.ints ?? [])
                    }
                    return try lutToDenseBlockwise(indices: required(op, "indices"), lut: required(op, "lut"))
                default:
                    let mask = try required(op, "mask")
                    if let shape = try constant(op, "shape") {
                        return try sparseToDense(nonzero: required(op, "nonzero_data"), mask: mask, shape: shape.ints ?? [], packed: true)
                    }
                    return try sparseToDense(nonzero: required(op, "nonzero_data"), mask: mask, shape: mask.shape, packed: false)
                }
            } catch let f as DecodeFailure {
                throw fail(op, f.why)
            }
        }

        mutating func activation(_ op: Op, _ a: Activation) throws {
            let (x, _) = try variable(op)
            _ = emit(op, .activation(a), inputs: [x])
        }

        /// Explicit (before, after) padding of one spatial axis of a convolution.
        func convolutionPads(_ op: Op, type: String, custom: [Int], axis: Int, input: Int?, kernel: Int, stride: Int,
                             dilation: Int) throws -> (Int, Int) {
            switch type {
            case "valid":
                return (0, 0)
            case "custom":
                guard custom.count == 4 else { throw fail(op, "'pad' has \(custom.count) values, expected 4") }
                return (custom[2 * axis], custom[2 * axis + 1])
            case "same", "same_lower":
                let k = dilation * (kernel - 1) + 1
                let total: Int
                if stride == 1 {
                    total = k - 1
                } else {
                    guard let input else { throw unsupported(op, "same padding with stride \(stride) on an input of unknown size") }
                    total = max(((input + stride - 1) / stride - 1) * stride + k - input, 0)
                }
                // "same" puts the odd pixel after (bottom/right), "same_lower" before.
                return type == "same" ? (total / 2, total - total / 2) : (total - total / 2, total / 2)
            default:
                throw unsupported(op, "pad_type '\(type)'")
            }
        }

        /// Weight and bias of a convolution-like op.
        func weights(_ op: Op) throws -> (Constant, [Float], [Float]) {
            let w: Constant
            switch try symbol(op, "weight") {
            case .constant(let c): w = c
            case .variable(let v, _): throw unsupported(op, "a weight computed at run time ('\(names[v])')")
            case nil: throw fail(op, "the required input 'weight' is missing")
            }
            guard w.shape.count == 4 else { throw unsupported(op, "a weight of shape \(w.shape) (only 2-D convolutions)") }
            guard let values = w.floats else { throw fail(op, "'weight' is \(w.summary), not numbers") }
            return (w, values, try floats(op, "bias") ?? [])
        }

        mutating func convolution(_ op: Op) throws {
            let (x, t) = try variable(op)
            let (w, values, bias) = try weights(op)
            let groups = try int(op, "groups", 1)
            let strides = try ints(op, "strides", [1, 1]), dilations = try ints(op, "dilations", [1, 1])
            guard strides.count == 2, dilations.count == 2 else { throw fail(op, "strides \(strides) and dilations \(dilations) need 2 values each") }
            // Checked before any arithmetic (a stride of 0 divided by zero in the padding).
            guard strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }), dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }) else {
                throw fail(op, "strides \(strides) and dilations \(dilations) must be 1–\(ModelLimits.maxStride) and 1–\(ModelLimits.maxDilation)")
            }
            let padType = try string(op, "pad_type", "valid"), custom = try ints(op, "pad", [0, 0, 0, 0])
            let (_, h, wd) = try chw(t, op)
            let (top, bottom) = try convolutionPads(op, type: padType, custom: custom, axis: 0, input: h, kernel: w.shape[2],
                                                    stride: strides[0], dilation: dilations[0])
            let (left, right) = try convolutionPads(op, type: padType, custom: custom, axis: 1, input: wd, kernel: w.shape[3],
                                                    stride: strides[1], dilation: dilations[1])
            guard bias.isEmpty || bias.count == w.shape[0] else { throw fail(op, "'bias' has \(bias.count) values for \(w.shape[0]) output channels") }
            let p = ConvolutionParameters(
                outChannels: w.shape[0], inChannels: w.shape[1] * groups, kernelH: w.shape[2], kernelW: w.shape[3],
                strideH: strides[0], strideW: strides[1], dilationH: dilations[0], dilationW: dilations[1],
                padTop: top, padLeft: left, padBottom: bottom, padRight: right, groups: groups, weights: values, bias: bias)
            _ = emit(op, .convolution(p), inputs: [x])
        }

        mutating func transposedConvolution(_ op: Op) throws {
            let (x, t) = try variable(op)
            let (w, values, bias) = try weights(op)
            let groups = try int(op, "groups", 1)
            let strides = try ints(op, "strides", [1, 1]), dilations = try ints(op, "dilations", [1, 1])
            guard strides.count == 2, dilations.count == 2 else { throw fail(op, "strides \(strides) and dilations \(dilations) need 2 values each") }
            // Checked before any arithmetic (a stride of 0 divided by zero in the padding).
            guard strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }), dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }) else {
                throw fail(op, "strides \(strides) and dilations \(dilations) must be 1–\(ModelLimits.maxStride) and 1–\(ModelLimits.maxDilation)")
            }
            let padType = try string(op, "pad_type", "valid"), custom = try ints(op, "pad", [0, 0, 0, 0])
            let target = try constant(op, "output_shape").map { c -> [Int] in
                guard let v = c.ints, v.count == 4 else { throw fail(op, "'output_shape' is \(c.summary), expected 4 integers") }
                return v
            }
            let (_, h, wd) = try chw(t, op)
            var pads: [(Int, Int)] = []
            var extra = [0, 0]
            for axis in 0..<2 {
                let k = dilations[axis] * (w.shape[2 + axis] - 1) + 1, s = strides[axis]
                var pad: (Int, Int)
                switch padType {
                case "valid": pad = (0, 0)
                case "custom":
                    guard custom.count == 4 else { throw fail(op, "'pad' has \(custom.count) values, expected 4") }
                    pad = (custom[2 * axis], custom[2 * axis + 1])
                case "same":
                    // Output = stride × input: crop k − s, the odd pixel at the end (as TensorFlow).
                    let total = max(k - s, 0)
                    pad = (total / 2, total - total / 2)
                default: throw unsupported(op, "pad_type '\(padType)'")
                }
                if let target {
                    guard let input = axis == 0 ? h : wd else { throw unsupported(op, "an output_shape with an input of unknown size") }
                    let natural = (input - 1) * s + k - pad.0 - pad.1
                    let more = target[2 + axis] - natural
                    // Extra rows come from output padding; fewer are cropped at the end.
                    if more >= 0 { extra[axis] = more } else { pad.1 -= more }
                }
                pads.append(pad)
            }
            let outChannels = w.shape[1] * groups
            guard bias.isEmpty || bias.count == outChannels else { throw fail(op, "'bias' has \(bias.count) values for \(outChannels) output channels") }
            let p = ConvolutionParameters(
                outChannels: outChannels, inChannels: w.shape[0], kernelH: w.shape[2], kernelW: w.shape[3],
                strideH: strides[0], strideW: strides[1], dilationH: dilations[0], dilationW: dilations[1],
                padTop: pads[0].0, padLeft: pads[1].0, padBottom: pads[0].1, padRight: pads[1].1,
                outputPadH: extra[0], outputPadW: extra[1], groups: groups, weights: values, bias: bias)
            _ = emit(op, .deconvolution(p), inputs: [x])
        }

        mutating func binary(_ op: Op) throws {
            let kinds: [String: BinaryKind] = ["add": .add, "sub": .sub, "mul": .mul, "real_div": .div, "maximum": .max, "minimum": .min]
            let kind = kinds[op.type]!
            guard let a = try symbol(op, "x"), let b = try symbol(op, "y") else { throw fail(op, "it needs inputs 'x' and 'y'") }
            switch (a, b) {
            case (.variable(let x, _), .variable(let y, _)):
                _ = emit(op, .binary(kind, coefficients: nil), inputs: [x, y])
            case (.variable(let x, let t), .constant(let c)):
                try binaryConstant(op, kind, x, t, c, constantFirst: false)
            case (.constant(let c), .variable(let y, let t)):
                try binaryConstant(op, kind, y, t, c, constantFirst: true)
            case (.constant, .constant):
                throw unsupported(op, "an operation on two constants (fold it when converting)")
            }
        }

        /// `x ∘ c` or `c ∘ x` with a constant: a scalar op when the constant is one value, a
        /// per-channel affine when it varies along channels only.
        mutating func binaryConstant(_ op: Op, _ kind: BinaryKind, _ x: Int, _ t: TensorType, _ c: Constant, constantFirst: Bool) throws {
            guard let v = c.floats, !v.isEmpty else { throw fail(op, "the constant operand is \(c.summary), not numbers") }
            if v.allSatisfy({ $0 == v[0] }) {
                _ = emit(op, .scalar(kind, v[0], scalarFirst: constantFirst), inputs: [x])
                return
            }
            let rank = max(t.shape.count, 4)
            guard c.shape.count <= rank else { throw unsupported(op, "a constant of rank \(c.shape.count)") }
            let aligned = [Int](repeating: 1, count: rank - c.shape.count) + c.shape
            let (channels, _, _) = try chw(t, op)
            let perChannel = aligned.count == 4 && aligned[0] == 1 && aligned[2] == 1 && aligned[3] == 1 && aligned[1] == channels
            let ones = [Float](repeating: 1, count: v.count), zeros = [Float](repeating: 0, count: v.count)
            let affine: (scale: [Float], bias: [Float])?
            switch (kind, constantFirst) {
            case (.add, _): affine = (ones, v)
            case (.mul, _): affine = (v, zeros)
            case (.sub, false): affine = (ones, v.map { -$0 })
            case (.sub, true): affine = (ones.map { -$0 }, v)
            case (.div, false): affine = (v.map { 1 / $0 }, zeros)
            default: affine = nil
            }
            guard perChannel, let affine else {
                throw unsupported(op, "\(op.type) with a constant tensor \(c.summary) (Vivify's graph has no constant tensors: only scalars and, for add/sub/mul and division by a constant, per-channel 1×C×1×1 constants)")
            }
            _ = emit(op, .channelAffine(scale: affine.scale, bias: affine.bias), inputs: [x])
        }

        mutating func batchNorm(_ op: Op) throws {
            let (x, _) = try variable(op)
            guard let mean = try floats(op, "mean"), let variance = try floats(op, "variance") else {
                throw fail(op, "it needs 'mean' and 'variance'")
            }
            let n = mean.count
            let gamma = try floats(op, "gamma") ?? [Float](repeating: 1, count: n), beta = try floats(op, "beta") ?? [Float](repeating: 0, count: n)
            guard variance.count == n, gamma.count == n, beta.count == n else {
                throw fail(op, "mean, variance, gamma and beta have \(n), \(variance.count), \(gamma.count) and \(beta.count) values")
            }
            let eps = try float(op, "epsilon", 1e-5)
            var scale = [Float](repeating: 0, count: n), shift = [Float](repeating: 0, count: n)
            for c in 0..<n {
                scale[c] = gamma[c] / (variance[c] + eps).squareRoot()
                shift[c] = beta[c] - mean[c] * scale[c]
            }
            _ = emit(op, .channelAffine(scale: scale, bias: shift), inputs: [x])
        }

        mutating func upsample(_ op: Op) throws {
            let (x, _) = try variable(op)
            let sh = try float(op, "scale_factor_height", 1), sw = try float(op, "scale_factor_width", 1)
            if op.type == "upsample_nearest_neighbor" {
                _ = emit(op, .resize(.nearest, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: false), inputs: [x])
                return
            }
            let align = try bool(op, "align_corners", true)
            let halfPixel = try bool(op, "half_pixel_centers", !align)
            guard align != halfPixel else {
                throw unsupported(op, "align_corners = \(align) with half_pixel_centers = \(halfPixel)")
            }
            _ = emit(op, .resize(.bilinear, scaleH: sh, scaleW: sw, outH: 0, outW: 0, alignCorners: align), inputs: [x])
        }

        mutating func pad(_ op: Op) throws {
            let (x, t) = try variable(op)
            let p = try ints(op, "pad", [])
            guard p.count % 2 == 0, p.count >= 2, p.count <= 2 * t.shape.count else { throw fail(op, "'pad' has \(p.count) values") }
            let all = [Int](repeating: 0, count: 2 * t.shape.count - p.count) + p
            guard all.dropLast(4).allSatisfy({ $0 == 0 }) else { throw unsupported(op, "padding of the batch or channel axes") }
            let (top, bottom, left, right) = (all[all.count - 4], all[all.count - 3], all[all.count - 2], all[all.count - 1])
            guard min(top, bottom, left, right) >= 0 else { throw unsupported(op, "negative padding") }
            let mode: PaddingMode
            switch try string(op, "mode", "constant") {
            case "constant": mode = .constant(try float(op, "constant_val", 0))
            case "reflect": mode = .reflect
            case "replicate": mode = .replicate
            case let m: throw unsupported(op, "padding mode '\(m)'")
            }
            _ = emit(op, .pad(top: top, left: left, bottom: bottom, right: right, mode: mode), inputs: [x])
        }

        mutating func concat(_ op: Op) throws {
            guard let bindings = op.inputs["values"], !bindings.isEmpty else { throw fail(op, "it has no 'values'") }
            var inputs: [Int] = []
            var rank = 4
            for b in bindings {
                switch try resolve(b, op, "values") {
                case .variable(let v, let t):
                    inputs.append(v)
                    rank = t.shape.count
                case .constant(let c):
                    throw unsupported(op, "concatenating a constant \(c.summary) (Vivify's graph has no constant tensors)")
                }
            }
            let axis = try int(op, "axis", 1)
            guard axis == 1 || axis == 1 - rank else { throw unsupported(op, "concatenation along axis \(axis) (only channels, axis 1)") }
            guard try !bool(op, "interleave", false) else { throw unsupported(op, "interleaved concatenation") }
            _ = emit(op, .concatChannels, inputs: inputs)
        }

        mutating func slice(_ op: Op) throws {
            let (x, t) = try variable(op)
            let rank = t.shape.count
            guard rank == 4 else { throw unsupported(op, "a slice of a rank-\(rank) tensor") }
            var begin = try ints(op, "begin", [])
            guard begin.count == rank else { throw fail(op, "'begin' has \(begin.count) values for rank \(rank)") }
            var end: [Int?]
            if op.type == "slice_by_size" {
                let size = try ints(op, "size", [])
                guard size.count == rank else { throw fail(op, "'size' has \(size.count) values for rank \(rank)") }
                end = zip(begin, size).map { $1 < 0 ? nil : $0 + $1 }
            } else {
                let e = try ints(op, "end", []), stride = try ints(op, "stride", [Int](repeating: 1, count: rank))
                guard e.count == rank else { throw fail(op, "'end' has \(e.count) values for rank \(rank)") }
                guard stride.allSatisfy({ $0 == 1 }) else { throw unsupported(op, "a strided slice (stride \(stride))") }
                guard try !bools(op, "squeeze_mask", []).contains(true) else { throw unsupported(op, "squeezing a sliced axis") }
                let beginMask = try bools(op, "begin_mask", []), endMask = try bools(op, "end_mask", [])
                // A set mask bit means "from the start" / "to the end", whatever the index says.
                begin = (0..<rank).map { k in k < beginMask.count && beginMask[k] ? 0 : begin[k] }
                end = (0..<rank).map { k in k < endMask.count && endMask[k] ? nil : e[k] }
            }
            try emitSlice(op, x, t, begin: begin, end: end)
        }

        /// Emits a channel slice and/or a spatial crop for [begin, end) per axis (nil end:
        /// to the end of the axis; negative indices count from the end).
        mutating func emitSlice(_ op: Op, _ x: Int, _ t: TensorType, begin: [Int], end: [Int?]) throws {
            // (start, cut from the end) per axis; positive ends need the declared size.
            var ranges: [(Int, Int)] = []
            for k in 0..<4 {
                let size = t.shape[k]
                func index(_ i: Int) throws -> Int {
                    if i >= 0 { return i }
                    guard let size else { throw unsupported(op, "a negative slice index on axis \(k) of unknown size") }
                    return i + size
                }
                let start = try index(begin[k])
                var cut = 0
                if let e = end[k] {
                    if e < 0 {
                        cut = -e
                    } else if let size {
                        cut = max(size - e, 0)
                    } else {
                        throw unsupported(op, "a slice ending at \(e) on axis \(k) of unknown size")
                    }
                }
                if let size, start + cut >= size { throw fail(op, "the slice of axis \(k) is empty (size \(size))") }
                ranges.append((start, cut))
            }
            guard ranges[0] == (0, 0) else { throw unsupported(op, "slicing the batch axis") }
            let spatial = ranges[2] != (0, 0) || ranges[3] != (0, 0)
            var value = x
            if ranges[1] != (0, 0) {
                guard let c = t.shape[1] else { throw unsupported(op, "a channel slice of a tensor with unknown channels") }
                value = emit(op, .sliceChannels(start: ranges[1].0, end: c - ranges[1].1), inputs: [value], name: spatial ? "\(op.name)#channels" : nil)
            }
            if spatial {
                value = emit(op, .crop(top: ranges[2].0, left: ranges[3].0, bottom: ranges[2].1, right: ranges[3].1), inputs: [value])
            }
            if value == x { symbols[op.name] = .variable(x, op.outputs.first?.type ?? t) }
        }
    }
}
