import Foundation
import Synchronization

/// How many threads Vivify's compute uses: oneDNN's parallel regions and the Swift loops that
/// split a frame into bands (colour conversion, resampling, the fused upscaler tail). All
/// cores unless `--threads` set it (once, at start-up).
public enum ComputeThreads {
    private static let chosen = Atomic<Int>(0)

    /// The thread count in force.
    public static var count: Int {
        let n = chosen.load(ordering: .relaxed)
        return n > 0 ? n : ProcessInfo.processInfo.activeProcessorCount
    }

    /// Sets the count (at least 1); 0 goes back to all cores.
    public static func set(_ n: Int) {
        chosen.store(max(0, n), ordering: .relaxed)
    }
}
