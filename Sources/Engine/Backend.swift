/// Something that can run graphs: the plain Swift reference or the oneDNN backend.
public protocol InferenceBackend: Sendable {
    /// A short name ("reference", "onednn").
    var name: String { get }
    /// Whether this backend can run `op` (with these parameters). Preparing a graph with an
    /// operation it cannot run fails naming the layer (`checkSupport`); graph passes ask it
    /// before emitting an operation.
    func supports(_ op: Operation) -> Bool
    /// Prepares `graph` for inputs of `inputShape` (weights laid out, buffers allocated,
    /// primitives created). Errors name the layer the backend cannot run.
    func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph
    /// The largest tile side automatic tiling picks on this backend unless `--max-memory` is
    /// given (`TiledRunner.automaticTileCap`): CPU backends `TiledRunner.preferredTile`, a GPU
    /// larger tiles.
    var preferredTile: Int { get }
    /// The memory automatic tiles may take unless `--max-memory` is given: on CPU backends
    /// `TiledRunner.standardMemoryBudget`, on a GPU a share of its own memory.
    var tileMemoryBudget: Int { get }
    /// The most bytes one value may take on this backend (automatic tiles keep their largest
    /// tensor, as fp32, within it): `ModelLimits.maxTensorElements` floats on the CPU, one
    /// descriptor's range on a GPU.
    var largestValueBytes: Int { get }
}

extension InferenceBackend {
    /// `TiledRunner.preferredTile`, measured on the CPU.
    public var preferredTile: Int { TiledRunner.preferredTile }
    /// `TiledRunner.standardMemoryBudget`: fits a laptop.
    public var tileMemoryBudget: Int { TiledRunner.standardMemoryBudget }
    /// `ModelLimits.maxTensorElements` floats.
    public var largestValueBytes: Int { ModelLimits.maxTensorElements * 4 }

    /// Throws naming the first layer of `graph` this backend cannot run, and the backend that can.
    public func checkSupport(_ graph: Graph) throws {
        for node in graph.nodes where !supports(node.op) {
            throw EngineError(.unsupported, "Layer '\(node.name)' (\(node.op.kindName)) in \(graph.source): the \(name) backend cannot run this operation. "
                              + "Run the model on the reference backend (--backend reference).")
        }
    }
}

/// A graph ready to run on one input shape. Not thread-safe: one run at a time.
public protocol PreparedGraph: AnyObject {
    /// The input shape it was prepared for.
    var inputShape: Shape { get }
    /// The shape of its result.
    var outputShape: Shape { get }
    /// Runs the graph on `input` (`inputShape.count` values, CHW) and writes the result into
    /// `output` (`outputShape.count` values).
    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws
}

extension PreparedGraph {
    /// Runs on a tensor and returns a new tensor (allocates; for tests and one-off use).
    public func run(_ input: Tensor) throws -> Tensor {
        precondition(input.shape == inputShape, "prepared for \(inputShape), got \(input.shape)")
        var out = Tensor(shape: outputShape)
        try input.data.withUnsafeBufferPointer { i in
            try out.data.withUnsafeMutableBufferPointer { o in try run(input: i, output: o) }
        }
        return out
    }
}

/// The number format a backend computes convolutions in. The reference backend is always fp32.
public enum ComputePrecision: String, Sendable, CaseIterable {
    /// 32-bit floats everywhere.
    case fp32
    /// bfloat16 convolution inputs and weights, fp32 accumulation (AVX-512 BF16 or AMX).
    case bf16
    /// Post-training int8: s8 convolution inputs (calibrated scales) and s8 weights (a scale
    /// per output channel), s32 accumulation (AVX-512 VNNI or AMX); the first layer stays fp32.
    case int8
}
