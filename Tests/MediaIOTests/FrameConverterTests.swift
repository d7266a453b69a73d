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

/// Narrow pictures (issue 33): swscale's vector paths read and write past the end of a tight
/// row, so every conversion goes through padded planes. Every width from 1 to 17 (and odd
/// heights) in every direction keeps a flat colour flat. (swscale is not instrumented by ASan:
/// `NarrowFrameTests` catches the heap corruption itself, with glibc's MALLOC_CHECK_.)
final class NarrowFrameConversionTests: XCTestCase {
    func testNarrowFramesConvertInEveryDirection() throws {
        let formats: [PixelFormat] = [.rgb24, .gray, .yuv420p, .yuv422p, .yuv444p]
        for width in 1...17 {
            for height in [1, 3, 8] {
                for from in formats {
                    for to in formats where to != from {
                        var source = VideoFrame(format: from, width: width, height: height, color: ColorInfo(primaries: 1, transfer: 1, matrix: 1, range: 2))
                        // Mid grey in every layout: 128 in RGB and grey, Y 128 / Cb Cr 128 in full-range YUV.
                        for p in 0..<source.planes.count { source.planes[p] = [UInt8](repeating: 128, count: source.planes[p].count) }
                        var out = VideoFrame(format: to, width: width, height: height)
                        out.color = ColorInfo(primaries: 1, transfer: 1, matrix: 1, range: 2)
                        try FrameConverter(filter: .bicubic).convert(source, into: &out)
                        XCTAssertEqual(out.width, width)
                        for (p, plane) in out.planes.enumerated() {
                            XCTAssertEqual(plane.count, to.rowBytes(plane: p, width: width) * to.rows(plane: p, height: height))
                            let (lo, hi) = (plane.min() ?? 0, plane.max() ?? 0)
                            XCTAssertLessThanOrEqual(Int(hi) - Int(lo), 2, "\(from)→\(to) \(width)x\(height) plane \(p): a flat picture stays flat")
                            XCTAssertEqual(Double(lo), 128, accuracy: 3, "\(from)→\(to) \(width)x\(height) plane \(p)")
                        }
                    }
                }
            }
        }
    }
}
