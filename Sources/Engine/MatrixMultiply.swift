/// Dot products of every row of one matrix with every row of another: `C = A · Bᵀ` for
/// row-major `A` (m × k) and `B` (n × k), giving row-major `C` (m × n). The reference colorizer
/// compares feature maps with it (`ReferenceMatcher`); oneDNN's sgemm is the fast one, the plain
/// loops here the reference it is tested against.
public protocol MatrixMultiplier: Sendable {
    /// A short name ("reference", "onednn").
    var name: String { get }
    /// Writes `C = A · Bᵀ` (`m·n` values) for `A` of `m·k` and `B` of `n·k` values, row-major.
    func multiplyTransposed(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>, into c: UnsafeMutableBufferPointer<Float>,
                            m: Int, n: Int, k: Int) throws
}

extension MatrixMultiplier {
    /// Checks the buffer sizes every implementation relies on.
    public func checkSizes(_ a: Int, _ b: Int, _ c: Int, m: Int, n: Int, k: Int) {
        precondition(m >= 0 && n >= 0 && k >= 0 && a >= m * k && b >= n * k && c >= m * n,
                     "multiplyTransposed: A has \(a) values (needs \(m)×\(k)), B \(b) (needs \(n)×\(k)), C \(c) (needs \(m)×\(n))")
    }
}

/// The plain loops: one dot product per output value, in fp32, summed in order.
public struct ReferenceMatrixMultiplier: MatrixMultiplier {
    public var name: String { "reference" }

    /// Makes the multiplier.
    public init() {}

    public func multiplyTransposed(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>, into c: UnsafeMutableBufferPointer<Float>,
                                   m: Int, n: Int, k: Int) {
        checkSizes(a.count, b.count, c.count, m: m, n: n, k: k)
        for i in 0..<m {
            for j in 0..<n {
                var s: Float = 0
                for p in 0..<k { s += a[i * k + p] * b[j * k + p] }
                c[i * n + j] = s
            }
        }
    }
}
