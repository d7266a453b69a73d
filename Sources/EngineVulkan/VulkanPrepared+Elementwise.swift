import Engine

/// Value-by-value operations (activation.comp, binary.comp, scalar.comp, affine.comp).
extension VulkanPrepared {
    func activation(_ a: Activation, _ node: Node) throws {
        let (x, _, y, o) = operands(node)
        let act = VulkanActivation.encode(a)
        let slopes = act.slopes.isEmpty ? nil : try constant(act.slopes)
        if usesPacked(node) {
            try dispatch("activation_pack4", count: (o.c + 3) / 4 * o.h * o.w, [x, nil, y, nil, slopes], [
                Int32(o.c), Int32(o.h * o.w), act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
                layoutFlag(node.inputs[0]), layoutFlag(node.output),
            ])
            return
        }
        try dispatch("activation", count: o.count, [x, nil, y, nil, slopes], [
            Int32(o.count), Int32(max(o.h * o.w, 1)), act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
        ])
    }

    func binary(_ kind: BinaryKind, _ coefficients: [Float]?, _ node: Node) throws {
        let o = shapes[node.output], y = buffers[node.output]
        let operands = node.inputs.prefix(2).map(readLayout)
        if usesPacked(node) {
            try dispatch("binary_pack4", count: (o.c + 3) / 4 * o.h * o.w, [operands[0].slice, operands[1].slice, y], [
                kind.vulkanCode, Self.bits(coefficients?[0] ?? 1), Self.bits(coefficients?[1] ?? 1), Int32(o.c), Int32(o.h * o.w),
                layoutFlag(node.inputs[0]), layoutFlag(node.inputs[1]), layoutFlag(node.output),
            ])
            return
        }
        if operands.allSatisfy({ $0.whole && $0.shape == o }) && o.count % 4 == 0 {
            // Operands of the output's shape (a residual add): four values an invocation, no
            // index arithmetic (binary4.comp).
            try dispatch("binary4", count: o.count / 4, [operands[0].slice, operands[1].slice, y], [
                kind.vulkanCode, Self.bits(coefficients?[0] ?? 1), Self.bits(coefficients?[1] ?? 1), Int32(o.count / 4),
            ])
            return
        }
        try dispatch("binary", count: o.count, [operands[0].slice, operands[1].slice, y], [
            kind.vulkanCode, Self.bits(coefficients?[0] ?? 1), Self.bits(coefficients?[1] ?? 1), Int32(o.c), Int32(o.h), Int32(o.w),
        ] + operands.flatMap(\.strides))
    }

    /// A pack4 shader's push constant for value `v`'s layout: 1 packed, 0 plain.
    func layoutFlag(_ v: Int) -> Int32 { packed.contains(v) ? 1 : 0 }

    func scalar(_ kind: BinaryKind, _ v: Float, _ first: Bool, _ node: Node) throws {
        let (x, _, y, o) = operands(node)
        try dispatch("scalar", count: o.count, [x, nil, y], [Int32(o.count), kind.vulkanCode, Self.bits(v), first ? 1 : 0])
    }

    func channelAffine(_ scale: [Float], _ bias: [Float], _ node: Node) throws {
        let (x, _, y, o) = operands(node)
        try dispatch("affine", count: o.count, [x, nil, y, try constant(scale), try constant(bias)], [Int32(o.count), Int32(max(o.h * o.w, 1))])
    }
}
