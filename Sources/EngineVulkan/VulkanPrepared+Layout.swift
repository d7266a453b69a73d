import Engine

/// Operations that move values without arithmetic (shuffle.comp, window.comp, pad.comp,
/// space_to_depth.comp, copy.comp): pixel shuffle and space-to-depth, crops, slices,
/// concatenations, padding, reshape and transpose.
extension VulkanPrepared {
    func pixelShuffle(_ r: Int, _ order: ShuffleOrder, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        try dispatch("shuffle", count: o.count, [x, nil, y], [Int32(r), order == .crd ? 0 : 1, Int32(o.c), Int32(o.h), Int32(o.w), Int32(s.h), Int32(s.w)])
    }

    func spaceToDepth(_ r: Int, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        try dispatch("space_to_depth", count: o.count, [x, nil, y], [Int32(r), Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.h), Int32(o.w)])
    }

    func crop(top: Int, left: Int, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        try window(x, s, into: y, o, channels: o.c, from: 0, top: top, left: left, at: 0)
    }

    func sliceChannels(_ start: Int, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        try window(x, s, into: y, o, channels: o.c, from: start, top: 0, left: 0, at: 0)
    }

    func concatChannels(_ node: Node) throws {
        let y = buffers[node.output], o = shapes[node.output]
        var at = 0
        for v in node.inputs {
            try window(buffers[v], shapes[v], into: y, o, channels: shapes[v].c, from: 0, top: 0, left: 0, at: at)
            at += shapes[v].c
        }
    }

    func pad(top: Int, left: Int, _ mode: PaddingMode, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let (code, fill): (Int32, Float)
        switch mode {
        case .constant(let v): (code, fill) = (0, v)
        case .replicate: (code, fill) = (1, 0)
        case .reflect: (code, fill) = (2, 0)
        }
        try dispatch("pad", count: o.count, [x, nil, y], [
            Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.h), Int32(o.w), Int32(top), Int32(left), code, Self.bits(fill),
        ])
    }

    /// The same values in the same order: one flat copy.
    func reshape(_ node: Node) throws {
        let (x, _, y, o) = operands(node)
        try box(x, into: y, size: (1, 1, o.count), from: (0, 0, 0, 1), to: (0, 0, 0, 1))
    }

    /// Output axis i is input axis perm[i]: the output walked in order, the input with the
    /// permuted strides.
    func transpose(_ perm: [Int], _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let strides = [s.h * s.w, s.w, 1]
        try box(x, into: y, size: (o.c, o.h, o.w), from: (0, strides[perm[0]], strides[perm[1]], strides[perm[2]]), to: (0, o.h * o.w, o.w, 1))
    }

    /// Concatenation along rows (axis 2) or columns (axis 3): each input a box of the output.
    func concat(axis: Int, _ node: Node) throws {
        let y = buffers[node.output], o = shapes[node.output]
        var offset = 0
        for v in node.inputs {
            let si = shapes[v]
            let start = axis == 2 ? offset * o.w : offset
            try box(buffers[v], into: y, size: (si.c, si.h, si.w), from: (0, si.h * si.w, si.w, 1), to: (start, o.h * o.w, o.w, 1))
            offset += axis == 2 ? si.h : si.w
        }
    }

    /// Copies a `size` box: `from` and `to` are (offset, stride of each box axis).
    private func box(_ x: VulkanSlice, into y: VulkanSlice, size: (Int, Int, Int), from: (Int, Int, Int, Int), to: (Int, Int, Int, Int)) throws {
        try dispatch("copy", count: size.0 * size.1 * size.2, [x, nil, y], [
            Int32(size.0), Int32(size.1), Int32(size.2), Int32(from.0), Int32(from.1), Int32(from.2), Int32(from.3),
            Int32(to.0), Int32(to.1), Int32(to.2), Int32(to.3),
        ])
    }

    private func window(_ x: VulkanSlice, _ s: Shape, into y: VulkanSlice, _ o: Shape, channels: Int, from c0: Int, top: Int, left: Int, at: Int) throws {
        try dispatch("window", count: channels * o.h * o.w, [x, nil, y], [
            Int32(channels), Int32(o.h), Int32(o.w), Int32(s.c), Int32(s.h), Int32(s.w), Int32(c0), Int32(top), Int32(left), Int32(at),
        ])
    }
}
