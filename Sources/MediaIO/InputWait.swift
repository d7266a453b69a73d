import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Set once by the signal handler (SIGINT, SIGTERM, SIGHUP): every wait for input checks it,
/// so a signal ends a run at once even while it is blocked on a FIFO with no writer, an idle
/// pipe or standard input, or a silent network source.
public enum InputCancellation {
    private static let flag = Atomic<Bool>(false)
    /// CLOCK_MONOTONIC nanoseconds of the first `cancel()` (0: none yet).
    private static let cancelledAt = Atomic<Int64>(0)

    /// Asks every input wait to stop.
    public static func cancel() {
        _ = cancelledAt.compareExchange(expected: 0, desired: max(1, monotonicNanoseconds()), ordering: .sequentiallyConsistent)
        flag.store(true, ordering: .sequentiallyConsistent)
    }

    /// Whether `cancel()` was called.
    public static var isCancelled: Bool { flag.load(ordering: .relaxed) }

    /// How long a network output may still take to close after the first signal before its
    /// writes are abandoned: a peer that reads gets the rest of the stream in far less, and one
    /// that stopped reading would otherwise hold the process in a blocked write for ever.
    public static let networkOutputGrace: Double = 1.0

    /// Whether a network output's blocked writes should give up now: a signal came more than
    /// `networkOutputGrace` seconds ago. FFmpeg's network protocols poll their interrupt
    /// callback every 100 ms while a write waits, so the write fails soon after.
    public static var abandonsNetworkOutput: Bool {
        let t = cancelledAt.load(ordering: .relaxed)
        return t != 0 && Double(monotonicNanoseconds() - t) / 1e9 > networkOutputGrace
    }

    private static func monotonicNanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}

/// Opening and reading inputs that may block (FIFOs, pipes, terminals) without blocking the
/// process beyond the reach of a signal: waits are `poll` in 100 ms steps that check
/// `InputCancellation`.
enum InputWait {
    /// Whether `path` is a FIFO.
    static func isFIFO(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFIFO
    }

    /// Opens `path` for reading. A FIFO is opened non-blocking and its writer awaited with
    /// `poll` (Linux reports a FIFO readable once a writer has written or left), so a signal
    /// while no writer comes ends the wait; `blocking` chooses the mode it is left in.
    static func open(_ path: String, name: String, blocking: Bool = true) throws -> Int32 {
        let fifo = isFIFO(path)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | (fifo ? O_NONBLOCK : 0))
        guard fd >= 0 else {
            let reason = String(cString: strerror(errno))
            throw MediaError(.inputUnreadable, "Cannot open \(name): \(reason). Check the path and its permissions.")
        }
        if fifo {
            do {
                try waitReadable(fd, name: name)
            } catch {
                close(fd)
                throw error
            }
            if blocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) }
        }
        return fd
    }

    /// Waits until `fd` has data or its writer left; throws `.interrupted` when a signal asked
    /// the run to stop first.
    static func waitReadable(_ fd: Int32, name: String) throws {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        while true {
            if InputCancellation.isCancelled {
                throw MediaError(.interrupted, "Interrupted while waiting for input from \(name); nothing more was read.")
            }
            let ready = poll(&p, 1, 100)
            if ready > 0 || (ready < 0 && errno != EINTR) { return }
        }
    }
}
