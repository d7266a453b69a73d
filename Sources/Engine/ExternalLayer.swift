/// A layer the engine does not compute itself: a compiled Core ML custom layer from a shared
/// library the user named (`--custom-layers`), the Linux counterpart of `MLCustomLayer`. Its
/// kernel answers the output shape for an input shape and evaluates on plain CHW floats; both
/// answers are checked by whoever wraps the library (sizes, NaN), never trusted here either:
/// the engine checks the shape against the limits and runs it on the plain loops' path of
/// every backend (oneDNN and Vulkan as a host step).
public protocol ExternalKernel: AnyObject, Sendable {
    /// What it is, for messages: "class 'ResCropBlockLambda' of 'libstyle.so'".
    var label: String { get }
    /// The output shape for an input of `input`.
    func outputShape(for input: Shape) throws -> Shape
    /// Computes the output `y` (shape `o`, from `outputShape`) from `x` (shape `s`).
    func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws
}

/// An external kernel as an operation's parameter: equal when it is the same kernel.
public struct ExternalLayer: Sendable, Equatable {
    /// The kernel.
    public let kernel: any ExternalKernel

    /// Wraps `kernel`.
    public init(_ kernel: any ExternalKernel) { self.kernel = kernel }

    public static func == (a: ExternalLayer, b: ExternalLayer) -> Bool { a.kernel === b.kernel }
}
