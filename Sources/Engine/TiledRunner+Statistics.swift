/// How a model with instance normalisations or global average poolings (squeeze-excitation)
/// runs in tiles and still normalises (or pools) each channel by the statistics of the whole
/// picture, as a whole-frame run does:
///
///     pass k = 1 … K   tiles ─► the graph up to norm k's input, norms < k frozen ─► Σx, Σx²
///                      (Double) over the part of each tile that is its own ─► norm k's mean
///                      and variance over the whole picture
///     pass K + 1       tiles ─► the graph with every norm frozen ─► the output, each tile's
///                      own part copied into place
///
/// A norm with frozen statistics is a per-channel affine operation (`freezingInstanceNorms`),
/// so with them frozen the graph is translation-equivariant again and every tile gets the
/// usual receptive-field border; each backend runs the rewritten graphs as they are.
///
/// The tiles cover the same picture the one-tile path runs: the picture rounded up to the
/// spec's multiple with `spec.padding` around it, filled by the border rule (the "virtual
/// picture"). Each window stops at that picture's edges, so the model meets its own padding
/// exactly where the whole frame does, and starts on a grid (`alignment`) where every strided
/// value of the tile lies on the whole picture's. Tile i owns the input coordinates
/// `[bounds[i], bounds[i+1])`; a value's position belongs to the tile that owns its centre
/// (`AxisPlacement`), so every position of every value — the model's own padding included —
/// is counted once and only where its tile has seen all it depends on.
struct StatisticsTiling: Sendable {
    /// An instance normalisation: its node, the value it normalises, where that value lies.
    struct Norm: Sendable {
        var node: Int
        var value: Int
        var placement: ValuePlacement
    }

    /// The normalisations in execution order.
    let norms: [Norm]
    /// Where the output lies (its scale is the spec's).
    let output: ValuePlacement
    /// Windows start on multiples of this: the spec's multiple and every value's stride.
    let alignment: Int
    /// The border each window gets inside the picture: the receptive radius with a margin for
    /// the half pixels of strided centres, in multiples of `alignment`.
    let padding: Int

    /// The plan for `graph`, or nil when it has no instance normalisation or an operation
    /// that no border makes exact (see `Graph.placements`).
    init?(graph: Graph, spec: TilingSpec) {
        let indices = graph.wholePictureStatisticsIndices
        // Placed with the poolings frozen (constants that broadcast): a pooling's own output
        // has no place on the picture, but what it feeds is per pixel again.
        guard !indices.isEmpty, let placed = graph.placementsWithPoolsFrozen(), let output = placed[graph.output],
              output.rows.numerator == spec.scale, output.rows.denominator == 1,
              output.columns.numerator == spec.scale, output.columns.denominator == 1 else { return nil }
        var norms: [Norm] = []
        for i in indices {
            guard let p = placed[graph.nodes[i].inputs[0]] else { return nil }
            norms.append(Norm(node: i, value: graph.nodes[i].inputs[0], placement: p))
        }
        var alignment = spec.multiple
        for p in placed.compactMap({ $0 }) {
            alignment = AxisPlacement.lcm(alignment, AxisPlacement.lcm(p.rows.denominator, p.columns.denominator))
        }
        self.norms = norms
        self.output = output
        self.alignment = alignment
        padding = (graph.receptiveRadius() + 2 + alignment - 1) / alignment * alignment
    }

    /// The windows along one axis of a virtual picture `length` long whose picture part is
    /// `picture` long, in tiles of at most `tile` (rounded to the grid, evened out).
    func axis(length: Int, picture: Int, tile: Int) -> AxisTiles {
        var count = (picture + tile - 1) / tile
        if count <= 1 { return AxisTiles(starts: [0], ends: [length], bounds: [0, length]) }
        let a = alignment
        let interior = ((length + count - 1) / count + a - 1) / a * a
        count = (length + interior - 1) / interior
        if count <= 1 { return AxisTiles(starts: [0], ends: [length], bounds: [0, length]) }
        var origins = (0..<count).map { $0 * interior }
        // The last flush to the end, on the grid (it may then own a few rows past its interior:
        // those are at the picture's edge, where the window ends too).
        origins[count - 1] = min(origins[count - 1], max(0, (length - interior) / a * a))
        return AxisTiles(starts: origins.map { max(0, $0 - padding) }, ends: origins.map { min(length, $0 + interior + padding) },
                         bounds: (0..<count).map { $0 * interior } + [length])
    }
}

/// The windows of one axis: window i spans `[starts[i], ends[i])` of the virtual picture and
/// owns `[bounds[i], bounds[i+1])`.
struct AxisTiles {
    var starts: [Int], ends: [Int], bounds: [Int]
    var count: Int { starts.count }

    /// Where each window's own positions of a value placed by `a` begin, in the whole
    /// picture's value (`length` long): position j belongs to the window that owns its centre.
    func owned(_ a: AxisPlacement, length: Int) -> [Int] {
        var cuts = [0]
        for i in 1..<count {
            let j = Int(a.position(Double(bounds[i])).rounded(.up))
            cuts.append(min(max(j, cuts[i - 1]), length))
        }
        return cuts + [length]
    }
}

/// Sum and sum of squares per channel in Double, around a shift per channel (the first value
/// seen) so that a large mean does not swallow the variance.
private struct MomentSums {
    var shift: [Double]?
    var sum: [Double], squares: [Double]
    var count = 0

    init(channels: Int) {
        sum = [Double](repeating: 0, count: channels)
        squares = sum
    }

    /// Adds rows `rows` and columns `columns` of every channel of `x` (shape `s`).
    mutating func add(_ x: UnsafeBufferPointer<Float>, _ s: Shape, rows: Range<Int>, columns: Range<Int>) {
        guard !rows.isEmpty, !columns.isEmpty else { return }
        if shift == nil { shift = (0..<s.c).map { Double(x[($0 * s.h + rows.lowerBound) * s.w + columns.lowerBound]) } }
        for c in 0..<s.c {
            let m = shift![c]
            var s1 = 0.0, s2 = 0.0
            for r in rows {
                let base = (c * s.h + r) * s.w
                for i in columns {
                    let d = Double(x[base + i]) - m
                    s1 += d
                    s2 += d * d
                }
            }
            sum[c] += s1
            squares[c] += s2
        }
        count += rows.count * columns.count
    }

    var statistics: ChannelStatistics {
        let n = Double(count)
        let mean = sum.map { $0 / n }
        return ChannelStatistics(mean: zip(mean, shift ?? mean.map { _ in 0 }).map { $0 + $1 },
                                 variance: zip(squares, mean).map { max(0, $0 / n - $1 * $1) })
    }
}

extension TiledRunner {
    /// The virtual picture of a `height`×`width` one and its windows.
    private func layout(_ plan: StatisticsTiling, channels: Int, height: Int, width: Int) -> (Shape, AxisTiles, AxisTiles) {
        let p = spec.padding
        let virtual = Shape(c: channels, h: roundUp(height) + 2 * p, w: roundUp(width) + 2 * p)
        return (virtual, plan.axis(length: virtual.h, picture: roundUp(height), tile: tileSize),
                plan.axis(length: virtual.w, picture: roundUp(width), tile: tileSize))
    }

    /// The interior of the first tile of each axis (the whole virtual picture on an axis it
    /// fits in one).
    func statisticsTileInterior(_ plan: StatisticsTiling, height: Int, width: Int) -> (h: Int, w: Int) {
        let (_, rows, columns) = layout(plan, channels: 1, height: height, width: width)
        return (rows.bounds[1] - rows.bounds[0], columns.bounds[1] - columns.bounds[0])
    }

    /// Runs `input` in tiles in `plan.norms.count + 1` passes (see `StatisticsTiling`).
    func runWithStatistics(_ plan: StatisticsTiling, input: UnsafeBufferPointer<Float>, channels: Int, height: Int, width: Int,
                           output: UnsafeMutableBufferPointer<Float>) throws {
        let s = spec.scale, p = spec.padding
        let (virtual, rows, columns) = layout(plan, channels: channels, height: height, width: width)
        // The whole picture's value sizes, one axis at a time beside a window's other side: a
        // whole-picture tensor may be beyond the engine's limit (that is why it is tiled), and
        // rows and columns of every placeable operation are sized independently.
        let tall = try graph.inferShapes(input: Shape(c: channels, h: virtual.h, w: columns.ends[0] - columns.starts[0]))
        let wide = try graph.inferShapes(input: Shape(c: channels, h: rows.ends[0] - rows.starts[0], w: virtual.w))
        let whole = zip(tall, wide).map { a, b in a.flatMap { a in b.map { Shape(c: a.c, h: a.h, w: $0.w) } } }
        guard let wholeOut = whole[graph.output] else { throw EngineError(.invalidGraph, "\(graph.source): the output is never produced.") }
        guard wholeOut.c == channels else {
            throw EngineError(.invalidGraph, "\(graph.source) makes \(graph.valueNames[graph.output]) with \(wholeOut.c) channels from a \(channels)-channel picture; an upscaler must give as many channels as it takes. Use a model with \(channels) output channels.")
        }
        // The whole frame's output rows beyond scale × picture are its border, as on the one-tile path.
        let extra = wholeOut.h - s * (virtual.h - 2 * p)
        guard extra >= 0, extra % 2 == 0, wholeOut.w - s * (virtual.w - 2 * p) == extra,
              output.count >= channels * height * s * width * s, input.count >= channels * height * width else {
            throw EngineError(.invalidGraph, "\(graph.source) makes a \(wholeOut.w)x\(wholeOut.h) output from a \(virtual.w)x\(virtual.h) input, which does not fit its scale \(s)×. Check the model's scale.")
        }
        let crop = extra / 2

        // Each tile's run: the window filled from the picture, the graph prepared for its
        // shape. Tiles of one shape run one after another, so that only one prepared graph
        // (one tile's buffers) is held at a time; the order is fixed, so are the sums.
        var order: [Shape] = [], tilesOf: [Shape: [(Int, Int)]] = [:]
        for i in 0..<rows.count {
            for j in 0..<columns.count {
                let shape = Shape(c: channels, h: rows.ends[i] - rows.starts[i], w: columns.ends[j] - columns.starts[j])
                if tilesOf[shape] == nil { order.append(shape) }
                tilesOf[shape, default: []].append((i, j))
            }
        }
        func eachTile(_ graph: Graph, _ body: (Int, Int, PreparedGraph, UnsafeBufferPointer<Float>) throws -> Void) throws {
            for shape in order {
                let run = try backend.prepare(graph, input: shape)
                if tileInput.count < shape.count { tileInput = [Float](repeating: 0, count: shape.count) }
                if tileOutput.count < run.outputShape.count { tileOutput = [Float](repeating: 0, count: run.outputShape.count) }
                for (i, j) in tilesOf[shape]! {
                    fillTile(input, channels, height, width, rows.starts[i] - p, columns.starts[j] - p, shape)
                    try tileInput.withUnsafeBufferPointer { whole in
                        try tileOutput.withUnsafeMutableBufferPointer { out in
                            try run.run(input: UnsafeBufferPointer(rebasing: whole[..<shape.count]),
                                        output: UnsafeMutableBufferPointer(rebasing: out[..<run.outputShape.count]))
                        }
                    }
                    try tileOutput.withUnsafeBufferPointer { try body(i, j, run, UnsafeBufferPointer(rebasing: $0[..<run.outputShape.count])) }
                }
            }
        }
        // A tile's own part of a value, in the tile's coordinates; never outside what it made.
        func local(_ cuts: [Int], _ i: Int, _ a: AxisPlacement, _ start: Int, _ size: Int, _ what: String) throws -> Range<Int> {
            let lo = cuts[i] - a.shift(start), hi = cuts[i + 1] - a.shift(start)
            guard lo >= 0, hi <= size, lo <= hi else {
                throw EngineError(.invalidGraph, "\(graph.source): the tile at \(start) owns \(what) positions \(lo)..<\(hi) of its \(size); the model's layers do not tile with statistics. Run it without --tile.")
            }
            return lo..<hi
        }

        var frozen: [Int: ChannelStatistics] = [:]
        for norm in plan.norms {
            let pass = graph.freezingInstanceNorms(frozen).truncated(at: norm.value)
            guard let v = whole[norm.value] else { throw EngineError(.invalidGraph, "\(graph.source): '\(graph.valueNames[norm.value])' is never produced.") }
            let ownRows = rows.owned(norm.placement.rows, length: v.h), ownColumns = columns.owned(norm.placement.columns, length: v.w)
            var sums = MomentSums(channels: v.c)
            try eachTile(pass) { i, j, run, values in
                let name = graph.valueNames[norm.value]
                let r = try local(ownRows, i, norm.placement.rows, rows.starts[i], run.outputShape.h, "row of '\(name)'")
                let c = try local(ownColumns, j, norm.placement.columns, columns.starts[j], run.outputShape.w, "column of '\(name)'")
                sums.add(values, run.outputShape, rows: r, columns: c)
            }
            guard sums.count == v.h * v.w else {
                throw EngineError(.invalidGraph, "\(graph.source): tiles counted \(sums.count) positions of '\(graph.valueNames[norm.value])', the picture has \(v.h * v.w).")
            }
            frozen[norm.node] = sums.statistics
        }

        let oh = height * s, ow = width * s
        let ownRows = rows.owned(plan.output.rows, length: wholeOut.h), ownColumns = columns.owned(plan.output.columns, length: wholeOut.w)
        try eachTile(graph.freezingInstanceNorms(frozen)) { i, j, run, t in
            if let bad = firstNonFinite(t) {
                throw EngineError(.nonFiniteOutput, "\(graph.source) produced NaN or infinite values (\(t[bad]) in the tile at x \(columns.starts[j] - p), y \(rows.starts[i] - p)): its weights are damaged or its arithmetic overflows. Check or replace the model file.")
            }
            let outShape = run.outputShape
            let r = try local(ownRows, i, plan.output.rows, rows.starts[i], outShape.h, "output row")
            let c = try local(ownColumns, j, plan.output.columns, columns.starts[j], outShape.w, "output column")
            // Whole-frame output row R + crop is picture row R.
            let dy = ownRows[i] - r.lowerBound, dx = ownColumns[j] - c.lowerBound
            let y0 = max(r.lowerBound, crop - dy), y1 = min(r.upperBound, crop + oh - dy)
            let x0 = max(c.lowerBound, crop - dx), x1 = min(c.upperBound, crop + ow - dx)
            guard y1 > y0, x1 > x0 else { return }
            for ch in 0..<channels {
                for y in y0..<y1 {
                    let dst = (ch * oh + y + dy - crop) * ow + x0 + dx - crop
                    (output.baseAddress! + dst).update(from: t.baseAddress! + (ch * outShape.h + y) * outShape.w + x0, count: x1 - x0)
                }
            }
        }
        if spec.addNearestInput { addNearestInput(input, channels, height, width, output) }
    }

    /// Multiply-adds of every pass over a `height`×`width` picture.
    func statisticsMultiplyAdds(_ plan: StatisticsTiling, channels: Int, height: Int, width: Int) throws -> Int {
        let (_, rows, columns) = layout(plan, channels: channels, height: height, width: width)
        var total = 0
        for g in plan.norms.map({ graph.truncated(at: $0.value) }) + [graph] {
            for i in 0..<rows.count {
                for j in 0..<columns.count {
                    let shape = Shape(c: channels, h: rows.ends[i] - rows.starts[i], w: columns.ends[j] - columns.starts[j])
                    let (sum, overflow) = total.addingReportingOverflow(try g.multiplyAdds(input: shape))
                    total = overflow ? Int.max : sum
                }
            }
        }
        return total
    }
}
