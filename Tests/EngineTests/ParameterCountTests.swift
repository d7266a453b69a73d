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
