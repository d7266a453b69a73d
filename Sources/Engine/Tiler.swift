import Synchronization

/// How a model is run over a picture of any size: its scale, how much border each tile needs,
/// how that border is filled at the picture's edges, and what sizes its tiles must have.
public struct TilingSpec: Sendable, Equatable {
    /// Integer output scale.
    public var scale: Int
    /// Input pixels added on each side of a tile (the model's border loss, or the overlap a
    /// "same"-padded model needs to hide its zero padding): `shrinkSize` in the .wifm spec.
    public var padding: Int
    /// How pixels beyond the picture's edge are made.
    public var border: PaddingMode
    /// Tile interiors are rounded up to a multiple of this (U-Nets with strided layers).
    public var multiple: Int
    /// Add a nearest-neighbour `scale×` copy of the input to the output (Real-CUGAN 4×).
    public var addNearestInput: Bool

    /// Makes a spec.
    public init(scale: Int, padding: Int, border: PaddingMode, multiple: Int = 1, addNearestInput: Bool = false) {
        self.scale = scale
        self.padding = padding
        self.border = border
        self.multiple = max(1, multiple)
        self.addNearestInput = addNearestInput
    }
}

/// Runs a model over pictures of any size in tiles.
///
/// Each tile's interior (`tile × tile` input pixels, the last row and column shifted flush to
/// the picture's edge) is fed with `padding` extra pixels on every side — real neighbours
/// inside the picture, the border rule outside it — and its output interior is copied into
/// place. Tiles overlap only in their borders, which are discarded, so nothing is blended and
/// a model without global operations gives exactly the whole-frame result. Graphs are
/// prepared once per tile shape and reused for every frame.
///
/// A model with instance normalisations (statistics over the whole picture) runs in tiles in
/// passes, one per normalisation and a last one for the output (`StatisticsTiling`); a
/// picture that fits one tile runs whole, in one pass, as before. Global average poolings
/// (squeeze-excitation: Real-CUGAN, cunet) are pooled per tile, as waifu2x's and the ncnn
/// tools' tilers do, unless `wholePicturePooling`: then they too take the whole picture's
/// averages in passes, and tiles give the whole frame's result (about 3.2× the work for
/// Real-CUGAN 2×, whose four poolings sit 9%, 44%, 65% and 80% of the way through).
public final class TiledRunner {
    /// The graph being run.
    public let graph: Graph
    /// The model's tiling rules.
    public let spec: TilingSpec
    /// Interior tile side in input pixels.
    public let tileSize: Int
    let backend: InferenceBackend
    private var prepared: [Shape: PreparedGraph] = [:]
    var tileInput: [Float] = []
    var tileOutput: [Float] = []
    /// How tiles get whole-picture statistics (instance normalisation), or nil when the graph
    /// has none or cannot be tiled at all (then a picture larger than one tile runs whole).
    let statistics: StatisticsTiling?
    /// Input border each side that the graph itself consumes (valid convolutions); the rest of
    /// `padding` is cropped from the output.
    private var consumed: [Shape: Int] = [:]

    /// The budget unless `--max-memory` says otherwise: fits a laptop.
    public static let standardMemoryBudget = 1 << 30
    /// The smallest budget a runner takes: a smaller one given is raised to it.
    public static let smallestMemoryBudget = 16 << 20
    /// The largest automatic tile unless `--max-memory` is given, chosen by measurement
    /// (Benchmarks/tile_memory_bench.py, 1920×1080, this 2-core Zen 4): 128–192-pixel tiles
    /// ran waifu2x-photo-2x in 8.3–8.8 s against 18.7 s for the 591-pixel tiles a 3 GiB budget
    /// gave (peak RSS 0.5–0.6 GB against 2.8 GB), and realesr-animevideov3-2x in 13.1–13.4 s
    /// against 13.6 s (0.6–1.1 GB against 3.5 GB); some sizes near 256 are slow in oneDNN's
    /// kernels (waifu2x at 256: 16.2 s).
    public static let preferredTile = 192
    /// The cap automatic tiles get on a backend that prefers `preferred`-pixel tiles:
    /// `preferred`, or none (1024) when a memory budget was given (the caller asked for tiles
    /// as large as the budget allows).
    public static func automaticTileCap(preferred: Int, budgetGiven: Bool) -> Int { budgetGiven ? 1024 : preferred }

    /// Makes a runner. `tileSize` nil picks one from `memoryBudget` bytes (`--max-memory`;
    /// nil: the backend's `tileMemoryBudget`, `standardMemoryBudget` on CPUs, with automatic tiles capped at the backend's preferred
    /// size; given, at least `smallestMemoryBudget` and no speed cap). For a model with
    /// instance normalisations, whose tiles cost a pass per normalisation, nil `tileSize` means
    /// whole frames unless a budget is given.
    /// `wholePicturePooling`: global average poolings in statistics passes too (exact, slower);
    /// otherwise each tile pools its own part (a graph with instance normalisations pools in its
    /// passes either way).
    public init(graph: Graph, spec: TilingSpec, backend: InferenceBackend, tileSize: Int? = nil,
                memoryBudget: Int? = nil, wholePicturePooling: Bool = false) throws {
        let budgetGiven = memoryBudget != nil
        let budget = memoryBudget.map { max($0, Self.smallestMemoryBudget) } ?? backend.tileMemoryBudget
        self.graph = graph
        self.spec = spec
        self.backend = backend
        let pooledWhole = wholePicturePooling && !graph.globalPoolIndices.isEmpty
        statistics = graph.needsWholeFrame || pooledWhole ? StatisticsTiling(graph: graph, spec: spec) : nil
        poolingFellBack = pooledWhole && statistics == nil
        if graph.needsWholeFrame && statistics == nil {
            // A global operation other than instance normalisation: one tile, the frame.
            self.tileSize = 1 << 16
        } else if let tileSize {
            let grid = statistics?.alignment ?? spec.multiple
            guard tileSize >= grid, tileSize >= 8 else {
                throw EngineError(.invalidSetting, "Tile size \(tileSize) is too small for \(graph.source); use at least \(max(8, grid)).")
            }
            self.tileSize = tileSize / grid * grid
        } else if statistics != nil, !graph.instanceNormIndices.isEmpty, !budgetGiven {
            // Tiles cost this model a pass per instance normalisation: whole frames, as before,
            // unless --tile or --max-memory asks for tiles.
            self.tileSize = 1 << 16
        } else if let statistics {
            // Tiles as large as the budget allows (no speed cap): as few passes' borders as can be.
            var bordered = spec
            bordered.padding = statistics.padding
            let a = statistics.alignment
            self.tileSize = max(a, try Self.automaticTileSize(graph: graph, spec: bordered, budget: budget, cap: 1 << 16,
                                                              largestValueBytes: backend.largestValueBytes) / a * a)
        } else {
            self.tileSize = try Self.automaticTileSize(graph: graph, spec: spec, budget: budget,
                                                       cap: Self.automaticTileCap(preferred: backend.preferredTile, budgetGiven: budgetGiven),
                                                       largestValueBytes: backend.largestValueBytes)
        }
    }

    /// Whether `wholePicturePooling` was asked for a graph with global poolings that cannot be
    /// placed with them frozen (a layer after a pooling that is not 1×1): its tiles then pool
    /// their own parts, and the caller says so.
    public private(set) var poolingFellBack = false

    /// Passes over the tiles of a picture larger than one tile when the model normalises by
    /// whole-picture statistics (one per instance normalisation and one for the output); nil
    /// for a model without them, or one that runs on whole frames anyway.
    public var statisticsPasses: Int? { statistics.map { $0.norms.count + 1 } }

    /// How many times a `height`×`width` picture goes through the model's tiles: once, or,
    /// for a model with instance normalisations run in more than one tile, once per
    /// normalisation (gathering its statistics) and once more for the output.
    public func passes(height: Int, width: Int) -> Int {
        guard let statistics, height > tileSize || width > tileSize else { return 1 }
        return statistics.norms.count + 1
    }

    /// The largest tile whose intermediate tensors fit in `budget` bytes, at most `cap`, and
    /// whose largest tensor, as fp32, fits in `largestValueBytes` (the backend's limit on one
    /// value: one descriptor's range on a GPU).
    public static func automaticTileSize(graph: Graph, spec: TilingSpec, budget: Int, cap: Int = TiledRunner.preferredTile,
                                         largestValueBytes: Int = ModelLimits.maxTensorElements * 4) throws -> Int {
        let probe = 64
        let side = probe + 2 * spec.padding
        let channels = graph.inputChannels ?? 3
        let shapes = try graph.inferShapes(input: Shape(c: channels, h: side, w: side))
        let bytes = shapes.compactMap { $0 }.reduce(0) { $0 + $1.count * 4 }
        let perPixel = Double(bytes) / Double(side * side)
        var t = Int((Double(budget) / perPixel).squareRoot()) - 2 * spec.padding
        // No single tensor beyond the engine's limit, with room for backend rewrites that
        // trade resolution for channels (a stride-2 transposed convolution as a sub-pixel
        // convolution holds 4× the channels at the input's size).
        let largest = Double(shapes.compactMap { $0?.count }.max() ?? 1) / Double(side * side)
        let elements = min(ModelLimits.maxTensorElements, largestValueBytes / 4)
        let limitSide = Int((Double(elements) / (4 * largest)).squareRoot())
        t = min(t, limitSide - 2 * spec.padding)
        t = min(max(t, 32), cap)
        return max(spec.multiple, t / spec.multiple * spec.multiple)
    }

    func roundUp(_ v: Int) -> Int { (v + spec.multiple - 1) / spec.multiple * spec.multiple }

    /// The interior tile for a `height`×`width` picture: at most `tileSize` a side, dividing the
    /// picture evenly: as few tiles as the size needs and none wasted on overlap (1080 rows as
    /// six 180-row tiles, not five of 192 and a sixth flush to the edge over the fifth).
    ///
    /// A picture narrower than a tile on one side (a strip) gets tiles of the same area on the
    /// other: a tile's memory and work go with its bordered area, so a 1000×8 strip runs as
    /// one 1000×8 tile rather than six 168×8 ones, each with its own border and, for a model
    /// that pools globally (Real-CUGAN's squeeze-excitation), its own average of a sliver.
    public func tileInterior(height: Int, width: Int) -> (h: Int, w: Int) {
        if let statistics, height > tileSize || width > tileSize { return statisticsTileInterior(statistics, height: height, width: width) }
        func balanced(_ n: Int, cap: Int) -> Int {
            let count = (n + cap - 1) / cap
            return roundUp((n + count - 1) / count)
        }
        let (capH, capW) = stripCaps(height: height, width: width)
        return (balanced(height, cap: capH), balanced(width, cap: capW))
    }

    /// The largest tile sides for a `height`×`width` picture: `tileSize` each, but the long
    /// side of a strip (the other side within one tile) as long as keeps the bordered area
    /// of a `tileSize` square.
    func stripCaps(height: Int, width: Int) -> (h: Int, w: Int) {
        let p = spec.padding
        // Whole-frame runners (1 << 16) need no widening; the product would only overflow.
        guard tileSize < 1 << 15 else { return (tileSize, tileSize) }
        let area = (tileSize + 2 * p) * (tileSize + 2 * p)
        func widened(_ short: Int) -> Int { max(tileSize, area / (roundUp(short) + 2 * p) - 2 * p) / spec.multiple * spec.multiple }
        if height < tileSize && width > tileSize { return (tileSize, widened(height)) }
        if width < tileSize && height > tileSize { return (widened(width), tileSize) }
        return (tileSize, tileSize)
    }

    /// Tile origins along one axis: every `tile`, the last flush to the end.
    public static func origins(length: Int, tile: Int) -> [Int] {
        if length <= tile { return [0] }
        var out = Array(stride(from: 0, to: length - tile, by: tile))
        out.append(length - tile)
        return out
    }

    /// Runs the model on `input` (`channels × height × width`, CHW) into `output`
    /// (`channels × height·scale × width·scale`).
    public func run(input: UnsafeBufferPointer<Float>, channels: Int, height: Int, width: Int,
                    output: UnsafeMutableBufferPointer<Float>) throws {
        if let statistics, height > tileSize || width > tileSize {
            return try runWithStatistics(statistics, input: input, channels: channels, height: height, width: width, output: output)
        }
        let s = spec.scale, p = spec.padding
        let (th, tw) = tileInterior(height: height, width: width)
        let inShape = Shape(c: channels, h: th + 2 * p, w: tw + 2 * p)
        let graphRun = try preparedGraph(inShape)
        let crop = consumed[inShape]!
        let outH = graphRun.outputShape.h, outW = graphRun.outputShape.w
        let oh = height * s, ow = width * s
        // The tiles are copied channel by channel into a picture of the input's channels: a
        // model that makes fewer (a 1-channel output for RGB) would be read past its tile, one
        // that makes more would lose them; either is refused, as is an output smaller than the
        // scale says (the crop would read outside the tile).
        guard graphRun.outputShape.c == channels else {
            throw EngineError(.invalidGraph, "\(graph.source) makes \(graph.valueNames[graph.output]) with \(graphRun.outputShape.c) channels from a \(channels)-channel picture; an upscaler must give as many channels as it takes. Use a model with \(channels) output channels.")
        }
        guard outH >= th * s + crop, outW >= tw * s + crop, output.count >= channels * oh * ow, input.count >= channels * height * width else {
            throw EngineError(.invalidGraph, "\(graph.source) makes a \(outW)x\(outH) tile from a \(inShape.w)x\(inShape.h) one, smaller than its scale \(s)× needs. Check the model's scale.")
        }
        if tileInput.count != inShape.count { tileInput = [Float](repeating: 0, count: inShape.count) }
        if tileOutput.count != graphRun.outputShape.count { tileOutput = [Float](repeating: 0, count: graphRun.outputShape.count) }
        for y0 in Self.origins(length: height, tile: th) {
            for x0 in Self.origins(length: width, tile: tw) {
                fillTile(input, channels, height, width, y0 - p, x0 - p, inShape)
                try tileInput.withUnsafeBufferPointer { i in
                    try tileOutput.withUnsafeMutableBufferPointer { o in try graphRun.run(input: i, output: o) }
                }
                // NaN or infinity out of a model (damaged weights, an overflow) would become a
                // black or white picture with exit 0: an error instead, per tile.
                if let bad = tileOutput.withUnsafeBufferPointer(firstNonFinite) {
                    throw EngineError(.nonFiniteOutput, "\(graph.source) produced NaN or infinite values (\(tileOutput[bad]) in the tile at x \(x0), y \(y0)): its weights are damaged or its arithmetic overflows. Check or replace the model file.")
                }
                // Copy the interior of this tile's output into place (crop = border left in the output).
                let rows = min(th, height - y0) * s, cols = min(tw, width - x0) * s
                tileOutput.withUnsafeBufferPointer { t in
                    for c in 0..<channels {
                        for r in 0..<rows {
                            let src = (c * outH + r + crop) * outW + crop
                            let dst = (c * oh + y0 * s + r) * ow + x0 * s
                            (output.baseAddress! + dst).update(from: t.baseAddress! + src, count: cols)
                        }
                    }
                }
            }
        }
        if spec.addNearestInput { addNearestInput(input, channels, height, width, output) }
    }

    /// Adds a nearest-neighbour `scale×` copy of the input to the output (Real-CUGAN 4×).
    func addNearestInput(_ input: UnsafeBufferPointer<Float>, _ channels: Int, _ height: Int, _ width: Int,
                         _ output: UnsafeMutableBufferPointer<Float>) {
        let s = spec.scale, oh = height * s, ow = width * s
        for c in 0..<channels {
            for y in 0..<oh {
                for x in 0..<ow {
                    output[(c * oh + y) * ow + x] += input[(c * height + y / s) * width + x / s]
                }
            }
        }
    }

    private func preparedGraph(_ shape: Shape) throws -> PreparedGraph {
        if let g = prepared[shape] { return g }
        let g = try backend.prepare(graph, input: shape)
        let s = spec.scale
        // Output rows beyond scale × interior are border: the graph consumed `b` input pixels
        // per side, the remaining (padding − b) are cropped here.
        let extra = g.outputShape.h - s * (shape.h - 2 * spec.padding)
        guard extra >= 0, extra % 2 == 0, g.outputShape.w - s * (shape.w - 2 * spec.padding) == extra else {
            throw EngineError(.invalidGraph, "\(graph.source): output \(g.outputShape) for input \(shape) does not fit scale \(s) with padding \(spec.padding).")
        }
        consumed[shape] = extra / 2
        prepared[shape] = g
        return g
    }

    /// Copies the window starting at (top, left) of size `shape`, mapping outside pixels by
    /// the border rule.
    func fillTile(_ input: UnsafeBufferPointer<Float>, _ channels: Int, _ height: Int, _ width: Int,
                  _ top: Int, _ left: Int, _ shape: Shape) {
        @inline(__always) func map(_ i: Int, _ n: Int) -> Int {
            if i >= 0 && i < n { return i }
            switch spec.border {
            case .reflect:
                var j = i
                // Mirror without repeating the edge; fold again for borders wider than the picture.
                while j < 0 || j >= n { j = j < 0 ? -j : 2 * (n - 1) - j; if n == 1 { return 0 } }
                return j
            case .replicate, .constant:
                // A constant border never reads the picture there; the clamp keeps the index valid.
                return min(max(i, 0), n - 1)
            }
        }
        var constant: Float?
        if case .constant(let v) = spec.border { constant = v }
        tileInput.withUnsafeMutableBufferPointer { t in
            for c in 0..<channels {
                for r in 0..<shape.h {
                    let y = top + r
                    let inside = y >= 0 && y < height
                    let sy = map(y, height)
                    let rowBase = (c * height + sy) * width
                    let outBase = (c * shape.h + r) * shape.w
                    // The interior of the row is one contiguous copy.
                    let x0 = max(0, -left), x1 = min(shape.w, width - left)
                    if let constant, !inside {
                        for k in 0..<shape.w { t[outBase + k] = constant }
                        continue
                    }
                    if x1 > x0 {
                        (t.baseAddress! + outBase + x0).update(from: input.baseAddress! + rowBase + left + x0, count: x1 - x0)
                    }
                    for k in 0..<x0 { t[outBase + k] = constant ?? input[rowBase + map(left + k, width)] }
                    if x1 < shape.w {
                        for k in max(x1, 0)..<shape.w { t[outBase + k] = constant ?? input[rowBase + map(left + k, width)] }
                    }
                }
            }
        }
    }
}

extension TiledRunner {
    /// Multiply-adds to run the model over a `height`×`width` picture in this runner's tiles
    /// (borders and the flush last row/column included, as they are really computed).
    public func multiplyAdds(channels: Int, height: Int, width: Int) throws -> Int {
        if let statistics, height > tileSize || width > tileSize {
            return try statisticsMultiplyAdds(statistics, channels: channels, height: height, width: width)
        }
        let (th, tw) = tileInterior(height: height, width: width)
        let tiles = Self.origins(length: height, tile: th).count * Self.origins(length: width, tile: tw).count
        let shape = Shape(c: channels, h: th + 2 * spec.padding, w: tw + 2 * spec.padding)
        return tiles * (try graph.multiplyAdds(input: shape))
    }
}
