import Engine

/// Resampling (sampling.comp): resize in every mode, ONNX Resize with every coordinate
/// mapping, and the upscaler tail's resize plus detail, all from tap tables computed here once
/// per shape with the reference's own arithmetic.
extension VulkanPrepared {
    func resize(_ mode: ResizeMode, alignCorners: Bool, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        try sample(x, s, into: y, o, rows: VulkanTaps.resize(mode, alignCorners: alignCorners, inSize: s.h, outSize: o.h),
                   columns: VulkanTaps.resize(mode, alignCorners: alignCorners, inSize: s.w, outSize: o.w))
    }

    func resample(_ p: ResampleParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let rows = Kernels.resampleTaps(p, inSize: s.h, outSize: o.h, scale: p.outH > 0 ? 0 : p.scaleH, roi: (p.roi[0], p.roi[1]))
        let cols = Kernels.resampleTaps(p, inSize: s.w, outSize: o.w, scale: p.outW > 0 ? 0 : p.scaleW, roi: (p.roi[2], p.roi[3]))
        try sample(x, s, into: y, o, rows: VulkanTaps.table(rows), columns: VulkanTaps.table(cols), extrapolation: p.extrapolation)
    }

    /// `resize×r(base) + pixelShuffle×r(detail)` in one pass.
    func upsampleDetail(_ mode: ResizeMode, _ order: ShuffleOrder, _ factor: Int, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let detail = buffers[node.inputs[1]], ds = shapes[node.inputs[1]]
        try sample(x, s, into: y, o, rows: VulkanTaps.resize(mode, alignCorners: false, inSize: s.h, outSize: o.h),
                   columns: VulkanTaps.resize(mode, alignCorners: false, inSize: s.w, outSize: o.w),
                   detail: (detail, ds, order == .crd ? 1 : 2, factor))
    }

    private func sample(_ x: VulkanSlice, _ s: Shape, into y: VulkanSlice, _ o: Shape, rows: [Float], columns: [Float], extrapolation: Float = 0,
                        detail: (buffer: VulkanSlice, shape: Shape, order: Int32, factor: Int)? = nil) throws {
        guard o.count > 0 else { return }
        let ds = detail?.shape ?? Shape(c: 0, h: 0, w: 0), r = detail?.factor ?? 2
        try dispatch("sampling", count: o.count, [x, detail?.buffer, y, try table(rows), try table(columns)], [
            Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.h), Int32(o.w), Self.bits(extrapolation), detail?.order ?? 0, Int32(ds.c / (r * r)),
            Int32(ds.h), Int32(ds.w), Int32(r),
        ])
    }
}

/// Tap tables of sampling.comp: per output row or column 9 floats, the tap count (0: the
/// extrapolation value), 4 input indices and 4 weights (unused ones 0).
enum VulkanTaps {
    static let stride = 9

    /// The table of taps from `Kernels.resampleTaps`.
    static func table(_ taps: [(index: [Int], weight: [Float])]) -> [Float] {
        var t = [Float](repeating: 0, count: taps.count * stride)
        for (d, tap) in taps.enumerated() {
            precondition(tap.index.count <= 4)
            t[d * stride] = Float(tap.index.count)
            for k in tap.index.indices {
                t[d * stride + 1 + k] = Float(tap.index[k])
                t[d * stride + 5 + k] = tap.weight[k]
            }
        }
        return t
    }

    /// One axis of `Kernels.resize` as taps, with its arithmetic: nearest takes the floor of
    /// the scaled coordinate; bilinear clamps the source at 0 and blends two taps; bicubic
    /// four with Keys' weights (A = −0.75); indices clamped to the edge.
    static func resize(_ mode: ResizeMode, alignCorners: Bool, inSize n: Int, outSize m: Int) -> [Float] {
        func source(_ d: Int) -> Float {
            if alignCorners { return m > 1 ? Float(d) * Float(n - 1) / Float(m - 1) : 0 }
            return (Float(d) + 0.5) * Float(n) / Float(m) - 0.5
        }
        func clamp(_ i: Int) -> Int { min(max(i, 0), n - 1) }
        return table((0..<m).map { d in
            switch mode {
            case .nearest:
                return ([min(Int(Float(d) * Float(n) / Float(m)), n - 1)], [1])
            case .bilinear:
                let f = max(source(d), 0)
                let i0 = Int(f), t = f - Float(i0)
                return ([clamp(i0), clamp(i0 + 1)], [1 - t, t])
            case .bicubic:
                let f = source(d)
                let i0 = Int(f.rounded(.down))
                let w = Kernels.cubicWeights(f - Float(i0))
                return ([clamp(i0 - 1), clamp(i0), clamp(i0 + 1), clamp(i0 + 2)], [w.0, w.1, w.2, w.3])
            }
        })
    }
}
