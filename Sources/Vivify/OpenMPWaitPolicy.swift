import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The wait policy of oneDNN's OpenMP threads (libgomp). By default libgomp's idle threads
/// spin before they sleep; every pipeline stage that calls oneDNN starts a team of its own, and
/// on a loaded machine the spinning of idle teams took the cores from the working ones: a
/// segmented run (new stage threads, so new teams, for every segment) of the 1950s clip
/// with `--colorize --upscale` took 140–149 s against 55–56 s unsegmented, and 70 s with
/// passive waits (unsegmented unchanged: 54–56 s; `vivify bench` 6.1–7.9 fps against
/// 5.8–5.9). So segmented jobs (`run` of a file job in segments, `work`) wait passively
/// unless the user chose a policy. Other runs keep libgomp's default and their startup time:
/// starting again costs about 0.1–0.3 s, which live and network runs (a listener that must be
/// ready when its sender starts) cannot spare.
package enum OpenMPWaitPolicy {
    /// The variable libgomp reads.
    package static let variable = "OMP_WAIT_POLICY"

    /// Without `OMP_WAIT_POLICY` in the environment, sets it to `passive` and executes this
    /// program again with the same arguments: libgomp read its environment when it was loaded,
    /// before `main`, so only a fresh process image sees the change. Returns (running on as
    /// before) when the variable is set, or when the program cannot be executed again.
    package static func preferPassive() {
        guard getenv(variable) == nil else { return }
        setenv(variable, "passive", 1)
        // Ignored signals stay ignored across exec: until the new image installs its handlers,
        // a signal should end the process (nothing is written yet), not be lost.
        let taken = [SIGINT, SIGTERM, SIGHUP].map { ($0, signal($0, SIG_DFL)) }
        execv("/proc/self/exe", CommandLine.unsafeArgv)
        for (sig, handler) in taken { signal(sig, handler) }
    }
}
