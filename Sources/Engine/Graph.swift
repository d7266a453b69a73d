/// The shape of one image-like tensor: batch 1, `c` channels, `h` rows, `w` columns (NCHW).
/// Vectors (fully connected layers, pooled values) are `c × 1 × 1`.
public struct Shape: Hashable, Sendable, CustomStringConvertible {
    /// Channels.
    public var c: Int
    /// Height.
    public var h: Int
    /// Width.
    public var w: Int

    /// Makes a shape.
    public init(c: Int, h: Int, w: Int) {
        self.c = c
        self.h = h
        self.w = w
    }

    /// Number of elements.
    public var count: Int { c * h * w }
    public var description: String { "1x\(c)x\(h)x\(w)" }
}

/// A float32 NCHW tensor with batch 1.
public struct Tensor: Sendable, Equatable {
    /// Its shape.
    public var shape: Shape
    /// `shape.count` values, channel after channel, row after row.
    public var data: [Float]

    /// Makes a zero tensor.
    public init(shape: Shape) {
        self.shape = shape
        data = [Float](repeating: 0, count: shape.count)
    }

    /// Wraps existing values (count must match).
    public init(shape: Shape, data: [Float]) {
        precondition(data.count == shape.count, "tensor data has \(data.count) values, shape \(shape) needs \(shape.count)")
        self.shape = shape
        self.data = data
    }
}

/// An activation applied element-wise (alone, or fused after a layer).
public enum Activation: Sendable, Equatable {
    case identity
    case relu
    /// max(x, 0) + slope · min(x, 0).
    case leakyRelu(slope: Float)
    /// Per-channel slopes (one value broadcasts to all channels).
    case prelu(slopes: [Float])
    /// x · sigmoid(x).
    case silu
    case sigmoid
    case tanh
    case clip(min: Float, max: Float)
    /// x for x > 0, alpha · (exp(x) − 1) otherwise.
    case elu(alpha: Float)
    /// √x (NaN below zero, as IEEE has it).
    case sqrt
    /// x raised to a constant power.
    case pow(exponent: Float)
}

/// Element-wise operations on two tensors.
public enum BinaryKind: String, Sendable, Equatable {
    case add, sub, mul, div, max, min
    /// The first input raised to the power of the second.
    case pow
}

/// How a padding op fills the border.
public enum PaddingMode: Sendable, Equatable {
    case constant(Float)
    case replicate
    case reflect
}

/// Resampling kinds for resize.
public enum ResizeMode: String, Sendable, Equatable {
    case nearest, bilinear, bicubic
}

/// Channel order of pixel shuffle / depth-to-space.
public enum ShuffleOrder: String, Sendable, Equatable {
    /// PyTorch PixelShuffle and ONNX DepthToSpace mode CRD: channel c·r² + dy·r + dx.
    case crd
    /// ONNX/TensorFlow DepthToSpace mode DCR: channel (dy·r + dx)·C + c.
    case dcr
}

/// A convolution (also used for transposed convolution).
public struct ConvolutionParameters: Sendable, Equatable {
    /// Output channels.
    public var outChannels: Int
    /// Input channels.
    public var inChannels: Int
    /// Kernel height and width.
    public var kernelH: Int, kernelW: Int
    /// Stride.
    public var strideH: Int, strideW: Int
    /// Dilation.
    public var dilationH: Int, dilationW: Int
    /// Padding on each side (top, left, bottom, right). For transposed convolution it is the
    /// amount cropped from the full output.
    public var padTop: Int, padLeft: Int, padBottom: Int, padRight: Int
    /// Extra rows/columns added at the bottom/right of a transposed convolution's output.
    public var outputPadH: Int, outputPadW: Int
    /// Groups (1 = dense; inChannels = depthwise).
    public var groups: Int
    /// Weights. Convolution: [out][in/groups][kh][kw]. Transposed convolution:
    /// [in][out/groups][kh][kw] (scatter-add of each input pixel, no kernel flip).
    public var weights: [Float]
    /// One bias per output channel, or empty.
    public var bias: [Float]
    /// Activation fused after the layer.
    public var activation: Activation

    /// Makes parameters; everything but channels, kernel and weights has the usual default.
    public init(outChannels: Int, inChannels: Int, kernelH: Int, kernelW: Int, strideH: Int = 1, strideW: Int = 1,
                dilationH: Int = 1, dilationW: Int = 1, padTop: Int = 0, padLeft: Int = 0, padBottom: Int = 0, padRight: Int = 0,
                outputPadH: Int = 0, outputPadW: Int = 0, groups: Int = 1, weights: [Float], bias: [Float] = [],
                activation: Activation = .identity) {
        self.outChannels = outChannels
        self.inChannels = inChannels
        self.kernelH = kernelH
        self.kernelW = kernelW
        self.strideH = strideH
        self.strideW = strideW
        self.dilationH = dilationH
        self.dilationW = dilationW
        self.padTop = padTop
        self.padLeft = padLeft
        self.padBottom = padBottom
        self.padRight = padRight
        self.outputPadH = outputPadH
        self.outputPadW = outputPadW
        self.groups = groups
        self.weights = weights
        self.bias = bias
        self.activation = activation
    }

    /// Multiply-adds per output pixel.
    public var macsPerOutputPixel: Int { outChannels * (inChannels / groups) * kernelH * kernelW }
}

/// Pooling over a window of each channel.
public struct PoolParameters: Sendable, Equatable {
    /// Maximum, or average (counting padded positions or not).
    public enum Kind: Sendable, Equatable {
        case max
        case average(countPadding: Bool)
    }
    public var kind: Kind
    /// Window height and width.
    public var kernelH: Int, kernelW: Int
    /// Stride.
    public var strideH: Int, strideW: Int
    /// Dilation of the window.
    public var dilationH: Int, dilationW: Int
    /// Padding on each side (top, left, bottom, right); padded positions never win a maximum.
    public var padTop: Int, padLeft: Int, padBottom: Int, padRight: Int
    /// Rounds the output size up (a last window may start inside the input and run past it).
    public var ceilMode: Bool

    /// Makes parameters.
    public init(kind: Kind, kernelH: Int, kernelW: Int, strideH: Int = 1, strideW: Int = 1, dilationH: Int = 1, dilationW: Int = 1,
                padTop: Int = 0, padLeft: Int = 0, padBottom: Int = 0, padRight: Int = 0, ceilMode: Bool = false) {
        self.kind = kind
        self.kernelH = kernelH
        self.kernelW = kernelW
        self.strideH = strideH
        self.strideW = strideW
        self.dilationH = dilationH
        self.dilationW = dilationW
        self.padTop = padTop
        self.padLeft = padLeft
        self.padBottom = padBottom
        self.padRight = padRight
        self.ceilMode = ceilMode
    }

    /// Output length of one axis.
    static func outputLength(_ n: Int, kernel: Int, stride: Int, dilation: Int, padBegin: Int, padEnd: Int, ceil: Bool) -> Int {
        let span = dilation * (kernel - 1) + 1
        let room = n + padBegin + padEnd - span
        guard room >= 0, stride > 0 else { return 0 }
        var out = (ceil ? (room + stride - 1) / stride : room / stride) + 1
        // A last window must start inside the input or its leading padding (PyTorch's rule).
        if ceil, (out - 1) * stride >= n + padBegin { out -= 1 }
        return out
    }

    /// Output height and width for an input of `h × w`.
    public func outputSize(h: Int, w: Int) -> (h: Int, w: Int) {
        (Self.outputLength(h, kernel: kernelH, stride: strideH, dilation: dilationH, padBegin: padTop, padEnd: padBottom, ceil: ceilMode),
         Self.outputLength(w, kernel: kernelW, stride: strideW, dilation: dilationW, padBegin: padLeft, padEnd: padRight, ceil: ceilMode))
    }
}

/// Resampling of height and width with every option ONNX's Resize has (but a region of
/// interest): the sampling, how output coordinates map to input ones, nearest rounding, the
/// cubic coefficient. Output size from scales (`floor(n · scale)`, the scale itself used in
/// the coordinate mapping) or given.
public struct ResampleParameters: Sendable, Equatable {
    /// How an output coordinate maps to an input one (ONNX's names).
    public enum Coordinates: String, Sendable, Equatable, CaseIterable {
        case halfPixel = "half_pixel", pytorchHalfPixel = "pytorch_half_pixel", alignCorners = "align_corners"
        case asymmetric, tfHalfPixelForNN = "tf_half_pixel_for_nn", tfCropAndResize = "tf_crop_and_resize"
    }
    /// How nearest sampling rounds a fractional coordinate.
    public enum Rounding: String, Sendable, Equatable, CaseIterable {
        case roundPreferFloor = "round_prefer_floor", roundPreferCeil = "round_prefer_ceil", floor, ceil
    }
    public var mode: ResizeMode
    public var coordinates: Coordinates
    public var rounding: Rounding
    /// The cubic convolution coefficient (−0.75 PyTorch and ONNX, −0.5 Keys).
    public var cubicA: Float
    /// Taps outside the input get weight 0 and the rest are renormalised.
    public var excludeOutside: Bool
    /// Scale factors, used when the sizes are 0.
    public var scaleH: Float, scaleW: Float
    /// Output sizes (0: from the scales).
    public var outH: Int, outW: Int
    /// `tf_crop_and_resize`: the region sampled, as fractions of the input (start and end for
    /// rows, then columns), and the value of samples outside the input.
    public var roi: [Float] = [0, 1, 0, 1]
    public var extrapolation: Float = 0

    /// Makes parameters.
    public init(mode: ResizeMode, coordinates: Coordinates = .halfPixel, rounding: Rounding = .roundPreferFloor, cubicA: Float = -0.75,
                excludeOutside: Bool = false, scaleH: Float = 0, scaleW: Float = 0, outH: Int = 0, outW: Int = 0) {
        self.mode = mode
        self.coordinates = coordinates
        self.rounding = rounding
        self.cubicA = cubicA
        self.excludeOutside = excludeOutside
        self.scaleH = scaleH
        self.scaleW = scaleW
        self.outH = outH
        self.outW = outW
    }
}

/// What a node computes.
public enum Operation: Sendable, Equatable {
    /// Convolution with stride, dilation, groups and asymmetric padding.
    case convolution(ConvolutionParameters)
    /// Transposed convolution.
    case deconvolution(ConvolutionParameters)
    /// Element-wise activation.
    case activation(Activation)
    /// Two inputs, NumPy-style broadcasting of size-1 dims; optional coefficients scale each
    /// input first (ncnn Eltwise).
    case binary(BinaryKind, coefficients: [Float]?)
    /// An input and a constant scalar; `scalarFirst` computes `scalar ∘ x` (rsub, rdiv).
    case scalar(BinaryKind, Float, scalarFirst: Bool)
    /// Per-channel `x · scale + bias` (inference batch norm; folded into a preceding convolution).
    case channelAffine(scale: [Float], bias: [Float])
    /// Softmax over channels at each pixel.
    case softmaxChannels
    /// Rearranges `C·r²` channels into an `r×` larger picture.
    case pixelShuffle(factor: Int, order: ShuffleOrder)
    /// Resize by scale factors or to a size (outH/outW non-zero win).
    case resize(ResizeMode, scaleH: Float, scaleW: Float, outH: Int, outW: Int, alignCorners: Bool)
    /// Padding of each side.
    case pad(top: Int, left: Int, bottom: Int, right: Int, mode: PaddingMode)
    /// Removes rows/columns from each side (negative values are not allowed).
    case crop(top: Int, left: Int, bottom: Int, right: Int)
    /// Crops the first input to the height and width of the second, starting at (top, left).
    case cropLike(top: Int, left: Int)
    /// Channel slice [start, end).
    case sliceChannels(start: Int, end: Int)
    /// Concatenation along channels.
    case concatChannels
    /// Mean over each channel's pixels → C×1×1.
    case globalAveragePool
    /// Fully connected: weights [out][in] over the flattened input; bias per output.
    case fullyConnected(outFeatures: Int, weights: [Float], bias: [Float], activation: Activation)
    /// The tail of a residual upscaler, `resize×r(base) + pixelShuffle×r(detail)` for a whole
    /// `factor` r (2, 3 or 4: realesr-animevideov3 ends ×4), as one operation. Inputs: `base`
    /// (C×H×W) and `detail` (r²·C×H×W, a detail per channel, or r²×H×W, one detail added to
    /// every channel), the shuffle in `order`. The resize has half-pixel centres and replicated
    /// edges (nearest: the floor of the scaled coordinate, as `.resize`). The upsample-detail
    /// pass (`fusingUpsampleDetailTails`) makes it from the add of the three separate operations.
    case upsampleDetail(ResizeMode, order: ShuffleOrder, factor: Int = 2)
    /// Per-channel normalisation over the channel's own pixels (mean 0, variance 1, then
    /// `· scale + bias`): instance normalisation. It sees the whole input: a graph with it runs
    /// whole, or in tiles with a statistics pass per norm (`TiledRunner`, `StatisticsTiling`).
    case instanceNorm(scale: [Float], bias: [Float], epsilon: Float)
    /// Max or average pooling over windows.
    case pool(PoolParameters)
    /// Moves each `r×r` block of pixels into `r²` channels (ONNX SpaceToDepth: channel
    /// (dy·r + dx)·C + c), the inverse of a DCR pixel shuffle.
    case spaceToDepth(factor: Int)
    /// Resampling with ONNX Resize's options (see `ResampleParameters`).
    case resample(ResampleParameters)
    /// No input: a constant tensor (broadcast against images by binary operations).
    case constant(Shape, values: [Float])
    /// The same values in the same order with another shape (same count).
    case reshape(Shape)
    /// Softmax along rows (axis 2) or columns (axis 3) of each channel.
    case softmax(axis: Int)
    /// Concatenation along rows (axis 2) or columns (axis 3).
    case concat(axis: Int)
    /// Permutes the channel, row and column axes (`perm` of 0, 1, 2: output axis i is input
    /// axis perm[i]).
    case transpose(perm: [Int])
    /// A fully connected layer along each row: `y[c][h][n] = Σk x[c][h][k] · weights[k][n] + bias[n]`
    /// (ONNX MatMul/Gemm on a 2-D operand).
    case rowMatMul(inFeatures: Int, outFeatures: Int, weights: [Float], bias: [Float])
    /// A layer computed by an external kernel (a compiled Core ML custom layer, see
    /// `ExternalKernel`); one input, its output shape as the kernel answers.
    case external(ExternalLayer)
}

/// One step of the graph: an operation reading values and producing one value.
public struct Node: Sendable {
    /// Layer name from the model file (for messages).
    public var name: String
    /// What it computes.
    public var op: Operation
    /// Indices of the values it reads.
    public var inputs: [Int]
    /// Index of the value it writes.
    public var output: Int

    /// Makes a node.
    public init(name: String, op: Operation, inputs: [Int], output: Int) {
        self.name = name
        self.op = op
        self.inputs = inputs
        self.output = output
    }
}

/// The engine's one graph IR. Every importer (ncnn, Core ML, …) produces one of these; every
/// backend runs one. Nodes are in execution order; value 0 … `valueNames.count - 1`.
public struct Graph: Sendable {
    /// Names of the values (blobs), for messages.
    public var valueNames: [String]
    /// Nodes in an order where every input is produced before it is read.
    public var nodes: [Node]
    /// The value fed with the input image.
    public var input: Int
    /// The value read as the result.
    public var output: Int
    /// Where the graph came from (file path), for messages.
    public var source: String

    /// For models whose layers depend on the input's size (ONNX shape arithmetic: a Reshape
    /// to a size computed from `Shape`): remakes the graph for one concrete input shape.
    /// Backends call it, through `specialized(for:)`, before they prepare a shape.
    public var specializer: (@Sendable (Shape) throws -> Graph)?

    /// Makes a graph.
    public init(valueNames: [String], nodes: [Node], input: Int, output: Int, source: String,
                specializer: (@Sendable (Shape) throws -> Graph)? = nil) {
        self.valueNames = valueNames
        self.nodes = nodes
        self.input = input
        self.output = output
        self.source = source
        self.specializer = specializer
    }

    /// Whether an operation sees the whole picture (instance normalisation's statistics, a
    /// softmax along rows or columns, a reshape that moves pixels between rows, a crop and
    /// resize by a region given as fractions of the picture, an external kernel without a
    /// geometry), so
    /// that plain tiles would give a different result: such graphs run on whole frames, or,
    /// when instance normalisation is the only such operation, in tiles with statistics passes
    /// (`TiledRunner`).
    public var needsWholeFrame: Bool {
        nodes.contains {
            switch $0.op {
            case .instanceNorm, .reshape, .softmax, .concat, .transpose, .rowMatMul: return true
            // An external kernel may look anywhere in its input unless it gives its geometry.
            case .external(let e): return e.kernel.geometry == nil
            case .resample(let p): return p.coordinates == .tfCropAndResize
            case .convolution, .deconvolution, .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle,
                 .resize, .pad, .crop, .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .fullyConnected,
                 .upsampleDetail, .pool, .spaceToDepth, .constant:
                // Per pixel or a bounded window (global pooling, as the reference tools, per tile).
                return false
            }
        }
    }

    /// The external kernels that give no geometry (`ExternalGeometry`), by label: each makes
    /// the graph run on whole frames (a compiled layer library of ABI version 1, say).
    public var unplacedExternalKernels: [String] {
        var labels: [String] = []
        for node in nodes {
            if case .external(let e) = node.op, e.kernel.geometry == nil, !labels.contains(e.kernel.label) { labels.append(e.kernel.label) }
        }
        return labels
    }

    /// The graph for input `shape`: itself, or the specializer's graph for that shape.
    public func specialized(for shape: Shape) throws -> Graph {
        guard let specializer else { return self }
        return try specializer(shape)
    }

    /// Input channel count the first layer expects, when it can be told.
    public var inputChannels: Int? {
        // Look through leading element-wise nodes (normalisation) to the first layer that says.
        var frontier: Set<Int> = [input]
        for node in nodes where node.inputs.contains(where: frontier.contains) {
            switch node.op {
            case .convolution(let p), .deconvolution(let p): return p.inChannels
            case .channelAffine(let scale, _): return scale.count
            case .scalar, .activation: frontier.insert(node.output)
            case .instanceNorm(let scale, _, _): return scale.count
            case .binary, .softmaxChannels, .pixelShuffle, .resize, .pad, .crop, .cropLike, .sliceChannels,
                 .concatChannels, .globalAveragePool, .fullyConnected, .upsampleDetail, .pool, .spaceToDepth,
                 .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul, .external:
                // These take any channel count (a fully connected layer's weights cover the
                // flattened input, not one pixel): they do not say; look no further down here.
                continue
            }
        }
        return nil
    }
}

/// A model the engine cannot run or whose shapes do not fit: names the layer and the file.
public struct EngineError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; decides the exit code (see the library face's mapping).
    public enum Kind: String, Sendable, CaseIterable {
        /// The graph does not hold together for this input: shapes that do not fit, a value
        /// read before it is made, an output never produced (a damaged or mismatched model).
        case invalidGraph
        /// A backend cannot run an operation of the graph.
        case unsupported
        /// A setting cannot work with this model (a tile too small for it).
        case invalidSetting
        /// The backend library failed in a way the caller cannot fix.
        case backendFailure
        /// The model's output holds NaN or infinity (damaged weights, an overflow).
        case nonFiniteOutput
    }

    /// A way around the failure that only a front end can name (the engine knows no command
    /// line): `vivify` adds "Or run on the CPU (--backend onednn).", `vivify-gpucheck`, which
    /// checks the GPU and nothing else, adds nothing.
    public enum Fallback: Sendable, Equatable {
        /// Another backend (the CPU's) runs the same models: the device or its driver failed.
        case cpuBackend
    }

    /// What kind of failure this is.
    public let kind: Kind
    /// The full message: the layer, the model file and what to do.
    public let message: String
    /// A way around it a front end may add to the message.
    public let fallback: Fallback?
    /// Makes an error.
    public init(_ kind: Kind, _ message: String, fallback: Fallback? = nil) {
        self.kind = kind
        self.message = message
        self.fallback = fallback
    }
    public var description: String { message }
}

/// The index of the first NaN or infinite value, or nil when all are finite. One pass with a
/// vectorisable running sum (x − x is 0 for finite x and NaN otherwise), then a search only
/// when the sum is not finite.
public func firstNonFinite(_ values: UnsafeBufferPointer<Float>) -> Int? {
    var probe: Float = 0
    for v in values { probe += v - v }
    guard probe.isNaN else { return nil }
    return values.firstIndex { !$0.isFinite }
}
