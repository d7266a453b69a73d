import Engine
import EngineDNNL
import XCTest

/// oneDNN's sgemm against the plain loops on the shapes the reference matcher uses (and odd
/// ones), same seeded input: within fp32 summation-order tolerance.
final class MatrixMultiplyTests: XCTestCase {
    func testOneDNNMatchesTheReferenceLoops() throws {
        var seed: UInt64 = 0x9E3779B97F4A7C15
        func next() -> Float {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Float(Int64(bitPattern: seed >> 11) % 2000) / 1000 - 1
        }
        for (m, n, k) in [(784, 784, 32), (196, 196, 96), (49, 49, 320), (7, 3, 5), (1, 1, 1), (5, 0, 4), (3, 2, 0)] {
            let a = (0..<(m * k)).map { _ in next() }, b = (0..<(n * k)).map { _ in next() }
            var ref = [Float](repeating: .nan, count: m * n), fast = [Float](repeating: .nan, count: m * n)
            try a.withUnsafeBufferPointer { pa in
                try b.withUnsafeBufferPointer { pb in
                    try ref.withUnsafeMutableBufferPointer { try ReferenceMatrixMultiplier().multiplyTransposed(pa, pb, into: $0, m: m, n: n, k: k) }
                    try fast.withUnsafeMutableBufferPointer { try DNNLMatrixMultiplier().multiplyTransposed(pa, pb, into: $0, m: m, n: n, k: k) }
                }
            }
            var worst: Float = 0
            for i in 0..<(m * n) { worst = max(worst, abs(ref[i] - fast[i])) }
            XCTAssertLessThanOrEqual(worst, 1e-4 * Float(max(k, 1)), "\(m)×\(n)×\(k)")
            if m * n > 0 && k > 0 {
                // A value checked by hand: row 0 · row 0.
                var dot: Float = 0
                for p in 0..<k { dot += a[p] * b[p] }
                XCTAssertEqual(fast[0], dot, accuracy: 1e-4 * Float(k))
            }
            if k == 0 { XCTAssertTrue(fast.allSatisfy { $0 == 0 }, "empty sums are 0") }
        }
    }
}
