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
/// allocates nothing. oneDNN's OpenMP runtime uses all available cores.
public final class DNNLBackend: InferenceBackend, @unchecked Sendable {
    public var name: String { "onednn" }
    let engine: dnnl_engine_t
    let stream: dnnl_stream_t
    /// The number format convolutions compute in.
    public let precision: ComputePrecision
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

    /// The precision backends made without one compute in (`--precision`; fp32 unless set).
    public static var defaultPrecision: ComputePrecision {
        get { ComputePrecision.allCases[chosenPrecision.load(ordering: .relaxed)] }
        set { chosenPrecision.store(ComputePrecision.allCases.firstIndex(of: newValue)!, ordering: .relaxed) }
    }
    private static let chosenPrecision = Atomic<Int>(0)

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

    /// Creates the CPU engine and its stream; `precision` nil takes `defaultPrecision`.
    /// - Parameters:
    ///   - calibration: the int8 input ranges (`.int8` runs in fp32 without one).
    ///   - observer: records every convolution's input range as graphs run (for calibration;
    ///     use with fp32).
    public init(precision: ComputePrecision? = nil, calibration: Int8Calibration? = nil, observer: Int8Observer? = nil) throws {
        let precision = precision ?? Self.defaultPrecision
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
        case .upsampleDetail(let mode, _):
            return UpsampleDetail.supports(mode)
        case .convolution, .deconvolution, .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle,
             .resize, .pad, .crop, .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .fullyConnected,
             .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul:
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

final class DNNLPrepared: PreparedGraph {
    /// Winograd for eligible 3×3 layers (VIVIFY_WINOGRAD=0 turns it off, for comparisons).
    static let useWinograd: Bool = getenv("VIVIFY_WINOGRAD").map { String(cString: $0) != "0" } ?? true
    let backend: DNNLBackend
    let graph: Graph
    /// What the layers compute in: the backend's precision, or fp32 for an int8 graph's fallback.
    let precision: ComputePrecision
    /// The graph as given (before this backend's rewrites), for the fp32 fallback.
    private let sourceGraph: Graph
    /// The share of saturated u8 activations (sampled) in the worst int8 layer of the last run.
    private let clips = ClipMeter()
    /// The same graph and input in fp32, for runs whose int8 activations clipped (made on first
    /// need).
    private var fallback: DNNLPrepared?
    /// Whether this graph's recent int8 runs clipped (int8 only).
    private var clipHistory = ClipHistory()
    /// The picture (`DNNLBackend.beginPicture`) `clipHistory` is about.
    private var historyPicture = 0
    let shapes: [Shape]
    let inputShape: Shape
    let outputShape: Shape
    private var steps: [() throws -> Void] = []
    /// Values read as the detail of a fused upscaler tail (`UpsampleDetail`, Swift loops on NCHW).
    private var tailDetails: Set<Int> = []
    /// Which node each step belongs to (for VIVIFY_PROFILE).
    private var stepLabels: [String] = []
    /// VIVIFY_PROFILE=1 prints each step's time of every run on stderr.
    static let profile: Bool = getenv("VIVIFY_PROFILE").map { String(cString: $0) == "1" } ?? false
    private var current: [Int: DNNLMemory] = [:]
    private var plainCopies: [Int: DNNLMemory] = [:]
    private let inputMemory: DNNLMemory
    /// Where activations and scratchpads live (`ActivationArena`, shared by the backend's graphs).
    private let planner = ActivationPlanner()
    private var boundGeneration = 0
    private let plainAttr: DNNLAttr
    private var engine: dnnl_engine_t { backend.engine }
    private var stream: dnnl_stream_t { backend.stream }

    init(backend: DNNLBackend, graph: Graph, input: Shape, precision: ComputePrecision) throws {
        // Primitives are laid out for the thread count in force when they are made.
        OpenMPThreads.apply(ComputeThreads.count)
        self.backend = backend
        self.precision = precision
        sourceGraph = graph
        // Strided transposed convolutions run as sub-pixel convolutions (same result, faster).
        // Batch norms fold into the convolution before them, and activation layers join it.
        // Residual-upscaler tails (an add of a pixel shuffle and a ×2 resize) become one fused
        // operation.
        var graph = try graph.withFoldedChannelAffine().withFusedActivations().withSubpixelDeconvolutions()
            .fusingUpsampleDetailTails(input: input, where: backend.supports)
        if precision == .int8, let calibration = backend.calibration {
            (graph, int8Ranges) = equalizedForInt8(graph, calibration, alpha: Int8Tuning.alpha)
        }
        try backend.checkSupport(graph)
        self.graph = graph
        let inferred = try graph.inferShapes(input: input)
        shapes = inferred.map { $0 ?? Shape(c: 0, h: 0, w: 0) }
        inputShape = input
        guard let out = inferred[graph.output] else { throw EngineError(.invalidGraph, "\(graph.source): the output is never produced.") }
        outputShape = out
        inputMemory = try DNNLMemory(md: Self.plainMD(input), engine: backend.engine, isPlain: true)
        plainAttr = try DNNLAttr(activation: .identity)
        current[graph.input] = inputMemory
        plainCopies[graph.input] = inputMemory
        for node in graph.nodes {
            if case .upsampleDetail = node.op { tailDetails.insert(node.inputs[1]) }
        }
        for node in graph.nodes {
            do {
                try compile(node)
            } catch let e as EngineError {
                throw EngineError(e.kind, "Layer '\(node.name)' (\(node.op.kindName)) in \(graph.source): \(e.message)")
            }
            stepLabels += Array(repeating: "\(node.name) (\(node.op.kindName))", count: steps.count - stepLabels.count)
        }
        let result = try plain(graph.output)
        stepLabels += Array(repeating: "output", count: steps.count - stepLabels.count)
        planner.plan(steps: steps.count, keep: [result])
    }

    /// Bytes of activations and scratchpads this graph needs in the arena, and what they would
    /// take with a buffer each.
    var activationBytes: (planned: Int, separate: Int) { (planner.total, planner.unplannedTotal) }

    /// Appends a primitive step, recording the buffers it touches.
    private func append(_ step: DNNLStep) {
        planner.use(step.keep, atStep: steps.count)
        let stream = self.stream
        steps.append { try step.execute(stream) }
    }

    /// Appends a step of Swift loops touching `buffers`.
    private func appendLoop(_ buffers: [DNNLMemory], _ body: @escaping () throws -> Void) {
        planner.use(buffers, atStep: steps.count)
        steps.append(body)
    }

    /// A buffer for an intermediate value, placed in the arena by `planner`.
    private func activation(_ md: dnnl_memory_desc_t, isPlain: Bool) throws -> DNNLMemory {
        try planner.make(md: md, engine: engine, isPlain: isPlain)
    }

    private static func nanoseconds() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        // OpenMP's thread count is per calling thread: set it on whichever thread runs this.
        OpenMPThreads.apply(ComputeThreads.count)
        clips.worst = 0
        // Pictures unlike the calibration set (saturated synthetic colours, some busy photos
        // under Real-CUGAN) drive layers past their ranges; such a run stops at the first layer
        // that clips and is done in fp32 rather than returned clipped. When most recent runs of
        // this graph in the picture clipped, its next tiles go straight to fp32 for a while
        // (`ClipHistory`), so content that clips costs about what fp32 costs, not int8 and fp32
        // both.
        var clipped = false
        let picture = backend.picture.load(ordering: .relaxed)
        if picture != historyPicture {
            clipHistory = ClipHistory()
            historyPicture = picture
        }
        let tries = precision != .int8 || clipHistory.tryInt8()
        if tries {
            do {
                try backend.arena.withBlock(bytes: planner.total) { base, generation in
                    if generation != boundGeneration {
                        planner.bind(base: base)
                        boundGeneration = generation
                    }
                    try runSteps(input: input, output: output)
                }
            } catch is Int8Clipped {
                clipped = true
            }
            // (Under VIVIFY_INT8_CLIPS the checks measure the whole run instead of stopping it.)
            if precision == .int8, clips.worst > Int8Tuning.maxClipped { clipped = true }
            if Self.reportClips, precision == .int8 {
                let text = Array(String(format: "int8 clipped share %.6f\n", clips.worst).utf8)
                _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
            }
            if precision == .int8 { clipHistory.record(clipped: clipped) }
            if !clipped { return }
        }
        if fallback == nil {
            fallback = try DNNLPrepared(backend: backend, graph: sourceGraph, input: inputShape, precision: .fp32)
        }
        try fallback!.run(input: input, output: output)
        backend.fallbacks.add(1, ordering: .relaxed)
        if !tries { backend.skips.add(1, ordering: .relaxed) }
    }

    /// VIVIFY_INT8_CLIPS=1 prints each int8 run's worst clipped share on stderr (for tuning).
    static let reportClips: Bool = getenv("VIVIFY_INT8_CLIPS").map { String(cString: $0) == "1" } ?? false

    /// Counts the saturated bytes (255) of u8 value `m` into `clips` after each run of the
    /// step before: every eighth 64-byte line, enough to see a layer clip across a picture at
    /// an eighth of the reading.
    private func addClipCheck(_ m: DNNLMemory) {
        var md = m.md
        let bytes = dnnl_memory_desc_get_size(&md)
        let clips = self.clips
        appendLoop([m]) {
            clips.worst = max(clips.worst, ClipMeter.saturatedShare(UnsafeRawPointer(m.pointer), bytes: bytes))
            if clips.worst > Int8Tuning.maxClipped, !Self.reportClips { throw Int8Clipped() }
        }
    }

    private func runSteps(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        inputMemory.pointer.update(from: input.baseAddress!, count: inputShape.count)
        if Self.profile {
            var line = ""
            for (step, label) in zip(steps, stepLabels) {
                let start = Self.nanoseconds()
                try step()
                try dnnlCheck(dnnl_stream_wait(stream), "finish a step")
                let micro = (Self.nanoseconds() - start) / 1000
                line += "\(micro / 1000).\(String(micro % 1000 + 1000).dropFirst()) ms  \(label)\n"
            }
            let text = Array((line + "--\n").utf8)
            _ = text.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
        } else {
            for step in steps { try step() }
        }
        try dnnlCheck(dnnl_stream_wait(stream), "finish the run")
        let result = plainCopies[graph.output]!
        output.baseAddress!.update(from: result.pointer, count: outputShape.count)
    }

    // MARK: descriptors

    static func plainMD(_ s: Shape) -> dnnl_memory_desc_t {
        var md = dnnl_memory_desc_t()
        var dims: [Int64] = [1, Int64(s.c), Int64(s.h), Int64(s.w)]
        _ = dnnl_memory_desc_init_by_tag(&md, 4, &dims, dnnl_f32, dnnl_nchw)
        return md
    }

    static func anyMD(_ dims: [Int64], _ type: dnnl_data_type_t = dnnl_f32) -> dnnl_memory_desc_t {
        var md = dnnl_memory_desc_t()
        var d = dims
        _ = dnnl_memory_desc_init_by_tag(&md, Int32(dims.count), &d, type, dnnl_format_tag_any)
        return md
    }

    static func taggedMD(_ dims: [Int64], _ tag: dnnl_format_tag_t, _ type: dnnl_data_type_t = dnnl_f32) -> dnnl_memory_desc_t {
        var md = dnnl_memory_desc_t()
        var d = dims
        _ = dnnl_memory_desc_init_by_tag(&md, Int32(dims.count), &d, type, tag)
        return md
    }

    private func query(_ pd: dnnl_primitive_desc_t, _ what: dnnl_query_t) -> dnnl_memory_desc_t {
        dnnl_primitive_desc_query_md(pd, what, 0)!.pointee
    }

    // MARK: layouts

    /// A memory with `md` holding `value`, reordering once per run when the layout differs.
    private func value(_ v: Int, as md: dnnl_memory_desc_t) throws -> DNNLMemory {
        let mem = try materialized(v)
        if mem.sameLayout(as: md) { return mem }
        if let p = plainCopies[v], p.sameLayout(as: md) { return p }
        let dst = try activation(md, isPlain: false)
        try addReorder(from: mem, to: dst)
        return dst
    }

    /// Values stored with a border of garbage pixels on every side (see `convolution`).
    private var margins: [Int: Int] = [:]

    /// The value without any stored margin: crops it out (once) into a dense memory of the
    /// same layout.
    private func materialized(_ v: Int) throws -> DNNLMemory {
        if let q = quantScale[v] { return try dequantized(v, q) }
        let mem = current[v]!
        let m = margins[v] ?? 0
        if m == 0 { return mem }
        let s = shapes[v]
        var sub = dnnl_memory_desc_t()
        var md = mem.md
        var dims: [Int64] = [1, Int64(s.c), Int64(s.h), Int64(s.w)]
        var offsets: [Int64] = [0, 0, Int64(m), Int64(m)]
        try dnnlCheck(dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets), "describe a margin crop")
        let target = Self.sameFormat(as: mem.md, dims: dims) ?? Self.plainMD(s)
        let dst = try activation(target, isPlain: Self.plainMD(s).isEqual(to: target))
        var pd: dnnl_primitive_desc_t?
        var a = sub, b = target
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &a, engine, &b, engine, plainAttr.attr), "crop a margin")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, mem), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
        current[v] = dst
        margins[v] = 0
        return dst
    }

    /// A dense descriptor for `dims` in the same format tag as `md`, when it is a common one.
    static func sameFormat(as md: dnnl_memory_desc_t, dims: [Int64]) -> dnnl_memory_desc_t? {
        let original = (0..<4).map { i in withUnsafeBytes(of: md.dims) { $0.load(fromByteOffset: i * 8, as: Int64.self) } }
        for tag in [dnnl_nChw16c, dnnl_nChw8c, dnnl_nhwc, dnnl_nchw, dnnl_nChw4c] {
            let probe = taggedMD(original, tag)
            if probe.isEqual(to: md) { return taggedMD(dims, tag) }
        }
        return nil
    }

    /// The value in plain NCHW for Swift loops (one shared copy per value).
    private func plain(_ v: Int) throws -> DNNLMemory {
        if let p = plainCopies[v] { return p }
        let mem = try materialized(v)
        let md = Self.plainMD(shapes[v])
        if mem.sameLayout(as: md) { plainCopies[v] = mem; return mem }
        let dst = try activation(md, isPlain: true)
        try addReorder(from: mem, to: dst)
        plainCopies[v] = dst
        return dst
    }

    // MARK: int8

    /// Values held as u8 (written so by an int8 layer for the int8 layers reading them), with
    /// their quantiser.
    private var quantScale: [Int: U8Quantizer] = [:]
    /// fp32 copies of u8 values, for readers other than int8 layers.
    private var dequantizedCopies: [Int: DNNLMemory] = [:]
    /// u8 copies of fp32 values read by int8 layers, with their quantiser.
    private var quantizedCopies: [Int: (quantizer: U8Quantizer, memory: DNNLMemory)] = [:]
    /// The nodes reading each value.
    private lazy var readers: [Int: [Node]] = {
        var r: [Int: [Node]] = [:]
        for node in graph.nodes { for i in Set(node.inputs) { r[i, default: []].append(node) } }
        return r
    }()

    /// How `node` quantises its input when it runs as an int8 convolution: precision int8, a
    /// calibrated input whose channels span similar ranges (after equalisation), and neither a
    /// first layer (a handful of input channels, the picture itself, where 8 bits cost the most
    /// and gain nothing) nor a last one (`feedsConvolution`, `makesPicture`).
    private func int8Input(_ node: Node) -> U8Quantizer? {
        guard precision == .int8, case .convolution(let p) = node.op, p.inChannels >= 8,
              shapes[node.output].h * shapes[node.output].w >= 64,
              !tailDetails.contains(node.output), feedsConvolution.contains(node.output), !makesPicture(node.output) else { return nil }
        guard let range = int8Ranges[node.name], range.spread <= Int8Tuning.maxSpread else { return nil }
        let whole = range.whole
        return U8Quantizer(lo: whole.lo * Int8Tuning.headroom, hi: whole.hi * Int8Tuning.headroom)
    }

    /// Whether `v` is a picture (at most 4 channels), or becomes one through pixel shuffles and
    /// crops alone: the layer writing it is a last layer even when the picture feeds further
    /// layers (Real-CUGAN's first U-Net), as its rounding reaches the output through the
    /// residual adds.
    private func makesPicture(_ v: Int) -> Bool {
        var v = v
        while shapes[v].c > 4 {
            guard let r = readers[v], r.count == 1 else { return false }
            switch r[0].op {
            case .pixelShuffle, .crop, .cropLike: v = r[0].output
            default: return false
            }
        }
        return true
    }

    /// The calibrated input ranges of the layers after channel equalisation (int8).
    private var int8Ranges: [String: InputRange] = [:]

    /// Values from which some convolution is reached: the layers writing the others are last
    /// layers, whose rounding would go straight into the picture, and stay fp32.
    private lazy var feedsConvolution: Set<Int> = {
        var reaches = Set<Int>()
        for node in graph.nodes.reversed() {
            let convolution: Bool
            switch node.op {
            case .convolution, .deconvolution: convolution = true
            default: convolution = false
            }
            if convolution || reaches.contains(node.output) { reaches.formUnion(node.inputs) }
        }
        return reaches
    }()

    /// A reorder from `src` to `dst` scaling by `scale`, with zero points (quantising or
    /// dequantising): dst = scale · (src − srcZero) + dstZero.
    private func addScaledReorder(from src: DNNLMemory, to dst: DNNLMemory, scale: Float, srcZero: Int32 = 0, dstZero: Int32 = 0) throws {
        let attr = try DNNLAttr(activation: .identity)
        var scales = [scale]
        try dnnlCheck(dnnl_primitive_attr_set_output_scales(attr.attr, 1, 0, &scales), "set a reorder's scale")
        for (arg, zero) in [(DNNL_ARG_SRC, srcZero), (DNNL_ARG_DST, dstZero)] where zero != 0 {
            var z = [zero]
            try dnnlCheck(dnnl_primitive_attr_set_zero_points(attr.attr, arg, 1, 0, &z), "set a reorder's zero point")
        }
        var pd: dnnl_primitive_desc_t?
        var s = src.md, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, attr.attr), "quantise between layouts")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
    }

    /// A u8 value as fp32 (once per value), in the same layout.
    private func dequantized(_ v: Int, _ q: U8Quantizer) throws -> DNNLMemory {
        if let d = dequantizedCopies[v] { return d }
        let stored = current[v]!
        var md = stored.md
        md.data_type = dnnl_f32
        let dst = try activation(md, isPlain: Self.plainMD(shapes[v]).isEqual(to: md))
        try addScaledReorder(from: stored, to: dst, scale: 1 / q.scale, srcZero: q.zeroPoint)
        dequantizedCopies[v] = dst
        return dst
    }

    /// Value `v` as u8 in layout `md`, quantised by `q`.
    private func quantizedValue(_ v: Int, as md: dnnl_memory_desc_t, _ q: U8Quantizer) throws -> DNNLMemory {
        if let stored = quantScale[v], stored == q, let mem = current[v] {
            if mem.sameLayout(as: md) { return mem }
            let dst = try activation(md, isPlain: false)
            try addReorder(from: mem, to: dst)
            return dst
        }
        if let c = quantizedCopies[v], c.quantizer == q, c.memory.sameLayout(as: md) { return c.memory }
        let src = try materialized(v)
        let dst = try activation(md, isPlain: false)
        try addScaledReorder(from: src, to: dst, scale: q.scale, dstZero: q.zeroPoint)
        addClipCheck(dst)
        quantizedCopies[v] = (q, dst)
        return dst
    }

    /// A one-value s32 memory holding a zero point passed to a primitive at run time.
    private func zeroPointMemory(_ z: Int32) throws -> DNNLMemory {
        let m = try DNNLMemory(md: Self.taggedMD([1], dnnl_a, dnnl_s32), engine: engine, isPlain: true)
        UnsafeMutableRawPointer(m.pointer).assumingMemoryBound(to: Int32.self).pointee = z
        return m
    }

    /// Compiles `node` as an int8 convolution when it qualifies (`int8Input`) and oneDNN has a
    /// real kernel for it; returns false to leave it to the fp32 path.
    private func int8Convolution(_ node: Node, _ p: ConvolutionParameters) throws -> Bool {
        guard let input = int8Input(node) else { return false }
        let s = shapes[node.inputs[0]], o = shapes[node.output]
        // Written as u8 straight for the next layers when every reader is an int8 layer (they
        // share this value's quantiser) and the activation, a post-op, commutes with a positive
        // scale. PReLU is a separate step: oneDNN 2.6 has only a reference int8 kernel with a
        // PReLU post-op.
        var output: U8Quantizer?
        let homogeneous: Bool
        switch p.activation {
        case .identity, .relu, .leakyRelu: homogeneous = true
        default: homogeneous = false
        }
        if homogeneous, node.output != graph.output, let r = readers[node.output], !r.isEmpty {
            let qs = r.map { int8Input($0) }
            if let first = qs[0], qs.allSatisfy({ $0 == first }) { output = first }
        }
        let q = QuantizedWeights(p.weights, outChannels: p.outChannels)
        var (wdims, bmd, strides, dil, padL, padR) = Self.window(p)
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dnnl_u8)
        var wAny = Self.anyMD(wdims, dnnl_s8)
        var dstAny = Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], output == nil ? dnnl_f32 : dnnl_u8)
        // The accumulator is Σ (u − zero)·q_w = inScale · wScale[oc] · Σ x·w; the bias joins it
        // in that domain, and the output scale brings the sum back (and on to the next layer's
        // scale when written as u8, its zero point added last). Activations run after the scale.
        let attr = try DNNLAttr(activation: p.activation)
        var extraArgs: [(Int32, DNNLMemory)] = []
        var scales = q.scales.map { (output?.scale ?? 1) / (input.scale * $0) }
        try dnnlCheck(dnnl_primitive_attr_set_output_scales(attr.attr, Int64(p.outChannels), 1 << 1, &scales), "set output scales")
        for (arg, zero) in [(DNNL_ARG_SRC, input.zeroPoint), (DNNL_ARG_DST, output?.zeroPoint ?? 0)] where zero != 0 {
            var runtime = [Int32.min]  // DNNL_RUNTIME_S32_VAL: given at execution
            try dnnlCheck(dnnl_primitive_attr_set_zero_points(attr.attr, arg, 1, 0, &runtime), "set a zero point")
            extraArgs.append((DNNL_ARG_ATTR_ZERO_POINTS | arg, try zeroPointMemory(zero)))
        }
        var desc = dnnl_convolution_desc_t()
        guard dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny, &wAny,
                                                         &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success,
              let pd = try? createPD(&desc, attr: attr.attr) else { return false }
        defer { dnnl_primitive_desc_destroy(pd) }
        if Self.implementation(pd).hasPrefix("ref") { return false }
        let src = try quantizedValue(node.inputs[0], as: query(pd, dnnl_query_src_md), input)
        let userTag: dnnl_format_tag_t = p.groups == 1 ? dnnl_oihw : dnnl_goihw
        // The target layout may carry oneDNN's s8 compensation, which the reorder computes.
        let weights = try constant(q.values, user: Self.taggedMD(wdims, userTag, dnnl_s8), into: query(pd, dnnl_query_weights_md))
        let bias = p.bias.isEmpty ? [Float](repeating: 0, count: p.outChannels)
            : (0..<p.outChannels).map { p.bias[$0] * input.scale * q.scales[$0] }
        let biasMemory = try constant(bias, user: bmd, into: bmd)
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_BIAS, biasMemory), (DNNL_ARG_DST, dst)] + extraArgs,
                keep: [attr])
        current[node.output] = dst
        margins[node.output] = 0
        if let output {
            quantScale[node.output] = output
            addClipCheck(dst)
        }
        if case .prelu(let slopes) = p.activation {
            try prelu(node.output, slopes, output: node.output)
        }
        return true
    }

    private func addReorder(from src: DNNLMemory, to dst: DNNLMemory) throws {
        var pd: dnnl_primitive_desc_t?
        var s = src.md, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, plainAttr.attr), "reorder between layouts")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
    }

    /// Reorders constant data (weights) once, now: `values` are in `user`'s layout and type.
    private func constant<T>(_ values: [T], user: dnnl_memory_desc_t, into md: dnnl_memory_desc_t) throws -> DNNLMemory {
        let src = try DNNLMemory(md: user, engine: engine, isPlain: true)
        UnsafeMutableRawPointer(src.pointer).assumingMemoryBound(to: T.self).update(from: values, count: values.count)
        if src.sameLayout(as: md) { return src }
        let dst = try DNNLMemory(md: md, engine: engine, isPlain: false)
        var pd: dnnl_primitive_desc_t?
        var s = user, d = md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, nil), "reorder weights")
        defer { dnnl_primitive_desc_destroy(pd) }
        let step = try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)])
        try step.execute(stream)
        try dnnlCheck(dnnl_stream_wait(stream), "reorder weights")
        return dst
    }

    // MARK: compiling nodes

    private func compile(_ node: Node) throws {
        let out = shapes[node.output]
        switch node.op {
        case .convolution(let p):
            try convolution(node, p, transposed: false)
        case .deconvolution(let p):
            if p.outputPadH != 0 || p.outputPadW != 0 || p.groups != 1 {
                try plainOp(node)
            } else {
                try convolution(node, p, transposed: true)
            }
        case .activation(let a):
            if case .prelu(let slopes) = a {
                try prelu(node.inputs[0], slopes, output: node.output)
            } else if let (alg, alpha, beta) = eltwiseAlgorithm(a) {
                let src = try materialized(node.inputs[0])
                var desc = dnnl_eltwise_desc_t()
                var md = src.md
                try dnnlCheck(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, alpha, beta), "describe an activation")
                try unary(&desc, src, output: node.output)
            } else {
                current[node.output] = try materialized(node.inputs[0])
            }
        case .binary(let kind, let coefficients):
            try binary(node, kind, coefficients, out)
        case .globalAveragePool:
            let src = try materialized(node.inputs[0])
            let s = shapes[node.inputs[0]]
            var desc = dnnl_pooling_desc_t()
            var smd = src.md
            var dmd = Self.anyMD([1, Int64(s.c), 1, 1], src.md.data_type)
            var strides: [Int64] = [1, 1], kernel: [Int64] = [Int64(s.h), Int64(s.w)], pad: [Int64] = [0, 0]
            try dnnlCheck(dnnl_pooling_forward_desc_init(&desc, dnnl_forward_inference, dnnl_pooling_avg_exclude_padding, &smd, &dmd,
                                                         &strides, &kernel, &pad, &pad), "describe global average pooling")
            try unary(&desc, src, output: node.output)
        case .fullyConnected(let outFeatures, let weights, let bias, let activation):
            try fullyConnected(node, outFeatures, weights, bias, activation)
        case .crop(let t, let l, _, _), .cropLike(let t, let l):
            try window(node.inputs[0], top: t, left: l, channel: 0, out: out, output: node.output)
        case .sliceChannels(let start, _):
            try window(node.inputs[0], top: 0, left: 0, channel: start, out: out, output: node.output)
        case .softmaxChannels:
            try softmax(node)
        case .resize(.bilinear, _, _, _, _, false) where out.h % shapes[node.inputs[0]].h == 0 && out.w % shapes[node.inputs[0]].w == 0:
            try upsampleLinear(node)
        case .upsampleDetail(let mode, let order):
            try upsampleDetail(node, mode, order)
        case .scalar, .channelAffine, .pixelShuffle, .resize, .pad, .concatChannels:
            try plainOp(node)
        case .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul:
            // Rare in image models: the plain loops (Kernels), as the op tests say.
            try plainOp(node)
        }
    }

    private func createPD(_ desc: UnsafeMutableRawPointer, attr: dnnl_primitive_attr_t?) throws -> dnnl_primitive_desc_t {
        var pd: dnnl_primitive_desc_t?
        try dnnlCheck(dnnl_primitive_desc_create(&pd, UnsafeRawPointer(desc), attr, engine, nil), "find an implementation")
        return pd!
    }

    private func createPD<T>(_ desc: inout T, attr: dnnl_primitive_attr_t?) throws -> dnnl_primitive_desc_t {
        try withUnsafeMutablePointer(to: &desc) { try createPD(UnsafeMutableRawPointer($0), attr: attr) }
    }

    private func add(_ pd: dnnl_primitive_desc_t, _ args: [(Int32, DNNLMemory)], keep: [AnyObject] = []) throws {
        append(try DNNLStep(pd: pd, args: args, keep: keep, planner: planner, engine: engine))
    }

    private func convolution(_ node: Node, _ original: ConvolutionParameters, transposed: Bool) throws {
        if !transposed, try int8Convolution(node, original) { return }
        if let observer = backend.observer, !transposed {
            // Calibration: the range of what this layer reads, on every run.
            let src = try plain(node.inputs[0])
            let s = shapes[node.inputs[0]]
            let name = node.name
            appendLoop([src]) { observer.record(name, channelRanges(src.pointer, channels: s.c, plane: s.h * s.w)) }
        }
        var p = original
        var s = shapes[node.inputs[0]], o = shapes[node.output]
        // A valid (unpadded) 3×3 stride-1 layer equals a 1-padded one with its outer ring
        // dropped. Running it padded keeps oneDNN on Winograd, and the ring is not cropped
        // now: the value carries a growing margin of garbage pixels through a chain of such
        // layers and is cropped once, where something else reads it. (fp32 only: int8 layers
        // read dense values.)
        var outMargin = 0
        let reduced = precision == .bf16
        let dt = reduced ? dnnl_bf16 : dnnl_f32
        if !transposed, Self.useWinograd, precision == .fp32, p.kernelH == 3, p.kernelW == 3, p.strideH == 1, p.strideW == 1,
           p.dilationH == 1, p.dilationW == 1, p.padTop == 0, p.padLeft == 0, p.padBottom == 0, p.padRight == 0,
           p.groups == 1, p.inChannels >= 16, p.outChannels >= 16 {
            let m = margins[node.inputs[0]] ?? 0
            s = Shape(c: s.c, h: s.h + 2 * m, w: s.w + 2 * m)
            o = Shape(c: o.c, h: s.h, w: s.w)
            p.padTop = 1; p.padLeft = 1; p.padBottom = 1; p.padRight = 1
            outMargin = m + 1
        }
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dt)
        // A value read by Swift loops (the fused upscaler tail) is best written plain directly.
        let wantsPlain = !transposed && outMargin == 0 && tailDetails.contains(node.output)
        var dstAny = wantsPlain ? Self.plainMD(o) : Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dt)
        // A first layer (few input channels, read plain) writing 16-channel blocks directly:
        // oneDNN has a kernel for exactly that, and the next layers (Winograd among them) read
        // blocks, so no reorder follows.
        var firstLayer = false
        if !transposed, !wantsPlain, !reduced, p.groups == 1, p.inChannels < 8, o.c % 16 == 0, outMargin == 0,
           (margins[node.inputs[0]] ?? 0) == 0, current[node.inputs[0]]?.isPlain == true {
            dstAny = Self.taggedMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dnnl_nChw16c)
            srcAny = Self.plainMD(s)
            firstLayer = true
        }
        var (wdims, bmd, strides, dil, padL, padR) = Self.window(p)
        var wAny = Self.anyMD(wdims, dt)
        let attr = try DNNLAttr(activation: p.activation)
        let pd: dnnl_primitive_desc_t
        var separateActivation = false
        if transposed {
            var desc = dnnl_deconvolution_desc_t()
            try dnnlCheck(dnnl_dilated_deconvolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_deconvolution_direct, &srcAny, &wAny,
                                                                       &bmd, &dstAny, &strides, &dil, &padL, &padR), "describe the transposed convolution")
            pd = try createPD(&desc, attr: attr.attr)
        } else {
            var desc = dnnl_convolution_desc_t()
            // Winograd F(4,3) does 3×3 stride-1 layers with about a third of the multiplies;
            // oneDNN has it for wide enough layers on AVX-512. Fall back to direct otherwise.
            // oneDNN's Winograd kernels take no activation post-op other than ReLU: others then
            // run as a separate in-place step, which costs far less than losing Winograd.
            var winogradPD: dnnl_primitive_desc_t?
            let fusable = p.activation == .identity || p.activation == .relu
            let winogradAttr = fusable ? attr : try DNNLAttr(activation: .identity)
            if Self.useWinograd, !reduced, p.kernelH == 3, p.kernelW == 3, p.strideH == 1, p.strideW == 1, p.dilationH == 1, p.dilationW == 1,
               p.groups == 1, p.inChannels >= 16, p.outChannels >= 16,
               dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_winograd, &srcAny, &wAny,
                                                          &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success {
                winogradPD = try? createPD(&desc, attr: winogradAttr.attr)
            }
            if let winogradPD {
                pd = winogradPD
                separateActivation = !fusable
            } else if let direct = try inPlaceLayoutPD(node, &desc, &wAny, &bmd, &dstAny, &strides, &dil, &padL, &padR, attr) {
                pd = direct
            } else if firstLayer, dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny,
                                                                             &wAny, &bmd, &dstAny, &strides, &dil, &padL, &padR) == dnnl_success,
                      let first = Self.realKernel(try? createPD(&desc, attr: attr.attr)) {
                pd = first
            } else {
                srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dt)
                dstAny = wantsPlain ? Self.plainMD(o) : Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], dt)
                try dnnlCheck(dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &srcAny, &wAny,
                                                                         &bmd, &dstAny, &strides, &dil, &padL, &padR), "describe the convolution")
                pd = try createPD(&desc, attr: attr.attr)
            }
        }
        defer { dnnl_primitive_desc_destroy(pd) }
        let srcMD = query(pd, dnnl_query_src_md)
        let src: DNNLMemory
        if outMargin > 0 {
            // Read the stored (margin-carrying) tensor as it is, reordering only its layout.
            let stored = current[node.inputs[0]]!
            if stored.sameLayout(as: srcMD) {
                src = stored
            } else {
                src = try activation(srcMD, isPlain: false)
                try addReorder(from: stored, to: src)
            }
        } else if let m = margins[node.inputs[0]], m > 0, plainCopies[node.inputs[0]] == nil {
            // Crop the margin and change layout in one reorder, straight into what this layer reads.
            let stored = current[node.inputs[0]]!
            let real = shapes[node.inputs[0]]
            var sub = dnnl_memory_desc_t()
            var md = stored.md
            var dims: [Int64] = [1, Int64(real.c), Int64(real.h), Int64(real.w)]
            var offsets: [Int64] = [0, 0, Int64(m), Int64(m)]
            try dnnlCheck(dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets), "describe a margin crop")
            src = try activation(srcMD, isPlain: false)
            var rpd: dnnl_primitive_desc_t?
            var a = sub, b = srcMD
            try dnnlCheck(dnnl_reorder_primitive_desc_create(&rpd, &a, engine, &b, engine, plainAttr.attr), "crop a margin")
            defer { dnnl_primitive_desc_destroy(rpd) }
            append(try DNNLStep(pd: rpd!, args: [(DNNL_ARG_FROM, stored), (DNNL_ARG_TO, src)], planner: planner, engine: engine))
        } else {
            src = try value(node.inputs[0], as: srcMD)
        }
        // Our transposed weights are [in][out][kh][kw]: oneDNN's "iohw" for logical (O, I, H, W).
        let userTag: dnnl_format_tag_t = p.groups == 1 ? (transposed ? dnnl_iohw : dnnl_oihw) : dnnl_goihw
        let weights = try constant(p.weights, user: Self.taggedMD(wdims, userTag), into: query(pd, dnnl_query_weights_md))
        let bias = try constant(p.bias.isEmpty ? [Float](repeating: 0, count: p.outChannels) : p.bias, user: bmd, into: bmd)
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_BIAS, bias), (DNNL_ARG_DST, dst)], keep: [attr])
        if separateActivation, let (alg, alpha, beta) = eltwiseAlgorithm(p.activation) {
            var desc = dnnl_eltwise_desc_t()
            var md = dst.md
            try dnnlCheck(dnnl_eltwise_forward_desc_init(&desc, dnnl_forward_inference, alg, &md, alpha, beta), "describe an activation")
            let epd = try createPD(&desc, attr: plainAttr.attr)
            defer { dnnl_primitive_desc_destroy(epd) }
            try add(epd, [(DNNL_ARG_SRC, dst), (DNNL_ARG_DST, dst)])
        }
        current[node.output] = dst
        margins[node.output] = outMargin
        if case .prelu(let slopes) = p.activation {
            try prelu(node.output, slopes, output: node.output)
        }
    }

    /// A convolution's weight dimensions (grouped ones with a leading group axis), bias
    /// descriptor and window (strides, dilation as oneDNN counts it, padding), for its descriptor.
    static func window(_ p: ConvolutionParameters) -> (weights: [Int64], bias: dnnl_memory_desc_t, strides: [Int64], dilation: [Int64],
                                                        padL: [Int64], padR: [Int64]) {
        let g = Int64(p.groups)
        let weights: [Int64] = p.groups == 1
            ? [Int64(p.outChannels), Int64(p.inChannels), Int64(p.kernelH), Int64(p.kernelW)]
            : [g, Int64(p.outChannels) / g, Int64(p.inChannels) / g, Int64(p.kernelH), Int64(p.kernelW)]
        return (weights, taggedMD([Int64(p.outChannels)], dnnl_a), [Int64(p.strideH), Int64(p.strideW)],
                [Int64(p.dilationH - 1), Int64(p.dilationW - 1)], [Int64(p.padTop), Int64(p.padLeft)], [Int64(p.padBottom), Int64(p.padRight)])
    }

    private func prelu(_ input: Int, _ slopes: [Float], output: Int) throws {
        let src = try materialized(input)
        let s = shapes[input]
        var desc = dnnl_prelu_desc_t()
        var md = src.md
        var wAny = Self.anyMD([1, Int64(s.c), 1, 1])
        try dnnlCheck(dnnl_prelu_forward_desc_init(&desc, dnnl_forward_inference, &md, &wAny), "describe PReLU")
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let full = slopes.count == 1 ? [Float](repeating: slopes[0], count: s.c) : slopes
        let weights = try constant(full, user: Self.taggedMD([1, Int64(s.c), 1, 1], dnnl_nchw), into: query(pd, dnnl_query_weights_md))
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, weights), (DNNL_ARG_DST, dst)])
        current[output] = dst
        plainCopies[output] = nil
    }

    private func binary(_ node: Node, _ kind: BinaryKind, _ coefficients: [Float]?, _ out: Shape) throws {
        var a = node.inputs[0], b = node.inputs[1]
        let commutative = kind == .add || kind == .mul || kind == .max || kind == .min
        if shapes[a] != out, commutative { swap(&a, &b) }
        let plainCoefficients = coefficients == nil || coefficients! == [1, 1]
        guard shapes[a] == out, plainCoefficients else { return try plainOp(node) }
        let alg: dnnl_alg_kind_t
        switch kind {
        case .add: alg = dnnl_binary_add
        case .sub: alg = dnnl_binary_sub
        case .mul: alg = dnnl_binary_mul
        case .div: alg = dnnl_binary_div
        case .max: alg = dnnl_binary_max
        case .min: alg = dnnl_binary_min
        case .pow: return try plainOp(node)  // oneDNN 2.6's binary primitive has no power
        }
        let src0 = try materialized(a)
        // Same-shape operands share src0's layout; a broadcast operand (a squeeze-excitation's
        // per-channel scale) takes src0's format too, where oneDNN has a vectorised kernel for
        // it: a plain one beside a blocked src0 got its reference loop (Real-CUGAN and cunet
        // spent 60% of their time there).
        let sb = shapes[b]
        let src1: DNNLMemory
        if sb == out {
            src1 = try value(b, as: src0.md)
        } else if var md = Self.sameFormat(as: src0.md, dims: [1, Int64(sb.c), Int64(sb.h), Int64(sb.w)]) {
            md.data_type = src0.md.data_type
            src1 = try value(b, as: md)
        } else {
            src1 = try plain(b)
        }
        var md0 = src0.md, md1 = src1.md
        var dmd = src0.md
        var desc = dnnl_binary_desc_t()
        try dnnlCheck(dnnl_binary_desc_init(&desc, alg, &md0, &md1, &dmd), "describe the element-wise operation")
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC_0, src0), (DNNL_ARG_SRC_1, src1), (DNNL_ARG_DST, dst)])
        current[node.output] = dst
    }

    private func fullyConnected(_ node: Node, _ outFeatures: Int, _ weights: [Float], _ bias: [Float], _ activation: Activation) throws {
        let s = shapes[node.inputs[0]]
        var srcAny = Self.anyMD([1, Int64(s.c), Int64(s.h), Int64(s.w)])
        let wdims: [Int64] = [Int64(outFeatures), Int64(s.c), Int64(s.h), Int64(s.w)]
        var wAny = Self.anyMD(wdims)
        var bmd = Self.taggedMD([Int64(outFeatures)], dnnl_a)
        var dmd = Self.taggedMD([1, Int64(outFeatures)], dnnl_ab)
        var desc = dnnl_inner_product_desc_t()
        try dnnlCheck(dnnl_inner_product_forward_desc_init(&desc, dnnl_forward_inference, &srcAny, &wAny, &bmd, &dmd), "describe the fully connected layer")
        let attr = try DNNLAttr(activation: activation)
        let pd = try createPD(&desc, attr: attr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let src = try value(node.inputs[0], as: query(pd, dnnl_query_src_md))
        let w = try constant(weights, user: Self.taggedMD(wdims, dnnl_oihw), into: query(pd, dnnl_query_weights_md))
        let b = try constant(bias.isEmpty ? [Float](repeating: 0, count: outFeatures) : bias, user: bmd, into: bmd)
        let dst = try DNNLMemory(md: dmd, engine: engine, isPlain: true)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_WEIGHTS, w), (DNNL_ARG_BIAS, b), (DNNL_ARG_DST, dst)], keep: [attr])
        // The 2-D result is bit for bit a plain 1×O×1×1 tensor: view it as one.
        let view = try DNNLMemory(md: Self.plainMD(shapes[node.output]), engine: engine, isPlain: true, handle: UnsafeMutableRawPointer(dst.pointer))
        viewsKeptAlive.append(dst)
        current[node.output] = view
        if case .prelu(let slopes) = activation { try prelu(node.output, slopes, output: node.output) }
    }

    private var viewsKeptAlive: [DNNLMemory] = []

    /// Crop and channel slice: a reorder from a sub-memory view (works on blocked layouts).
    private func window(_ input: Int, top: Int, left: Int, channel: Int, out: Shape, output: Int) throws {
        let src = try materialized(input)
        var sub = dnnl_memory_desc_t()
        var md = src.md
        var dims: [Int64] = [1, Int64(out.c), Int64(out.h), Int64(out.w)]
        var offsets: [Int64] = [0, Int64(channel), Int64(top), Int64(left)]
        if dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets) != dnnl_success {
            let p = try plain(input)
            md = p.md
            try dnnlCheck(dnnl_memory_desc_init_submemory(&sub, &md, &dims, &offsets), "describe a crop")
            return try reorderWindow(p, sub, out, output)
        }
        try reorderWindow(src, sub, out, output)
    }

    private func reorderWindow(_ src: DNNLMemory, _ sub: dnnl_memory_desc_t, _ out: Shape, _ output: Int) throws {
        let dst = try activation(Self.plainMD(out), isPlain: true)
        var pd: dnnl_primitive_desc_t?
        var s = sub, d = dst.md
        try dnnlCheck(dnnl_reorder_primitive_desc_create(&pd, &s, engine, &d, engine, plainAttr.attr), "crop")
        defer { dnnl_primitive_desc_destroy(pd) }
        append(try DNNLStep(pd: pd!, args: [(DNNL_ARG_FROM, src), (DNNL_ARG_TO, dst)], planner: planner, engine: engine))
        current[output] = dst
        plainCopies[output] = dst
    }

    /// Softmax over channels with oneDNN's vectorised kernel, on channels-last data (where the
    /// channel axis is dense, which is what its fast path wants).
    private func softmax(_ node: Node) throws {
        let s = shapes[node.inputs[0]]
        let md = Self.taggedMD([1, Int64(s.c), Int64(s.h), Int64(s.w)], dnnl_nhwc)
        let src = try value(node.inputs[0], as: md)
        var desc = dnnl_softmax_v2_desc_t()
        var smd = md, dmd = md
        try dnnlCheck(dnnl_softmax_v2_forward_desc_init(&desc, dnnl_forward_inference, dnnl_softmax_accurate, &smd, &dmd, 1),
                      "describe a softmax")
        try unary(&desc, src, output: node.output)
    }

    /// Adds the one-input primitive `desc` reading `src`, its result the value `output`.
    private func unary<T>(_ desc: inout T, _ src: DNNLMemory, output: Int) throws {
        let pd = try createPD(&desc, attr: plainAttr.attr)
        defer { dnnl_primitive_desc_destroy(pd) }
        let dst = try activation(query(pd, dnnl_query_dst_md), isPlain: false)
        try add(pd, [(DNNL_ARG_SRC, src), (DNNL_ARG_DST, dst)])
        current[output] = dst
    }

    /// Bilinear upsampling by whole factors with half-pixel centres (align_corners false):
    /// oneDNN's linear resampling, in the input's own layout.
    private func upsampleLinear(_ node: Node) throws {
        let src = try materialized(node.inputs[0])
        let o = shapes[node.output]
        var desc = dnnl_resampling_desc_t()
        var smd = src.md
        var dmd = Self.sameFormat(as: src.md, dims: [1, Int64(o.c), Int64(o.h), Int64(o.w)])
            ?? Self.anyMD([1, Int64(o.c), Int64(o.h), Int64(o.w)], src.md.data_type)
        try dnnlCheck(dnnl_resampling_forward_desc_init(&desc, dnnl_forward_inference, dnnl_resampling_linear, nil, &smd, &dmd),
                      "describe a bilinear resize")
        try unary(&desc, src, output: node.output)
    }

    /// A direct convolution that reads its input in the layout the producer left it in (saving
    /// a reorder), when oneDNN has a real (not reference) kernel for that; nil otherwise.
    private func inPlaceLayoutPD(_ node: Node, _ desc: inout dnnl_convolution_desc_t, _ weights: inout dnnl_memory_desc_t,
                                 _ bias: inout dnnl_memory_desc_t, _ dst: inout dnnl_memory_desc_t, _ strides: inout [Int64],
                                 _ dil: inout [Int64], _ padL: inout [Int64], _ padR: inout [Int64], _ attr: DNNLAttr) throws -> dnnl_primitive_desc_t? {
        guard let stored = current[node.inputs[0]], (margins[node.inputs[0]] ?? 0) == 0, quantScale[node.inputs[0]] == nil,
              !stored.isPlain else { return nil }
        var smd = stored.md
        guard dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference, dnnl_convolution_direct, &smd, &weights,
                                                         &bias, &dst, &strides, &dil, &padL, &padR) == dnnl_success,
              let pd = try? createPD(&desc, attr: attr.attr) else { return nil }
        return Self.realKernel(pd)
    }

    /// `pd` unless oneDNN could only give its reference (slow, loop) implementation, in which
    /// case it is destroyed and the caller falls back to letting oneDNN choose layouts.
    static func realKernel(_ pd: dnnl_primitive_desc_t?) -> dnnl_primitive_desc_t? {
        guard let pd else { return nil }
        if implementation(pd).hasPrefix("ref") {
            dnnl_primitive_desc_destroy(pd)
            return nil
        }
        return pd
    }

    /// oneDNN's name for the implementation a primitive descriptor picked ("brgconv:avx512_core", "ref:any").
    static func implementation(_ pd: dnnl_primitive_desc_t) -> String {
        var info: UnsafePointer<CChar>?
        guard dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) == dnnl_success, let info else { return "" }
        return String(cString: info)
    }

    /// The fused residual-upscaler tail: `UpsampleDetail`'s one pass over the output.
    private func upsampleDetail(_ node: Node, _ mode: ResizeMode, _ order: ShuffleOrder) throws {
        let base = try plain(node.inputs[0]), detail = try plain(node.inputs[1])
        let bs = shapes[node.inputs[0]], dc = shapes[node.inputs[1]].c
        let dst = try activation(Self.plainMD(shapes[node.output]), isPlain: true)
        let stream = self.stream
        appendLoop([base, detail, dst]) {
            try dnnlCheck(dnnl_stream_wait(stream), "synchronise")
            UpsampleDetail.run(mode, base: base.pointer, bs, detail: detail.pointer, detailChannels: dc, order: order, y: dst.pointer)
        }
        current[node.output] = dst
        plainCopies[node.output] = dst
    }

    /// An operation oneDNN does not have: plain loops on NCHW copies.
    private func plainOp(_ node: Node) throws {
        let ins = try node.inputs.map { try plain($0) }
        let inShapes = node.inputs.map { shapes[$0] }
        let o = shapes[node.output]
        let dst = try activation(Self.plainMD(o), isPlain: true)
        let op = node.op
        let stream = self.stream
        let counts = ins.map(shapesCount)
        appendLoop(ins + [dst]) {
            // oneDNN work queued before must be done before Swift reads its output.
            try dnnlCheck(dnnl_stream_wait(stream), "synchronise")
            // Buffers live in the arena, which can move between runs: addresses are read now.
            let inputs = zip(ins, counts).map { UnsafeBufferPointer(start: UnsafePointer($0.pointer), count: $1) }
            let y = UnsafeMutableBufferPointer(start: dst.pointer, count: o.count)
            if case .resize(.bicubic, _, _, _, _, let align) = op {
                FastKernels.separableBicubic(align, inputs[0], inShapes[0], y, o)
            } else {
                Kernels.execute(op, inputs, inShapes, y, o)
            }
        }
        current[node.output] = dst
        plainCopies[node.output] = dst
    }

    private func shapesCount(_ m: DNNLMemory) -> Int {
        var md = m.md
        return dnnl_memory_desc_get_size(&md) / MemoryLayout<Float>.size
    }
}

/// oneDNN's OpenMP runtime (libgomp, loaded with libdnnl): its thread count for the calling
/// thread, found at run time so that nothing links libgomp directly.
public enum OpenMPThreads {
    private typealias SetThreads = @convention(c) (Int32) -> Void
    private static let setter: SetThreads? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "omp_set_num_threads").map { unsafeBitCast($0, to: SetThreads.self) }

    private typealias GetThreads = @convention(c) () -> Int32
    private static let getter: GetThreads? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "omp_get_max_threads").map { unsafeBitCast($0, to: GetThreads.self) }

    /// Parallel regions started by this thread use `n` threads.
    static func apply(_ n: Int) {
        setter?(Int32(clamping: max(1, n)))
    }

    /// The thread count OpenMP gives parallel regions started by this thread (nil without OpenMP).
    public static func current() -> Int? { getter.map { Int($0()) } }
}
