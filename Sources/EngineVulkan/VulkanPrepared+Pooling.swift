import Engine

/// Pooling (pool.comp: max and average over windows; global_average.comp: one workgroup per
/// channel).
extension VulkanPrepared {
    func pool(_ p: PoolParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let kind: Int32
        switch p.kind {
        case .max: kind = 0
        case .average(let countPadding): kind = countPadding ? 2 : 1
        }
        try dispatch("pool", count: o.count, [x, nil, y], [
            Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.h), Int32(o.w), Int32(p.kernelH), Int32(p.kernelW), Int32(p.strideH), Int32(p.strideW),
            Int32(p.dilationH), Int32(p.dilationW), Int32(p.padTop), Int32(p.padLeft), Int32(p.padBottom), Int32(p.padRight), kind,
        ])
    }

    func globalAveragePool(_ node: Node) throws {
        let (x, s, y, _) = operands(node)
        try dispatchWorkgroups("global_average", count: s.c, [x, nil, y], [Int32(s.c), Int32(s.h * s.w)])
    }
}
