import Engine
import EngineDNNL
import XCTest

/// A layer whose bias or PReLU slopes do not match its output channels (an ONNX Conv with a
/// 2-value bias for 4 outputs; issue 33) is refused when a graph is prepared, on every
/// backend, instead of being read past its end.
final class ParameterCountTests: XCTestCase {
    func graph(bias: [Float], activation: Activation = .identity, transposed: Bool = false) -> Graph {
        let p = ConvolutionParameters(outChannels: 4, inChannels: 3, kernelH: 3, kernelW: 3, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1,
                                      weights: [Float](repeating: 0.1, count: 4 * 3 * 9), bias: bias, activation: activation)
        return Graph(valueNames: ["in", "out"], nodes: [Node(name: "conv", op: transposed ? .deconvolution(p) : .convolution(p), inputs: [0], output: 1)],
                     input: 0, output: 1, source: "test.onnx")
    }

    func testMismatchedBiasAndSlopesAreRefusedOnEveryBackend() throws {
        let backends: [InferenceBackend] = [ReferenceBackend(), try DNNLBackend()]
        let input = Shape(c: 3, h: 8, w: 8)
        for backend in backends {
            for transposed in [false, true] {
                XCTAssertNoThrow(try backend.prepare(graph(bias: [1, 2, 3, 4], transposed: transposed), input: input), backend.name)
                XCTAssertNoThrow(try backend.prepare(graph(bias: [], transposed: transposed), input: input), backend.name)
                for bad in [graph(bias: [1, 2], transposed: transposed), graph(bias: [Float](repeating: 1, count: 9), transposed: transposed),
                            graph(bias: [], activation: .prelu(slopes: [0.1, 0.2]), transposed: transposed)] {
                    XCTAssertThrowsError(try backend.prepare(bad, input: input), "\(backend.name)") { error in
                        XCTAssertTrue("\(error)".contains("conv"), "names the layer: \(error)")
                    }
                }
            }
        }
    }
}

/// An upscaler whose output has fewer (or more) channels than its input (a 1-channel output
/// for RGB pictures; issue 33) is refused by the tiler before a tile is copied, on every
/// backend, instead of being read past its end (a crash, or a different picture each run).
final class TileChannelTests: XCTestCase {
    func testOutputChannelsMustMatchTheInput() throws {
        for out in [1, 3, 6] {
            let p = ConvolutionParameters(outChannels: out, inChannels: 3, kernelH: 3, kernelW: 3, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1,
                                          weights: [Float](repeating: 0.05, count: out * 3 * 9))
            let graph = Graph(valueNames: ["in", "out"], nodes: [Node(name: "conv", op: .convolution(p), inputs: [0], output: 1)],
                              input: 0, output: 1, source: "grey-out.param")
            for backend in [ReferenceBackend(), try DNNLBackend()] as [InferenceBackend] {
                let runner = try TiledRunner(graph: graph, spec: TilingSpec(scale: 1, padding: 2, border: .replicate), backend: backend, tileSize: 16)
                let input = [Float](repeating: 0.5, count: 3 * 20 * 24)
                var output = [Float](repeating: -1, count: 3 * 20 * 24)
                let run = {
                    try input.withUnsafeBufferPointer { i in
                        try output.withUnsafeMutableBufferPointer { try runner.run(input: i, channels: 3, height: 20, width: 24, output: $0) }
                    }
                }
                if out == 3 {
                    XCTAssertNoThrow(try run(), backend.name)
                    XCTAssertEqual(output[0], 0.05 * 0.5 * 27, accuracy: 1e-4, "every value written")
                } else {
                    XCTAssertThrowsError(try run(), "\(backend.name), \(out) output channels") { XCTAssertTrue("\($0)".contains("channels"), "\($0)") }
                }
            }
        }
    }
}
