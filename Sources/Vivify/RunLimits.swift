internal import Compute
internal import Engine
internal import MediaIO
internal import ModelFormats
import Models

/// The limits a run computes under: threads, the pixels-per-frame limit, the tiles' memory
/// budget, the convolutions' number format and the custom layer library. The value travels
/// with the run (`RunConfiguration.limits`, the parameters of the image, bench, infer and
/// model-tool entry points) and the library reads each limit from the value it was given: the
/// readers, the models and their tiles get theirs when they are made (`compute`,
/// `pixelLimit`), the thread count included (`threadCount`: the backends set it on the
/// thread that runs their primitives, the banded loops split by it). Nothing is written
/// process-wide, so two runs in one process each compute under their own limits.
///
/// nil is the library's default: all cores, `MediaLimits.defaultMaxPixels`, the standard
/// memory budget with the speed cap on automatic tiles, fp32, no custom layer library.
public struct RunLimits: Codable, Sendable, Equatable {
    /// Threads for the models and the per-frame compute (`--threads`; default: all cores).
    public var threads: Int?
    /// The largest frame, in pixels, read or made (`--max-pixels`; default
    /// `MediaLimits.defaultMaxPixels`).
    public var maxPixels: Int?
    /// Bytes the model's tiles may use (`--max-memory`); given, it also lifts the speed cap on
    /// automatic tiles. Default: the backend's `tileMemoryBudget` with the cap
    /// (`TiledRunner.standardMemoryBudget` on CPUs, a quarter of a discrete GPU's memory).
    public var maxMemory: Int?
    /// The number format of the oneDNN convolutions (`--precision`; the library's default is
    /// fp32, the `vivify` command's auto).
    public var precision: PrecisionChoice?
    /// The compiled custom layer library (`--custom-layers`) the Core ML models of the run
    /// may use for custom layers nothing declares (only this flag sets it, never a model or
    /// bundle). nil: none.
    public var customLayers: String?
    /// Global average poolings (squeeze-excitation: Real-CUGAN, cunet) over the whole picture
    /// when it runs in tiles (`--pooling whole`: statistics passes, the whole frame's result,
    /// about 3× the work); nil or false: each tile pools its own part, as the ncnn tools do.
    public var wholePicturePooling: Bool?

    /// What `auto` stores a catalog upscaler's values in on the Vulkan backend ("fp16" or
    /// "fp32"), pinned by a segmented job's plan so that every worker stores alike whatever
    /// its device; nil: each device decides (`VulkanBackend.automaticPrecision`).
    public var vulkanAutoStorage: String?

    /// Limits; every one left out is the library's default.
    public init(threads: Int? = nil, maxPixels: Int? = nil, maxMemory: Int? = nil, precision: PrecisionChoice? = nil) {
        self.threads = threads
        self.maxPixels = maxPixels
        self.maxMemory = maxMemory
        self.precision = precision
    }

    /// The pixels-per-frame limit: `maxPixels`, or the default.
    package var pixelLimit: Int { maxPixels ?? MediaLimits.defaultMaxPixels }

    /// The precision asked for: `precision`, or the library's fp32.
    package var precisionChoice: PrecisionChoice { precision ?? .fp32 }

    /// The thread count: `threads` (at least 1), or all cores.
    package var threadCount: Int { ComputeThreads.count(threads) }

    /// What the models loaded under these limits compute with: the precision, the tiles'
    /// memory budget, the largest picture they read, the custom layer library and the threads.
    package var compute: ComputeSettings {
        var settings = ComputeSettings(precision: precisionChoice, memoryBudget: maxMemory, maxPixels: pixelLimit, customLayers: customLayers,
                                       threads: threadCount, wholePicturePooling: wholePicturePooling ?? false)
        settings.vulkanAutoStorage = vulkanAutoStorage
        return settings
    }

    /// The threads each of `modelStages` model stages computes with when they run at once, one
    /// frame each (an offline video run's pipeline): without `--threads`, the cores split
    /// evenly between them (at least one each); with it, `--threads` for each, as for any run.
    /// On 2 cores colorize + upscale at 640×360 (`vivify bench --colorize --upscale`, the
    /// built-in models) ran at 40.6–41.4 fps with a thread each against 31.5–33.8 fps with both
    /// on both cores (33.5–34.1 against 25.2–30.2 fps with a `--reference`): two stages of two
    /// threads each on two cores wait on each other's threads.
    package func stageThreads(modelStages: Int) -> Int {
        guard threads == nil, modelStages > 1 else { return threadCount }
        return max(1, threadCount / modelStages)
    }

    /// The bytes the tiles may use under these limits (what `--stats` records).
    package var memoryBudget: Int { maxMemory.map { max($0, TiledRunner.smallestMemoryBudget) } ?? TiledRunner.standardMemoryBudget }

    /// The pixel limit when none is given (`--max-pixels`): 8K UHD fits.
    package static var defaultMaxPixels: Int { MediaLimits.defaultMaxPixels }

    /// The tiles' memory budget when none is given (`--max-memory`).
    package static var standardMemoryBudget: Int { TiledRunner.standardMemoryBudget }
}

extension RunConfiguration {
    /// What the run's models compute with: `limits.compute`, with the cores split between the
    /// model stages where they run at once (`RunLimits.stageThreads`): an offline video run of
    /// more than one model stage without `--threads`. Live runs keep all cores for each stage
    /// (one prediction in flight: latency first).
    package var modelCompute: ComputeSettings {
        var settings = limits.compute
        if run.mode == .offline { settings.threads = limits.stageThreads(modelStages: stages.modelStages.count) }
        return settings
    }
}
