/// Where the positions of one value lie along one axis of the input picture: position `j` of
/// the value is centred on input coordinate `(j − offset) / scale`, with `scale` an exact
/// fraction (½ after a stride-2 convolution, 2 after a 2× upsampling). A graph built only of
/// operations that treat every position alike (convolutions, pads, crops, per-pixel
/// arithmetic, integer resampling) is translation-equivariant: a window of the picture that
/// starts at input coordinate `t` (a multiple of `denominator`) gives, at its own position
/// `i`, the value the whole picture gives at `i + scale · t`, wherever the window's edges are
/// too far away to be seen. Statistics tiling (`TiledRunner`) uses this to map each tile's
/// values into the whole picture's.
public struct AxisPlacement: Sendable, Equatable {
    /// Resolution relative to the input, as a reduced fraction.
    public var numerator: Int, denominator: Int
    /// Position (in this value's pixels) of input coordinate 0.
    public var offset: Double

    /// The input itself.
    public static let identity = AxisPlacement(numerator: 1, denominator: 1, offset: 0)

    /// Makes a placement, reducing the fraction.
    public init(numerator: Int, denominator: Int, offset: Double) {
        let g = Self.gcd(numerator, denominator)
        self.numerator = numerator / g
        self.denominator = denominator / g
        self.offset = offset
    }

    /// The scale as a number.
    public var scale: Double { Double(numerator) / Double(denominator) }

    /// This value's position for input coordinate `x`.
    public func position(_ x: Double) -> Double { scale * x + offset }

    /// The shift, in this value's pixels, of a window that starts at input coordinate `t`
    /// (exact when `denominator` divides `t`).
    public func shift(_ t: Int) -> Int { t * numerator / denominator }

    /// After a window `kernel` wide (dilation included) every `stride`, starting `padBefore`
    /// before the value (convolution, pooling, space-to-depth).
    func windowed(kernel: Int, stride: Int, padBefore: Int) -> AxisPlacement {
        AxisPlacement(numerator: numerator, denominator: denominator * stride,
                      offset: (offset + Double(padBefore) - Double(kernel - 1) / 2) / Double(stride))
    }

    /// After spreading each position over `factor` outputs whose centre lies `centre` outputs
    /// past `factor · j` (pixel shuffle and half-pixel resampling: (factor − 1)/2).
    func spread(factor: Int, centre: Double) -> AxisPlacement {
        AxisPlacement(numerator: numerator * factor, denominator: denominator, offset: offset * Double(factor) + centre)
    }

    /// After `amount` positions are added before the first (negative: removed).
    func shifted(by amount: Int) -> AxisPlacement {
        AxisPlacement(numerator: numerator, denominator: denominator, offset: offset + Double(amount))
    }

    static func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? max(abs(a), 1) : gcd(b, a % b) }
    static func lcm(_ a: Int, _ b: Int) -> Int { a / gcd(a, b) * b }
}

/// A value's placement along rows and columns.
public struct ValuePlacement: Sendable, Equatable {
    /// Along rows (height) and columns (width).
    public var rows: AxisPlacement, columns: AxisPlacement

    /// The input itself.
    public static let identity = ValuePlacement(rows: .identity, columns: .identity)
}

extension Graph {
    /// The placement of every value on the input picture (`nil` for values made without the
    /// input, such as constants that broadcast), or `nil` for the whole graph when an
    /// operation sees more than a fixed window around each position: global pooling, fully
    /// connected layers, sizes or coordinates relative to the whole picture (resizing to a
    /// given size, aligned corners, crop and resize by fractions), reshapes and the like,
    /// external kernels that give no geometry (who knows where they look), or inputs that
    /// disagree on where they lie.
    /// Instance normalisation keeps its input's placement: with its statistics frozen it is a
    /// per-channel affine operation.
    public func placements() -> [ValuePlacement?]? {
        if specializer != nil { return nil }
        var placed = [ValuePlacement?](repeating: nil, count: valueNames.count)
        placed[input] = .identity
        for node in nodes {
            let ins = node.inputs.map { placed[$0] }
            // The placement shared by every input that has one; inputs that disagree (or none
            // at all, for an operation that needs the picture) make the graph unplaceable.
            // (A crop to another value's size reads only that value's size.)
            let spatial = (node.op.isCropLike ? Array(ins.prefix(1)) : ins).compactMap { $0 }
            guard spatial.dropFirst().allSatisfy({ $0 == spatial[0] }) else { return nil }
            let x = spatial.first
            let out: ValuePlacement?
            switch node.op {
            case .constant(let shape, _):
                // Only a constant that broadcasts over rows and columns is the same everywhere.
                guard shape.h == 1, shape.w == 1 else { return nil }
                out = nil
            case .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .sliceChannels, .concatChannels, .instanceNorm:
                out = x
            case .convolution(let p) where x == nil && !node.inputs.isEmpty:
                // On a value made without the picture (a frozen pooling's C×1×1): a 1×1
                // convolution of it, unpadded, is another such value (squeeze-excitation).
                guard p.kernelH == 1, p.kernelW == 1, p.strideH == 1, p.strideW == 1,
                      p.padTop == 0, p.padLeft == 0, p.padBottom == 0, p.padRight == 0 else { return nil }
                out = nil
            case .fullyConnected where x == nil && !node.inputs.isEmpty:
                out = nil
            case .convolution(let p):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.windowed(kernel: p.dilationH * (p.kernelH - 1) + 1, stride: p.strideH, padBefore: p.padTop),
                                     columns: x.columns.windowed(kernel: p.dilationW * (p.kernelW - 1) + 1, stride: p.strideW, padBefore: p.padLeft))
            case .pool(let p):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.windowed(kernel: p.dilationH * (p.kernelH - 1) + 1, stride: p.strideH, padBefore: p.padTop),
                                     columns: x.columns.windowed(kernel: p.dilationW * (p.kernelW - 1) + 1, stride: p.strideW, padBefore: p.padLeft))
            case .spaceToDepth(let f):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.windowed(kernel: f, stride: f, padBefore: 0), columns: x.columns.windowed(kernel: f, stride: f, padBefore: 0))
            case .deconvolution(let p):
                // Input j scatters onto outputs stride·j − pad … + kernel − 1: centred at
                // stride·j − pad + (kernel − 1)/2.
                guard let x else { return nil }
                let kh = p.dilationH * (p.kernelH - 1) + 1, kw = p.dilationW * (p.kernelW - 1) + 1
                out = ValuePlacement(rows: x.rows.spread(factor: p.strideH, centre: Double(kh - 1) / 2 - Double(p.padTop)),
                                     columns: x.columns.spread(factor: p.strideW, centre: Double(kw - 1) / 2 - Double(p.padLeft)))
            case .pixelShuffle(let f, _):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.spread(factor: f, centre: Double(f - 1) / 2), columns: x.columns.spread(factor: f, centre: Double(f - 1) / 2))
            case .upsampleDetail(_, _, let f):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.spread(factor: f, centre: Double(f - 1) / 2), columns: x.columns.spread(factor: f, centre: Double(f - 1) / 2))
            case .resize(_, let sh, let sw, let oh, let ow, let alignCorners):
                guard let x, oh == 0, ow == 0, !alignCorners, let rows = Self.resampled(x.rows, sh, halfPixel: true),
                      let columns = Self.resampled(x.columns, sw, halfPixel: true) else { return nil }
                out = ValuePlacement(rows: rows, columns: columns)
            case .resample(let p):
                let halfPixel: Bool
                switch p.coordinates {
                case .halfPixel, .pytorchHalfPixel, .tfHalfPixelForNN: halfPixel = true
                case .asymmetric: halfPixel = false
                case .alignCorners, .tfCropAndResize: return nil
                }
                guard let x, p.outH == 0, p.outW == 0, let rows = Self.resampled(x.rows, p.scaleH, halfPixel: halfPixel),
                      let columns = Self.resampled(x.columns, p.scaleW, halfPixel: halfPixel) else { return nil }
                out = ValuePlacement(rows: rows, columns: columns)
            case .pad(let t, let l, _, _, _):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.shifted(by: t), columns: x.columns.shifted(by: l))
            case .crop(let t, let l, _, _):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.shifted(by: -t), columns: x.columns.shifted(by: -l))
            case .cropLike(let t, let l):
                guard let x else { return nil }
                out = ValuePlacement(rows: x.rows.shifted(by: -t), columns: x.columns.shifted(by: -l))
            case .external(let e):
                // Placed by the geometry its kernel gives (a compiled layer of ABI version 2 that
                // describes itself), like the engine's own resampling and crops; without one it
                // may look anywhere.
                guard let x, let g = e.kernel.geometry else { return nil }
                out = ValuePlacement(rows: g.placed(x.rows, before: g.top), columns: g.placed(x.columns, before: g.left))
            case .globalAveragePool, .fullyConnected, .reshape, .softmax, .concat, .transpose, .rowMatMul:
                return nil
            }
            placed[node.output] = out
        }
        return placed
    }

    /// After resampling by `factor` (an integer, or one over an integer); nil for any other.
    private static func resampled(_ a: AxisPlacement, _ factor: Float, halfPixel: Bool) -> AxisPlacement? {
        if factor >= 1, factor == factor.rounded() {
            let f = Int(factor)
            return a.spread(factor: f, centre: halfPixel ? Double(f - 1) / 2 : 0)
        }
        let inverse = 1 / factor
        guard factor > 0, inverse == inverse.rounded() else { return nil }
        let f = Int(inverse)
        return a.windowed(kernel: halfPixel ? f : 1, stride: f, padBefore: 0)
    }
}

extension Operation {
    fileprivate var isCropLike: Bool {
        if case .cropLike = self { return true }
        return false
    }
}
