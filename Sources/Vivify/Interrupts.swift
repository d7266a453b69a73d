import Dispatch
internal import MediaIO
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Turns SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session) into a flag the frame
/// loop checks, so a job can flush its encoder and write the trailer before exiting. A second
/// signal ends the process at once.
public final class InterruptMonitor: Sendable {
    private let flag = Atomic<Int32>(0)
    private nonisolated(unsafe) var sources: [DispatchSourceSignal] = []

    /// Starts listening for SIGINT, SIGTERM and SIGHUP.
    public init() {
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { [self] in
                self.flag.store(sig, ordering: .sequentiallyConsistent)
                // Inputs waiting on a pipe, FIFO or network stop waiting too.
                InputCancellation.cancel()
                signal(sig, SIG_DFL)
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Whether a signal arrived.
    public var isInterrupted: Bool { flag.load(ordering: .relaxed) != 0 }
}
