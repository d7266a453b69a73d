import CDNNL
import Compute
public import Engine

/// `MatrixMultiplier` on oneDNN's sgemm (threaded, AVX-512 where the CPU has it).
public struct DNNLMatrixMultiplier: MatrixMultiplier {
    public var name: String { "onednn" }
    /// How many OpenMP threads sgemm uses (the run's `--threads`).
    public let threads: Int

    /// Makes the multiplier; `threads` defaults to all cores.
    public init(threads: Int = ComputeThreads.allCores) {
        self.threads = max(1, threads)
    }

    public func multiplyTransposed(_ a: UnsafeBufferPointer<Float>, _ b: UnsafeBufferPointer<Float>, into c: UnsafeMutableBufferPointer<Float>,
                                   m: Int, n: Int, k: Int) throws {
        checkSizes(a.count, b.count, c.count, m: m, n: n, k: k)
        guard m > 0, n > 0 else { return }
        guard k > 0 else {
            for i in 0..<(m * n) { c[i] = 0 }
            return
        }
        // sgemm's OpenMP regions take the calling thread's count: set ours on it.
        OpenMPThreads.apply(threads)
        // Row-major C (m×n) = A (m×k) · Bᵀ, B stored n×k: transpose flag on B, leading dimension k.
        let status = dnnl_sgemm(CChar(UInt8(ascii: "N")), CChar(UInt8(ascii: "T")), Int64(m), Int64(n), Int64(k), 1,
                                a.baseAddress, Int64(k), b.baseAddress, Int64(k), 0, c.baseAddress, Int64(n))
        try dnnlCheck(status, "run sgemm (\(m)×\(k) · (\(n)×\(k))ᵀ)")
    }
}
