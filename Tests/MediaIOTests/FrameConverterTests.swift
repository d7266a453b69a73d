@testable import MediaIO
import XCTest

final class FrameConverterTests: XCTestCase {
    private func gradient(_ w: Int, _ h: Int) -> VideoFrame {
        var f = VideoFrame(format: .rgb24, width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                let i = (y * w + x) * 3
                f.planes[0][i] = UInt8(x * 255 / max(w - 1, 1))
                f.planes[0][i + 1] = UInt8(y * 255 / max(h - 1, 1))
                f.planes[0][i + 2] = UInt8((x + y) * 127 / max(w + h - 2, 1))
            }
        }
        f.color = .bt709
        return f
    }

    func testSameFormatIsAPlainCopy() throws {
        let src = gradient(33, 17)
        var dst = VideoFrame(format: .rgb24, width: 33, height: 17)
        try FrameConverter().convert(src, into: &dst)
        XCTAssertEqual(dst.planes, src.planes)
    }

    func testRGBToYUV444AndBackIsClose() throws {
        let src = gradient(64, 48)
        let converter = FrameConverter()
        var yuv = VideoFrame(format: .yuv444p, width: 64, height: 48)
        yuv.color = .bt709
        try converter.convert(src, into: &yuv)
        XCTAssertEqual(yuv.color.rangeName, "tv")
        XCTAssertTrue(yuv.planes[0].allSatisfy { $0 >= 16 && $0 <= 235 }, "limited-range luma")
        var back = VideoFrame(format: .rgb24, width: 64, height: 48)
        try converter.convert(yuv, into: &back)
        let maxDiff = zip(src.planes[0], back.planes[0]).map { abs(Int($0) - Int($1)) }.max()!
        XCTAssertLessThanOrEqual(maxDiff, 2, "8-bit limited-range 4:4:4 round trip stays within 2 levels")
    }

    /// BT.601 and BT.709 give different luma for saturated red: the matrix really is applied.
    func testMatrixChoiceMatters() throws {
        var red = VideoFrame(format: .rgb24, width: 2, height: 2)
        for i in 0..<4 { red.planes[0][i * 3] = 255 }
        let converter = FrameConverter()
        var y709 = VideoFrame(format: .yuv444p, width: 2, height: 2)
        y709.color = .bt709
        try converter.convert(red, into: &y709)
        var y601 = VideoFrame(format: .yuv444p, width: 2, height: 2)
        y601.color = .bt601
        try converter.convert(red, into: &y601)
        // Y = 16 + 219 * Kr: Kr = 0.2126 (BT.709) → 63, Kr = 0.299 (BT.601) → 81.
        XCTAssertEqual(Int(y709.planes[0][0]), 63, accuracy: 1)
        XCTAssertEqual(Int(y601.planes[0][0]), 81, accuracy: 1)
    }

    func testLanczosResizeKeepsFlatColour() throws {
        var flat = VideoFrame(format: .yuv420p, width: 40, height: 30)
        for p in 0..<3 { for i in flat.planes[p].indices { flat.planes[p][i] = p == 0 ? 120 : 90 } }
        var big = VideoFrame(format: .yuv420p, width: 100, height: 76)
        try FrameConverter(filter: .lanczos).convert(flat, into: &big)
        XCTAssertTrue(big.planes[0].allSatisfy { abs(Int($0) - 120) <= 1 })
        XCTAssertTrue(big.planes[1].allSatisfy { abs(Int($0) - 90) <= 1 })
        XCTAssertEqual(big.planes[1].count, 50 * 38)
    }
}
