#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Draws the progress line of a file job on standard error: frames done/total, fps, elapsed
/// time and ETA. On a terminal it is redrawn in place; otherwise one line every few seconds.
package final class ProgressReporter {
    private let total: Int?
    private let interactive: Bool
    private let interval: Double
    private let start: Double
    private var lastDraw: Double
    private let clock: () -> Double
    private let emit: (String) -> Void
    private var drewInPlace = false

    /// Makes a reporter. `clock` returns seconds; `emit` receives each finished line (with
    /// "\r" prefixed and no newline when redrawing in place); `started`: when the work began on
    /// that clock (default: now).
    /// Live sources have no end to estimate: the line shows the rate and the drops instead
    /// of a total and an ETA. `dropped` is asked at each draw.
    private let live: Bool
    private let dropped: () -> Int
    /// Frames an earlier run already did (a resumed job): counted as done, not in the rate.
    private let reused: Int
    /// What is counted ("frame", "image") and the rate's unit ("fps", "images/s").
    private let noun: String, rateUnit: String

    package init(total: Int?, interactive: Bool, interval: Double = 5, clock: @escaping () -> Double = ProgressReporter.now,
                emit: @escaping (String) -> Void = ProgressReporter.writeStderr, live: Bool = false, dropped: @escaping () -> Int = { 0 },
                reused: Int = 0, noun: String = "frame", rateUnit: String = "fps", started: Double? = nil) {
        self.noun = noun
        self.rateUnit = rateUnit
        self.live = live
        self.reused = reused
        self.dropped = dropped
        self.total = live ? nil : total
        self.interactive = interactive
        self.interval = interactive ? 0.25 : interval
        self.clock = clock
        self.emit = emit
        // A reporter made when the first item is done (a batch) counts from when the work began.
        start = started ?? clock()
        lastDraw = clock()
    }

    /// Seconds on a monotonic clock.
    package static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Writes text to standard error unbuffered.
    package static func writeStderr(_ text: String) {
        var t = text
        t.withUTF8 { _ = Glibc.write(2, $0.baseAddress, $0.count) }
    }

    /// Whether standard error is a terminal.
    package static var stderrIsTerminal: Bool { isatty(2) == 1 }

    /// Called after each frame; draws when the interval has passed.
    package func update(framesDone: Int) {
        let t = clock()
        if t - lastDraw < interval { return }
        lastDraw = t
        draw(framesDone: framesDone, now: t)
    }

    /// Draws the final state and ends the line.
    package func finish(framesDone: Int) {
        draw(framesDone: framesDone, now: clock())
        if drewInPlace { emit("\n") }
    }

    /// The progress text for `framesDone` frames at time `now`.
    package func line(framesDone: Int, now: Double) -> String {
        let elapsed = max(now - start, 1e-9)
        let done = max(0, framesDone - reused)
        let fps = Double(done) / elapsed
        var text = "\(noun) \(framesDone)"
        // A total the file under-declared (frames past it) is no total at all.
        let total = self.total.flatMap { $0 > 0 && framesDone <= $0 ? $0 : nil }
        if let total {
            let pct = min(100.0, 100.0 * Double(framesDone) / Double(total))
            text += "/\(total) (\(String(format: "%.0f", pct))%)"
        }
        if reused > 0 { text += "  \(reused) reused" }
        // Slow models: seconds per frame rather than "0.0 fps"; nothing measured yet, no rate.
        if done == 0 {
            text += "  starting"
        } else if fps < 1 {
            text += String(format: "  %.1f s/", 1 / fps) + noun
        } else {
            text += String(format: "  %.1f ", fps) + rateUnit
        }
        if live { text += "  dropped \(dropped())" }
        text += "  elapsed \(Self.clockText(elapsed))"
        // An ETA from one or two frames is a guess: shown once a few have been measured.
        if let total, done >= 3, fps > 0 {
            let remaining = max(0, Double(total - framesDone) / fps)
            text += "  ETA \(Self.clockText(remaining))"
        }
        return text
    }

    private func draw(framesDone: Int, now: Double) {
        let text = line(framesDone: framesDone, now: now)
        if interactive {
            emit("\r\u{1B}[K" + text)
            drewInPlace = true
        } else {
            emit(text + "\n")
        }
    }

    static func clockText(_ seconds: Double) -> String {
        let s = Int(seconds.rounded())
        return String(format: "%d:%02d:%02d", s / 3600, (s / 60) % 60, s % 60)
    }
}
