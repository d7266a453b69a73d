extension TilingSpec {
    /// Learns scale and border loss of an unknown model from its shapes at two input sizes:
    /// out = scale · (in − 2·loss). Tiles of a "same"-padded model overlap by its receptive
    /// radius (rounded to 4); a model that sees the whole picture gets one tile.
    public static func inferred(for graph: Graph) throws -> TilingSpec {
        let c = graph.inputChannels ?? 3
        var outs: [Int] = []
        for n in [64, 96] {
            let shapes = try graph.inferShapes(input: Shape(c: c, h: n, w: n))
            guard let o = shapes[graph.output] else { throw EngineError(.invalidGraph, "\(graph.source): the output is never produced.") }
            outs.append(o.h)
        }
        let diff = outs[1] - outs[0]
        guard diff > 0, diff % 32 == 0 else {
            throw EngineError(.unsupported, "\(graph.source): cannot tell the model's scale from its shapes (64 → \(outs[0]), 96 → \(outs[1])). Use a catalog model or a model with an integer scale.")
        }
        let s = diff / 32
        let loss2 = 64 * s - outs[0]
        guard loss2 >= 0, loss2 % (2 * s) == 0 else {
            throw EngineError(.unsupported, "\(graph.source): the output size does not fit scale \(s) with an even border.")
        }
        let loss = loss2 / (2 * s)
        if graph.needsWholeFrame {
            // One tile, the frame: a border around it would enter its statistics (instance
            // normalisation), which the model computes over the picture alone. (Asked for
            // tiles, the runner tiles an instance-norm model in statistics passes with a border
            // of its own: `StatisticsTiling`.)
            return TilingSpec(scale: s, padding: 0, border: .reflect, multiple: 4)
        }
        if loss == 0 {
            // A border in multiples of 4, like the interiors: every tile then starts on the
            // picture's grid of stride-2 and stride-4 layers and gives the whole frame's values.
            return TilingSpec(scale: s, padding: (graph.receptiveRadius() + 3) / 4 * 4, border: .reflect, multiple: 4)
        }
        return TilingSpec(scale: s, padding: loss, border: .replicate, multiple: 4)
    }

    /// The grid a tile interior of `graph` must sit on for its strided layers to see the
    /// whole picture's positions: the least common multiple of every value's stride
    /// (`Graph.placements`, its global poolings frozen: squeeze-excitation does not change
    /// the grid), 1 without strides; 4 for a graph that cannot be placed (the guess
    /// `inferred` makes for every model).
    public static func strideGrid(for graph: Graph) -> Int {
        guard let placed = graph.placementsWithPoolsFrozen() else { return 4 }
        var grid = 1
        for p in placed.compactMap({ $0 }) {
            grid = AxisPlacement.lcm(grid, AxisPlacement.lcm(p.rows.denominator, p.columns.denominator))
        }
        return grid
    }
}
