/// The bounds every model importer checks before it allocates or computes with a value read
/// from a model file. A file beyond one is refused with a `ModelFormatError` naming the value;
/// no importer converts, multiplies or divides a file's number before checking it here.
///
/// | limit | value | why |
/// |---|---|---|
/// | `maxTensorElements` | 2^28 (1 GiB of fp32) | the largest weight of a real model is under 2^24 |
/// | `maxDimension` | 65,536 | one axis of a weight or declared input |
/// | `maxChannels` | 65,536 | conv outputs/inputs (real models: ≤ 2,048) |
/// | `maxKernel` | 64 | kernel height/width (real models: ≤ 11) |
/// | `maxStride`, `maxDilation` | 64 | |
/// | `maxPad` | 1,024 | |
/// | `maxScale` | 16 | an upscaler's factor (real models: 1–8) |
/// | `maxLayers` | 100,000 | layers or ops in one graph |
/// | `maxNesting` | 64 | protobuf message nesting |
public enum ModelLimits {
    public static let maxTensorElements = 1 << 28
    public static let maxDimension = 65_536
    public static let maxChannels = 65_536
    public static let maxKernel = 64
    public static let maxStride = 64
    public static let maxDilation = 64
    public static let maxPad = 1_024
    public static let maxScale = 16
    public static let maxLayers = 100_000
    public static let maxNesting = 64

    /// The element count of `dims`, or nil when a dimension is negative, the product overflows
    /// or it exceeds `maxTensorElements`.
    public static func elementCount<S: Sequence>(_ dims: S) -> Int? where S.Element == Int {
        var n = 1
        for d in dims {
            guard d >= 0 else { return nil }
            let (p, overflow) = n.multipliedReportingOverflow(by: d)
            guard !overflow, p <= maxTensorElements else { return nil }
            n = p
        }
        return n
    }

    /// `value` as an `Int` when it is finite and within ±2^31 (ncnn and Core ML store integer
    /// parameters as floats in places), else nil.
    public static func integer(_ value: Float) -> Int? {
        guard value.isFinite, abs(value) < 2_147_483_648 else { return nil }
        return Int(value)
    }

    /// `value` as an `Int` when it fits in 32 bits signed (protobuf int64 fields that hold sizes).
    public static func integer(_ value: Int64) -> Int? {
        guard value >= Int64(Int32.min), value <= Int64(Int32.max) else { return nil }
        return Int(value)
    }
}
