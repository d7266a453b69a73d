import CDNNL
import Compute
import Engine
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// oneDNN's OpenMP runtime (libgomp, loaded with libdnnl): its thread count for the calling
/// thread, found at run time so that nothing links libgomp directly.
///
/// oneDNN (built with OpenMP) has no per-engine or per-stream thread count: its primitives
/// open OpenMP parallel regions, which take the `nthreads-var` of the thread that starts
/// them. `omp_set_num_threads` sets that variable for the calling thread only, so the
/// backends call `apply` with their own count (`DNNLBackend.threads`) on the thread that is
/// about to make or run primitives, every time: nothing is set once for the process, and a
/// thread that runs graphs of two backends with other counts gives each its own. (libgomp's
/// pool of worker threads is shared by the process, but how many of them a region uses is
/// the calling thread's setting.)
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
