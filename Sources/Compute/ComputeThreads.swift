import Foundation

/// How many threads Vivify's compute uses when nothing says otherwise: oneDNN's parallel
/// regions and the Swift loops that split a frame into bands (colour conversion, resampling,
/// the fused upscaler tail, the colour guide, the reference kernels). There is no
/// process-wide count to set: each of those takes its count as a value (`threads:`), which a
/// run derives from its own `--threads` (`RunLimits.threadCount`), so two runs in one process
/// each compute with their own.
public enum ComputeThreads {
    /// All cores: the count every `threads:` parameter defaults to.
    public static var allCores: Int { ProcessInfo.processInfo.activeProcessorCount }

    /// `n` threads (at least 1), or all cores for nil.
    public static func count(_ n: Int?) -> Int { n.map { max(1, $0) } ?? allCores }
}
