internal import MediaIO

/// Generated RGB frames for `vivify bench`: a moving gradient with fine detail, at a fixed
/// size and rate, so the real pipeline can be measured without any file.
final class SyntheticSource: FrameSource {
    let info: MediaInfo
    var copyableStreams: [CopyableStream] { [] }
    var corruptCount: Int { 0 }
    private let total: Int
    private var index = 0

    init(size: FrameSize, frames: Int, rate: Rational = Rational(30, 1)) {
        total = frames
        let video = VideoStreamInfo(width: size.width, height: size.height, pixelFormat: .rgb24, sourcePixelFormatName: "rgb24",
                                    codecName: "generated", timeBase: rate.inverted, frameRate: rate, frameCount: frames,
                                    duration: Double(frames) / rate.doubleValue, color: ColorInfo(primaries: 1, transfer: 13, matrix: 1, range: 2))
        info = MediaInfo(container: "generated", duration: video.duration,
                         streams: [StreamSummary(index: 0, kind: "video", codecName: "generated", duration: video.duration, details: "\(size)")],
                         video: video)
    }

    func read(into frame: inout VideoFrame) throws -> SourceEvent {
        guard index < total else { return .end }
        let w = info.video.width, h = info.video.height
        frame.reshape(format: .rgb24, width: w, height: h)
        let shift = index * 3
        frame.planes[0].withUnsafeMutableBufferPointer { p in
            for y in 0..<h {
                for x in 0..<w {
                    let i = (y * w + x) * 3
                    p[i] = UInt8(truncatingIfNeeded: (x + shift) * 255 / max(w, 1))
                    p[i + 1] = UInt8(truncatingIfNeeded: y * 255 / max(h, 1))
                    p[i + 2] = UInt8(truncatingIfNeeded: ((x ^ y) & 31) * 8)
                }
            }
        }
        frame.pts = Int64(index)
        frame.duration = 1
        frame.timeBase = info.video.timeBase
        frame.color = info.video.color
        frame.sampleAspectRatio = Rational(1, 1)
        index += 1
        return .frame
    }
}

/// A sink that keeps nothing (benchmarks).
final class NullSink: FrameSink {
    var requiredFormat: PixelFormat? { nil }
    var requiredColor: ColorInfo? { nil }
    func write(_ frame: VideoFrame) throws {}
    func copy(_ packet: MediaPacket) throws {}
    func finish() throws {}
}
