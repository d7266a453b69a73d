@testable import Engine
import XCTest

/// `Graph.peakActivationBytes`: what a whole-graph run (`vivify infer`) checks against its
/// memory budget before it allocates (issue 33: a 96 MiB `.npy` peaked at 8 GB).
final class PeakActivationTests: XCTestCase {
    /// A chain, where each value dies once the next layer has read it, and a skip connection
    /// that keeps an early value alive across two layers; sizes counted by hand.
    func testPeakFollowsLifetimes() throws {
        func conv(_ o: Int, _ i: Int) -> Engine.Operation {
            .convolution(ConvolutionParameters(outChannels: o, inChannels: i, kernelH: 1, kernelW: 1,
                                               weights: [Float](repeating: 0.1, count: o * i), bias: [Float](repeating: 0, count: o)))
        }
        let s = Shape(c: 1, h: 10, w: 10)   // 100 values: 400 bytes a channel
        let chain = Graph(valueNames: ["in", "a", "b", "out"], nodes: [
            Node(name: "a", op: conv(8, 1), inputs: [0], output: 1),
            Node(name: "b", op: conv(8, 8), inputs: [1], output: 2),
            Node(name: "out", op: conv(1, 8), inputs: [2], output: 3),
        ], input: 0, output: 3, source: "test:chain")
        // The input lives to the end (the caller's tensor); at step b: in + a + b.
        XCTAssertEqual(try chain.peakActivationBytes(input: s), 400 + 3200 + 3200)

        // A skip connection keeps `a` alive until the add: in + a + b + c at step c.
        let skip = Graph(valueNames: ["in", "a", "b", "c", "sum"], nodes: [
            Node(name: "a", op: conv(8, 1), inputs: [0], output: 1),
            Node(name: "b", op: conv(8, 8), inputs: [1], output: 2),
            Node(name: "c", op: conv(8, 8), inputs: [2], output: 3),
            Node(name: "sum", op: .binary(.add, coefficients: nil), inputs: [1, 3], output: 4),
        ], input: 0, output: 4, source: "test:skip")
        // At step c: in + a + b + c (b is read by c); at the sum: in + a + c + sum.
        XCTAssertEqual(try skip.peakActivationBytes(input: Shape(c: 1, h: 20, w: 10)), 2 * (400 + 3200 * 3))
    }
}
