import MediaIO
@testable import Vivify
import Foundation
import XCTest

/// `--live-output hold` keeps the source's every timestamp: a frame dropped between two
/// processed ones repeats the earlier, and (the eighth hunt found these lost: 19 or 15
/// frames of 20, the first at 0.1 or 0.5 s, when live mode took a later frame first) frames
/// dropped before the first processed one take that first frame's picture.
final class HoldingWriterTests: XCTestCase {
    /// The frames a writer hands its sink, as written (pts and the picture's first byte).
    private final class Recorder: FrameSink {
        var frames: [(pts: Int64?, mark: UInt8)] = []
        var requiredFormat: PixelFormat? { nil }
        var requiredColor: ColorInfo? { nil }
        func write(_ frame: VideoFrame) throws { frames.append((frame.pts, frame.planes[0][0])) }
        func copy(_ packet: MediaPacket) throws {}
        func finish() throws {}
    }

    private func frame(_ id: Int, mark: UInt8) -> ChainFrame {
        var f = VideoFrame(format: .gray, width: 2, height: 2)
        f.planes[0] = [UInt8](repeating: mark, count: f.planes[0].count)
        f.pts = Int64(id)
        f.duration = 1
        f.timeBase = Rational(1, 10)
        return ChainFrame(id: id, frame: f)
    }

    /// What a writer over `count` source frames hands its sink when frames `processed` (id,
    /// mark) come out of the chain, the others dropped.
    private func written(hold: Bool, count: Int, processed: [(Int, UInt8)]) throws -> (frames: [(pts: Int64?, mark: UInt8)], count: Int) {
        let log = TimestampLog()
        for i in 0..<count { log.append(pts: Int64(i), duration: 1) }
        let sink = Recorder()
        let writer = HoldingWriter(sink: sink, timestamps: log, hold: hold)
        for (id, mark) in processed { try writer.write(frame(id, mark: mark)) }
        try writer.finish(frames: count)
        return (sink.frames, writer.framesWritten)
    }

    func testFramesDroppedBeforeTheFirstProcessedOneTakeIt() throws {
        // Frames 0–2 dropped, 3 processed, 4 dropped, 5 processed, 6–7 dropped.
        let out = try written(hold: true, count: 8, processed: [(3, 30), (5, 50)])
        XCTAssertEqual(out.frames.map(\.pts), (0..<8).map { Int64($0) }, "every source timestamp, from the first")
        XCTAssertEqual(out.frames.map(\.mark), [30, 30, 30, 30, 30, 50, 50, 50])
        XCTAssertEqual(out.count, 8)
    }

    func testWithoutHoldOnlyProcessedFramesAreWritten() throws {
        let out = try written(hold: false, count: 6, processed: [(2, 20), (4, 40)])
        XCTAssertEqual(out.frames.map(\.pts), [2, 4])
        XCTAssertEqual(out.frames.map(\.mark), [20, 40])
    }
}
