import Compute

/// The plain Swift backend: simple loops, obviously correct, the yardstick for every fast path.
public struct ReferenceBackend: InferenceBackend {
    public var name: String { "reference" }
    /// Whether `prepare` runs the graph passes (the upsample-detail fusion) first, as the
    /// oneDNN backend does; without them it runs the graph exactly as given, the yardstick for
    /// the passes themselves.
    public var runsPasses: Bool
    /// How many threads its convolutions split their rows over (the run's `--threads`).
    public var threads: Int

    /// Makes the backend; `threads` defaults to all cores.
    public init(runsPasses: Bool = true, threads: Int = ComputeThreads.allCores) {
        self.runsPasses = runsPasses
        self.threads = max(1, threads)
    }

    /// Every operation: the reference runs the whole IR.
    public func supports(_ op: Operation) -> Bool {
        switch op {
        case .convolution, .deconvolution, .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle,
             .resize, .pad, .crop, .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .fullyConnected,
             .upsampleDetail, .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul, .external:
            return true
        }
    }

    public func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph {
        let specialized = try graph.specialized(for: inputShape)
        let graph = runsPasses ? try specialized.fusingUpsampleDetailTails(input: inputShape, where: supports) : specialized
        try checkSupport(graph)
        return try ReferencePrepared(graph: graph, input: inputShape, threads: threads)
    }
}

final class ReferencePrepared: PreparedGraph {
    let graph: Graph
    let shapes: [Shape]
    var buffers: [[Float]]
    let inputShape: Shape
    let outputShape: Shape
    let threads: Int

    init(graph: Graph, input: Shape, threads: Int) throws {
        self.graph = graph
        self.threads = threads
        let inferred = try graph.inferShapes(input: input)
        shapes = inferred.map { $0 ?? Shape(c: 0, h: 0, w: 0) }
        buffers = shapes.map { [Float](repeating: 0, count: $0.count) }
        inputShape = input
        guard let out = inferred[graph.output] else { throw EngineError(.invalidGraph, "\(graph.source): the output '\(graph.valueNames[graph.output])' is never produced.") }
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
        // Each input's pointer is only used inside its own `withUnsafeBufferPointer`: the
        // calls nest, one per input, and the kernel runs in the innermost.
        try withInputs(node.inputs[...], []) { inputs in
            try Kernels.execute(node.op, inputs, node.inputs.map { shapes[$0] }, y, shapes[node.output], threads: threads)
        }
    }

    private func withInputs(_ ids: ArraySlice<Int>, _ bound: [UnsafeBufferPointer<Float>],
                            _ body: ([UnsafeBufferPointer<Float>]) throws -> Void) rethrows {
        guard let first = ids.first else { return try body(bound) }
        try buffers[first].withUnsafeBufferPointer { p in try withInputs(ids.dropFirst(), bound + [p], body) }
    }
}
