import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
