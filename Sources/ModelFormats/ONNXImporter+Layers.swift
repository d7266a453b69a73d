import Engine
import Foundation

extension ONNXImporter.Builder {
    mutating func convolution(_ transposed: Bool, _ a: Attributes, inputs: [String], _ context: NodeContext, runtime x: Int) throws {
        guard inputs.count > 1, let w = constants[inputs[1]], w.dims.count == 4 else {
            throw context.unsupported("takes its weights from a computed value or is not 2-D")
        }
        let bias = inputs.count > 2 && !inputs[2].isEmpty ? constants[inputs[2]]?.floats : []
        guard let bias else { throw context.unsupported("takes its bias from a computed value") }
        let groups = a.int("group") ?? 1
        let strides = a.ints("strides") ?? [1, 1], dilations = a.ints("dilations") ?? [1, 1]
        var pads = a.ints("pads") ?? [0, 0, 0, 0]
        guard strides.count == 2, dilations.count == 2, pads.count == 4 else { throw context.unsupported("is not a 2-D convolution") }
        // Bounded before any arithmetic (the IR's shape inference checks the rest).
        guard (1...ModelLimits.maxChannels).contains(groups), strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }),
              dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }), pads.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }),
              (1...ModelLimits.maxKernel).contains(w.dims[2]), (1...ModelLimits.maxKernel).contains(w.dims[3]),
              (1...ModelLimits.maxChannels).contains(w.dims[0]), (1...ModelLimits.maxChannels).contains(w.dims[1]),
              w.dims[1] * groups <= ModelLimits.maxChannels else {
            throw context.malformed("has groups \(groups), strides \(strides), dilations \(dilations), pads \(pads) or weights \(w.dims) beyond the model limits")
        }
        let kh = w.dims[2], kw = w.dims[3]
        let autoPad = a.string("auto_pad") ?? "NOTSET"
        var outPad = a.ints("output_padding") ?? [0, 0]
        guard outPad.count == 2, outPad.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }) else { throw context.malformed("has output_padding \(outPad)") }
        let span = [dilations[0] * (kh - 1) + 1, dilations[1] * (kw - 1) + 1]
        /// Splits a total padding between the two sides: SAME_UPPER puts the odd one at the end.
        func sides(_ total: [Int], upper: Bool) -> [Int] {
            let begin = (0..<2).map { upper ? total[$0] / 2 : total[$0] - total[$0] / 2 }
            return [begin[0], begin[1], total[0] - begin[0], total[1] - begin[1]]
        }
        if transposed, let shape = a.ints("output_shape") {
            // A fixed output size: the padding (or extra output rows) that gives it.
            let dims = try modelDimensions(of: x, context)
            guard shape.count >= 2, dims.count == 4 else { throw context.malformed("has output_shape \(shape)") }
            let wanted = Array(shape.suffix(2))
            var total = [0, 0]
            for axis in 0..<2 {
                let full: Int = strides[axis] * (dims[2 + axis] - 1) + outPad[axis] + span[axis]
                total[axis] = full - wanted[axis]
            }
            for axis in 0..<2 where total[axis] < 0 { outPad[axis] += -total[axis] }
            pads = sides(total.map { max($0, 0) }, upper: autoPad != "SAME_LOWER")
        } else {
            switch autoPad {
            case "NOTSET", "": break
            case "VALID": pads = [0, 0, 0, 0]
            case let mode where mode == "SAME_UPPER" || mode == "SAME_LOWER":
                // Output n · stride (transposed) or ceil(n / stride): the padding depends on
                // the size unless the stride is 1.
                let dims = strides == [1, 1] ? [1, 1, 1, 1] : try modelDimensions(of: x, context)
                var total = [0, 0]
                for axis in 0..<2 {
                    let n: Int = dims[2 + axis], st: Int = strides[axis]
                    let full: Int = st * (n - 1) + outPad[axis] + span[axis]
                    let out: Int = (n + st - 1) / st
                    total[axis] = transposed ? max(full - n * st, 0) : max((out - 1) * st + span[axis] - n, 0)
                }
                pads = sides(total, upper: mode == "SAME_UPPER")
            case let mode: throw context.unsupported("has auto_pad '\(mode)'")
            }
        }
        if transposed {
            let inC = w.dims[0], outC = w.dims[1] * groups
            emit(.deconvolution(ConvolutionParameters(
                outChannels: outC, inChannels: inC, kernelH: kh, kernelW: kw, strideH: strides[0], strideW: strides[1],
                dilationH: dilations[0], dilationW: dilations[1], padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3],
                outputPadH: outPad.first ?? 0, outputPadW: outPad.count > 1 ? outPad[1] : 0, groups: groups, weights: w.floats, bias: bias)), [x], context)
        } else {
            let outC = w.dims[0], inC = w.dims[1] * groups
            emit(.convolution(ConvolutionParameters(
                outChannels: outC, inChannels: inC, kernelH: kh, kernelW: kw, strideH: strides[0], strideW: strides[1],
                dilationH: dilations[0], dilationW: dilations[1], padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3],
                groups: groups, weights: w.floats, bias: bias)), [x], context)
        }
    }

    mutating func binary(_ op: String, inputs: [String], _ context: NodeContext) throws {
        let kind: BinaryKind = ["Add": .add, "Sub": .sub, "Mul": .mul, "Div": .div, "Max": .max, "Min": .min][op]!
        guard inputs.count == 2 else { throw context.unsupported("has \(inputs.count) operands; the engine takes two") }
        let a = values[inputs[0]], b = values[inputs[1]]
        if let a, let b {
            emit(.binary(kind, coefficients: nil), [a, b], context)
            return
        }
        guard let x = a ?? b, let c = constant(inputs, a == nil ? 0 : 1) else { throw context.unsupported("reads a value that is never computed") }
        let constantFirst = a == nil
        if c.count == 1 {
            emit(.scalar(kind, c.floats[0], scalarFirst: constantFirst), [x], context)
            return
        }
        // A per-channel constant (C×1×1 or 1×C×1×1) becomes a channel affine.
        if let v = perChannel(c, context), [.add, .sub, .mul, .div].contains(kind), !(kind == .div && constantFirst),
           channelCount(of: x).map({ $0 == v.count }) ?? (c.dims.count >= 3) {
            let ones = [Float](repeating: 1, count: v.count), zeros = [Float](repeating: 0, count: v.count)
            switch (kind, constantFirst) {
            case (.add, _): emit(.channelAffine(scale: ones, bias: v), [x], context)
            case (.mul, _): emit(.channelAffine(scale: v, bias: zeros), [x], context)
            case (.sub, false): emit(.channelAffine(scale: ones, bias: v.map { -$0 }), [x], context)
            case (.sub, true): emit(.channelAffine(scale: ones.map { -$0 }, bias: v), [x], context)
            default: emit(.channelAffine(scale: v.map { 1 / $0 }, bias: zeros), [x], context)
            }
            return
        }
        // Any other constant is a tensor the engine broadcasts against the image.
        outputRank = max(rank, c.dims.count)
        let k = try constantNode(c, context)
        emit(.binary(kind, coefficients: nil), constantFirst ? [k, x] : [x, k], context)
    }

    mutating func resize(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext,
                         runtime x: Int) throws {
        var scales: [Float]?
        var sizes: [Int64]?
        if op == "Upsample" && opset < 9 {
            scales = a.floats("scales")
        } else if op == "Upsample" || opset < 11 {
            scales = constant(inputs, 1)?.floats
        } else {
            if let s = constant(inputs, 2), s.count > 0 { scales = s.floats }
            if let z = constant(inputs, 3), z.count > 0 { sizes = z.ints }
            if scales == nil, sizes == nil, inputs.count > 2, !inputs[2].isEmpty || (inputs.count > 3 && !inputs[3].isEmpty) {
                throw context.unsupported("takes its scales or sizes from a computed value")
            }
        }
        guard a.ints("axes") == nil else { throw context.unsupported("resizes only some axes") }
        let modeName = a.string("mode") ?? "nearest"
        let mode: ResizeMode
        switch modeName {
        case "nearest": mode = .nearest
        case "linear", "bilinear": mode = .bilinear
        case "cubic": mode = .bicubic
        default: throw context.unsupported("has mode '\(modeName)'")
        }
        let legacy = op == "Upsample" || opset < 11
        let transform = legacy ? "asymmetric" : (a.string("coordinate_transformation_mode") ?? "half_pixel")
        guard let coordinates = ResampleParameters.Coordinates(rawValue: transform) else {
            throw context.unsupported("uses the '\(transform)' coordinate mode, which ONNX does not define")
        }
        // Opset 10 and Upsample round nearest neighbours down when enlarging.
        let roundingName = legacy ? "floor" : (a.string("nearest_mode") ?? "round_prefer_floor")
        guard let rounding = ResampleParameters.Rounding(rawValue: roundingName) else { throw context.unsupported("rounds nearest neighbours by '\(roundingName)'") }
        let cubicA = a.float("cubic_coeff_a") ?? -0.75
        let excludeOutside = (a.int("exclude_outside") ?? 0) != 0
        guard (a.int("antialias") ?? 0) == 0 else { throw context.unsupported("antialiases") }
        guard (a.string("keep_aspect_ratio_policy") ?? "stretch") == "stretch" else { throw context.unsupported("keeps the aspect ratio") }

        func lifted<T>(_ v: [T], _ one: T) -> [T]? {
            guard v.count == rank else { return nil }
            return [T](repeating: one, count: 4 - rank) + v
        }
        var params = ResampleParameters(mode: mode, coordinates: coordinates, rounding: rounding, cubicA: cubicA, excludeOutside: excludeOutside)
        if coordinates == .tfCropAndResize {
            // The region: starts then ends of every axis, as fractions; batch and channels whole.
            guard let roi = constant(inputs, 1)?.floats, roi.count == 2 * rank else {
                throw context.unsupported("crops and resizes by a computed region of interest")
            }
            let starts = [Float](repeating: 0, count: 4 - rank) + roi[..<rank], ends = [Float](repeating: 1, count: 4 - rank) + roi[rank...]
            guard starts[0] == 0, starts[1] == 0, ends[0] == 1, ends[1] == 1, (starts + ends).allSatisfy({ $0.isFinite }) else {
                throw context.unsupported("crops the batch or channels (roi \(roi))")
            }
            params.roi = [starts[2], ends[2], starts[3], ends[3]]
            params.extrapolation = a.float("extrapolation_value") ?? 0
        }
        if let given = sizes {
            let dims = try modelDimensions(of: x, context)
            guard let z = lifted(given, 1), let d = lifted(dims.map { Int64($0) }, 1), z[0] == d[0], z[1] == d[1],
                  let h = Int(exactly: z[2]), let w = Int(exactly: z[3]),
                  (1...ModelLimits.maxDimension).contains(h), (1...ModelLimits.maxDimension).contains(w) else { throw context.malformed("has sizes \(given)") }
            params.outH = h
            params.outW = w
        } else {
            guard let given = scales, let sc = lifted(given, Float(1)), sc[0] == 1, sc[1] == 1, sc[2].isFinite, sc[3].isFinite, sc[2] > 0, sc[3] > 0 else {
                throw context.unsupported("takes its scales from a computed value, or scales the batch or channels")
            }
            params.scaleH = sc[2]
            params.scaleW = sc[3]
        }
        // The engine's own resize (fast paths) where it samples exactly as asked: whole
        // factors or given sizes, and the modes it implements.
        let whole = params.outH == 0 && [params.scaleH, params.scaleW].allSatisfy { $0 >= 1 && $0 == $0.rounded() }
        let sized = params.outH > 0
        var align: Bool?
        switch (mode, coordinates) {
        case (.nearest, .asymmetric) where whole && rounding == .floor,
             (.nearest, .halfPixel) where whole && rounding == .roundPreferFloor:
            align = false
        case (.bilinear, .halfPixel), (.bilinear, .pytorchHalfPixel), (.bicubic, .halfPixel), (.bicubic, .pytorchHalfPixel):
            if (whole || sized) && !excludeOutside && (mode == .bilinear || cubicA == -0.75) && !(sized && (params.outH == 1 || params.outW == 1)) { align = false }
        case (.bilinear, .alignCorners), (.bicubic, .alignCorners):
            if (whole || sized) && !excludeOutside && (mode == .bilinear || cubicA == -0.75) { align = true }
        default:
            break
        }
        if let align {
            emit(.resize(mode, scaleH: params.scaleH, scaleW: params.scaleW, outH: params.outH, outW: params.outW, alignCorners: align), [x], context)
        } else {
            emit(.resample(params), [x], context)
        }
    }

    mutating func pad(_ a: Attributes, inputs: [String], _ context: NodeContext,
                      runtime x: Int) throws {
        var pads: [Int]
        var value: Float = 0
        if opset < 11 {
            pads = a.ints("pads") ?? []
            value = a.float("value") ?? 0
        } else {
            guard let p = constant(inputs, 1), let ints = p.ints else { throw context.unsupported("takes its pads from a computed value") }
            pads = ints.map { Int(clamping: $0) }
            if let c = constant(inputs, 2), c.count == 1 { value = c.floats[0] }
            if inputs.count > 3, !inputs[3].isEmpty { throw context.unsupported("pads only some axes") }
        }
        guard pads.allSatisfy({ (-ModelLimits.maxPad...ModelLimits.maxPad).contains($0) }) else { throw context.malformed("pads \(pads), beyond the limit of \(ModelLimits.maxPad)") }
        guard pads.count == 2 * rank else { throw context.malformed("has \(pads.count) pads for a rank-\(rank) input") }
        let zeros = [Int](repeating: 0, count: 4 - rank)
        pads = zeros + pads[..<rank] + zeros + pads[rank...]
        guard pads[0] == 0, pads[1] == 0, pads[4] == 0, pads[5] == 0 else {
            throw context.unsupported("pads \(pads); the engine pads height and width only")
        }
        let modeName = a.string("mode") ?? "constant"
        let mode: PaddingMode
        switch modeName {
        case "constant": mode = .constant(value)
        case "reflect": mode = .reflect
        case "edge": mode = .replicate
        default: throw context.unsupported("has mode '\(modeName)'")
        }
        let (t, l, b, r) = (pads[2], pads[3], pads[6], pads[7])
        if [t, l, b, r].allSatisfy({ $0 >= 0 }) {
            emit(.pad(top: t, left: l, bottom: b, right: r, mode: mode), [x], context)
        } else if [t, l, b, r].allSatisfy({ $0 <= 0 }) {
            emit(.crop(top: -t, left: -l, bottom: -b, right: -r), [x], context)
        } else {
            throw context.unsupported("pads some sides and crops others")
        }
    }

    mutating func slice(_ a: Attributes, inputs: [String], _ context: NodeContext,
                        runtime x: Int) throws {
        var starts: [Int64], ends: [Int64], axes: [Int64]?, steps: [Int64]?
        if opset < 10 {
            starts = (a.ints("starts") ?? []).map(Int64.init)
            ends = (a.ints("ends") ?? []).map(Int64.init)
            axes = a.ints("axes")?.map(Int64.init)
        } else {
            guard let s = constant(inputs, 1)?.ints, let e = constant(inputs, 2)?.ints else { throw context.unsupported("takes its bounds from a computed value") }
            starts = s
            ends = e
            axes = constant(inputs, 3)?.ints
            steps = constant(inputs, 4)?.ints
        }
        let axisList = axes ?? (0..<Int64(starts.count)).map { $0 }
        guard starts.count == ends.count, axisList.count == starts.count, (steps?.count ?? starts.count) == starts.count else {
            throw context.malformed("has \(starts.count) starts, \(ends.count) ends and \(axisList.count) axes")
        }
        guard (steps ?? []).allSatisfy({ $0 == 1 }) else { throw context.unsupported("slices with a step other than 1") }
        var top = 0, left = 0, bottom = 0, right = 0
        var channels: (Int, Int)?
        let endless = Int64(Int32.max)
        let size = shape(of: x)
        for (i, given) in axisList.enumerated() {
            let axis = try engineAxis(Int(given), context)
            let s = starts[i], e = ends[i]
            // Bounds counted from the start and from the far side fit an image of any size.
            let anySize = s >= 0 && s <= Int64(ModelLimits.maxPad) && (e >= endless || (e < 0 && e >= -Int64(ModelLimits.maxPad)))
            guard let size else { throw context.unsupported("slices a value whose size is not known before running") }
            let n = Int64([1, size.c, size.h, size.w][axis])
            let lo = min(max(s < 0 ? s + n : s, 0), n), hi = min(max(e < 0 ? e + n : e, 0), n)
            guard hi > lo else { throw context.unsupported("slices axis \(given) to nothing (\(s)..<\(e) of \(n)); the engine's tensors are never empty") }
            switch axis {
            case 0:
                guard lo == 0, hi == n else { throw context.unsupported("slices the batch") }
            case 1:
                channels = (Int(lo), Int(hi))
            default:
                if !anySize && options.inputShape == nil && (liftedDimensions[2] == nil || liftedDimensions[3] == nil) { shapeDependent = true }
                if axis == 2 { top = Int(lo); bottom = Int(n - hi) } else { left = Int(lo); right = Int(n - hi) }
            }
        }
        var v = x
        if let (c0, c1) = channels {
            if top == 0 && left == 0 && bottom == 0 && right == 0 {
                emit(.sliceChannels(start: c0, end: c1), [v], context)
                return
            }
            let mid = builder.newValue(context.name + "/channels")
            builder.append(Node(name: context.name, op: .sliceChannels(start: c0, end: c1), inputs: [v], output: mid))
            v = mid
        }
        if top == 0 && left == 0 && bottom == 0 && right == 0 {
            values[context.out] = v
            return
        }
        emit(.crop(top: top, left: left, bottom: bottom, right: right), [v], context)
    }

    mutating func fullyConnected(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext,
                                 runtime x: Int) throws {
        guard producesVector(x) else { return try rowMatMul(op, a, inputs: inputs, context, runtime: x) }
        guard let w = constant(inputs, 1), w.dims.count == 2 else { throw context.unsupported("takes its weights from a computed value") }
        let transB = op == "Gemm" && (a.int("transB") ?? 0) == 1
        guard op == "MatMul" || ((a.int("transA") ?? 0) == 0 && (a.float("alpha") ?? 1) == 1 && (a.float("beta") ?? 1) == 1) else {
            throw context.unsupported("scales or transposes its input (alpha, beta, transA)")
        }
        // The engine's weights are [out][in].
        let (k, n) = transB ? (w.dims[1], w.dims[0]) : (w.dims[0], w.dims[1])
        guard k > 0, n > 0 else { throw context.malformed("has weights of shape \(w.dims)") }
        var weights = w.floats
        if !transB {
            weights = [Float](repeating: 0, count: k * n)
            for i in 0..<k { for j in 0..<n { weights[j * k + i] = w.floats[i * n + j] } }
        }
        var bias: [Float] = []
        if op == "Gemm", let c = constant(inputs, 2) {
            guard c.count == 1 || c.count == n else { throw context.malformed("has \(c.count) biases for \(n) outputs") }
            bias = c.count == 1 ? [Float](repeating: c.floats[0], count: n) : c.floats
        }
        emit(.fullyConnected(outFeatures: n, weights: weights, bias: bias, activation: .identity), [x], context)
    }
    /// MatMul or Gemm of a runtime matrix (its last axis) by a constant 2-D matrix.
    mutating func rowMatMul(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext, runtime x: Int) throws {
        guard let b = constant(inputs, 1) else { throw context.unsupported("multiplies by a computed matrix; the engine multiplies by constant weights") }
        guard b.dims.count == 2 else { throw context.unsupported("multiplies by a batch of matrices (\(b.dims)); the engine takes one 2-D weight matrix") }
        guard rank >= 2 || op == "MatMul" else { throw context.malformed("multiplies a rank-\(rank) value") }
        guard (a.int("transA") ?? 0) == 0 else { throw context.unsupported("transposes its input (transA)") }
        let transB = op == "Gemm" && (a.int("transB") ?? 0) == 1
        let alpha = op == "Gemm" ? a.float("alpha") ?? 1 : 1, beta = op == "Gemm" ? a.float("beta") ?? 1 : 1
        let (k, n) = transB ? (b.dims[1], b.dims[0]) : (b.dims[0], b.dims[1])
        guard k > 0, n > 0, let inner = shape(of: x)?.w, inner == k else {
            throw context.unsupported("multiplies rows of \(shape(of: x).map { String($0.w) } ?? "?") values by a \(k)×\(n) matrix")
        }
        var weights = [Float](repeating: 0, count: k * n)
        for i in 0..<k { for j in 0..<n { weights[i * n + j] = alpha * (transB ? b.floats[j * k + i] : b.floats[i * n + j]) } }
        var bias: [Float] = []
        var matrixBias: Constant?
        if op == "Gemm", let c = constant(inputs, 2) {
            if c.count == 1 || (c.count == n && c.dims.last == n) {
                bias = c.count == 1 ? [Float](repeating: beta * c.floats[0], count: n) : c.floats.map { beta * $0 }
            } else {
                matrixBias = Constant(floats: c.floats.map { beta * $0 }, dims: c.dims)
            }
        }
        guard let bias2 = matrixBias else {
            emit(.rowMatMul(inFeatures: k, outFeatures: n, weights: weights, bias: bias), [x], context)
            return
        }
        let product = builder.newValue(context.out + "/product")
        builder.append(Node(name: context.name, op: .rowMatMul(inFeatures: k, outFeatures: n, weights: weights, bias: bias), inputs: [x], output: product))
        let c = try constantNode(bias2, context)
        emit(.binary(.add, coefficients: nil), [product, c], context)
    }
}
