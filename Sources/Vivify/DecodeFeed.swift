import Foundation
internal import MediaIO
internal import Tracing

/// The decode side of a job, the pipeline's source: reads frames and copied packets from the
/// source, paces them with `--realtime`, fills the colour tags the source left open, numbers
/// the frames, marks a segment's warm-up frames, and stops after `--max-frames`.
///
/// With `--max-frames`, audio and subtitle packets are held until the video has passed their
/// start, and at the end only those starting before the last frame's end are kept (read on
/// past the last frame, as far as the streams interleave), so the copied streams end with the
/// video (within one audio packet) instead of running on. A packet that ends before the first
/// frame starts (audio leading the video) is dropped.
final class DecodeFeed {
    private let source: FrameSource
    private let input: String
    private let window: SegmentWindow?
    private let timestamps: TimestampLog
    private let shouldStop: () -> Bool
    private let warn: (String) -> Void
    private let pacer: Pacer?
    private let resolvedColor: ColorInfo
    private let assumeMatrix: Bool
    private let maxFrames: Int
    private let trimming: Bool
    /// The tracer, known once the stages are (the decode span is stage 0).
    var tracer: FrameTracer?

    /// The frame read into (reused).
    private var frame: VideoFrame
    private var nextID = 0
    /// `--colorize` replaces a colour source's colour: said once, on the first frame.
    private var checkSourceColour: Bool
    /// Packets held back while trimming, until the video passes their start.
    private var held: [MediaPacket] = []
    private var videoEnd = -Double.infinity
    private var videoStart = Double.infinity
    /// The packets kept past the last frame, once it is read (then nothing else is read).
    private var tail: [MediaPacket]?

    /// A feed of `source`, whose video is `video`, for the run `c` (a segment of it when
    /// `window` is given); colour tags the source leaves open become `resolvedColor`'s.
    init(source: FrameSource, video: VideoStreamInfo, configuration c: RunConfiguration, window: SegmentWindow?,
         resolvedColor: ColorInfo, timestamps: TimestampLog, shouldStop: @escaping () -> Bool, warn: @escaping (String) -> Void) {
        self.source = source
        input = c.input.path
        self.window = window
        self.timestamps = timestamps
        self.shouldStop = shouldStop
        self.warn = warn
        pacer = c.run.realtime ? Pacer(clock: FrameTracer.monotonic) : nil
        self.resolvedColor = resolvedColor
        assumeMatrix = c.input.assumeMatrix != nil
        maxFrames = c.run.maxFrames ?? Int.max
        trimming = c.run.maxFrames != nil
        frame = VideoFrame(format: video.pixelFormat, width: video.width, height: video.height)
        // A colorizer runs (it has guidance, if empty) with no keyframe to give the colour.
        // Not for `bench`'s generated frames, whose colour is the benchmark's, not a user's.
        checkSourceColour = c.stages.colourGuide.map { $0.keyframes.isEmpty } == true && window == nil && c.input.synthetic == nil
    }

    /// The next item for the pipeline, or nil at the end (of the source, of `--max-frames`, or
    /// when asked to stop).
    func next() throws -> JobItem? {
        while trimming, let first = held.first, let s = first.seconds, s < videoEnd {
            held.removeFirst()
            if !beforeVideo(first) { return .packet(first) }
        }
        if tail == nil && trimming && nextID >= maxFrames && !shouldStop() {
            tail = try packetsBeforeVideoEnd()
        }
        if var rest = tail {
            if rest.isEmpty { return nil }
            let p = rest.removeFirst()
            tail = rest
            return .packet(p)
        }
        if shouldStop() || nextID >= maxFrames { return nil }
        return try read()
    }

    /// Reads until a frame or a packet to pass on.
    private func read() throws -> JobItem? {
        let tracer = tracer!
        while true {
            var start = tracer.now()
            switch try source.read(into: &frame) {
            case .end:
                while trimming, !held.isEmpty {
                    let p = held.removeFirst()
                    if !beforeVideo(p) { return .packet(p) }
                }
                return nil
            case .packet(let packet):
                if trimming, (packet.seconds ?? -.infinity) >= videoEnd {
                    held.append(packet)
                    continue
                }
                return .packet(packet)
            case .frame:
                if trimming, let end = frameEnd(frame) {
                    videoEnd = max(videoEnd, end)
                    if let start = frame.seconds { videoStart = min(videoStart, start) }
                }
                if let pacer, let seconds = frame.seconds {
                    // Hold the frame until its presentation time: it "arrives" then.
                    pacer.wait(until: seconds, shouldStop: shouldStop)
                    start = tracer.now()
                }
                fillColour()
                if checkSourceColour {
                    checkSourceColour = false
                    if frame.hasVisibleColour {
                        warn("'\(input)' is in colour: --colorize keeps only its lightness and predicts new colour. Leave --colorize out to keep its colour, or give its colour as --keyframe/--reference.")
                    }
                }
                let id = nextID
                nextID += 1
                timestamps.append(pts: frame.pts, duration: frame.duration)
                tracer.span(stage: 0, id: id, thread: "decode", start: start, end: tracer.now())
                var item = ChainFrame(id: id, frame: frame)
                if let window, let pts = frame.pts, pts < window.startPTS { item.isWarmUp = true }
                return .frame(item)
            }
        }
    }

    /// Past the last frame: the packets held and those read on that start before its end.
    private func packetsBeforeVideoEnd() throws -> [MediaPacket] {
        var kept = held.filter { ($0.seconds ?? .infinity) < videoEnd && !beforeVideo($0) }
        held.removeAll()
        var extraFrames = 0
        readAhead: while extraFrames < 120 {
            switch try source.read(into: &frame) {
            case .end: break readAhead
            case .frame:
                extraFrames += 1
                if let s = frame.seconds, s > videoEnd + 2 { break readAhead }
            case .packet(let p):
                guard let s = p.seconds else { continue }
                if s < videoEnd { if !beforeVideo(p) { kept.append(p) } } else if s > videoEnd + 2 { break readAhead }
            }
        }
        return kept
    }

    /// Puts the assumed matrix on the frame and fills what the source left open with the
    /// explicit rule.
    private func fillColour() {
        if assumeMatrix { frame.color.matrix = resolvedColor.matrix }
        if !frame.color.hasMatrix || !frame.color.hasRange {
            var col = frame.color
            if !col.hasMatrix { col.matrix = resolvedColor.matrix }
            if !col.hasRange { col.range = resolvedColor.range }
            if col.primaries == 2 { col.primaries = resolvedColor.primaries }
            if col.transfer == 2 { col.transfer = resolvedColor.transfer }
            frame.color = col
        }
    }

    private func beforeVideo(_ p: MediaPacket) -> Bool { (p.endSeconds ?? .infinity) <= videoStart }

    private func frameEnd(_ f: VideoFrame) -> Double? {
        guard let s = f.seconds else { return nil }
        return s + Double(f.duration ?? 0) * f.timeBase.doubleValue
    }
}
