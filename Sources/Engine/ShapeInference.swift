extension Graph {
    /// The shape of every value for an input of `inputShape`, checking that each layer fits
    /// its inputs. Errors name the layer, its operation and the model file.
    public func inferShapes(input inputShape: Shape) throws -> [Shape?] {
        var shapes = [Shape?](repeating: nil, count: valueNames.count)
        shapes[input] = inputShape
        for node in nodes {
            let ins: [Shape] = try node.inputs.map { i in
                guard let s = shapes[i] else {
                    throw EngineError(.invalidGraph, "Layer '\(node.name)' in \(source) reads '\(valueNames[i])' before any layer produces it.")
                }
                return s
            }
            shapes[node.output] = try node.outputShape(ins, source: source)
        }
        return shapes
    }

    /// Multiply-adds of one run at `inputShape` (convolutions, transposed convolutions, fully
    /// connected layers), for FLOP reports (1 MAC = 2 FLOPs).
    public func multiplyAdds(input inputShape: Shape) throws -> Int {
        let shapes = try inferShapes(input: inputShape)
        // Saturating: a count past Int.max reads Int.max rather than trapping.
        var total = 0
        func add(_ factors: Int...) {
            var product = 1
            for f in factors {
                let (p, overflow) = product.multipliedReportingOverflow(by: f)
                product = overflow ? Int.max : p
            }
            let (sum, overflow) = total.addingReportingOverflow(product)
            total = overflow ? Int.max : sum
        }
        for node in nodes {
            switch node.op {
            case .convolution(let p):
                guard let o = shapes[node.output] else { continue }
                add(o.h, o.w, p.macsPerOutputPixel)
            case .deconvolution(let p):
                guard let i = shapes[node.inputs[0]] else { continue }
                add(i.h, i.w, p.inChannels, p.outChannels / p.groups, p.kernelH, p.kernelW)
            case .fullyConnected(_, let weights, _, _):
                add(weights.count)
            case .rowMatMul(_, _, let weights, _):
                guard let i = shapes[node.inputs[0]] else { continue }
                add(i.c, i.h, weights.count)
            case .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle, .resize, .pad, .crop,
                 .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .upsampleDetail, .instanceNorm, .pool,
                 .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .external:
                // No weights (an external kernel's work is its own): a handful of operations per value, not counted.
                break
            }
        }
        return total
    }
}

extension Node {
    func fail(_ why: String, _ source: String) -> EngineError {
        EngineError(.invalidGraph, "Layer '\(name)' (\(op.kindName)) in \(source): \(why).")
    }

    /// Output shape for these input shapes.
    func outputShape(_ ins: [Shape], source: String) throws -> Shape {
        let expectedInputs: Int
        switch op {
        case .binary, .cropLike, .upsampleDetail: expectedInputs = 2
        case .concatChannels, .concat: expectedInputs = max(ins.count, 1)
        case .constant: expectedInputs = 0
        case .convolution, .deconvolution, .activation, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle, .resize,
             .pad, .crop, .sliceChannels, .globalAveragePool, .fullyConnected, .instanceNorm, .pool, .spaceToDepth, .resample,
             .reshape, .softmax, .transpose, .rowMatMul, .external:
            expectedInputs = 1
        }
        guard ins.count == expectedInputs else { throw fail("expects \(expectedInputs) inputs, has \(ins.count)", source) }
        if case .constant(let shape, let values) = op {
            guard shape.c > 0, shape.h > 0, shape.w > 0, values.count == shape.count else { throw fail("holds \(values.count) values for \(shape)", source) }
            return shape
        }
        let x = ins[0]
        let shape = try unboundedOutputShape(ins, x, source: source)
        guard shape.c > 0, shape.h > 0, shape.w > 0, ModelLimits.elementCount([shape.c, shape.h, shape.w]) != nil else {
            throw fail("gives a \(shape.c)x\(shape.h)x\(shape.w) output, beyond the limit of \(ModelLimits.maxTensorElements) values per tensor", source)
        }
        return shape
    }

    /// Checks a (transposed) convolution's parameters against `ModelLimits` before any
    /// arithmetic uses them.
    func check(_ p: ConvolutionParameters, _ source: String) throws {
        let L = ModelLimits.self
        guard (1...L.maxChannels).contains(p.inChannels), (1...L.maxChannels).contains(p.outChannels) else {
            throw fail("has \(p.inChannels)→\(p.outChannels) channels; each must be 1–\(L.maxChannels)", source)
        }
        guard (1...L.maxKernel).contains(p.kernelH), (1...L.maxKernel).contains(p.kernelW) else {
            throw fail("has a \(p.kernelH)x\(p.kernelW) kernel; each side must be 1–\(L.maxKernel)", source)
        }
        guard (1...L.maxStride).contains(p.strideH), (1...L.maxStride).contains(p.strideW) else {
            throw fail("has stride \(p.strideH)x\(p.strideW); each must be 1–\(L.maxStride)", source)
        }
        guard (1...L.maxDilation).contains(p.dilationH), (1...L.maxDilation).contains(p.dilationW) else {
            throw fail("has dilation \(p.dilationH)x\(p.dilationW); each must be 1–\(L.maxDilation)", source)
        }
        for pad in [p.padTop, p.padLeft, p.padBottom, p.padRight, p.outputPadH, p.outputPadW] where !(0...L.maxPad).contains(pad) {
            throw fail("has padding \(pad); each side must be 0–\(L.maxPad)", source)
        }
        guard p.groups > 0, p.inChannels % p.groups == 0, p.outChannels % p.groups == 0 else {
            throw fail("groups \(p.groups) do not divide channels \(p.inChannels)→\(p.outChannels)", source)
        }
        // Every backend indexes the bias and fused PReLU slopes by output channel.
        guard p.bias.isEmpty || p.bias.count == p.outChannels else {
            throw fail("has \(p.bias.count) biases for \(p.outChannels) output channels", source)
        }
        if case .prelu(let slopes) = p.activation, slopes.count != 1, slopes.count != p.outChannels {
            throw fail("has \(slopes.count) PReLU slopes for \(p.outChannels) output channels", source)
        }
    }

    /// Checks a tensor's sides before arithmetic: each within `ModelLimits.maxDimension`.
    func checkDimensions(_ shapes: [Shape], _ source: String) throws {
        for s in shapes where !(1...ModelLimits.maxDimension).contains(s.h) || !(1...ModelLimits.maxDimension).contains(s.w)
            || !(1...ModelLimits.maxChannels).contains(s.c) {
            throw fail("gets a \(s.c)x\(s.h)x\(s.w) input, beyond \(ModelLimits.maxChannels) channels or \(ModelLimits.maxDimension) per side", source)
        }
    }

    func unboundedOutputShape(_ ins: [Shape], _ x: Shape, source: String) throws -> Shape {
        try checkDimensions(ins, source)
        switch op {
        case .convolution(let p):
            try check(p, source)
            guard x.c == p.inChannels else { throw fail("expects \(p.inChannels) input channels, gets \(x.c)", source) }
            guard p.groups > 0, p.inChannels % p.groups == 0, p.outChannels % p.groups == 0 else {
                throw fail("groups \(p.groups) do not divide channels \(p.inChannels)→\(p.outChannels)", source)
            }
            guard p.weights.count == p.outChannels * (p.inChannels / p.groups) * p.kernelH * p.kernelW else {
                throw fail("has \(p.weights.count) weights, expected \(p.outChannels * (p.inChannels / p.groups) * p.kernelH * p.kernelW)", source)
            }
            let ekh = p.dilationH * (p.kernelH - 1) + 1, ekw = p.dilationW * (p.kernelW - 1) + 1
            let h = (x.h + p.padTop + p.padBottom - ekh) / p.strideH + 1
            let w = (x.w + p.padLeft + p.padRight - ekw) / p.strideW + 1
            guard x.h + p.padTop + p.padBottom >= ekh, x.w + p.padLeft + p.padRight >= ekw, h > 0, w > 0 else {
                throw fail("input \(x.h)x\(x.w) is smaller than the \(ekh)x\(ekw) kernel", source)
            }
            return Shape(c: p.outChannels, h: h, w: w)
        case .deconvolution(let p):
            try check(p, source)
            guard x.c == p.inChannels else { throw fail("expects \(p.inChannels) input channels, gets \(x.c)", source) }
            guard p.weights.count == p.inChannels * (p.outChannels / p.groups) * p.kernelH * p.kernelW else {
                throw fail("has \(p.weights.count) weights, expected \(p.inChannels * (p.outChannels / p.groups) * p.kernelH * p.kernelW)", source)
            }
            let h = (x.h - 1) * p.strideH + p.dilationH * (p.kernelH - 1) + 1 - p.padTop - p.padBottom + p.outputPadH
            let w = (x.w - 1) * p.strideW + p.dilationW * (p.kernelW - 1) + 1 - p.padLeft - p.padRight + p.outputPadW
            guard h > 0, w > 0 else { throw fail("input \(x.h)x\(x.w) gives an empty output", source) }
            return Shape(c: p.outChannels, h: h, w: w)
        case .activation(let a):
            if case .prelu(let s) = a, s.count != 1, s.count != x.c {
                throw fail("has \(s.count) slopes for \(x.c) channels", source)
            }
            return x
        case .scalar, .softmaxChannels:
            return x
        case .channelAffine(let scale, let bias):
            guard scale.count == x.c, bias.count == x.c else { throw fail("has \(scale.count) scales for \(x.c) channels", source) }
            return x
        case .binary:
            let y = ins[1]
            func dim(_ a: Int, _ b: Int, _ what: String) throws -> Int {
                if a == b || b == 1 { return a }
                if a == 1 { return b }
                throw fail("cannot broadcast \(what) \(a) with \(b) (shapes \(x) and \(y))", source)
            }
            return Shape(c: try dim(x.c, y.c, "channels"), h: try dim(x.h, y.h, "height"), w: try dim(x.w, y.w, "width"))
        case .pixelShuffle(let r, _):
            guard (1...ModelLimits.maxScale).contains(r), x.c % (r * r) == 0 else { throw fail("\(x.c) channels are not divisible by \(r)²", source) }
            return Shape(c: x.c / (r * r), h: x.h * r, w: x.w * r)
        case .resize(_, let sh, let sw, let oh, let ow, _):
            let scales: ClosedRange<Float> = 1 / Float(ModelLimits.maxScale)...Float(ModelLimits.maxScale)
            guard oh > 0 || scales.contains(sh), ow > 0 || scales.contains(sw),
                  oh <= ModelLimits.maxDimension, ow <= ModelLimits.maxDimension else {
                throw fail("resizes by \(sh)x\(sw) (to \(oh)x\(ow)); a factor must be 1/\(ModelLimits.maxScale)–\(ModelLimits.maxScale) and a size at most \(ModelLimits.maxDimension)", source)
            }
            let h = oh > 0 ? oh : Int(Float(x.h) * sh)
            let w = ow > 0 ? ow : Int(Float(x.w) * sw)
            guard h > 0, w > 0 else { throw fail("resizes \(x.h)x\(x.w) to nothing", source) }
            return Shape(c: x.c, h: h, w: w)
        case .pad(let t, let l, let b, let r, let mode):
            guard (0...ModelLimits.maxPad).contains(t), (0...ModelLimits.maxPad).contains(l),
                  (0...ModelLimits.maxPad).contains(b), (0...ModelLimits.maxPad).contains(r) else {
                throw fail("padding \(t),\(l),\(b),\(r) is negative or beyond \(ModelLimits.maxPad)", source)
            }
            if mode == .reflect, t >= x.h || b >= x.h || l >= x.w || r >= x.w {
                throw fail("reflect padding \(max(t, b, l, r)) needs an input larger than \(x.h)x\(x.w)", source)
            }
            return Shape(c: x.c, h: x.h + t + b, w: x.w + l + r)
        case .crop(let t, let l, let b, let r):
            guard t >= 0, l >= 0, b >= 0, r >= 0, t < x.h, b < x.h, l < x.w, r < x.w, x.h - t - b > 0, x.w - l - r > 0 else {
                throw fail("crop \(t),\(l),\(b),\(r) does not fit \(x.h)x\(x.w)", source)
            }
            return Shape(c: x.c, h: x.h - t - b, w: x.w - l - r)
        case .cropLike(let t, let l):
            let y = ins[1]
            guard t >= 0, l >= 0, t <= x.h, l <= x.w, t + y.h <= x.h, l + y.w <= x.w else {
                throw fail("cannot crop \(y.h)x\(y.w) at \(t),\(l) out of \(x.h)x\(x.w)", source)
            }
            return Shape(c: x.c, h: y.h, w: y.w)
        case .sliceChannels(let s, let e):
            guard s >= 0, e <= x.c, s < e else { throw fail("channel slice \(s)..<\(e) does not fit \(x.c) channels", source) }
            return Shape(c: e - s, h: x.h, w: x.w)
        case .concatChannels:
            for y in ins where y.h != x.h || y.w != x.w {
                throw fail("concatenates \(x.h)x\(x.w) with \(y.h)x\(y.w)", source)
            }
            return Shape(c: ins.reduce(0) { $0 + $1.c }, h: x.h, w: x.w)
        case .globalAveragePool:
            return Shape(c: x.c, h: 1, w: 1)
        case .fullyConnected(let out, let weights, let bias, _):
            let expected = out.multipliedReportingOverflow(by: x.count)
            guard out > 0, !expected.overflow, weights.count == expected.partialValue else {
                throw fail("has \(weights.count) weights for \(x.count) inputs × \(out) outputs", source)
            }
            guard bias.isEmpty || bias.count == out else { throw fail("has \(bias.count) biases for \(out) outputs", source) }
            return Shape(c: out, h: 1, w: 1)
        case .upsampleDetail(_, _, let r):
            let d = ins[1]
            guard (2...4).contains(r) else { throw fail("upsamples by \(r): the fused tail takes 2, 3 or 4", source) }
            guard d.h == x.h, d.w == x.w, d.c == r * r || d.c == r * r * x.c else {
                throw fail("detail \(d) does not fit base \(x): it needs \(r * r) or \(r * r * x.c) channels of \(x.h)x\(x.w)", source)
            }
            return Shape(c: x.c, h: r * x.h, w: r * x.w)
        case .instanceNorm(let scale, let bias, _):
            guard scale.count == x.c, bias.count == x.c else { throw fail("has \(scale.count) scales for \(x.c) channels", source) }
            return x
        case .pool(let p):
            let limits = 1...ModelLimits.maxKernel
            guard limits.contains(p.kernelH), limits.contains(p.kernelW), (1...ModelLimits.maxStride).contains(p.strideH),
                  (1...ModelLimits.maxStride).contains(p.strideW), p.dilationH >= 1, p.dilationW >= 1,
                  [p.padTop, p.padLeft, p.padBottom, p.padRight].allSatisfy({ (0...ModelLimits.maxPad).contains($0) }) else {
                throw fail("has a window, stride or padding beyond the model limits", source)
            }
            let (h, w) = p.outputSize(h: x.h, w: x.w)
            guard h > 0, w > 0 else { throw fail("a \(p.kernelH)x\(p.kernelW) window does not fit \(x.h)x\(x.w)", source) }
            return Shape(c: x.c, h: h, w: w)
        case .spaceToDepth(let r):
            guard (1...ModelLimits.maxScale).contains(r), x.h % r == 0, x.w % r == 0 else { throw fail("\(x.h)x\(x.w) is not divisible by \(r)", source) }
            return Shape(c: x.c * r * r, h: x.h / r, w: x.w / r)
        case .resample(let p):
            let scales: ClosedRange<Float> = 1 / Float(ModelLimits.maxScale)...Float(ModelLimits.maxScale)
            guard p.outH > 0 || scales.contains(p.scaleH), p.outW > 0 || scales.contains(p.scaleW),
                  p.outH <= ModelLimits.maxDimension, p.outW <= ModelLimits.maxDimension else {
                throw fail("resizes by \(p.scaleH)x\(p.scaleW) (to \(p.outH)x\(p.outW)); a factor must be 1/\(ModelLimits.maxScale)–\(ModelLimits.maxScale) and a size at most \(ModelLimits.maxDimension)", source)
            }
            let h = p.outH > 0 ? p.outH : Int((Float(x.h) * p.scaleH).rounded(.down))
            let w = p.outW > 0 ? p.outW : Int((Float(x.w) * p.scaleW).rounded(.down))
            guard h > 0, w > 0 else { throw fail("resizes \(x.h)x\(x.w) to nothing", source) }
            return Shape(c: x.c, h: h, w: w)
        case .constant:
            return x
        case .reshape(let to):
            guard to.c > 0, to.h > 0, to.w > 0, to.count == x.count else { throw fail("cannot reshape \(x) to \(to)", source) }
            return to
        case .softmax(let axis):
            guard axis == 2 || axis == 3 else { throw fail("takes a softmax along axis \(axis)", source) }
            return x
        case .concat(let axis):
            guard axis == 2 || axis == 3 else { throw fail("concatenates along axis \(axis)", source) }
            for y in ins where y.c != x.c || (axis == 2 ? y.w != x.w : y.h != x.h) {
                throw fail("concatenates \(x) with \(y) along \(axis == 2 ? "rows" : "columns")", source)
            }
            return axis == 2 ? Shape(c: x.c, h: ins.reduce(0) { $0 + $1.h }, w: x.w) : Shape(c: x.c, h: x.h, w: ins.reduce(0) { $0 + $1.w })
        case .transpose(let perm):
            guard perm.sorted() == [0, 1, 2] else { throw fail("has permutation \(perm)", source) }
            let d = [x.c, x.h, x.w]
            return Shape(c: d[perm[0]], h: d[perm[1]], w: d[perm[2]])
        case .rowMatMul(let k, let n, let weights, let bias):
            guard x.w == k, k > 0, n > 0, weights.count == k * n, bias.isEmpty || bias.count == n else {
                throw fail("multiplies rows of \(x.w) by a \(k)×\(n) matrix (\(weights.count) weights, \(bias.count) biases)", source)
            }
            return Shape(c: x.c, h: x.h, w: n)
        case .external(let e):
            let o: Shape
            do {
                o = try e.kernel.outputShape(for: x)
            } catch let error as EngineError {
                throw fail(error.message, source)
            }
            guard o.c > 0, o.h > 0, o.w > 0, o.c <= ModelLimits.maxChannels, o.h <= ModelLimits.maxDimension,
                  o.w <= ModelLimits.maxDimension, ModelLimits.elementCount([o.c, o.h, o.w]) != nil else {
                throw fail("is \(e.kernel.label), which answers output shape \(o) for input \(x), outside the engine's limits", source)
            }
            return o
        }
    }
}

extension Operation {
    /// Each operation case without its parameters; `allCases` lists every case, so a test
    /// can prove that each has a parity check (a new case must be given one here).
    public enum Kind: String, CaseIterable, Sendable {
        case convolution, deconvolution, activation, binary, scalar, channelAffine, softmaxChannels, pixelShuffle, resize,
             pad, crop, cropLike, sliceChannels, concatChannels, globalAveragePool, fullyConnected, upsampleDetail,
             instanceNorm, pool, spaceToDepth, resample, constant, reshape, softmax, concat, transpose, rowMatMul, external
    }

    /// The operation's case.
    public var kind: Kind {
        switch self {
        case .convolution: return .convolution
        case .deconvolution: return .deconvolution
        case .activation: return .activation
        case .binary: return .binary
        case .scalar: return .scalar
        case .channelAffine: return .channelAffine
        case .softmaxChannels: return .softmaxChannels
        case .pixelShuffle: return .pixelShuffle
        case .resize: return .resize
        case .pad: return .pad
        case .crop: return .crop
        case .cropLike: return .cropLike
        case .sliceChannels: return .sliceChannels
        case .concatChannels: return .concatChannels
        case .globalAveragePool: return .globalAveragePool
        case .fullyConnected: return .fullyConnected
        case .upsampleDetail: return .upsampleDetail
        case .instanceNorm: return .instanceNorm
        case .pool: return .pool
        case .spaceToDepth: return .spaceToDepth
        case .resample: return .resample
        case .constant: return .constant
        case .reshape: return .reshape
        case .softmax: return .softmax
        case .concat: return .concat
        case .transpose: return .transpose
        case .rowMatMul: return .rowMatMul
        case .external: return .external
        }
    }
}

extension Operation {
    /// A short name of the operation kind.
    public var kindName: String {
        switch self {
        case .convolution: return "convolution"
        case .deconvolution: return "transposed convolution"
        case .activation: return "activation"
        case .binary(let k, _): return "binary \(k.rawValue)"
        case .scalar(let k, _, _): return "scalar \(k.rawValue)"
        case .channelAffine: return "batch norm"
        case .softmaxChannels: return "softmax"
        case .pixelShuffle: return "pixel shuffle"
        case .resize(let m, _, _, _, _, _): return "resize \(m.rawValue)"
        case .pad: return "pad"
        case .crop: return "crop"
        case .cropLike: return "crop"
        case .sliceChannels: return "slice"
        case .concatChannels: return "concat"
        case .globalAveragePool: return "global average pooling"
        case .fullyConnected: return "fully connected"
        case .upsampleDetail(let m, _, let r): return "upsample detail \(m.rawValue)\(r == 2 ? "" : " ×\(r)")"
        case .instanceNorm: return "instance norm"
        case .pool(let p): return p.kind == .max ? "max pooling" : "average pooling"
        case .spaceToDepth: return "space to depth"
        case .resample(let p): return "resize \(p.mode.rawValue) \(p.coordinates.rawValue)"
        case .constant: return "constant"
        case .reshape: return "reshape"
        case .softmax(let axis): return "softmax along \(axis == 2 ? "columns" : "rows")"
        case .concat(let axis): return "concat along \(axis == 2 ? "rows" : "columns")"
        case .transpose: return "transpose"
        case .rowMatMul: return "matrix multiply"
        case .external(let e): return "external: \(e.kernel.label)"
        }
    }
}

extension Graph {
    /// The most bytes of fp32 values alive at once in one run at `inputShape`: each value lives
    /// from the layer that makes it to the last layer that reads it (the input and the output
    /// through the whole run), as the backends' buffer plans place them. What a whole-graph run
    /// (`vivify infer`, whole-frame models) needs beyond the weights, checked before it
    /// allocates.
    public func peakActivationBytes(input inputShape: Shape) throws -> Int {
        let shapes = try inferShapes(input: inputShape)
        var first = [Int](repeating: Int.max, count: valueNames.count)
        var last = [Int](repeating: -1, count: valueNames.count)
        first[input] = -1
        for (step, node) in nodes.enumerated() {
            first[node.output] = min(first[node.output], step)
            for i in node.inputs { last[i] = max(last[i], step) }
        }
        // The caller holds the input and takes the output: both live through the whole run.
        last[output] = nodes.count
        last[input] = nodes.count
        // Steps -1 … nodes.count shifted by one; a sweep over births and deaths, O(values +
        // layers). No overflow: shape inference holds every value to `maxTensorElements`
        // (2^30 bytes) and a graph to `maxLayers` values, so sums stay under 2^47.
        var delta = [Int](repeating: 0, count: nodes.count + 3)
        for v in shapes.indices {
            guard let s = shapes[v], first[v] != Int.max else { continue }
            delta[first[v] + 1] += s.count * 4
            delta[max(last[v], first[v]) + 2] -= s.count * 4
        }
        var peak = 0, live = 0
        for d in delta {
            live += d
            peak = max(peak, live)
        }
        return peak
    }
}
