import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

extension DNNLPrepared {
    // MARK: int8


    /// How `node` quantises its input when it runs as an int8 convolution: precision int8, a
    /// calibrated input whose channels span similar ranges (after equalisation), and neither a
    /// first layer (a handful of input channels, the picture itself, where 8 bits cost the most
    /// and gain nothing) nor a last one (`feedsConvolution`, `makesPicture`).
    func int8Input(_ node: Node) -> U8Quantizer? {
        guard precision == .int8, case .convolution(let p) = node.op, p.inChannels >= 8,
              shapes[node.output].h * shapes[node.output].w >= 64,
              !tailDetails.contains(node.output), feedsConvolution.contains(node.output), !makesPicture(node.output) else { return nil }
        guard let range = int8Ranges[node.name], range.spread <= Int8Tuning.maxSpread else { return nil }
        let whole = range.whole
        return U8Quantizer(lo: whole.lo * Int8Tuning.headroom, hi: whole.hi * Int8Tuning.headroom)
    }

    /// Whether `v` is a picture (at most 4 channels), or becomes one through pixel shuffles and
    /// crops alone: the layer writing it is a last layer even when the picture feeds further
    /// layers (Real-CUGAN's first U-Net), as its rounding reaches the output through the
    /// residual adds.
    func makesPicture(_ v: Int) -> Bool {
        var v = v
        while shapes[v].c > 4 {
            guard let r = readers[v], r.count == 1 else { return false }
            switch r[0].op {
            case .pixelShuffle, .crop, .cropLike: v = r[0].output
            default: return false
            }
        }
        return true
    }



    /// A reorder from `src` to `dst` scaling by `scale`, with zero points (quantising or
    /// dequantising): dst = scale · (src − srcZero) + dstZero.
    func addScaledReorder(from src: DNNLMemory, to dst: DNNLMemory, scale: Float, srcZero: Int32 = 0, dstZero: Int32 = 0) throws {
        let attr = try DNNLAttr(activation: .identity)
        var scales = [scale]
        try dnnlCheck(dnnl_primitive_attr_set_output_scales(attr.attr, 1, 0, &scales), "set a reorder's scale")
        for (arg, zero) in [(DNNL_ARG_SRC, srcZero), (DNNL_ARG_DST, dstZero)] where zero != 0 {
            var z = [zero]
            try dnnlCheck(dnnl_primitive_attr_set_zero_points(attr.attr, arg, 1, 0, &z), "set a reorder's zero point")
        }
        var pd: dnnl_primitive_desc_t?
        var s = src.md, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, attr.attr), "quantise between layouts")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
    }

    /// A u8 value as fp32 (once per value), in the same layout.
    func dequantized(_ v: Int, _ q: U8Quantizer) throws -> DNNLMemory {
        if let d = dequantizedCopies[v] { return d }
        let stored = current[v]!
        var md = stored.md
        md.data_type = dnnl_f32
        let dst = try activation(md, isPlain: Self.plainMD(shapes[v]).isEqual(to: md))
        try addScaledReorder(from: stored, to: dst, scale: 1 / q.scale, srcZero: q.zeroPoint)
        dequantizedCopies[v] = dst
        return dst
    }

    /// Value `v` as u8 in layout `md`, quantised by `q`.
    func quantizedValue(_ v: Int, as md: dnnl_memory_desc_t, _ q: U8Quantizer) throws -> DNNLMemory {
        if let stored = quantScale[v], stored == q, let mem = current[v] {
            if mem.sameLayout(as: md) { return mem }
            let dst = try activation(md, isPlain: false)
            try addReorder(from: mem, to: dst)
            return dst
        }
        if let c = quantizedCopies[v], c.quantizer == q, c.memory.sameLayout(as: md) { return c.memory }
        let src = try materialized(v)
        let dst = try activation(md, isPlain: false)
        try addScaledReorder(from: src, to: dst, scale: q.scale, dstZero: q.zeroPoint)
        addClipCheck(dst)
        quantizedCopies[v] = (q, dst)
        return dst
    }

    /// A one-value s32 memory holding a zero point passed to a primitive at run time.
    func zeroPointMemory(_ z: Int32) throws -> DNNLMemory {
        let m = try DNNLMemory(md: Self.taggedMD([1], dnnl_a, dnnl_s32), engine: engine, isPlain: true)
        UnsafeMutableRawPointer(m.pointer).assumingMemoryBound(to: Int32.self).pointee = z
        return m
    }

    /// Compiles `node` as an int8 convolution when it qualifies (`int8Input`) and oneDNN has a
    /// real kernel for it; returns false to leave it to the fp32 path.
    func int8Convolution(_ node: Node, _ p: ConvolutionParameters) throws -> Bool {
        guard let input = int8Input(node) else { return false }
        let s = shapes[node.inputs[0]], o = shapes[node.output]
        // Written as u8 straight for the next layers when every reader is an int8 layer (they
        // share this value's quantiser) and the activation, a post-op, commutes with a positive
        // scale. PReLU is a separate step: oneDNN 2.6 has only a reference int8 kernel with a
        // PReLU post-op.
        var output: U8Quantizer?
        let homogeneous: Bool
        switch p.activation {
        case .identity, .relu, .leakyRelu: homogeneous = true
        default: homogeneous = false
        }
        if homogeneous, node.output != graph.output, let r = readers[node.output], !r.isEmpty {
            let qs = r.map { int8Input($0) }
            if let first = qs[0], qs.allSatisfy({ $0 == first }) { output = first }
        }
        let q = QuantizedWeights(p.weights, outChannels: p.outChannels)
        var (wdims, bmd, strides, dil, padL, padR) = Self.window(p)
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dnnl_u8)
        var wAny = Self.anyMD(wdims, dnnl_s8)
        var dstAny = Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], output == nil ? dnnl_f32 : dnnl_u8)
        // The accumulator is Σ (u − zero)·q_w = inScale · wScale[oc] · Σ x·w; the bias joins it
        // in that domain, and the output scale brings the sum back (and on to the next layer's
        // scale when written as u8, its zero point added last). Activations run after the scale.
        let attr = try DNNLAttr(activation: p.activation)
        var extraArgs: [(Int32, DNNLMemory)] = []
        var scales = q.scales.map { (output?.scale ?? 1) / (input.scale * $0) }
        try dnnlCheck(dnnl_primitive_attr_set_output_scales(attr.attr, Int64(p.outChannels), 1 << 1, &scales), "set output scales")
        for (arg, zero) in [(DNNL_ARG_SRC, input.zeroPoint), (DNNL_ARG_DST, output?.zeroPoint ?? 0)] where zero != 0 {
            var runtime = [Int32.min]  // DNNL_RUNTIME_S32_VAL: given at execution
            try dnnlCheck(dnnl_primitive_attr_set_zero_points(attr.attr, arg, 1, 0, &runtime), "set a zero point")
            extraArgs.append((DNNL_ARG_ATTR_ZERO_POINTS | arg, try zeroPointMemory(zero)))
        }
        var desc = dnnl_convolution_desc_t()
        guard dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny, &wAny,
                                                         &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success,
              let pd = try? createPD(&desc, attr: attr.attr) else { return false }
        defer { dnnl_primitive_desc_destroy(pd) }
        if Self.implementation(pd).hasPrefix("ref") { return false }
        let src = try quantizedValue(node.inputs[0], as: query(pd, dnnl_query_src_md), input)
        let userTag: dnnl_format_tag_t = p.groups == 1 ? dnnl_oihw : dnnl_goihw
        // The target layout may carry oneDNN's s8 compensation, which the reorder computes.
        let weights = try constant(q.values, user: Self.taggedMD(wdims, userTag, dnnl_s8), into: query(pd, dnnl_query_weights_md))
        let bias = p.bias.isEmpty ? [Float](repeating: 0, count: p.outChannels)
            : (0..<p.outChannels).map { p.bias[$0] * input.scale * q.scales[$0] }
        let biasMemory = try constant(bias, user: bmd, into: bmd)
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_BIAS, biasMemory), (DNNL_ARG_DST, dst)] + extraArgs,
                keep: [attr])
        current[node.output] = dst
        margins[node.output] = 0
        if let output {
            quantScale[node.output] = output
            addClipCheck(dst)
        }
        if case .prelu(let slopes) = p.activation {
            try prelu(node.output, slopes, output: node.output)
        }
        return true
    }

    func addReorder(from src: DNNLMemory, to dst: DNNLMemory) throws {
        var pd: dnnl_primitive_desc_t?
        var s = src.md, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, plainAttr.attr), "reorder between layouts")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
    }

    /// Reorders constant data (weights) once, now: `values` are in `user`'s layout and type.
    func constant<T>(_ values: [T], user: dnnl_memory_desc_t, into md: dnnl_memory_desc_t) throws -> DNNLMemory {
        let src = try DNNLMemory(md: user, engine: engine, isPlain: true)
        UnsafeMutableRawPointer(src.pointer).assumingMemoryBound(to: T.self).update(from: values, count: values.count)
        if src.sameLayout(as: md) { return src }
        let dst = try DNNLMemory(md: md, engine: engine, isPlain: false)
        var pd: dnnl_primitive_desc_t?
        var s = user, d = md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, nil), "reorder weights")
        defer { dnnl_primitive_desc_destroy(pd) }
        let step = try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)])
        try step.execute(stream)
        try dnnlCheck(dnnl_stream_wait(stream), "reorder weights")
        return dst
    }

}
