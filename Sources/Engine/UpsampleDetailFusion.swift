extension Graph {
    /// The upsample-detail pass: every residual-upscaler tail
    ///
    ///     add(pixelShuffle×r(detail), resize×r(base))      (operands in either order, r 2 to 4)
    ///
    /// becomes one `.upsampleDetail(mode, order, factor: r)` node reading `[base, detail]`, when
    /// the add is plain (no coefficients), the resize is bilinear, bicubic or nearest with
    /// half-pixel centres and gives exactly r times the base's size, `detail` has r²·C or r²
    /// channels of the base's size, neither intermediate is read by anything else or is the graph's output, and
    /// `accept` takes the fused operation (a backend passes its `supports`). Same result: the
    /// fused operation computes the same sums, so a backend that runs it as one pass over the
    /// output (oneDNN's `UpsampleDetail`) saves four passes over full-size tensors.
    ///
    /// Shapes decide whether the pattern fits, so the pass runs for one input shape, when a
    /// graph is prepared.
    public func fusingUpsampleDetailTails(input inputShape: Shape,
                                          where accept: (Operation) -> Bool = { _ in true }) throws -> Graph {
        let shapes = try inferShapes(input: inputShape)
        var producer: [Int: Int] = [:], readers: [Int: Int] = [:]
        for (i, n) in nodes.enumerated() {
            producer[n.output] = i
            for v in n.inputs { readers[v, default: 0] += 1 }
        }
        var fused: [Int: Node] = [:]
        var removed = Set<Int>()
        for (i, n) in nodes.enumerated() {
            guard case .binary(.add, let k) = n.op, k == nil || k! == [1, 1], n.inputs.count == 2,
                  let o = shapes[n.output] else { continue }
            for (d, b) in [(n.inputs[0], n.inputs[1]), (n.inputs[1], n.inputs[0])] {
                guard let si = producer[d], let ri = producer[b], !removed.contains(si), !removed.contains(ri),
                      readers[d] == 1, readers[b] == 1, d != output, b != output,
                      case .pixelShuffle(let r, let order) = nodes[si].op, (2...4).contains(r),
                      case .resize(let mode, _, _, _, _, false) = nodes[ri].op else { continue }
                let detail = nodes[si].inputs[0], base = nodes[ri].inputs[0]
                guard let bs = shapes[base], let ds = shapes[detail],
                      o == Shape(c: bs.c, h: r * bs.h, w: r * bs.w), shapes[b] == o,
                      ds.h == bs.h, ds.w == bs.w, ds.c == r * r || ds.c == r * r * bs.c else { continue }
                let op = Operation.upsampleDetail(mode, order: order, factor: r)
                guard accept(op) else { continue }
                fused[i] = Node(name: n.name, op: op, inputs: [base, detail], output: n.output)
                removed.formUnion([si, ri])
                break
            }
        }
        if fused.isEmpty { return self }
        var g = self
        g.nodes = nodes.enumerated().compactMap { i, n in removed.contains(i) ? nil : fused[i] ?? n }
        return g
    }
}
