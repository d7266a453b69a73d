import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

final class DNNLPrepared: PreparedGraph {
    /// Winograd for eligible 3×3 layers (VIVIFY_WINOGRAD=0 turns it off, for comparisons).
    static let useWinograd: Bool = getenv("VIVIFY_WINOGRAD").map { String(cString: $0) != "0" } ?? true
    let backend: DNNLBackend
    let graph: Graph
    /// What the layers compute in: the backend's precision, or fp32 for an int8 graph's fallback.
    let precision: ComputePrecision
    /// The graph as given (before this backend's rewrites), for the fp32 fallback.
    let sourceGraph: Graph
    /// The share of saturated u8 activations (sampled) in the worst int8 layer of the last run.
    let clips = ClipMeter()
    /// The same graph and input in fp32, for runs whose int8 activations clipped (made on first
    /// need).
    var fallback: DNNLPrepared?
    /// Whether this graph's recent int8 runs clipped (int8 only).
    var clipHistory = ClipHistory()
    /// The picture (`DNNLBackend.beginPicture`) `clipHistory` is about.
    var historyPicture = 0
    let shapes: [Shape]
    let inputShape: Shape
    let outputShape: Shape
    var steps: [() throws -> Void] = []
    /// Values read as the detail of a fused upscaler tail (`UpsampleDetail`, Swift loops on NCHW).
    var tailDetails: Set<Int> = []
    /// Which node each step belongs to (for VIVIFY_PROFILE).
    var stepLabels: [String] = []
    /// VIVIFY_PROFILE=1 prints each step's time of every run on stderr.
    static let profile: Bool = getenv("VIVIFY_PROFILE").map { String(cString: $0) == "1" } ?? false
    var current: [Int: DNNLMemory] = [:]
    var plainCopies: [Int: DNNLMemory] = [:]
    let inputMemory: DNNLMemory
    /// Where activations and scratchpads live (`ActivationArena`, shared by the backend's graphs).
    let planner = ActivationPlanner()
    var boundGeneration = 0
    let plainAttr: DNNLAttr
    var engine: dnnl_engine_t { backend.engine }
    var stream: dnnl_stream_t { backend.stream }

    init(backend: DNNLBackend, graph: Graph, input: Shape, precision: ComputePrecision) throws {
        // Primitives are laid out for the thread count in force when they are made: the
        // backend's, set on this thread.
        OpenMPThreads.apply(backend.threads)
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
                throw EngineError(e.kind, "Layer '\(node.name)' (\(node.op.kindName)) in \(graph.source): \(e.message)", fallback: e.fallback)
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
    func append(_ step: DNNLStep) {
        planner.use(step.keep, atStep: steps.count)
        let stream = self.stream
        steps.append { try step.execute(stream) }
    }

    /// Appends a step of Swift loops touching `buffers`.
    func appendLoop(_ buffers: [DNNLMemory], _ body: @escaping () throws -> Void) {
        planner.use(buffers, atStep: steps.count)
        steps.append(body)
    }

    /// A buffer for an intermediate value, placed in the arena by `planner`.
    func activation(_ md: dnnl_memory_desc_t, isPlain: Bool) throws -> DNNLMemory {
        try planner.make(md: md, engine: engine, isPlain: isPlain)
    }

    static func nanoseconds() -> Int {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return t.tv_sec * 1_000_000_000 + t.tv_nsec
    }

    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        // OpenMP's thread count is per calling thread: set the backend's on whichever thread
        // runs this.
        OpenMPThreads.apply(backend.threads)
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
    func addClipCheck(_ m: DNNLMemory) {
        var md = m.md
        let bytes = dnnl_memory_desc_get_size(&md)
        let clips = self.clips
        appendLoop([m]) {
            clips.worst = max(clips.worst, ClipMeter.saturatedShare(UnsafeRawPointer(m.pointer), bytes: bytes))
            if clips.worst > Int8Tuning.maxClipped, !Self.reportClips { throw Int8Clipped() }
        }
    }

    func runSteps(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
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

    func query(_ pd: dnnl_primitive_desc_t, _ what: dnnl_query_t) -> dnnl_memory_desc_t {
        dnnl_primitive_desc_query_md(pd, what, 0)!.pointee
    }

    // MARK: layouts

    /// A memory with `md` holding `value`, reordering once per run when the layout differs.
    func value(_ v: Int, as md: dnnl_memory_desc_t) throws -> DNNLMemory {
        let mem = try materialized(v)
        if mem.sameLayout(as: md) { return mem }
        if let p = plainCopies[v], p.sameLayout(as: md) { return p }
        let dst = try activation(md, isPlain: false)
        try addReorder(from: mem, to: dst)
        return dst
    }

    /// Values stored with a border of garbage pixels on every side (see `convolution`).
    var margins: [Int: Int] = [:]

    /// The value without any stored margin: crops it out (once) into a dense memory of the
    /// same layout.
    func materialized(_ v: Int) throws -> DNNLMemory {
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
    func plain(_ v: Int) throws -> DNNLMemory {
        if let p = plainCopies[v] { return p }
        let mem = try materialized(v)
        let md = Self.plainMD(shapes[v])
        if mem.sameLayout(as: md) { plainCopies[v] = mem; return mem }
        let dst = try activation(md, isPlain: true)
        try addReorder(from: mem, to: dst)
        plainCopies[v] = dst
        return dst
    }

    /// Values held as u8 (written so by an int8 layer for the int8 layers reading them), with
    /// their quantiser.
    var quantScale: [Int: U8Quantizer] = [:]

    /// fp32 copies of u8 values, for readers other than int8 layers.
    var dequantizedCopies: [Int: DNNLMemory] = [:]

    /// u8 copies of fp32 values read by int8 layers, with their quantiser.
    var quantizedCopies: [Int: (quantizer: U8Quantizer, memory: DNNLMemory)] = [:]

    /// The nodes reading each value.
    lazy var readers: [Int: [Node]] = {
        var r: [Int: [Node]] = [:]
        for node in graph.nodes { for i in Set(node.inputs) { r[i, default: []].append(node) } }
        return r
    }()

    /// The calibrated input ranges of the layers after channel equalisation (int8).
    var int8Ranges: [String: InputRange] = [:]

    /// Values from which some convolution is reached: the layers writing the others are last
    /// layers, whose rounding would go straight into the picture, and stay fp32.
    lazy var feedsConvolution: Set<Int> = {
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

    var viewsKeptAlive: [DNNLMemory] = []

}
