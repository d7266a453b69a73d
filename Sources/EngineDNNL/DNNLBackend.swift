import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// The fast CPU backend on oneDNN (C API 2.6). Convolutions, transposed convolutions, fully
/// connected layers, pooling, element-wise and binary operations run as oneDNN primitives in
/// the blocked layouts oneDNN prefers; activations are fused as post-ops. Operations oneDNN
/// lacks (pixel shuffle, bicubic resize, padding, the fused upscaler tail) run as loops on
/// NCHW, with reorders inserted only where layouts change. Everything is created once per
/// input shape in `prepare`: weights reordered, primitives built, buffers allocated. A run
/// allocates nothing. oneDNN's OpenMP parallel regions and the Swift loops use `threads`
/// (the run's `--threads`; all cores by default), set on the calling thread each time a
/// graph is prepared or run (`OpenMPThreads`).
public final class DNNLBackend: InferenceBackend, @unchecked Sendable {
    public var name: String { "onednn" }
    let engine: dnnl_engine_t
    let stream: dnnl_stream_t
    /// The number format convolutions compute in.
    public let precision: ComputePrecision
    /// How many threads its primitives (OpenMP) and loops use: the run's `--threads`.
    public let threads: Int
    /// The one block every graph prepared here keeps its activations in.
    let arena = ActivationArena()
    /// The input scales of int8 layers (precision `.int8`; layers it does not name run fp32).
    public let calibration: Int8Calibration?
    /// Records each convolution's input range as graphs run (fp32 calibration runs).
    let observer: Int8Observer?
    /// How many runs of int8 graphs clipped and were run again in fp32 (`Int8Tuning.maxClipped`).
    public var int8Fallbacks: Int { fallbacks.load(ordering: .relaxed) }
    let fallbacks = Atomic<Int>(0)
    /// How many of those went straight to fp32 without trying int8 (`ClipHistory`).
    public var int8Skips: Int { skips.load(ordering: .relaxed) }
    let skips = Atomic<Int>(0)
    /// Bumped by `beginPicture`: each prepared graph's clip history starts afresh with a picture.
    let picture = Atomic<Int>(0)

    /// Marks the start of a picture: whether int8 is tried for a tile then depends on that
    /// picture's earlier tiles alone, so a frame comes out the same whatever ran before it
    /// (a segment resumed or run on another worker, a batch in another order).
    public func beginPicture() {
        picture.add(1, ordering: .relaxed)
    }

    /// Whether this CPU runs oneDNN's bf16 convolutions natively (AVX-512 BF16 or AMX);
    /// without, oneDNN would emulate them far slower than fp32.
    public static var cpuHasBF16: Bool {
        let isa = dnnl_get_effective_cpu_isa().rawValue
        return isa & dnnl_cpu_isa_avx512_core_bf16.rawValue == dnnl_cpu_isa_avx512_core_bf16.rawValue
    }

    /// Whether this CPU has AMX tiles for bf16 (Sapphire Rapids and later), where oneDNN's bf16
    /// convolutions run several times faster than its fp32 ones.
    public static var cpuHasAMX: Bool {
        let isa = dnnl_get_effective_cpu_isa().rawValue
        return isa & dnnl_cpu_isa_avx512_core_amx.rawValue == dnnl_cpu_isa_avx512_core_amx.rawValue
    }

    /// Whether this CPU has AVX-512 VNNI (or AMX) for oneDNN's int8 convolutions; without,
    /// they run on older instructions at little gain over fp32.
    public static var cpuHasVNNI: Bool {
        let isa = dnnl_get_effective_cpu_isa().rawValue
        return isa & dnnl_cpu_isa_avx512_core_vnni.rawValue == dnnl_cpu_isa_avx512_core_vnni.rawValue
    }

    /// Creates the CPU engine and its stream, computing in `precision` (the run's
    /// `--precision` as its caller resolved it; fp32 unless given).
    /// - Parameters:
    ///   - calibration: the int8 input ranges (`.int8` runs in fp32 without one).
    ///   - observer: records every convolution's input range as graphs run (for calibration;
    ///     use with fp32).
    ///   - threads: how many threads its primitives and loops use (at least 1; default all
    ///     cores).
    public init(precision: ComputePrecision = .fp32, calibration: Int8Calibration? = nil, observer: Int8Observer? = nil,
                threads: Int = ComputeThreads.allCores) throws {
        self.threads = max(1, threads)
        // int8 without a calibration (a model nothing calibrated: the colorizer) is plain fp32.
        self.precision = precision == .int8 && calibration == nil ? .fp32 : precision
        self.calibration = precision == .int8 ? calibration : nil
        self.observer = observer
        var e: dnnl_engine_t?
        try dnnlCheck(dnnl_engine_create(&e, dnnl_cpu, 0), "create the oneDNN CPU engine")
        engine = e!
        var s: dnnl_stream_t?
        try dnnlCheck(dnnl_stream_create(&s, engine, dnnl_stream_default_flags.rawValue), "create a oneDNN stream")
        stream = s!
    }

    deinit {
        dnnl_stream_destroy(stream)
        dnnl_engine_destroy(engine)
    }

    /// Every operation but the fused upscaler tail with a nearest resize (its one-pass kernel
    /// does bilinear and bicubic; the upsample-detail pass leaves nearest tails unfused here).
    public func supports(_ op: Engine.Operation) -> Bool {
        switch op {
        case .upsampleDetail(let mode, _, let factor):
            return UpsampleDetail.supports(mode, factor: factor)
        case .convolution, .deconvolution, .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle,
             .resize, .pad, .crop, .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .fullyConnected,
             .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul, .external:
            return true
        }
    }

    public func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph {
        try DNNLPrepared(backend: self, graph: graph.specialized(for: inputShape), input: inputShape, precision: precision)
    }
}

func dnnlCheck(_ status: dnnl_status_t, _ what: @autoclosure () -> String) throws {
    if status != dnnl_success {
        throw EngineError(.backendFailure, "oneDNN could not \(what()) (status \(status.rawValue)).")
    }
}

/// One oneDNN memory object with its descriptor; frees it when released.
final class DNNLMemory {
    let memory: dnnl_memory_t
    var md: dnnl_memory_desc_t
    /// Whether the layout is plain NCHW (so Swift loops can read it).
    let isPlain: Bool

    init(md: dnnl_memory_desc_t, engine: dnnl_engine_t, isPlain: Bool, handle: UnsafeMutableRawPointer? = nil, unbacked: Bool = false) throws {
        var m: dnnl_memory_t?
        var d = md
        try dnnlCheck(dnnl_memory_create(&m, &d, engine, unbacked ? nil : (handle ?? vivify_dnnl_memory_allocate())), "allocate a buffer")
        memory = m!
        self.md = md
        self.isPlain = isPlain
    }

    deinit { dnnl_memory_destroy(memory) }

    var pointer: UnsafeMutablePointer<Float> {
        var p: UnsafeMutableRawPointer?
        dnnl_memory_get_data_handle(memory, &p)
        return p!.assumingMemoryBound(to: Float.self)
    }

    func sameLayout(as other: dnnl_memory_desc_t) -> Bool { md.isEqual(to: other) }
}

extension dnnl_memory_desc_t {
    func isEqual(to other: dnnl_memory_desc_t) -> Bool {
        var a = self, b = other
        return dnnl_memory_desc_equal(&a, &b) != 0
    }
}

/// A oneDNN primitive with its argument list, executed as one step.
final class DNNLStep {
    let primitive: dnnl_primitive_t
    var args: [dnnl_exec_arg_t]
    let keep: [AnyObject]

    /// Primitives are created with user-managed scratchpads, given by `planner` (oneDNN's own
    /// is thread-local and sized on the creating thread, so a graph prepared on one thread and
    /// run on another, a pipeline stage, would read past it).
    init(pd: dnnl_primitive_desc_t, args: [(Int32, DNNLMemory)], keep: [AnyObject] = [], planner: ActivationPlanner? = nil,
         engine: dnnl_engine_t? = nil) throws {
        var p: dnnl_primitive_t?
        try dnnlCheck(dnnl_primitive_create(&p, pd), "create a primitive")
        primitive = p!
        var all = args
        if let planner, let engine, let md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0) {
            var d = md.pointee
            if dnnl_memory_desc_get_size(&d) > 0 {
                all.append((DNNL_ARG_SCRATCHPAD, try planner.make(md: d, engine: engine, isPlain: false)))
            }
        }
        self.args = all.map { dnnl_exec_arg_t(arg: $0.0, memory: $0.1.memory) }
        self.keep = all.map { $0.1 } + keep
    }

    deinit { dnnl_primitive_destroy(primitive) }

    func execute(_ stream: dnnl_stream_t) throws {
        let n = Int32(args.count)
        let status = args.withUnsafeBufferPointer { dnnl_primitive_execute(primitive, stream, n, $0.baseAddress) }
        try dnnlCheck(status, "execute a primitive")
    }
}

/// Owns an attribute object with post-ops for fused activations.
final class DNNLAttr {
    var attr: dnnl_primitive_attr_t?
    init(activation: Activation) throws {
        try dnnlCheck(dnnl_primitive_attr_create(&attr), "create attributes")
        try dnnlCheck(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "set the scratchpad mode")
        guard let (alg, alpha, beta) = eltwiseAlgorithm(activation) else { return }
        var po: dnnl_post_ops_t?
        try dnnlCheck(dnnl_post_ops_create(&po), "create post-ops")
        defer { dnnl_post_ops_destroy(po) }
        try dnnlCheck(dnnl_post_ops_append_eltwise(po, 1, alg, alpha, beta), "add an activation post-op")
        try dnnlCheck(dnnl_primitive_attr_set_post_ops(attr, po), "set post-ops")
    }
    deinit { dnnl_primitive_attr_destroy(attr) }
}

/// oneDNN's eltwise algorithm for an activation (nil for identity and PReLU).
func eltwiseAlgorithm(_ a: Activation) -> (dnnl_alg_kind_t, Float, Float)? {
    switch a {
    case .identity, .prelu: return nil
    case .relu: return (dnnl_eltwise_relu, 0, 0)
    case .leakyRelu(let s): return (dnnl_eltwise_relu, s, 0)
    case .silu: return (dnnl_eltwise_swish, 1, 0)
    case .sigmoid: return (dnnl_eltwise_logistic, 0, 0)
    case .tanh: return (dnnl_eltwise_tanh, 0, 0)
    case .clip(let lo, let hi): return (dnnl_eltwise_clip, lo, hi)
    case .elu(let alpha): return (dnnl_eltwise_elu, alpha, 0)
    case .sqrt: return (dnnl_eltwise_sqrt, 0, 0)
    case .pow(let e): return (dnnl_eltwise_pow, 1, e)
    }
}

