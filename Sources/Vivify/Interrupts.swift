import Dispatch
internal import MediaIO
import SafeFiles
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// One signal policy for every command (issue 33: `image`, `infer`, `join` and `models` had
/// none and died with 143 or 129, leaving temporary files). `install()` runs first in `main`:
/// until a command says it stops cooperatively (`InterruptMonitor`, which `run` and `work`
/// create), SIGINT, SIGTERM and SIGHUP remove every temporary output file in flight
/// (`PartialFile`) and exit with 130, the documented code.
package enum ProcessSignals {
    /// The cooperative handler in force, if any (one signal source per signal, shared).
    private static let handler = Mutex<(@Sendable (Int32) -> Void)?>(nil)
    private static let installed = Atomic<Bool>(false)
    private nonisolated(unsafe) static var sources: [DispatchSourceSignal] = []

    /// Installs the policy (once, before any work).
    package static func install() {
        guard !installed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                if let cooperative = handler.withLock({ $0 }) {
                    cooperative(sig)
                    return
                }
                PartialFile.discardAllInFlight()
                // Said, not only coded: a batch stopped part way looked like one that finished.
                let name = sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "SIGHUP"
                let text = "vivify: interrupted (\(name)): the output being written was not finished and is not written (temporary files removed); outputs already finished are kept (a batch run again with -n does only the rest).\n"
                _ = text.withCString { write(2, $0, strlen($0)) }
                _exit(Int32(VivifyExitCode.interrupted.rawValue))
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Hands signals to `body` from now on (the command finishes a playable file); false when
    /// the policy is not installed (a library caller), so the caller listens itself.
    static func handOver(to body: @escaping @Sendable (Int32) -> Void) -> Bool {
        guard installed.load(ordering: .sequentiallyConsistent) else { return false }
        handler.withLock { $0 = body }
        return true
    }
}

/// Turns SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) into a flag the frame
/// loop checks, so a job can flush its encoder and write the trailer before exiting. A second
/// signal ends the process at once, saying so; one within `duplicateWindow` of the first is the
/// same signal delivered twice (`timeout` and a terminal's Ctrl-C signal the process and its
/// process group) and is ignored.
package final class InterruptMonitor: Sendable {
    private let flag = Atomic<Int32>(0)
    /// When the first signal arrived (`DispatchTime` nanoseconds).
    private let firstAt = Atomic<UInt64>(0)
    private nonisolated(unsafe) var sources: [DispatchSourceSignal] = []
    /// Signals this close after the first count as the same one.
    package static let duplicateWindowNanoseconds: UInt64 = 250_000_000

    /// Starts listening for SIGINT, SIGTERM and SIGHUP.
    package init() {
        let deliver: @Sendable (Int32) -> Void = { [self] sig in
            let now = DispatchTime.now().uptimeNanoseconds
            if self.flag.load(ordering: .sequentiallyConsistent) != 0 {
                // Two signals handled at once on two threads: the other's time may be later
                // than this one's clock reading (or not stored yet: 0 reads as long ago, so a
                // first signal's flag with no time yet is taken as the same signal too).
                let first = self.firstAt.load(ordering: .sequentiallyConsistent)
                if first == 0 || now <= first || now - first < Self.duplicateWindowNanoseconds { return }
                // A second signal: end at once.
                PartialFile.discardAllInFlight()
                let text = "vivify: second signal: stopped at once; the output was not finished and is not written (temporary files removed).\n"
                _ = text.withCString { write(2, $0, strlen($0)) }
                _exit(Int32(VivifyExitCode.interrupted.rawValue))
            }
            self.firstAt.store(now, ordering: .sequentiallyConsistent)
            self.flag.store(sig, ordering: .sequentiallyConsistent)
            // Inputs waiting on a pipe, FIFO or network stop waiting too.
            InputCancellation.cancel()
        }
        if ProcessSignals.handOver(to: deliver) { return }
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { deliver(sig) }
            source.resume()
            sources.append(source)
        }
    }

    /// Whether a signal arrived.
    package var isInterrupted: Bool { flag.load(ordering: .relaxed) != 0 }
}
