@testable import MediaIO
import XCTest

final class MediaReaderTests: XCTestCase {
    private func readAll(_ reader: FrameSource) throws -> (frames: [VideoFrame], packets: Int) {
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var frames: [VideoFrame] = []
        var packets = 0
        loop: while true {
            switch try reader.read(into: &frame) {
            case .frame: frames.append(frame)
            case .packet: packets += 1
            case .end: break loop
            }
        }
        return (frames, packets)
    }

    func testDecodesEveryFrameWithStreamTimestamps() throws {
        let path = TestMedia.clip("testsrc-320x180-30fps-audio.mp4")
        let reader = try MediaReader(path: path, outputFormat: .rgb24)
        XCTAssertEqual(reader.info.video.width, 320)
        XCTAssertEqual(reader.info.video.timeBase, Rational(1, 15360))
        XCTAssertEqual(reader.info.video.frameRate, Rational(30, 1))
        XCTAssertEqual(reader.info.video.color.matrixName, "bt709")
        let (frames, packets) = try readAll(reader)
        // The clip has 2 B-frames: only flushing the decoder at EOF yields the last ones.
        XCTAssertEqual(frames.count, 60)
        XCTAssertGreaterThan(packets, 90, "AAC packets handed out for copying")
        XCTAssertEqual(frames.map { $0.pts! }, try TestMedia.framePTS(path))
        XCTAssertTrue(frames.allSatisfy { $0.format == .rgb24 && $0.width == 320 && $0.planes[0].count == 320 * 180 * 3 })
    }

    func testNativeFormatKeepsYUVAndOddSize() throws {
        let reader = try MediaReader(path: TestMedia.clip("odd-161x91-25fps.webm"), copyStreams: false)
        XCTAssertEqual(reader.info.video.pixelFormat, .yuv420p)
        XCTAssertEqual(reader.info.video.color.matrixName, "smpte170m")
        let (frames, _) = try readAll(reader)
        XCTAssertEqual(frames.count, 50)
        XCTAssertEqual(frames[0].planes[1].count, 81 * 46)
    }

    func testRotationSARAndVFRAreKept() throws {
        let rotated = try MediaReader(path: TestMedia.clip("rotated-sar-192x108.mp4"))
        XCTAssertEqual(abs(rotated.info.video.rotation), 90)
        XCTAssertEqual(rotated.info.video.sampleAspectRatio, Rational(4, 3))
        XCTAssertNotNil(rotated.info.video.displayMatrix)

        let vfrPath = TestMedia.clip("vfr-160x90-subs.mkv")
        let vfr = try MediaReader(path: vfrPath, outputFormat: .rgb24)
        let (frames, _) = try readAll(vfr)
        let pts = frames.map { $0.pts! }
        XCTAssertEqual(pts, try TestMedia.framePTS(vfrPath))
        let gaps = Set(zip(pts.dropFirst(), pts).map { $0 - $1 })
        XCTAssertTrue(gaps.contains(100) && gaps.contains(where: { $0 == 33 || $0 == 34 }), "30 fps then 10 fps gaps in ms: \(gaps)")
        XCTAssertTrue(try MediaReader.scanVideoPackets(path: vfrPath).isVariableFrameRate)
        XCTAssertFalse(try MediaReader.scanVideoPackets(path: TestMedia.clip("testsrc-320x180-30fps-audio.mp4")).isVariableFrameRate)
    }

    func testUntaggedSourceStatesItsAssumption() throws {
        let reader = try MediaReader(path: TestMedia.clip("untagged-240x136-24fps.avi"), outputFormat: .rgb24)
        XCTAssertEqual(reader.resolvedColor.matrixName, "smpte170m", "SD height rule")
        XCTAssertFalse(reader.colorAssumptions.isEmpty, "the assumption is reported, not silent")
        let overridden = try MediaReader(path: TestMedia.clip("untagged-240x136-24fps.avi"), outputFormat: .rgb24, matrixOverride: 1)
        XCTAssertEqual(overridden.resolvedColor.matrixName, "bt709")
    }

    func testErrorsNameTheInput() {
        XCTAssertThrowsError(try MediaReader(path: TestMedia.clip("make-media.sh"))) { error in
            let e = error as! MediaError
            XCTAssertEqual(e.kind, .inputUnreadable)
            XCTAssertTrue(e.message.contains("make-media.sh"))
        }
        XCTAssertThrowsError(try MediaReader(path: TestMedia.clip("vfr-subtitles.srt"))) { error in
            XCTAssertEqual((error as! MediaError).kind, .noVideoStream)
        }
    }

    func testDecoderReusesFrameStorage() throws {
        let reader = try MediaReader(path: TestMedia.clip("testsrc-320x180-30fps-audio.mp4"), outputFormat: .rgb24, copyStreams: false)
        var frame = VideoFrame(format: .rgb24, width: 320, height: 180)
        _ = try reader.read(into: &frame)
        let before = frame.planes[0].withUnsafeBufferPointer { $0.baseAddress }
        for _ in 0..<10 { _ = try reader.read(into: &frame) }
        let after = frame.planes[0].withUnsafeBufferPointer { $0.baseAddress }
        XCTAssertEqual(before, after, "planes are refilled in place, not reallocated per frame")
    }
}
