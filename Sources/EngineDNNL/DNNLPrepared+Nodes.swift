import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension DNNLPrepared {
    // MARK: compiling nodes

    func compile(_ node: Node) throws {
        let out = shapes[node.output]
        switch node.op {
        case .convolution(let p):
            try convolution(node, p, transposed: false)
        case .deconvolution(let p):
            if p.outputPadH != 0 || p.outputPadW != 0 || p.groups != 1 {
                try plainOp(node)
            } else {
                try convolution(node, p, transposed: true)
            }
        case .activation(let a):
            if case .prelu(let slopes) = a {
                try prelu(node.inputs[0], slopes, output: node.output)
            } else if let (alg, alpha, beta) = eltwiseAlgorithm(a) {
                let src = try materialized(node.inputs[0])
                var desc = dnnl_eltwise_desc_t()
                var md = src.md
                try dnnlCheck(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, alpha, beta), "describe an activation")
                try unary(&desc, src, output: node.output)
            } else {
                current[node.output] = try materialized(node.inputs[0])
            }
        case .binary(let kind, let coefficients):
            try binary(node, kind, coefficients, out)
        case .globalAveragePool:
            let src = try materialized(node.inputs[0])
            let s = shapes[node.inputs[0]]
            var desc = dnnl_pooling_desc_t()
            var smd = src.md
            var dmd = Self.anyMD([1, Int64(s.c), 1, 1], src.md.data_type)
            var strides: [Int64] = [1, 1], kernel: [Int64] = [Int64(s.h), Int64(s.w)], pad: [Int64] = [0, 0]
            try dnnlCheck(dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference, dnnl_pooling_avg_exclude_padding, &smd, &dmd,
                                                         &strides, &kernel, &pad, &pad), "describe global average pooling")
            try unary(&desc, src, output: node.output)
        case .fullyConnected(let outFeatures, let weights, let bias, let activation):
            try fullyConnected(node, outFeatures, weights, bias, activation)
        case .crop(let t, let l, _, _), .cropLike(let t, let l):
            try window(node.inputs[0], top: t, left: l, channel: 0, out: out, output: node.output)
        case .sliceChannels(let start, _):
            try window(node.inputs[0], top: 0, left: 0, channel: start, out: out, output: node.output)
        case .softmaxChannels:
            try softmax(node)
        case .resize(.bilinear, _, _, _, _, false) where out.h % shapes[node.inputs[0]].h == 0 && out.w % shapes[node.inputs[0]].w == 0:
            try upsampleLinear(node)
        case .upsampleDetail(let mode, let order, let factor):
            try upsampleDetail(node, mode, order, factor)
        case .scalar, .channelAffine, .pixelShuffle, .resize, .pad, .concatChannels:
            try plainOp(node)
        case .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul, .external:
            // Rare in image models: the plain loops (Kernels), as the op tests say.
            try plainOp(node)
        }
    }

    func createPD(_ desc: UnsafeMutableRawPointer, attr: dnnl_primitive_attr_t?) throws -> dnnl_primitive_desc_t {
        var pd: dnnl_primitive_desc_t?
        try dnnlCheck(dnnl_primitive_desc_create(&pd, UnsafeRawPointer(desc), attr, engine, nil), "find an implementation")
        return pd!
    }

    func createPD<T>(_ desc: inout T, attr: dnnl_primitive_attr_t?) throws -> dnnl_primitive_desc_t {
        try withUnsafeMutablePointer(to: &desc) { try createPD(UnsafeMutableRawPointer($0), attr: attr) }
    }

    func add(_ pd: dnnl_primitive_desc_t, _ args: [(Int32, DNNLMemory)], keep: [AnyObject] = []) throws {
        append(try DNNLStep(pd: pd, args: args, keep: keep, planner: planner, engine: engine))
    }

    func convolution(_ node: Node, _ original: ConvolutionParameters, transposed: Bool) throws {
        if !transposed, try int8Convolution(node, original) { return }
        if let observer = backend.observer, !transposed {
            // Calibration: the range of what this layer reads, on every run.
            let src = try plain(node.inputs[0])
            let s = shapes[node.inputs[0]]
            let name = node.name
            appendLoop([src]) { observer.record(name, channelRanges(src.pointer, channels: s.c, plane: s.h * s.w)) }
        }
        var p = original
        var s = shapes[node.inputs[0]], o = shapes[node.output]
        // A valid (unpadded) 3×3 stride-1 layer equals a 1-padded one with its outer ring
        // dropped. Running it padded keeps oneDNN on Winograd, and the ring is not cropped
        // now: the value carries a growing margin of garbage pixels through a chain of such
        // layers and is cropped once, where something else reads it. (fp32 only: int8 layers
        // read dense values.)
        var outMargin = 0
        let reduced = precision == .bf16
        let dt = reduced ? dnnl_bf16 : dnnl_f32
        if !transposed, Self.useWinograd, precision == .fp32, p.kernelH == 3, p.kernelW == 3, p.strideH == 1, p.strideW == 1,
           p.dilationH == 1, p.dilationW == 1, p.padTop == 0, p.padLeft == 0, p.padBottom == 0, p.padRight == 0,
           p.groups == 1, p.inChannels >= 16, p.outChannels >= 16 {
            let m = margins[node.inputs[0]] ?? 0
            s = Shape(c: s.c, h: s.h + 2 * m, w: s.w + 2 * m)
            o = Shape(c: o.c, h: s.h, w: s.w)
            p.padTop = 1; p.padLeft = 1; p.padBottom = 1; p.padRight = 1
            outMargin = m + 1
        }
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dt)
        // A value read by Swift loops (the fused upscaler tail) is best written plain directly
        // where it has fewer than 16 channels (vivify-fast-2x's 12); with more, oneDNN's
        // convolutions into a plain layout are slow (realesr-animevideov3-x4's 64 → 48 took
        // 180–211 ms against 43–48 ms blocked, 640×360, one thread), so those are written in
        // blocks and reordered for the loops.
        let wantsPlain = !transposed && outMargin == 0 && tailDetails.contains(node.output) && o.c < 16
        var dstAny = wantsPlain ? Self.plainMD(o) : Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dt)
        // A first layer (few input channels, read plain) writing 16-channel blocks directly:
        // oneDNN has a kernel for exactly that, and the next layers (Winograd among them) read
        // blocks, so no reorder follows.
        var firstLayer = false
        if !transposed, !wantsPlain, !reduced, p.groups == 1, p.inChannels < 8, o.c % 16 == 0, outMargin == 0,
           (margins[node.inputs[0]] ?? 0) == 0, current[node.inputs[0]]?.isPlain == true {
            dstAny = Self.taggedMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dnnl_nChw16c)
            srcAny = Self.plainMD(s)
            firstLayer = true
        }
        var (wdims, bmd, strides, dil, padL, padR) = Self.window(p)
        var wAny = Self.anyMD(wdims, dt)
        let attr = try DNNLAttr(activation: p.activation)
        let pd: dnnl_primitive_desc_t
        var separateActivation = false
        if transposed {
            var desc = dnnl_deconvolution_desc_t()
            try dnnlCheck(dnnl_dilated_deconvolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_deconvolution_direct, &srcAny, &wAny,
                                                                       &bmd, &dstAny, &strides, &dil, &padL, &padR), "describe the transposed convolution")
            pd = try createPD(&desc, attr: attr.attr)
        } else {
            var desc = dnnl_convolution_desc_t()
            // Winograd F(4,3) does 3×3 stride-1 layers with about a third of the multiplies;
            // oneDNN has it for wide enough layers on AVX-512. Fall back to direct otherwise.
            // oneDNN's Winograd kernels take no activation post-op other than ReLU: others then
            // run as a separate in-place step, which costs far less than losing Winograd.
            var winogradPD: dnnl_primitive_desc_t?
            let fusable = p.activation == .identity || p.activation == .relu
            let winogradAttr = fusable ? attr : try DNNLAttr(activation: .identity)
            if Self.useWinograd, !reduced, p.kernelH == 3, p.kernelW == 3, p.strideH == 1, p.strideW == 1, p.dilationH == 1, p.dilationW == 1,
               p.groups == 1, p.inChannels >= 16, p.outChannels >= 16,
               dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_winograd, &srcAny, &wAny,
                                                          &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success {
                winogradPD = try? createPD(&desc, attr: winogradAttr.attr)
            }
            if let winogradPD {
                pd = winogradPD
                separateActivation = !fusable
            } else if let direct = try inPlaceLayoutPD(node, &desc, &wAny, &bmd, &dstAny, &strides, &dil, &padL, &padR, attr) {
                pd = direct
            } else if firstLayer, dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny,
                                                                             &wAny, &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success,
                      let first = Self.realKernel(try? createPD(&desc, attr: attr.attr)) {
                pd = first
            } else {
                srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dt)
                dstAny = wantsPlain ? Self.plainMD(o) : Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dt)
                try dnnlCheck(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny, &wAny,
                                                                         &bmd, &dstAny, &strides, &dil, &padL, &padR), "describe the convolution")
                pd = try createPD(&desc, attr: attr.attr)
            }
        }
        defer { dnnl_primitive_desc_destroy(pd) }
        let srcMD = query(pd, dnnl_query_src_md)
        let src: DNNLMemory
        if outMargin > 0 {
            // Read the stored (margin-carrying) tensor as it is, reordering only its layout.
            let stored = current[node.inputs[0]]!
            if stored.sameLayout(as: srcMD) {
                src = stored
            } else {
                src = try activation(srcMD, isPlain: false)
                try addReorder(from: stored, to: src)
            }
        } else if let m = margins[node.inputs[0]], m > 0, plainCopies[node.inputs[0]] == nil {
            // Crop the margin and change layout in one reorder, straight into what this layer reads.
            let stored = current[node.inputs[0]]!
            let real = shapes[node.inputs[0]]
            var sub = dnnl_memory_desc_t()
            var md = stored.md
            var dims: [Int64] = [1, Int64(real.c), Int64(real.h), Int64(real.w)]
            var offsets: [Int64] = [0, 0, Int64(m), Int64(m)]
            try dnnlCheck(dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets), "describe a margin crop")
            src = try activation(srcMD, isPlain: false)
            var rpd: dnnl_primitive_desc_t?
            var a = sub, b = srcMD
            try dnnlCheck(dnnl_reorder_primitive_desc_create(&rpd, &a, engine, &b, engine, plainAttr.attr), "crop a margin")
            defer { dnnl_primitive_desc_destroy(rpd) }
            append(try DNNLStep(pd: rpd!, args: [(DNNL_ARG_FROM, stored), (DNNL_ARG_TO, src)], planner: planner, engine: engine))
        } else {
            src = try value(node.inputs[0], as: srcMD)
        }
        // Our transposed weights are [in][out][kh][kw]: oneDNN's "iohw" for logical (O, I, H, W).
        let userTag: dnnl_format_tag_t = p.groups == 1 ? (transposed ? dnnl_iohw : dnnl_oihw) : dnnl_goihw
        let weights = try constant(p.weights, user: Self.taggedMD(wdims, userTag), into: query(pd, dnnl_query_weights_md))
        let bias = try constant(p.bias.isEmpty ? [Float](repeating: 0, count: p.outChannels) : p.bias, user: bmd, into: bmd)
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_BIAS, bias), (DNNL_ARG_DST, dst)], keep: [attr])
        if separateActivation, let (alg, alpha, beta) = eltwiseAlgorithm(p.activation) {
            var desc = dnnl_eltwise_desc_t()
            var md = dst.md
            try dnnlCheck(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, alpha, beta), "describe an activation")
            let epd = try createPD(&desc, attr: plainAttr.attr)
            defer { dnnl_primitive_desc_destroy(epd) }
            try add(epd, [(DNNL_ARG_SRC, dst), (DNNL_ARG_DST, dst)])
        }
        current[node.output] = dst
        margins[node.output] = outMargin
        if case .prelu(let slopes) = p.activation {
            try prelu(node.output, slopes, output: node.output)
        }
    }

    /// A convolution's weight dimensions (grouped ones with a leading group axis), bias
    /// descriptor and window (strides, dilation as oneDNN counts it, padding), for its descriptor.
    static func window(_ p: ConvolutionParameters) -> (weights: [Int64], bias: dnnl_memory_desc_t, strides: [Int64], dilation: [Int64],
                                                        padL: [Int64], padR: [Int64]) {
        let g = Int64(p.groups)
        let weights: [Int64] = p.groups == 1
            ? [Int64(p.outChannels), Int64(p.inChannels), Int64(p.kernelH), Int64(p.kernelW)]
            : [g, Int64(p.outChannels) / g, Int64(p.inChannels) / g, Int64(p.kernelH), Int64(p.kernelW)]
        return (weights, taggedMD([Int64(p.outChannels)], dnnl_a), [Int64(p.strideH), Int64(p.strideW)],
                [Int64(p.dilationH - 1), Int64(p.dilationW - 1)], [Int64(p.padTop), Int64(p.padLeft)], [Int64(p.padBottom), Int64(p.padRight)])
    }

    func prelu(_ input: Int, _ slopes: [Float], output: Int) throws {
        let src = try materialized(input)
        let s = shapes[input]
        var desc = dnnl_prelu_desc_t()
        var md = src.md
        var wAny = Self.anyMD([1, Int64(s.c), 1, 1])
        try dnnlCheck(dnnl_prelu_forward_desc_init(&desc, dnnl_forward_inference, &md, &wAny), "describe PReLU")
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let full = slopes.count == 1 ? [Float](repeating: slopes[0], count: s.c) : slopes
        let weights = try constant(full, user: Self.taggedMD([1, Int64(s.c), 1, 1], dnnl_nchw), into: query(pd, dnnl_query_weights_md))
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_DST, dst)])
        current[output] = dst
        plainCopies[output] = nil
    }

    func binary(_ node: Node, _ kind: BinaryKind, _ coefficients: [Float]?, _ out: Shape) throws {
        var a = node.inputs[0], b = node.inputs[1]
        let commutative = kind == .add || kind == .mul || kind == .max || kind == .min
        if shapes[a] != out, commutative { swap(&a, &b) }
        let plainCoefficients = coefficients == nil || coefficients! == [1, 1]
        guard shapes[a] == out, plainCoefficients else { return try plainOp(node) }
        let alg: dnnl_alg_kind_t
        switch kind {
        case .add: alg = dnnl_binary_add
        case .sub: alg = dnnl_binary_sub
        case .mul: alg = dnnl_binary_mul
        case .div: alg = dnnl_binary_div
        case .max: alg = dnnl_binary_max
        case .min: alg = dnnl_binary_min
        case .pow: return try plainOp(node)  // oneDNN 2.6's binary primitive has no power
        }
        let src0 = try materialized(a)
        // Same-shape operands share src0's layout; a broadcast operand (a squeeze-excitation's
        // per-channel scale) takes src0's format too, where oneDNN has a vectorised kernel for
        // it: a plain one beside a blocked src0 got its reference loop (Real-CUGAN and cunet
        // spent 60% of their time there).
        let sb = shapes[b]
        let src1: DNNLMemory
        if sb == out {
            src1 = try value(b, as: src0.md)
        } else if var md = Self.sameFormat(as: src0.md, dims: [1, Int64(sb.c), Int64(sb.h), Int64(sb.w)]) {
            md.data_type = src0.md.data_type
            src1 = try value(b, as: md)
        } else {
            src1 = try plain(b)
        }
        var md0 = src0.md, md1 = src1.md
        var dmd = src0.md
        var desc = dnnl_binary_desc_t()
        try dnnlCheck(dnnl_binary_desc_init(&desc, alg, &md0, &md1, &dmd), "describe the element-wise operation")
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC_0, src0), (DNNL_ARG_SRC_1, src1), (DNNL_ARG_DST, dst)])
        current[node.output] = dst
    }

    func fullyConnected(_ node: Node, _ outFeatures: Int, _ weights: [Float], _ bias: [Float], _ activation: Activation) throws {
        let s = shapes[node.inputs[0]]
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)])
        let wdims: [Int64] = [Int64(outFeatures), Int64(s.c), Int64(s.h), Int64(s.w)]
        var wAny = Self.anyMD(wdims)
        var bmd = Self.taggedMD([Int64(outFeatures)], dnnl_a)
        var dmd = Self.taggedMD([1, Int64(outFeatures)], dnnl_ab)
        var desc = dnnl_inner_product_desc_t()
        try dnnlCheck(dnnl_inner_product_forward_desc_init(&desc, dnnl_forward_inference, &srcAny, &wAny, &bmd, &dmd), "describe the fully connected layer")
        let attr = try DNNLAttr(activation: activation)
        let pd = try createPD(&desc, attr: attr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let src = try value(node.inputs[0], as: query(pd, dnnl_query_src_md))
        let w = try constant(weights, user: Self.taggedMD(wdims, dnnl_oihw), into: query(pd, dnnl_query_weights_md))
        let b = try constant(bias.isEmpty ? [Float](repeating: 0, count: outFeatures) : bias, user: bmd, into: bmd)
        let dst = try DNNLMemory(md: dmd, engine: engine, isPlain: true)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, w), (DNNL_ARG_BIAS, b), (DNNL_ARG_DST, dst)], keep: [attr])
        // The 2-D result is bit for bit a plain 1×O×1×1 tensor: view it as one.
        let view = try DNNLMemory(md: Self.plainMD(shapes[node.output]), engine: engine, isPlain: true, handle: UnsafeMutableRawPointer(dst.pointer))
        viewsKeptAlive.append(dst)
        current[node.output] = view
        if case .prelu(let slopes) = activation { try prelu(node.output, slopes, output: node.output) }
    }


    /// Crop and channel slice: a reorder from a sub-memory view (works on blocked layouts).
    func window(_ input: Int, top: Int, left: Int, channel: Int, out: Shape, output: Int) throws {
        let src = try materialized(input)
        var sub = dnnl_memory_desc_t()
        var md = src.md
        var dims: [Int64] = [1, Int64(out.c), Int64(out.h), Int64(out.w)]
        var offsets: [Int64] = [0, Int64(channel), Int64(top), Int64(left)]
        if dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets) != dnnl_success {
            let p = try plain(input)
            md = p.md
            try dnnlCheck(dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets), "describe a crop")
            return try reorderWindow(p, sub, out, output)
        }
        try reorderWindow(src, sub, out, output)
    }

    func reorderWindow(_ src: DNNLMemory, _ sub: dnnl_memory_desc_t, _ out: Shape, _ output: Int) throws {
        let dst = try activation(Self.plainMD(out), isPlain: true)
        var pd: dnnl_primitive_desc_t?
        var s = sub, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, plainAttr.attr), "crop")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
        current[output] = dst
        plainCopies[output] = dst
    }

    /// Softmax over channels with oneDNN's vectorised kernel, on channels-last data (where the
    /// channel axis is dense, which is what its fast path wants).
    func softmax(_ node: Node) throws {
        let s = shapes[node.inputs[0]]
        let md = Self.taggedMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dnnl_nhwc)
        let src = try value(node.inputs[0], as: md)
        var desc = dnnl_softmax_v2_desc_t()
        var smd = md, dmd = md
        try dnnlCheck(dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference, dnnl_softmax_accurate, &smd, &dmd, 1),
                      "describe a softmax")
        try unary(&desc, src, output: node.output)
    }

    /// Adds the one-input primitive `desc` reading `src`, its result the value `output`.
    func unary<T>(_ desc: inout T, _ src: DNNLMemory, output: Int) throws {
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_DST, dst)])
        current[output] = dst
    }

    /// Bilinear upsampling by whole factors with half-pixel centres (align_corners false):
    /// oneDNN's linear resampling, in the input's own layout.
    func upsampleLinear(_ node: Node) throws {
        let src = try materialized(node.inputs[0])
        let o = shapes[node.output]
        var desc = dnnl_resampling_desc_t()
        var smd = src.md
        var dmd = Self.sameFormat(as: src.md, dims: [1, Int64(o.c), Int64(o.h), Int64(o.w)])
            ?? Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], src.md.data_type)
        try dnnlCheck(dnnl_resampling_forward_desc_init(&desc, dnnl_forward_inference, dnnl_resampling_linear, nil, &smd, &dmd),
                      "describe a bilinear resize")
        try unary(&desc, src, output: node.output)
    }

    /// A direct convolution that reads its input in the layout the producer left it in (saving
    /// a reorder), when oneDNN has a real (not reference) kernel for that; nil otherwise.
    func inPlaceLayoutPD(_ node: Node, _ desc: inout dnnl_convolution_desc_t, _ weights: inout dnnl_memory_desc_t,
                                 _ bias: inout dnnl_memory_desc_t, _ dst: inout dnnl_memory_desc_t, _ strides: inout [Int64],
                                 _ dil: inout [Int64], _ padL: inout [Int64], _ padR: inout [Int64], _ attr: DNNLAttr) throws -> dnnl_primitive_desc_t? {
        guard let stored = current[node.inputs[0]], (margins[node.inputs[0]] ?? 0) == 0, quantScale[node.inputs[0]] == nil,
              !stored.isPlain else { return nil }
        var smd = stored.md
        guard dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &smd, &weights,
                                                         &bias, &dst, &strides, &dil, &padL, &padR) == dnnl_success,
              let pd = try? createPD(&desc, attr: attr.attr) else { return nil }
        return Self.realKernel(pd)
    }

    /// `pd` unless oneDNN could only give its reference (slow, loop) implementation, in which
    /// case it is destroyed and the caller falls back to letting oneDNN choose layouts.
    static func realKernel(_ pd: dnnl_primitive_desc_t?) -> dnnl_primitive_desc_t? {
        guard let pd else { return nil }
        if implementation(pd).hasPrefix("ref") {
            dnnl_primitive_desc_destroy(pd)
            return nil
        }
        return pd
    }

    /// oneDNN's name for the implementation a primitive descriptor picked ("brgconv:avx512_core", "ref:any").
    static func implementation(_ pd: dnnl_primitive_desc_t) -> String {
        var info: UnsafePointer<CChar>?
        guard dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success, let info else { return "" }
        return String(cString: info)
    }

    /// The fused residual-upscaler tail: `UpsampleDetail`'s one pass over the output.
    func upsampleDetail(_ node: Node, _ mode: ResizeMode, _ order: ShuffleOrder, _ factor: Int) throws {
        let base = try plain(node.inputs[0]), detail = try plain(node.inputs[1])
        let bs = shapes[node.inputs[0]], dc = shapes[node.inputs[1]].c
        let dst = try activation(Self.plainMD(shapes[node.output]), isPlain: true)
        let stream = self.stream, threads = backend.threads
        appendLoop([base, detail, dst]) {
            try dnnlCheck(dnnl_stream_wait(stream), "synchronise")
            if mode == .nearest {
                UpsampleDetail.runNearest(factor: factor, base: base.pointer, bs, detail: detail.pointer, detailChannels: dc, order: order,
                                          y: dst.pointer, threads: threads)
            } else {
                UpsampleDetail.run(mode, base: base.pointer, bs, detail: detail.pointer, detailChannels: dc, order: order, y: dst.pointer,
                                   threads: threads)
            }
        }
        current[node.output] = dst
        plainCopies[node.output] = dst
    }

    /// An operation oneDNN does not have: plain loops on NCHW copies.
    func plainOp(_ node: Node) throws {
        let ins = try node.inputs.map { try plain($0) }
        let inShapes = node.inputs.map { shapes[$0] }
        let o = shapes[node.output]
        let dst = try activation(Self.plainMD(o), isPlain: true)
        let op = node.op
        let stream = self.stream, threads = backend.threads
        let counts = ins.map(shapesCount)
        appendLoop(ins + [dst]) {
            // oneDNN work queued before must be done before Swift reads its output.
            try dnnlCheck(dnnl_stream_wait(stream), "synchronise")
            // Buffers live in the arena, which can move between runs: addresses are read now.
            let inputs = zip(ins, counts).map { UnsafeBufferPointer(start: UnsafePointer($0.pointer), count: $1) }
            let y = UnsafeMutableBufferPointer(start: dst.pointer, count: o.count)
            if case .resize(.bicubic, _, _, _, _, let align) = op {
                FastKernels.separableBicubic(align, inputs[0], inShapes[0], y, o)
            } else {
                try Kernels.execute(op, inputs, inShapes, y, o, threads: threads)
            }
        }
        current[node.output] = dst
        plainCopies[node.output] = dst
    }

    func shapesCount(_ m: DNNLMemory) -> Int {
        var md = m.md
        return dnnl_memory_desc_get_size(&md) / MemoryLayout<Float>.size
    }
}

