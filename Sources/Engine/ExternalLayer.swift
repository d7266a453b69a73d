/// A layer the engine does not compute itself: a compiled Core ML custom layer from a shared
/// library the user named (`--custom-layers`), the Linux counterpart of `MLCustomLayer`. Its
/// kernel answers the output shape for an input shape and evaluates on plain CHW floats; both
/// answers are checked by whoever wraps the library (sizes, NaN), never trusted here either:
/// the engine checks the shape against the limits and runs it on the plain loops' path of
/// every backend (oneDNN and Vulkan as a host step).
public protocol ExternalKernel: AnyObject, Sendable {
    /// What it is, for messages: "class 'ResCropBlockLambda' of 'libstyle.so'".
    var label: String { get }
    /// How the kernel treats positions, when it says (see `ExternalGeometry`): then the graph
    /// places values through it and runs in tiles; nil (the default): it may look anywhere,
    /// and a graph with it runs on whole frames.
    var geometry: ExternalGeometry? { get }
    /// The output shape for an input of `input`.
    func outputShape(for input: Shape) throws -> Shape
    /// Computes the output `y` (shape `o`, from `outputShape`) from `x` (shape `s`).
    func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws
}

extension ExternalKernel {
    /// No geometry: the kernel may look anywhere in its input.
    public var geometry: ExternalGeometry? { nil }
}

/// How an external kernel treats positions, the same along rows and columns, so that a graph
/// holding it can be run in tiles: it treats every position alike (translation-equivariant
/// away from its input's edges), spreads each input position over `scale` outputs per axis
/// (an integer upscaling, centred as a half-pixel resize or pixel shuffle is), then removes
/// `top`, `left`, `bottom`, `right` positions of that from each side (negative: adds them,
/// padding), and each output reads no input farther than `radius` input positions from its
/// own centre. So `x[:, 2:-2, 2:-2]` is `crop(2)` (scale 1, radius 0), `(x + 1) · 127.5` is
/// `pointwise`, a 3×3 "same" blur `radius 1`, a "valid" one `radius 1` and a crop of 1.
///
/// A crop is a crop of whatever tensor the layer is given: in a tile, the tile's outer
/// positions (its border, never kept); in the whole frame, the picture's. Placed like the
/// engine's own crop (the origin moves by `top`, `left`), the tiles' values line up with the
/// whole frame's, and at the picture's edge, where a tile's window stops too, they are the same.
public struct ExternalGeometry: Sendable, Equatable, CustomStringConvertible {
    /// Output positions per input position along each axis (1: the same resolution).
    public var scale: Int
    /// Positions removed after scaling from each side (negative: added).
    public var top: Int, left: Int, bottom: Int, right: Int
    /// How far an output reads from its centre, in input positions (0: pointwise).
    public var radius: Int

    /// Makes a geometry.
    public init(scale: Int = 1, top: Int = 0, left: Int = 0, bottom: Int = 0, right: Int = 0, radius: Int = 0) {
        self.scale = scale
        self.top = top
        self.left = left
        self.bottom = bottom
        self.right = right
        self.radius = radius
    }

    /// Each output from its own input position alone.
    public static let pointwise = ExternalGeometry()

    /// `amount` positions removed from every side.
    public static func crop(_ amount: Int) -> ExternalGeometry {
        ExternalGeometry(top: amount, left: amount, bottom: amount, right: amount)
    }

    /// The output's height and width for an input of `height`×`width` (either may be ≤ 0:
    /// the input is too small).
    public func outputSize(height: Int, width: Int) -> (h: Int, w: Int) {
        (scale * height - top - bottom, scale * width - left - right)
    }

    /// Where the output lies along an axis whose input lies at `a`, removing `before`.
    func placed(_ a: AxisPlacement, before: Int) -> AxisPlacement {
        a.spread(factor: scale, centre: Double(scale - 1) / 2).shifted(by: -before)
    }

    /// For messages: "a crop of 2 from each side, pointwise".
    public var description: String {
        var parts: [String] = []
        if scale != 1 { parts.append("\(scale)× upscaling") }
        let sides = [top, left, bottom, right]
        if sides.allSatisfy({ $0 == top }), top != 0 {
            parts.append(top > 0 ? "a crop of \(top) from each side" : "a pad of \(-top) on each side")
        } else if sides.contains(where: { $0 != 0 }) {
            parts.append("a crop of top \(top), left \(left), bottom \(bottom), right \(right)")
        }
        parts.append(radius == 0 ? "pointwise" : "radius \(radius)")
        return parts.joined(separator: ", ")
    }
}

/// An external kernel as an operation's parameter: equal when it is the same kernel.
public struct ExternalLayer: Sendable, Equatable {
    /// The kernel.
    public let kernel: any ExternalKernel

    /// Wraps `kernel`.
    public init(_ kernel: any ExternalKernel) { self.kernel = kernel }

    public static func == (a: ExternalLayer, b: ExternalLayer) -> Bool { a.kernel === b.kernel }
}
