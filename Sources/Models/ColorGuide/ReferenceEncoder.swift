internal import ColorScience
internal import Engine
import Foundation
internal import MediaIO

/// Multi-scale features of a picture's lightness from the built-in colorizer's frozen
/// ImageNet encoder (MobileNetV2): the block outputs at 28×28 (32 channels), 14×14 (96) and
/// 7×7 (320) for L at 224×224. Only L goes in, never colour, so a reference's colour cannot
/// leak into how it is matched.
///
///     L 224×224 ─▶ encoder ─▶ e20 (32 @ 28) ─▶ space-to-depth 4 ─┐
///                        └──▶ e46 (96 @ 14) ─▶ space-to-depth 2 ─┼─▶ concat (1216 @ 7) ─▶ levels,
///                        └──▶ e60 (320 @ 7) ─────────────────────┘   each location L2-normalised
final class ReferenceEncoder {
    /// The encoder taps: value name, side, channels.
    static let taps: [(name: String, side: Int, channels: Int)] = [("e20", 28, 32), ("e46", 14, 96), ("e60", 7, 320)]
    /// The side of the encoder's input.
    static let inputSide = 224
    /// The side of the matching grid (the finest tap).
    static let gridSide = 28
    /// The side of the coarsest tap, the grid of the encoder's output.
    static let coarseSide = 7
    /// Channels of the encoder's output: each tap's channels × (its side / 7)².
    static let outputChannels = taps.reduce(0) { $0 + $1.channels * ($1.side / coarseSide) * ($1.side / coarseSide) }

    private let prepared: PreparedGraph
    private var input = [Float](repeating: 0, count: 224 * 224)
    private var output: [Float]

    /// Loads the built-in colorizer's encoder on `backend`, computing in what an unmeasured
    /// model gets under `precision`, on `threads` threads.
    init(backend: BackendChoice, precision: PrecisionChoice, threads: Int) throws {
        let loaded = try ModelResolver.resolve(BuiltinModels.color, task: .colorize)
        let graph = try Self.featureGraph(from: loaded.graph)
        prepared = try backend.make(precision: precision, threads: threads).prepare(graph, input: Shape(c: 1, h: Self.inputSide, w: Self.inputSide))
        let o = prepared.outputShape
        guard o == Shape(c: Self.outputChannels, h: Self.coarseSide, w: Self.coarseSide) else {
            throw EngineError(.invalidGraph, "The reference encoder gives \(o), not the \(Self.outputChannels)×7×7 feature map it was built for.")
        }
        output = [Float](repeating: 0, count: o.count)
    }

    /// The built-in colorizer's graph cut after its encoder taps, the finer taps folded into
    /// channels of the 7×7 grid and concatenated; nodes that none of the taps needs are left out.
    static func featureGraph(from full: Graph) throws -> Graph {
        try featureGraph(from: full, foldingOutput: nil)
    }

    /// How much the built-in colorizer's ab output (56×56 at 224×224) is folded to join the
    /// features on the 7×7 grid in `combinedGraph`.
    static let colourFold = 8

    /// The built-in colorizer's whole graph with the features beside its output: its ab folded
    /// into channels of the 7×7 grid (2·8² channels), then the taps as in `featureGraph`; one
    /// forward pass gives the colour and the features (`splitCombined`).
    static func combinedGraph(from full: Graph) throws -> Graph {
        try featureGraph(from: full, foldingOutput: colourFold)
    }

    /// The ab planes (2×56×56, as the model gives them) and the features of a `combinedGraph` output.
    static func splitCombined(_ values: [Float], shape: Shape) throws -> (ab: [Float], side: Int, features: EncodedFeatures) {
        let r = colourFold, plane = shape.h * shape.w, abChannels = 2 * r * r
        guard shape.h == coarseSide, shape.w == coarseSide, shape.c == abChannels + outputChannels else {
            throw EngineError(.invalidGraph, "The colorizer with reference features gives \(shape), not \(abChannels + outputChannels)×7×7.")
        }
        let side = coarseSide * r
        var ab = [Float](repeating: 0, count: 2 * side * side)
        for c in 0..<2 {
            for y in 0..<side {
                for x in 0..<side {
                    ab[(c * side + y) * side + x] = values[(((y % r) * r + x % r) * 2 + c) * plane + (y / r) * coarseSide + x / r]
                }
            }
        }
        return (ab, side, EncodedFeatures(gridFeatures: Array(values[(abChannels * plane)...])))
    }

    private static func featureGraph(from full: Graph, foldingOutput fold: Int?) throws -> Graph {
        var g = full
        var tapValues: [Int] = []
        for tap in taps {
            guard let v = g.valueNames.firstIndex(of: tap.name) else {
                throw EngineError(.invalidGraph, "The built-in colorizer has no encoder output '\(tap.name)'; the reference encoder needs it. Rebuild the bundle with Models/make-builtin.sh.")
            }
            tapValues.append(v)
        }
        // Each finer tap folded into channels on the coarsest grid (space-to-depth moves
        // memory only), so one output carries every level at its own resolution.
        var concatInputs: [Int] = []
        if let fold {
            let v = g.valueNames.count
            g.valueNames.append(g.valueNames[g.output] + "#folded")
            g.nodes.append(Node(name: "colour-folded", op: .spaceToDepth(factor: fold), inputs: [g.output], output: v))
            concatInputs.append(v)
        }
        for (k, tap) in taps.enumerated() {
            let factor = tap.side / coarseSide
            guard factor > 1 else { concatInputs.append(tapValues[k]); continue }
            let v = g.valueNames.count
            g.valueNames.append(tap.name + "#folded")
            g.nodes.append(Node(name: tap.name + "-folded", op: .spaceToDepth(factor: factor), inputs: [tapValues[k]], output: v))
            concatInputs.append(v)
        }
        let out = g.valueNames.count
        g.valueNames.append("reference-features")
        g.nodes.append(Node(name: "reference-features", op: .concatChannels, inputs: concatInputs, output: out))
        g.output = out
        // Keep only what the output needs.
        var needed = Set([out])
        var kept: [Node] = []
        for node in g.nodes.reversed() where needed.contains(node.output) {
            kept.append(node)
            needed.formUnion(node.inputs)
        }
        g.nodes = kept.reversed()
        return g
    }

    /// The features of a lightness plane already at 224×224 (L in 0…100).
    func features(l224: [Float]) throws -> EncodedFeatures {
        precondition(l224.count == Self.inputSide * Self.inputSide)
        // The colorizer's own input normalisation: (L − 50) / 50.
        for i in 0..<input.count { input[i] = (l224[i] - 50) / 50 }
        try input.withUnsafeBufferPointer { i in try output.withUnsafeMutableBufferPointer { try prepared.run(input: i, output: $0) } }
        if let bad = output.withUnsafeBufferPointer(firstNonFinite) {
            throw EngineError(.nonFiniteOutput, "The reference encoder produced a non-finite value (\(output[bad])); the built-in model is damaged. Reinstall vivify.")
        }
        return EncodedFeatures(gridFeatures: output)
    }
}

/// One picture's encoder features, per level, location-major (`[location][channel]`), each
/// location's vector of unit length (so dot products are cosine similarities).
struct EncodedFeatures: Sendable {
    /// Side of each level's grid (28, 14, 7).
    let sides: [Int]
    /// Channels of each level.
    let channels: [Int]
    /// The normalised vectors of each level.
    let levels: [[Float]]

    /// Splits the encoder's 1216×7×7 output into its levels, each unfolded to its own grid
    /// (space-to-depth puts pixel (y, x) of a tap folded by r at channel
    /// ((y mod r)·r + x mod r)·C + c of cell (y / r, x / r)).
    init(gridFeatures f: [Float]) {
        let coarse = ReferenceEncoder.coarseSide, plane = coarse * coarse
        var sides: [Int] = [], channels: [Int] = [], levels: [[Float]] = []
        var c0 = 0
        for tap in ReferenceEncoder.taps {
            let r = tap.side / coarse, n = tap.side * tap.side, c = tap.channels
            var v = [Float](repeating: 0, count: n * c)
            for y in 0..<tap.side {
                for x in 0..<tap.side {
                    let loc = y * tap.side + x, src = (y / r) * coarse + x / r, base = c0 + ((y % r) * r + x % r) * c
                    var norm: Float = 0
                    for k in 0..<c {
                        let value = f[(base + k) * plane + src]
                        v[loc * c + k] = value
                        norm += value * value
                    }
                    let inv = 1 / max(norm.squareRoot(), 1e-6)
                    for k in 0..<c { v[loc * c + k] *= inv }
                }
            }
            sides.append(tap.side)
            channels.append(c)
            levels.append(v)
            c0 += c * r * r
        }
        self.sides = sides
        self.channels = channels
        self.levels = levels
    }
}

/// A colour picture prepared for matching: its L features, and its L and ab on the grids the
/// matcher reads (the picture squashed to a square, as the colorizer squashes frames).
struct ColourReference: Sendable {
    /// Side of the fine grid colour is transferred on.
    static let fineSide = 112
    /// For messages.
    let name: String
    /// Encoder features of its L.
    let features: EncodedFeatures
    /// L on the 28×28 matching grid.
    let lGrid: [Float]
    /// L on the 112×112 fine grid.
    let lFine: [Float]
    /// a then b on the fine grid.
    let abFine: [Float]
    /// Its colour's fine detail at (up to) its own resolution, for references read from a
    /// file; nil for frames that become references (anchors, hinted frames).
    let detail: ColourDetail?

    /// Prepares planar L, a, b of a `width`×`height` picture.
    init(name: String, l: [Float], a: [Float], b: [Float], width: Int, height: Int, encoder: ReferenceEncoder) throws {
        self.name = name
        let s = ReferenceEncoder.inputSide, g = ReferenceEncoder.gridSide, f = Self.fineSide
        var l224 = [Float](repeating: 0, count: s * s)
        Resample.area(l, width, height, into: &l224, s, s)
        features = try encoder.features(l224: l224)
        var lg = [Float](repeating: 0, count: g * g), lf = [Float](repeating: 0, count: f * f), af = lf, bf = lf
        Resample.area(l224, s, s, into: &lg, g, g)
        Resample.area(l224, s, s, into: &lf, f, f)
        Resample.area(a, width, height, into: &af, f, f)
        Resample.area(b, width, height, into: &bf, f, f)
        lGrid = lg
        lFine = lf
        abFine = af + bf
        detail = ColourDetail(l: l, a: a, b: b, width: width, height: height, abFine: abFine, fineSide: f)
    }

    /// Prepares a frame whose colour is already known as ab at the fine grid (a colorized
    /// frame that becomes a keyframe).
    init(name: String, features: EncodedFeatures, lGrid: [Float], lFine: [Float], abFine: [Float]) {
        self.name = name
        self.features = features
        self.lGrid = lGrid
        self.lFine = lFine
        self.abFine = abFine
        detail = nil
    }
}

/// What a colour picture has beyond its fine grid: its L, and its a and b less their fine-grid
/// versions brought back up (the colour's own edges and small things), at its resolution or
/// shrunk to at most `maxSide` across. Immutable after `init`; kept in raw storage so that the
/// per-pixel reads of `DetailTransfer` cost no reference counting.
final class ColourDetail: @unchecked Sendable {
    /// Longest side kept (larger pictures are area-shrunk).
    static let maxSide = 1920
    let width: Int, height: Int
    /// L, `width`×`height`.
    let l: UnsafeMutableBufferPointer<Float>
    /// a then b, each less its fine-grid version bilinearly enlarged.
    let ab: UnsafeMutableBufferPointer<Float>
    /// 1 where some pixel within `DetailTransfer.radius` has detail of at least `minimum` in a
    /// or b, else 0: the flat rest (most of a picture) is skipped without a search.
    let busy: UnsafeMutableBufferPointer<UInt8>
    /// Detail (ab units) below which a pixel adds nothing worth a search.
    static let minimum: Float = 0.5

    init(l: [Float], a: [Float], b: [Float], width: Int, height: Int, abFine: [Float], fineSide f: Int) {
        let scale = min(1, Double(Self.maxSide) / Double(max(width, height)))
        let w = max(1, Int((Double(width) * scale).rounded())), h = max(1, Int((Double(height) * scale).rounded()))
        var ls = l, as_ = a, bs = b
        if w != width || h != height {
            ls = [Float](repeating: 0, count: w * h); as_ = ls; bs = ls
            Resample.area(l, width, height, into: &ls, w, h)
            Resample.area(a, width, height, into: &as_, w, h)
            Resample.area(b, width, height, into: &bs, w, h)
        }
        self.width = w
        self.height = h
        self.l = .allocate(capacity: w * h)
        _ = self.l.initialize(from: ls)
        ab = .allocate(capacity: 2 * w * h)
        var up = [Float](repeating: 0, count: w * h)
        for (c, plane) in [as_, bs].enumerated() {
            Resample.bilinear(Array(abFine[(c * f * f)..<((c + 1) * f * f)]), f, f, into: &up, w, h)
            for i in 0..<(w * h) { ab[c * w * h + i] = plane[i] - up[i] }
        }
        // The busy mask: pixels with detail, dilated by the search radius along rows, then
        // along columns.
        busy = .allocate(capacity: w * h)
        var marked = [UInt8](repeating: 0, count: w * h), rows = marked
        for i in 0..<(w * h) where abs(ab[i]) >= Self.minimum || abs(ab[w * h + i]) >= Self.minimum { marked[i] = 1 }
        let r = DetailTransfer.radius
        for y in 0..<h {
            for x in 0..<w where marked[y * w + x] == 1 {
                for xx in max(0, x - r)...min(w - 1, x + r) { rows[y * w + xx] = 1 }
            }
        }
        busy.initialize(repeating: 0)
        for y in 0..<h {
            for x in 0..<w where rows[y * w + x] == 1 {
                for yy in max(0, y - r)...min(h - 1, y + r) { busy[yy * w + x] = 1 }
            }
        }
    }

    deinit {
        l.deallocate()
        ab.deallocate()
        busy.deallocate()
    }
}
