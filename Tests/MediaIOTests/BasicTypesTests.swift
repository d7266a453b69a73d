@testable import MediaIO
import Vivify
import XCTest

final class BasicTypesTests: XCTestCase {
    func testRationalParsing() {
        XCTAssertEqual(Rational(parsing: "30"), Rational(30, 1))
        XCTAssertEqual(Rational(parsing: "30000/1001"), Rational(30000, 1001))
        XCTAssertEqual(Rational(parsing: "25:1"), Rational(25, 1))
        XCTAssertEqual(Rational(parsing: "29.97"), Rational(2997, 100))
        XCTAssertNil(Rational(parsing: "0"))
        XCTAssertNil(Rational(parsing: "-5"))
        XCTAssertNil(Rational(parsing: "abc"))
        XCTAssertEqual(Rational(1, 1000).rescale(1500, to: Rational(1, 90000)), 135_000)
    }

    func testFrameSizeParsing() {
        XCTAssertEqual(FrameSize(parsing: "640x360"), FrameSize(width: 640, height: 360))
        XCTAssertEqual(FrameSize(parsing: "161X91"), FrameSize(width: 161, height: 91))
        XCTAssertNil(FrameSize(parsing: "640"))
        XCTAssertNil(FrameSize(parsing: "0x10"))
        XCTAssertNil(FrameSize(parsing: "axb"))
    }

    func testPlaneGeometryForOddSizes() {
        XCTAssertEqual(PixelFormat.yuv420p.frameBytes(width: 161, height: 91), 161 * 91 + 2 * 81 * 46)
        XCTAssertEqual(PixelFormat.yuv422p.frameBytes(width: 161, height: 91), 161 * 91 + 2 * 81 * 91)
        XCTAssertEqual(PixelFormat.yuv444p.frameBytes(width: 3, height: 2), 18)
        XCTAssertEqual(PixelFormat.rgb24.frameBytes(width: 3, height: 2), 18)
        XCTAssertEqual(PixelFormat.gray.frameBytes(width: 3, height: 2), 6)
    }

    func testColourRuleIsExplicitAndReported() {
        let sd = ColorInfo.unspecified.resolved(height: 480)
        XCTAssertEqual(sd.info.matrixName, "smpte170m")
        XCTAssertEqual(sd.info.rangeName, "tv")
        XCTAssertEqual(sd.assumptions.count, 2)
        let hd = ColorInfo.unspecified.resolved(height: 720)
        XCTAssertEqual(hd.info.matrixName, "bt709")
        let tagged = ColorInfo.bt601.resolved(height: 1080)
        XCTAssertEqual(tagged.info, .bt601, "tags win over the size rule")
        XCTAssertTrue(tagged.assumptions.isEmpty)
    }

    func testFloatPlanarRoundTripIsExact() {
        var frame = VideoFrame(format: .rgb24, width: 7, height: 5)
        for i in frame.planes[0].indices { frame.planes[0][i] = UInt8((i * 37 + 11) % 256) }
        var image = FloatPlanarImage(channels: 3, width: 1, height: 1)
        image.load(from: frame)
        XCTAssertEqual(image.channels, 3)
        XCTAssertEqual(image.data.count, 3 * 35)
        // Planar: the red plane comes first, so the second value is pixel 1's red.
        XCTAssertEqual(image.data[1], Float(frame.planes[0][3]) / 255, accuracy: 1e-7)
        XCTAssertEqual(image.data[35], Float(frame.planes[0][1]) / 255, accuracy: 1e-7)
        XCTAssertTrue(image.data.allSatisfy { $0 >= 0 && $0 <= 1 })
        var back = VideoFrame(format: .gray, width: 1, height: 1)
        image.store(into: &back)
        XCTAssertEqual(back.format, .rgb24)
        XCTAssertEqual(back.planes[0], frame.planes[0])
    }

    func testFloatStoreClampsAndRounds() {
        var image = FloatPlanarImage(channels: 1, width: 3, height: 1)
        image.data = [-0.5, 0.5, 1.7]
        var frame = VideoFrame(format: .gray, width: 3, height: 1)
        image.store(into: &frame)
        XCTAssertEqual(frame.planes[0], [0, 128, 255])
    }

    func testY4MHeaderKeepsTokenOrder() throws {
        let line = Array("YUV4MPEG2 W320 H180 F30:1 Ip A1:1 C420mpeg2 XYSCSS=420MPEG2 XCOLORRANGE=LIMITED".utf8)
        var header = try Y4MHeader(line: line, source: "test")
        XCTAssertEqual(header.value("W"), "320")
        XCTAssertEqual(header.value("C"), "420mpeg2")
        XCTAssertEqual(header.line, String(decoding: line, as: UTF8.self) + "\n")
        header.set("W", "640")
        XCTAssertTrue(header.line.hasPrefix("YUV4MPEG2 W640 H180"))
        XCTAssertThrowsError(try Y4MHeader(line: Array("RIFF....".utf8), source: "x"))
        XCTAssertEqual(Y4MHeader.pixelFormat(colorTag: "420paldv"), .yuv420p)
        XCTAssertEqual(Y4MHeader.pixelFormat(colorTag: "mono"), .gray)
        XCTAssertNil(Y4MHeader.pixelFormat(colorTag: "420p10"))
    }
}
