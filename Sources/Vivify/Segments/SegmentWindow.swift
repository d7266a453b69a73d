internal import MediaIO

/// The part of an input one segment job processes, by presentation timestamp (the video
/// stream's time base): frames from `warmUpPTS` to `startPTS` only warm up stateful stages,
/// frames from `startPTS` up to (not including) `endPTS` are written.
package struct SegmentWindow: Sendable, Equatable {
    /// First frame processed (warm-up starts here).
    package var warmUpPTS: Int64
    /// First frame written.
    package var startPTS: Int64
    /// First frame of the next segment; nil for the last one.
    package var endPTS: Int64?
    /// Keyframes at or before `warmUpPTS`, latest first, to seek to (empty: read from the start).
    package var seekCandidates: [Int64]
    /// The file the segments are joined into (the encoder writes its headers for it).
    package var finalOutput: String
    /// The whole input's frame number of the frame at `warmUpPTS` (keyframes by number).
    package var firstFrameIndex = 0
    /// The frames it writes, when known (a signal after the last of them stops nothing).
    package var frames: Int?
    /// Timestamp of the whole input's first frame (keyframe times count from it), when known.
    package var originPTS: Int64?
    /// Where the shot of the first frame processed began, seconds from the input's first
    /// frame, when the plan scanned for shots (keyframes and hints carry through a shot).
    package var shotStartSeconds: Double?
    /// Where shots start, seconds from the input's first frame, when the plan scanned for them.
    package var shotStarts: [Double]?

    /// Makes a window.
    package init(warmUpPTS: Int64, startPTS: Int64, endPTS: Int64?, seekCandidates: [Int64], finalOutput: String) {
        self.warmUpPTS = warmUpPTS
        self.startPTS = startPTS
        self.endPTS = endPTS
        self.seekCandidates = seekCandidates
        self.finalOutput = finalOutput
    }
}

/// A media file read from a keyframe before a segment: frames before the window are decoded
/// and dropped, the stream ends at the window's end. When a demuxer's seek lands after the
/// window's first frame (an inexact index), it seeks again from an earlier keyframe.
final class SegmentWindowSource: FrameSource {
    let reader: MediaReader
    private let window: SegmentWindow
    private let input: String
    private var started = false
    private var ended = false

    init(input: InputSettings, window: SegmentWindow, maxPixels: Int) throws {
        guard let reader = try Job.openSource(input, copyStreams: false, maxPixels: maxPixels) as? MediaReader else {
            throw MediaError(.invalidOptions, "Only media files can be cut into segments; '\(input.path)' is a frame stream. Pass --segment-seconds 0.")
        }
        self.reader = reader
        self.window = window
        self.input = input.path
    }

    var info: MediaInfo { reader.info }
    var copyableStreams: [CopyableStream] { [] }
    var corruptCount: Int { reader.corruptCount }

    func read(into frame: inout VideoFrame) throws -> SourceEvent {
        if ended { return .end }
        if !started {
            started = true
            try start(into: &frame)
            if ended { return .end }
            return .frame
        }
        while true {
            switch try reader.read(into: &frame) {
            case .packet: continue
            case .end:
                ended = true
                return .end
            case .frame:
                guard let pts = frame.pts else { continue }
                if pts < window.warmUpPTS { continue }
                if let end = window.endPTS, pts >= end {
                    ended = true
                    return .end
                }
                return .frame
            }
        }
    }

    /// Seeks and decodes up to the window's first frame, which is left in `frame`.
    private func start(into frame: inout VideoFrame) throws {
        let candidates = window.seekCandidates
        var attempt = 0
        while true {
            // No keyframe to seek to: the reader is fresh, at the start of the file.
            let fromStart = candidates.isEmpty
            if !fromStart {
                guard attempt < candidates.count else {
                    throw MediaError(.unsupported, "'\(input)' does not seek precisely enough to decode from \(String(format: "%.3f", reader.info.video.timeBase.doubleValue * Double(window.warmUpPTS))) s. Remux it into .mkv (ffmpeg -i IN -c copy OUT.mkv), or pass --segment-seconds 0 to process it in one piece.")
                }
                try reader.seek(toPTS: candidates[attempt])
                attempt += 1
            }
            var first = true
            retry: while true {
                switch try reader.read(into: &frame) {
                case .packet: continue
                case .end:
                    ended = true
                    return
                case .frame:
                    guard let pts = frame.pts else { continue }
                    // Landed after the window's first frame: go back one more keyframe.
                    if first && pts > window.warmUpPTS && !fromStart { break retry }
                    first = false
                    if pts < window.warmUpPTS { continue }
                    if let end = window.endPTS, pts >= end { ended = true }
                    return
                }
            }
        }
    }
}
