import Foundation
import SafeFiles
internal import MediaIO
public import Pipeline
public import Tracing

/// What flows between the stages of a job: frames, and packets copied through untouched.
enum JobItem: PipelineItem {
    case frame(ChainFrame)
    case packet(MediaPacket)

    var traceID: Int? {
        if case .frame(let e) = self { return e.id }
        return nil
    }
}

extension FrameTracer: PipelineObserver {}

/// Timestamps of every source frame, by sequence number (for `--live-output hold`).
final class TimestampLog: @unchecked Sendable {
    private let lock = NSLock()
    /// Timestamps from frame `base` on; older ones are forgotten once written (`forget`), so
    /// an endless stream keeps only what the pipeline still holds.
    private var values: [(pts: Int64?, duration: Int64?)] = []
    private var base = 0

    func append(pts: Int64?, duration: Int64?) {
        lock.lock(); values.append((pts, duration)); lock.unlock()
    }

    /// Frames logged so far.
    var count: Int { lock.lock(); defer { lock.unlock() }; return base + values.count }

    subscript(i: Int) -> (pts: Int64?, duration: Int64?) {
        lock.lock(); defer { lock.unlock() }; return values[i - base]
    }

    /// Forgets the timestamps of frames before `id` (compacting in chunks, not per frame).
    func forget(before id: Int) {
        lock.lock(); defer { lock.unlock() }
        let n = min(id - base, values.count)
        if n >= 4096 {
            values.removeFirst(n)
            base += n
        }
    }
}

/// Holds frames back until their presentation time (for `--realtime`).
final class Pacer {
    private let clock: () -> Double
    private var origin: (wall: Double, media: Double)?

    init(clock: @escaping () -> Double) { self.clock = clock }

    func wait(until mediaSeconds: Double, shouldStop: () -> Bool) {
        let now = clock()
        guard let o = origin else { origin = (now, mediaSeconds); return }
        let due = o.wall + (mediaSeconds - o.media)
        while clock() < due && !shouldStop() {
            let left = min(due - clock(), 0.05)
            if left > 0 { usleep(UInt32(left * 1e6)) }
        }
    }
}

/// The sink side of a job: writes processed frames and, when holding, repeats the last one
/// at the timestamps of frames dropped before the model.
final class HoldingWriter {
    private let sink: FrameSink
    private let timestamps: TimestampLog
    private let hold: Bool
    private var last: VideoFrame?
    private var next = 0
    private(set) var framesWritten = 0

    init(sink: FrameSink, timestamps: TimestampLog, hold: Bool) {
        self.sink = sink
        self.timestamps = timestamps
        self.hold = hold
    }

    func write(_ frame: ChainFrame) throws {
        guard let video = frame.videoFrame else {
            preconditionFailure("the chain ends in a conversion to packed frames")
        }
        if hold {
            if last == nil {
                // Frames dropped before the first one processed (live mode took a later one
                // first): nothing earlier to repeat, so this frame stands in for them, and the
                // output still starts where the source does and keeps its every timestamp.
                last = video
            }
            try holdUntil(frame.id)
        }
        try sink.write(video)
        framesWritten += 1
        last = video
        next = frame.id + 1
        timestamps.forget(before: next)
    }

    /// The end of the stream: when holding, the last frame is repeated up to the `frames` read.
    func finish(frames: Int) throws {
        if hold { try holdUntil(frames) }
    }

    /// Repeats the last written frame for every source frame before `id` not yet written.
    func holdUntil(_ id: Int) throws {
        guard var held = last else { next = max(next, id); return }
        while next < id {
            let t = timestamps[next]
            held.pts = t.pts
            held.duration = t.duration
            try sink.write(held)
            framesWritten += 1
            next += 1
        }
    }
}

extension VideoFrame {
    /// Whether the picture has colour a viewer would see: more than 1% of its pixels with
    /// chroma beyond a few steps (YUV planes away from 128, RGB channels apart). Grey film
    /// scanned as YUV or RGB has none.
    var hasVisibleColour: Bool {
        let tolerance = 6
        switch format {
        case .gray: return false
        case .rgb24:
            let p = planes[0]
            var coloured = 0, n = 0
            for i in stride(from: 0, to: p.count - 2, by: 3 * 7) {
                let r = Int(p[i]), g = Int(p[i + 1]), b = Int(p[i + 2])
                if max(r, g, b) - min(r, g, b) > tolerance { coloured += 1 }
                n += 1
            }
            return coloured * 100 > max(n, 1)
        case .yuv420p, .yuv422p, .yuv444p:
            guard planes.count >= 3 else { return false }
            var coloured = 0, n = 0
            for i in stride(from: 0, to: min(planes[1].count, planes[2].count), by: 7) {
                if abs(Int(planes[1][i]) - 128) > tolerance || abs(Int(planes[2][i]) - 128) > tolerance { coloured += 1 }
                n += 1
            }
            return coloured * 100 > max(n, 1)
        }
    }
}

/// The warnings of a job: kept for its result, and passed on as they happen.
final class WarningLog {
    private let forward: (String) -> Void
    /// Every warning so far, in order.
    private(set) var all: [String] = []

    init(forward: @escaping (String) -> Void) { self.forward = forward }

    /// Keeps `warning` and passes it on.
    func add(_ warning: String) {
        all.append(warning)
        forward(warning)
    }
}

/// A job's output while it is written: the sink, its writer, and the temporary file beside
/// the target that it goes to (nil for standard output and network URLs).
struct JobOutput {
    let sink: FrameSink
    let writer: HoldingWriter
    let partial: PartialFile?
    /// The path the sink writes.
    let temporary: String
    /// The output as asked for.
    let output: String

    /// Finishes the file (a holding writer repeats its last frame up to the `frames` read) and
    /// puts it in place: at the target when the run is complete (or interrupted on purpose),
    /// beside it as NAME.incomplete.EXT when it failed. Returns where it is.
    func finalize(failed: Bool = false, frames: Int) throws -> String {
        try writer.finish(frames: frames)
        try sink.finish()
        guard let partial else { return output }
        let destination = failed ? partial.incompleteTarget : partial.target
        do {
            try partial.commit(as: destination)
        } catch {
            let failure = MediaError(.outputUnwritable, "Cannot move the finished output into place as '\(destination.path)': \(error.reason).")
            // The target could not be taken (another run wrote it meanwhile, or something not a
            // file appeared there): this run's frames are kept beside it, whole and playable.
            if !failed, (try? partial.commit(as: partial.incompleteTarget)) != nil {
                throw PartialOutputError(underlying: failure, framesWritten: writer.framesWritten, output: partial.incompleteTarget.path)
            }
            throw failure
        }
        return destination.path
    }
}

/// The reason a file-system call failed, as one phrase to go inside a sentence: the POSIX
/// error's own text when there is one ("Read-only file system"), else the description without
/// its closing full stop (Foundation's end in one, which made "read only..").
func failureReason(_ error: any Error) -> String {
    let ns = error as NSError
    if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? NSError, underlying.domain == NSPOSIXErrorDomain {
        return String(cString: strerror(Int32(underlying.code)))
    }
    var text = ns.localizedDescription
    while text.hasSuffix(".") { text.removeLast() }
    return text
}
