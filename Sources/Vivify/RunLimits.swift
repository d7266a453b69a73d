internal import Compute
internal import Engine
internal import EngineDNNL
internal import MediaIO
internal import ModelFormats
import Synchronization
import Models

/// The limits a run computes under: threads, the pixels-per-frame limit, the tiles' memory
/// budget and the convolutions' number format. Each is process-wide
/// state underneath (FFmpeg's decoders, oneDNN and the tiler read it where they run), so the
/// value travels with the run (`RunConfiguration.limits`, the parameters of the image, bench,
/// infer and model-tool entry points) and each library entry point puts it in force with
/// `putInForce()` before it opens or loads anything: the one place those globals are written.
///
/// nil leaves a setting as it is in force: the default, in a process that set none.
public struct RunLimits: Codable, Sendable, Equatable {
    /// Threads for the models and the per-frame compute (`--threads`; default: all cores).
    public var threads: Int?
    /// The largest frame, in pixels, read or made (`--max-pixels`; default
    /// `MediaLimits.defaultMaxPixels`).
    public var maxPixels: Int?
    /// Bytes the model's tiles may use (`--max-memory`); given, it also lifts the speed cap on
    /// automatic tiles. Default: `TiledRunner.standardMemoryBudget` with the cap.
    public var maxMemory: Int?
    /// The number format of the oneDNN convolutions (`--precision`; the library's default is
    /// fp32, the `vivify` command's auto).
    public var precision: PrecisionChoice?
    /// The compiled custom layer library (`--custom-layers`) the Core ML models loaded from
    /// now on may use for custom layers nothing declares (process-wide like the rest; only
    /// this flag sets it, never a model or bundle). nil leaves it as it is.
    public var customLayers: String?

    /// Limits; every one left out stays as it is in force.
    public init(threads: Int? = nil, maxPixels: Int? = nil, maxMemory: Int? = nil, precision: PrecisionChoice? = nil) {
        self.threads = threads
        self.maxPixels = maxPixels
        self.maxMemory = maxMemory
        self.precision = precision
    }

    /// Puts every limit given in force for the rest of the process (the models loaded and the
    /// inputs opened from now on).
    package func putInForce() {
        if let threads { ComputeThreads.set(threads) }
        if let maxPixels { MediaLimits.maxPixels = maxPixels }
        if let maxMemory { TiledRunner.defaultMemoryBudget = maxMemory }
        if let customLayers { CompiledCustomLayers.libraryPath = customLayers }
        if let precision {
            // Models that decide nothing for themselves (the colorizer) run in what an
            // unmeasured model gets: fp32 under `auto`.
            PrecisionChoice.chosen.store(PrecisionChoice.allCases.firstIndex(of: precision)!, ordering: .relaxed)
            DNNLBackend.defaultPrecision = precision.precision(measured: false)
        }
    }

    /// The limits in force now, every one filled in but `maxMemory` (nil while the default
    /// budget holds): `RunLimits.inForce.putInForce()` changes nothing that a run reads.
    package static var inForce: RunLimits {
        RunLimits(threads: ComputeThreads.count, maxPixels: MediaLimits.maxPixels,
                  maxMemory: TiledRunner.memoryBudgetGiven ? TiledRunner.defaultMemoryBudget : nil,
                  precision: PrecisionChoice.inForce)
    }

    /// The pixel limit when none is given (`--max-pixels`): 8K UHD fits.
    package static var defaultMaxPixels: Int { MediaLimits.defaultMaxPixels }

    /// The tiles' memory budget when none is given (`--max-memory`).
    package static var standardMemoryBudget: Int { TiledRunner.standardMemoryBudget }
}

extension PrecisionChoice {
    /// Puts this choice in force for every model loaded from now on; returns the fallback
    /// note, if any. Models that decide nothing for themselves (the colorizer) run in what an
    /// unmeasured model gets: fp32 under `auto`.
    @discardableResult
    package func apply() -> String? {
        RunLimits(precision: self).putInForce()
        return resolved(measured: false).note
    }
}
