import CVulkan
import Engine
import Foundation

/// The GPU backend on Vulkan compute (issue 31). The same code runs on any Vulkan device: a
/// real GPU, or Mesa's lavapipe on the CPU (how the tests run it everywhere).
///
///     prepare: shapes inferred ─▶ values placed by lifetime in one arena per kind of memory
///              (`BufferPlan`; a slice each), weights uploaded once
///              ─▶ nodes in order: a shader dispatch each, recorded into one command buffer
///                 with barriers between (external layers alone run on the host, on
///                 host-visible buffers, and cut the command buffer there)
///     run:     input written (to a staging buffer, copied in by the first command buffer,
///              on a discrete GPU) ─▶ each command buffer submitted (recorded once, reused)
///              and each host step run, in order ─▶ output read (copied out likewise)
///
/// Precision: fp32, or fp16 storage with fp32 arithmetic (`VulkanPrecision`). Compiled
/// pipelines are kept on disk per device and driver (`VulkanPipelineCache`).
///
/// Shaders (GLSL in Shaders/, each built for fp32 and fp16 storage): direct and transposed convolution (any kernel, stride,
/// dilation, padding, groups; bias and every activation fused, PReLU included), activations,
/// binary operations with broadcasting, scalar operations, channel affine, pixel shuffle and
/// space-to-depth, window and box copies (crop, slices, concatenations, reshape, transpose),
/// padding, max and average pooling, global average pooling, resampling from tap tables
/// (resize in every mode, ONNX Resize, the upscaler tail), instance normalisation, softmax,
/// fully connected layers. Memory as `VulkanMemoryPlan` says: device-local with staging on a
/// discrete GPU, host-visible and mapped where the device shares the host's memory.
public final class VulkanBackend: InferenceBackend, @unchecked Sendable {
    public var name: String { "vulkan" }
    let context: VulkanContext
    /// The precision prepared graphs run in: the one asked for, or fp32 where the device cannot
    /// store fp16 (`precisionNote` says so).
    public let precision: VulkanPrecision
    /// Why the precision asked for is not the one that runs; nil when it is.
    public let precisionNote: String?

    /// Opens the Vulkan device (once per process).
    /// - Parameter precision: fp32, or fp16 storage (fp32 where the device lacks 16-bit
    ///   storage buffers, with `precisionNote`).
    /// - Throws: `EngineError` `.unsupported` when there is no Vulkan driver or device.
    public init(precision: VulkanPrecision = .fp32) throws {
        try Self.checkSwitches(ProcessInfo.processInfo.environment)
        context = try VulkanContext.shared.get()
        memoryPlan = VulkanMemoryPlan.automatic(for: context)
        arenaBlockLimit = nil
        pointwiseGEMM = Self.pointwiseGEMM(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        winograd = Self.winograd(environment: ProcessInfo.processInfo.environment)
        winogradBlocked = Self.winogradBlocked(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        deconvolutionPhases = Self.deconvolutionPhases(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        subpixelDeconvolutions = Self.subpixelDeconvolutions(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        convolutionRows = Self.convolutionRows(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        denseRows = convolutionRows || Self.denseRows(environment: ProcessInfo.processInfo.environment)
        implicitGEMM = Self.implicitGEMM(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        cropViews = Self.cropViews(environment: ProcessInfo.processInfo.environment)
        packed = Self.packed(environment: ProcessInfo.processInfo.environment)
        cooperativeGEMM = context.hasCooperativeMatrix
        (self.precision, precisionNote) = Self.precision(precision, on: context)
    }

    /// Opens the device with a memory plan chosen by the caller (tests force `.staged` on
    /// lavapipe, whose memory is all host-visible and device-local at once), and arena blocks
    /// of at most `arenaBlockLimit` bytes (tests force small ones to split the arena), and 1×1
    /// convolutions as matrix products or not (`pointwiseGEMM`), 3×3 stride-1 ones by Winograd's
    /// method or not (`winograd`), their products in blocks for the CPU or not (`winogradBlocked`),
    /// transposed convolutions per output phase or not (`deconvolutionPhases`), dense
    /// convolutions in runs of a row or not (`convolutionRows`), the other dense ones as implicit
    /// matrix products or not (`implicitGEMM`; nil: as `init(precision:)` does for each).
    init(memoryPlan: VulkanMemoryPlan, precision: VulkanPrecision = .fp32, arenaBlockLimit: Int? = nil, pointwiseGEMM: Bool? = nil,
         winograd: VulkanWinograd? = nil, winogradBlocked: Bool? = nil, deconvolutionPhases: Bool? = nil, convolutionRows: Bool? = nil,
         implicitGEMM: Bool? = nil, cooperativeGEMM: Bool? = nil, subpixelDeconvolutions: Bool? = nil, cropViews: Bool? = nil,
         packed: Bool? = nil) throws {
        context = try VulkanContext.shared.get()
        self.memoryPlan = memoryPlan
        self.arenaBlockLimit = arenaBlockLimit
        self.pointwiseGEMM = pointwiseGEMM ?? Self.pointwiseGEMM(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.winograd = winograd ?? Self.winograd(environment: ProcessInfo.processInfo.environment)
        self.winogradBlocked = winogradBlocked ?? Self.winogradBlocked(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.deconvolutionPhases = deconvolutionPhases
            ?? Self.deconvolutionPhases(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.subpixelDeconvolutions = subpixelDeconvolutions
            ?? Self.subpixelDeconvolutions(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.convolutionRows = convolutionRows ?? Self.convolutionRows(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.denseRows = convolutionRows ?? (self.convolutionRows || Self.denseRows(environment: ProcessInfo.processInfo.environment))
        self.implicitGEMM = implicitGEMM ?? Self.implicitGEMM(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU)
        self.cropViews = cropViews ?? Self.cropViews(environment: ProcessInfo.processInfo.environment)
        self.packed = packed ?? Self.packed(environment: ProcessInfo.processInfo.environment)
        self.cooperativeGEMM = cooperativeGEMM ?? context.hasCooperativeMatrix
        (self.precision, precisionNote) = Self.precision(precision, on: context)
    }

    /// What `--precision auto` stores the values and weights of a model whose fp16 quality is
    /// measured (the catalog upscalers: luma PSNR against fp32 ≥ 45 dB on Set5 and Set14,
    /// `VulkanFP16QualityTests`) in on this device: fp16 on a GPU with 16-bit storage buffers,
    /// where it was as fast or faster for every model timed on an H200 (2026-11-30, medians of
    /// 9 frames, fp16 against fp32: realesr-animevideov3-4x 43.3 against 60.0 ms at 640×360
    /// and 352.2 against 402.6 ms at 1920×1080, waifu2x-photo-2x 15.6 against 42.8 and 138.8
    /// against 156.6 ms, realcugan-2x 29.0 against 29.8 and 268.7 against 280.3 ms); fp32 on
    /// the CPU (lavapipe), whose fp16 is converted on every load and store, and on devices
    /// without 16-bit storage. VIVIFY_VULKAN_AUTO_FP16=1 gives fp16 on any device that stores
    /// it (tests take the GPU's path on lavapipe with it), 0 keeps fp32.
    public var automaticPrecision: VulkanPrecision {
        Self.automaticPrecision(environment: ProcessInfo.processInfo.environment, isCPU: context.isCPU, hasFP16Storage: context.hasFP16Storage)
    }

    static func automaticPrecision(environment: [String: String], isCPU: Bool, hasFP16Storage: Bool) -> VulkanPrecision {
        hasFP16Storage && switched("VIVIFY_VULKAN_AUTO_FP16", environment: environment, default: !isCPU) ? .fp16 : .fp32
    }

    /// The precision that runs, and what to tell the user: fp16 asked for on a device without
    /// 16-bit storage; cooperative matrices asked for (VIVIFY_VULKAN_COOPMAT=1) where the device
    /// cannot run them, or in fp32, where they do not run.
    private static func precision(_ asked: VulkanPrecision, on context: VulkanContext) -> (VulkanPrecision, String?) {
        var notes: [String] = []
        var runs = asked
        if asked == .fp16 && !context.hasFP16Storage {
            runs = .fp32
            notes.append("the Vulkan device '\(context.deviceName)' has no 16-bit storage buffers (storageBuffer16BitAccess): fp16 runs in fp32.")
        }
        if let note = context.cooperativeMatrixNote {
            notes.append(note)
        } else if context.hasCooperativeMatrix && runs == .fp32 {
            notes.append("VIVIFY_VULKAN_COOPMAT=1: cooperative matrices run only with fp16 storage (--precision fp16); fp32 runs without them.")
        }
        return (runs, notes.isEmpty ? nil : notes.joined(separator: " "))
    }

    /// Where prepared graphs keep their values and weights.
    let memoryPlan: VulkanMemoryPlan
    /// The most bytes of one arena block; nil: the device's limit.
    let arenaBlockLimit: Int?
    /// Whether dense 1×1 stride-1 convolutions run as a tiled matrix product in shared memory
    /// (convolution_1x1.comp) rather than with lanes across pixels (convolution_1x1_lanes.comp).
    let pointwiseGEMM: Bool

    /// The matrix product on GPUs, where shared-memory tiles are what makes a matrix product
    /// fast (as ncnn does for 1×1); not on the CPU: on lavapipe the pixel-lane shader, whose
    /// weights are the same for every lane, ran the colorizer (44 of its 67 convolutions 1×1)
    /// about 20% faster. VIVIFY_VULKAN_GEMM=1 or 0 forces either, for comparisons.
    static func pointwiseGEMM(environment: [String: String], isCPU: Bool) -> Bool {
        switched("VIVIFY_VULKAN_GEMM", environment: environment, default: !isCPU)
    }

    /// Which dense 3×3 stride-1 convolutions run by Winograd's F(2×2, 3×3): input transform,
    /// 16 matrix products, output transform (winograd_*.comp; `VulkanPrepared.isWinograd`).
    let winograd: VulkanWinograd

    /// Those of 16 channels or more by default; VIVIFY_VULKAN_WINOGRAD=1 takes every one,
    /// 0 none, for comparisons.
    static func winograd(environment: [String: String]) -> VulkanWinograd {
        switch environment["VIVIFY_VULKAN_WINOGRAD"] {
        case "1": return .always
        case "0": return .never
        default: return .wide
        }
    }

    /// Whether Winograd's 16 matrix products run 32 output channels × 16 tiles per invocation
    /// (winograd_multiply_blocked.comp) rather than 16 × 4 (winograd_multiply.comp).
    let winogradBlocked: Bool

    /// Blocked on the CPU, where every buffer load is a loop over the SIMD lanes and fewer loads
    /// per multiply-add is what counts: on lavapipe it ran the products about 3× faster
    /// (realesr-animevideov3's 64-channel layers); not on GPUs, whose registers it would
    /// overflow. VIVIFY_VULKAN_WINOGRAD_BLOCKED=1 or 0 forces either, for comparisons.
    static func winogradBlocked(environment: [String: String], isCPU: Bool) -> Bool {
        cpuOnly("VIVIFY_VULKAN_WINOGRAD_BLOCKED", environment: environment, isCPU: isCPU)
    }

    /// Whether transposed convolutions with groups 1, dilation 1 and kernels at most twice the
    /// stride run as one small convolution per output phase, 4 channels × 32 outputs per
    /// invocation (deconvolution_phases.comp), rather than one gathered output value per
    /// invocation (deconvolution.comp).
    let deconvolutionPhases: Bool

    /// Per phase on the CPU, where every buffer load is a loop over the SIMD lanes: on lavapipe
    /// it took waifu2x-upconv7-photo from 4.5 s to 1.0 s per 160×90 frame (that layer from about
    /// 3 s to well under 0.3 s; ncnn-Vulkan 1.2–1.5 s in the same runs); not on GPUs, where the
    /// 32 vec4 accumulators per invocation are untried. VIVIFY_VULKAN_DECONV_PHASES=1 or 0
    /// forces either, for comparisons.
    static func deconvolutionPhases(environment: [String: String], isCPU: Bool) -> Bool {
        cpuOnly("VIVIFY_VULKAN_DECONV_PHASES", environment: environment, isCPU: isCPU)
    }

    /// Whether strided transposed convolutions (groups 1, no dilation, square stride) are
    /// rewritten before preparing as a convolution at the input's size with stride² times the
    /// output channels, a pixel shuffle and a crop (`Graph.withSubpixelDeconvolutions`, as the
    /// oneDNN backend runs them): the convolution then takes the fast kernels (a k = s layer
    /// becomes a 1×1 matrix product).
    let subpixelDeconvolutions: Bool

    /// On GPUs: on an H200 the gathering shader (deconvolution.comp) took 60 of realcugan-2x's
    /// 70 ms on a 356×396 tile and 16 of waifu2x-photo-2x's 21 ms, at under 0.1 TFLOP/s; not on
    /// the CPU, where the per-phase shader is the one measured. VIVIFY_VULKAN_SUBPIXEL=1 or 0
    /// forces either, for comparisons.
    static func subpixelDeconvolutions(environment: [String: String], isCPU: Bool) -> Bool {
        switched("VIVIFY_VULKAN_SUBPIXEL", environment: environment, default: !isCPU)
    }

    /// Whether dense convolutions (but 1×1 ones of more than 4 output channels) compute runs of
    /// a row per invocation — 8 pixels × 4 channels where the layer has at most 4
    /// (convolution_rows4.comp), else 4 pixels × 16 channels (convolution_rows16.comp) — rather
    /// than one pixel × 16 channels (convolution_pixels.comp, convolution_1x1_lanes.comp) —
    /// and depthwise 3×3 ones 8 pixels of a row of a channel per invocation
    /// (convolution_depthwise_s1/_s2.comp) rather than one value (convolution.comp), and 1×1
    /// ones in fp32 with their weights in a uniform buffer (convolution_1x1_uniform.comp).
    let convolutionRows: Bool

    /// In runs on the CPU: on lavapipe realcugan-2x's last layer (64 → 3, 3×3) took 83 ms
    /// against 663 ms on a 196×128 tile, its other such layers about 2.5× less time (release,
    /// LP_NUM_THREADS=1; `VulkanPrepared.rowsConvolution`). On GPUs only the dense row kernels
    /// (`denseRows`); the depthwise and uniform-buffer ones are untried there.
    /// VIVIFY_VULKAN_ROWS=1 or 0 forces all of them, for comparisons.
    static func convolutionRows(environment: [String: String], isCPU: Bool) -> Bool {
        cpuOnly("VIVIFY_VULKAN_ROWS", environment: environment, isCPU: isCPU)
    }

    /// Whether crops that only binary operations read are read in place rather than copied
    /// (`VulkanPrepared.cropViews`), on every device: on an H200 realcugan-2x's four crop
    /// copies took 2.3 ms of its 29 ms at 640×360. VIVIFY_VULKAN_CROP_VIEWS=0 copies them, for
    /// comparisons.
    let cropViews: Bool

    static func cropViews(environment: [String: String]) -> Bool {
        switched("VIVIFY_VULKAN_CROP_VIEWS", environment: environment, default: true)
    }

    /// Whether values between the operations that read and write the packed 4-channel layout
    /// (ncnn's pack4: [C/4][H][W][4], one vec4 load per four channels of a pixel) are stored
    /// so (`VulkanPrepared.packedValues`): dense convolutions (Winograd's transforms read and
    /// write it too), depthwise ones, activations and binaries of same-shape operands
    /// (convolution_pack4.comp, convolution_depthwise_pack4.comp, activation_pack4.comp,
    /// binary_pack4.comp, each reading and writing either layout). Off by default until a GPU
    /// has timed it (`scripts/gpu-session` times both ways); on lavapipe the row, 1×1 and
    /// Winograd shaders are faster (README, *The Vulkan backend*). VIVIFY_VULKAN_PACK4=1 turns
    /// it on, on any device.
    let packed: Bool

    static func packed(environment: [String: String]) -> Bool {
        environment["VIVIFY_VULKAN_PACK4"] == "1"
    }

    /// Whether dense convolutions (not 1×1 ones of more than 4 output channels, not Winograd's)
    /// run in runs of a row (convolution_rows4/16.comp), on every device: on an H200
    /// (2026-11-30, medians of 9 frames) realcugan-2x took 28.8 against 29.8 ms at 640×360 and
    /// 265.8 against 280.3 ms at 1920×1080 in fp32, 28.0/244.8 against 29.0/268.7 ms in fp16,
    /// as in two earlier runs (its 64 → 3 last layer, 2×2 stride-2 and 3 → 32 layers take
    /// them); waifu2x-photo-2x 138.1 against 156.6 ms at 1920×1080; the realesr-animevideov3
    /// models, whose one such layer is their first, moved within the runs' spread.
    /// VIVIFY_VULKAN_ROWS=0 turns them off, 1 forces every row kernel (`convolutionRows`).
    let denseRows: Bool

    static func denseRows(environment: [String: String]) -> Bool {
        environment["VIVIFY_VULKAN_ROWS"] != "0"
    }

    /// Whether the dense convolutions that are neither Winograd's, nor 1×1 matrix products, nor
    /// in runs of a row (larger kernels, strides, dilations, 3×3 ones of few channels) run as
    /// implicit matrix products — 64 pixels × 64 output channels a workgroup through shared
    /// memory, 16 output channels where a layer has at most 16 (convolution_gemm.comp,
    /// convolution_gemm16.comp) — rather than one pixel × 16 channels per invocation
    /// (convolution_pixels.comp).
    let implicitGEMM: Bool

    /// Written for GPUs, where shared-memory tiles are what makes a matrix product fast (as
    /// ncnn does for such kernels), but off by default until a GPU has timed it against the
    /// pixel-lane shader (the other kernels no GPU has tried stay off there too): on with
    /// VIVIFY_VULKAN_IMPLICIT_GEMM=1 on any device (`scripts/gpu-session` times both). On the
    /// CPU the row shaders are faster (they load each weight once for 4 or 8 pixels without
    /// barriers; `VulkanPrepared.gemmConvolution`).
    static func implicitGEMM(environment: [String: String], isCPU: Bool) -> Bool {
        environment["VIVIFY_VULKAN_IMPLICIT_GEMM"] == "1"
    }

    /// Whether, with fp16 storage, dense convolutions of more than 16 output channels that
    /// Winograd does not take (1×1 ones too) run as the implicit matrix product on cooperative
    /// matrices (convolution_gemm_coop.comp; `VulkanCooperativeMatrix`): where the device has
    /// them and VIVIFY_VULKAN_COOPMAT=1 asks. Tests force it on the CPU device, which runs
    /// the `_emulated` build of the same shader.
    let cooperativeGEMM: Bool

    /// The kernel switches (for comparisons; README, *The Vulkan backend*): each takes 1 or 0.
    static let switches = ["VIVIFY_VULKAN_GEMM", "VIVIFY_VULKAN_WINOGRAD", "VIVIFY_VULKAN_WINOGRAD_BLOCKED", "VIVIFY_VULKAN_DECONV_PHASES",
                           "VIVIFY_VULKAN_ROWS", "VIVIFY_VULKAN_IMPLICIT_GEMM", "VIVIFY_VULKAN_COOPMAT", "VIVIFY_VULKAN_SUBPIXEL",
                           "VIVIFY_VULKAN_AUTO_FP16", "VIVIFY_VULKAN_CROP_VIEWS", "VIVIFY_VULKAN_PACK4"]

    /// Refuses a kernel switch set to anything but 1, 0 or nothing: `true` or `on` was the
    /// default, silently, and a comparison made with it compared nothing.
    static func checkSwitches(_ environment: [String: String]) throws {
        for name in switches {
            guard let value = environment[name], !["", "0", "1"].contains(value) else { continue }
            throw EngineError(.invalidSetting, "\(name)=\(value) is neither 1 nor 0. Set it to 1 or 0, or unset it for the measured default.")
        }
    }

    /// A CPU-only kernel choice: on for CPU devices, off for GPUs, unless `variable` is "1"
    /// (on) or "0" (off).
    private static func cpuOnly(_ variable: String, environment: [String: String], isCPU: Bool) -> Bool {
        switched(variable, environment: environment, default: isCPU)
    }

    /// A kernel switch: on where `variable` is "1", off where "0", else `default`.
    private static func switched(_ variable: String, environment: [String: String], default value: Bool) -> Bool {
        switch environment[variable] {
        case "1": return true
        case "0": return false
        default: return value
        }
    }

    /// The device's name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    public var deviceName: String { context.deviceName }
    /// Whether graphs prepared from now on time each layer of every run on the device
    /// (timestamp queries around each layer's dispatches; `VulkanProfiledGraph.layerTimes`).
    /// Off by default: the timestamps order the device's work the way the barriers already
    /// do, but cost a little; `VIVIFY_VULKAN_PROFILE=1` turns it on from the start.
    public var profiling = ProcessInfo.processInfo.environment["VIVIFY_VULKAN_PROFILE"] == "1"
    /// Whether the device can time layers (its compute queue writes timestamps).
    public var canProfile: Bool { context.timestampBits > 0 }
    /// Whether the device is the CPU (lavapipe).
    public var isCPU: Bool { context.isCPU }
    /// Whether the Khronos validation layer watches the device (`VIVIFY_VULKAN_VALIDATION=1`;
    /// its messages are in `VulkanValidation.messages`).
    public var isValidated: Bool { context.validating }

    /// The largest automatic tile: on a GPU 1024 pixels (a 640×360 frame in one tile, 1080p in
    /// four to eight), within `tileMemoryBudget` and `largestValueBytes`; on the CPU (lavapipe) the CPU backends' 192. On an
    /// H200 the 400-pixel cap of before, with the 1 GiB budget, gave tiles of 216×180 at
    /// 640×360, and the frame took 28.8 ms where the model's own work was about 12 ms: each tile
    /// costs a submission, a wait and the host's copies, and its border is work done twice.
    public var preferredTile: Int { context.isCPU ? TiledRunner.preferredTile : Self.gpuPreferredTile }
    /// The automatic tile cap on a GPU.
    public static let gpuPreferredTile = 1024

    /// On a discrete GPU a quarter of its largest device-local heap, between the CPU backends'
    /// 1 GiB and 16 GiB (the tiler sums every value of the graph, more than the lifetime-planned
    /// arena holds at once); elsewhere (an integrated GPU, whose memory is the system's, and
    /// lavapipe) the CPU backends' budget.
    public var tileMemoryBudget: Int {
        context.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
            ? Self.gpuTileMemoryBudget(deviceLocalBytes: context.deviceLocalBytes) : TiledRunner.standardMemoryBudget
    }

    /// One value's buffer, and its fp32 staging buffer, are bound whole by one descriptor:
    /// the device's `arenaBlockLimit` (its `maxStorageBufferRange`, within its largest
    /// allocation), with the fp32 staging of an fp16 value twice the value's size counted.
    public var largestValueBytes: Int { min(context.arenaBlockLimit, ModelLimits.maxTensorElements * 4) }

    /// A GPU's tile budget for its largest device-local heap of `deviceLocalBytes`.
    static func gpuTileMemoryBudget(deviceLocalBytes: Int) -> Int {
        min(max(deviceLocalBytes / 4, TiledRunner.standardMemoryBudget), 16 << 30)
    }

    /// Every operation: external layers run on the host on host-visible buffers.
    public func supports(_ op: Engine.Operation) -> Bool { true }

    /// Whether `op` runs on the device (a shader; a constant is uploaded once at prepare).
    /// External layers, computed by a kernel outside the engine, run on the host.
    public static func runsOnDevice(_ op: Engine.Operation) -> Bool {
        switch op {
        case .convolution, .deconvolution, .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .pixelShuffle, .resize,
             .pad, .crop, .cropLike, .sliceChannels, .concatChannels, .globalAveragePool, .fullyConnected, .upsampleDetail,
             .instanceNorm, .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul:
            return true
        case .external:
            return false
        }
    }

    public func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph {
        // As oneDNN prepares a graph: batch norms folded into the convolutions before them,
        // activations (PReLU too) fused into them (every convolution shader applies its
        // activation on store: no pass of its own over the output), upscaler tails as one pass.
        var fused = try graph.specialized(for: inputShape).withFoldedChannelAffine().withFusedActivations()
        if subpixelDeconvolutions { fused = fused.withSubpixelDeconvolutions() }
        let specialized = try fused.fusingUpsampleDetailTails(input: inputShape, where: supports)
        try checkSupport(specialized)
        let prepared = try VulkanPrepared(context: context, graph: specialized, input: inputShape, plan: memoryPlan, storage: precision == .fp16 ? .fp16 : .fp32,
                                         blockLimit: arenaBlockLimit, pointwiseGEMM: pointwiseGEMM, winograd: winograd,
                                         winogradBlocked: winogradBlocked, deconvolutionPhases: deconvolutionPhases, convolutionRows: convolutionRows, denseRows: denseRows,
                                         implicitGEMM: implicitGEMM, cooperativeGEMM: cooperativeGEMM, cropsInPlace: cropViews, packed: packed, profiling: profiling)
        // The shaders this graph needed, compiled, for the next process (VulkanPipelineCache).
        context.savePipelineCache()
        return prepared
    }
}

/// Which dense 3×3 stride-1 convolutions run by Winograd's method.
enum VulkanWinograd: Sendable, Equatable {
    /// None.
    case never
    /// Those of at least 16 channels in and out.
    case wide
    /// Every one.
    case always
}

/// What the Vulkan backend stores values and weights as; arithmetic is fp32 in both.
public enum VulkanPrecision: String, Sendable, CaseIterable {
    /// 32-bit floats (parity with the reference backend within 1e-4).
    case fp32
    /// IEEE half floats in every buffer (values, weights, biases, slopes), converted to fp32
    /// for the arithmetic and rounded once on store: half the memory traffic on a GPU. Values
    /// past ±65504 become infinite, as in ncnn's fp16 storage.
    case fp16
}

/// Activation codes of the shaders (Shaders/common.glsl).
enum VulkanActivation {
    /// (code, a, b, slopes) for `a`.
    static func encode(_ a: Activation) -> (code: Int32, a: Float, b: Float, slopes: [Float]) {
        switch a {
        case .identity: return (0, 0, 0, [])
        case .relu: return (1, 0, 0, [])
        case .leakyRelu(let s): return (2, s, 0, [])
        case .prelu(let slopes): return (3, 0, 0, slopes)
        case .silu: return (4, 0, 0, [])
        case .sigmoid: return (5, 0, 0, [])
        case .tanh: return (6, 0, 0, [])
        case .clip(let lo, let hi): return (7, lo, hi, [])
        case .elu(let alpha): return (8, alpha, 0, [])
        case .sqrt: return (9, 0, 0, [])
        case .pow(let e): return (10, e, 0, [])
        }
    }
}

extension BinaryKind {
    /// The shaders' code (binary.comp, scalar.comp).
    var vulkanCode: Int32 {
        switch self {
        case .add: return 0
        case .sub: return 1
        case .mul: return 2
        case .div: return 3
        case .max: return 4
        case .min: return 5
        case .pow: return 6
        }
    }
}
