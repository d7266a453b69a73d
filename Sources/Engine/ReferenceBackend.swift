/// The plain Swift backend: simple loops, obviously correct, the yardstick for every fast path.
public struct ReferenceBackend: InferenceBackend {
    public var name: String { "reference" }

    /// Makes the backend.
    public init() {}

    public func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph {
        try ReferencePrepared(graph: graph, input: inputShape)
    }
}

final class ReferencePrepared: PreparedGraph {
    let graph: Graph
    let shapes: [Shape]
    var buffers: [[Float]]
    let inputShape: Shape
    let outputShape: Shape

    init(graph: Graph, input: Shape) throws {
        self.graph = graph
        let inferred = try graph.inferShapes(input: input)
        shapes = inferred.map { $0 ?? Shape(c: 0, h: 0, w: 0) }
        buffers = shapes.map { [Float](repeating: 0, count: $0.count) }
        inputShape = input
        guard let out = inferred[graph.output] else { throw EngineError("\(graph.source): the output '\(graph.valueNames[graph.output])' is never produced.") }
        outputShape = out
    }

    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        buffers[graph.input].withUnsafeMutableBufferPointer { dst in _ = dst.initialize(from: input) }
        for node in graph.nodes {
            var out = buffers[node.output]
            buffers[node.output] = []
            try out.withUnsafeMutableBufferPointer { y in
                try execute(node, y)
            }
            buffers[node.output] = out
        }
        buffers[graph.output].withUnsafeBufferPointer { src in _ = output.initialize(from: src) }
    }

    private func execute(_ node: Node, _ y: UnsafeMutableBufferPointer<Float>) throws {
        let s0 = shapes[node.inputs[0]]
        let o = shapes[node.output]
        try buffers[node.inputs[0]].withUnsafeBufferPointer { x in
            switch node.op {
            case .convolution(let p): Kernels.convolution(p, x, s0, y, o)
            case .deconvolution(let p): Kernels.deconvolution(p, x, s0, y, o)
            case .activation(let a): Kernels.activation(a, x, s0, y)
            case .binary(let k, let coefficients):
                buffers[node.inputs[1]].withUnsafeBufferPointer { b in
                    Kernels.binary(k, coefficients, x, s0, b, shapes[node.inputs[1]], y, o)
                }
            case .scalar(let k, let v, let first): Kernels.scalar(k, v, first, x, y)
            case .channelAffine(let scale, let bias): Kernels.channelAffine(scale, bias, x, s0, y)
            case .softmaxChannels: Kernels.softmaxChannels(x, s0, y)
            case .pixelShuffle(let r, let order): Kernels.pixelShuffle(r, order, x, s0, y, o)
            case .resize(let mode, _, _, _, _, let align): Kernels.resize(mode, align, x, s0, y, o)
            case .pad(let t, let l, _, _, let mode): Kernels.pad(t, l, mode, x, s0, y, o)
            case .crop(let t, let l, _, _): Kernels.window(t, l, 0, x, s0, y, o)
            case .cropLike(let t, let l): Kernels.window(t, l, 0, x, s0, y, o)
            case .sliceChannels(let start, _): Kernels.window(0, 0, start, x, s0, y, o)
            case .concatChannels:
                var offset = 0
                for i in node.inputs {
                    buffers[i].withUnsafeBufferPointer { src in
                        for k in 0..<src.count { y[offset + k] = src[k] }
                        offset += src.count
                    }
                }
            case .globalAveragePool: Kernels.globalAveragePool(x, s0, y)
            case .fullyConnected(let out, let w, let b, let a): Kernels.fullyConnected(out, w, b, a, x, y)
            }
        }
    }
}
