internal import Compute
internal import MediaIO

/// The limits of a run that reach the models it loads: the number format they compute in,
/// the memory their tiles may use, the largest picture they read (a colour guide's
/// references), the compiled custom layer library their custom layers may run in and the
/// threads their backends and per-frame loops use. Given
/// to each model when it is made, never read from process-wide state, so two runs in one
/// process with other limits load their models each under its own.
package struct ComputeSettings: Sendable, Equatable {
    /// `--precision` (the library's default: fp32).
    package var precision: PrecisionChoice
    /// The tiles' memory budget (`--max-memory`); nil: the backend's `tileMemoryBudget`
    /// (`TiledRunner.standardMemoryBudget` on CPUs) with the speed cap on automatic tiles.
    package var memoryBudget: Int?
    /// The largest picture, in pixels, a model reads (`--max-pixels`).
    package var maxPixels: Int
    /// The compiled custom layer library (`--custom-layers`) a Core ML model's custom layers
    /// that nothing declares run in; nil: none.
    package var customLayers: String?
    /// How many threads the backends (oneDNN's OpenMP regions, the reference kernels) and the
    /// per-frame loops (colour conversion, resampling, the colour guide) use (`--threads`;
    /// at least 1; default: all cores).
    package var threads: Int
    /// Global average poolings (squeeze-excitation) over the whole picture when it runs in
    /// more than one tile, in statistics passes (`--pooling whole`); otherwise each tile pools
    /// its own part (`--pooling tile`, the default).
    package var wholePicturePooling: Bool
    /// What `auto` stores a catalog upscaler in on Vulkan when a plan pinned it ("fp16",
    /// "fp32"; `RunLimits.vulkanAutoStorage`); nil: the device decides.
    package var vulkanAutoStorage: String?

    /// Settings; each one left out is the library's default.
    package init(precision: PrecisionChoice = .fp32, memoryBudget: Int? = nil, maxPixels: Int = MediaLimits.defaultMaxPixels,
                 customLayers: String? = nil, threads: Int = ComputeThreads.allCores, wholePicturePooling: Bool = false) {
        self.threads = max(1, threads)
        self.wholePicturePooling = wholePicturePooling
        self.precision = precision
        self.memoryBudget = memoryBudget
        self.maxPixels = maxPixels
        self.customLayers = customLayers
    }
}
