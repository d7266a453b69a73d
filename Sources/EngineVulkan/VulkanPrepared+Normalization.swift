import Engine

/// Normalisations (instance_norm.comp: one workgroup per channel; softmax.comp: one
/// invocation per line of values).
extension VulkanPrepared {
    func instanceNorm(_ scale: [Float], _ bias: [Float], _ epsilon: Float, _ node: Node) throws {
        let (x, s, y, _) = operands(node)
        try dispatchWorkgroups("instance_norm", count: s.c, [x, nil, y, try constant(scale), try constant(bias)],
                               [Int32(s.c), Int32(s.h * s.w), Self.bits(epsilon)])
    }

    /// Softmax over the channels at each pixel.
    func softmaxChannels(_ node: Node) throws {
        let (x, s, y, _) = operands(node)
        let plane = s.h * s.w
        try softmax(x, y, lines: plane, n: s.c, step: plane, start: (q: max(plane, 1), r: 0, t: 1))
    }

    /// Softmax along each row (axis 3) or column (axis 2) of each channel.
    func softmax(axis: Int, _ node: Node) throws {
        let (x, s, y, _) = operands(node)
        if axis == 3 {
            try softmax(x, y, lines: s.c * s.h, n: s.w, step: 1, start: (q: 1, r: s.w, t: 0))
        } else {
            try softmax(x, y, lines: s.c * s.w, n: s.h, step: s.w, start: (q: max(s.w, 1), r: s.h * s.w, t: 1))
        }
    }

    /// Line l starts at (l / q) · r + (l % q) · t.
    private func softmax(_ x: VulkanSlice, _ y: VulkanSlice, lines: Int, n: Int, step: Int, start: (q: Int, r: Int, t: Int)) throws {
        try dispatch("softmax", count: lines, [x, nil, y], [Int32(lines), Int32(n), Int32(step), Int32(start.q), Int32(start.r), Int32(start.t)])
    }
}
