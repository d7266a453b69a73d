package import MediaIO

/// The limits of a run that reach the models it loads: the number format they compute in,
/// the memory their tiles may use and the largest picture they read (a colour guide's
/// references). Given to each model when it is made, never read from process-wide state, so
/// two runs in one process with other limits load their models each under its own.
package struct ComputeSettings: Sendable, Equatable {
    /// `--precision` (the library's default: fp32).
    package var precision: PrecisionChoice
    /// The tiles' memory budget (`--max-memory`); nil: `TiledRunner.standardMemoryBudget`
    /// with the speed cap on automatic tiles.
    package var memoryBudget: Int?
    /// The largest picture, in pixels, a model reads (`--max-pixels`).
    package var maxPixels: Int

    /// Settings; each one left out is the library's default.
    package init(precision: PrecisionChoice = .fp32, memoryBudget: Int? = nil, maxPixels: Int = MediaLimits.defaultMaxPixels) {
        self.precision = precision
        self.memoryBudget = memoryBudget
        self.maxPixels = maxPixels
    }
}
