import CDNNL
import Foundation

/// The machine's measured fp32 matrix-multiply throughput: oneDNN's sgemm on square matrices,
/// the yardstick for how well a model's convolutions use the CPU.
public enum GEMMPeak {
    /// Median GFLOP/s of `runs` sgemm calls of size `n`×`n`×`n` (after one warm-up).
    public static func measure(n: Int = 2048, runs: Int = 5) throws -> Double {
        var a = [Float](repeating: 0.5, count: n * n), b = [Float](repeating: 0.25, count: n * n)
        var c = [Float](repeating: 0, count: n * n)
        func once() throws -> Double {
            let start = DispatchTime.now().uptimeNanoseconds
            let status = a.withUnsafeMutableBufferPointer { pa in
                b.withUnsafeMutableBufferPointer { pb in
                    c.withUnsafeMutableBufferPointer { pc in
                        dnnl_sgemm(CChar(UInt8(ascii: "N")), CChar(UInt8(ascii: "N")), Int64(n), Int64(n), Int64(n), 1,
                                   pa.baseAddress, Int64(n), pb.baseAddress, Int64(n), 0, pc.baseAddress, Int64(n))
                    }
                }
            }
            try dnnlCheck(status, "run sgemm")
            return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        }
        _ = try once()
        let times = try (0..<runs).map { _ in try once() }.sorted()
        return 2 * Double(n * n * n) / times[times.count / 2] / 1e9
    }
}
