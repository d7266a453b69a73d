import Foundation
import XCTest

/// y4m and raw frames through standard input and output.
final class PipeTests: XCTestCase {
    /// Every y4m layout we support survives `vivify run - -` byte for byte, header included.
    /// y4m after a model: 4:2:0 when both sides are even, 4:4:4 when not, and --pix-fmt is
    /// honoured (also without a model).
    func testY4MOutputPixelFormatFollowsPixFmtOrDefaultsTo420() throws {
        let dir = try CLI.tempDir()
        let cases: [([String], String, String)] = [
            (["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/a.y4m", "--upscale"], "yuv420p", "640x360"),
            (["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/b.y4m", "--upscale", "--pix-fmt", "yuv444p"], "yuv444p", "640x360"),
            (["run", CLI.clip("testsrc-320x180-30fps-audio.mp4"), dir + "/c.y4m", "--pix-fmt", "yuv444p"], "yuv444p", "320x180"),
            (["run", CLI.clip("untagged-240x136-24fps.avi"), dir + "/d.y4m", "--resize", "161x91", "--colorize"], "yuv444p", "161x91"),
        ]
        for (args, pixfmt, size) in cases {
            let r = try CLI.vivify(args + ["--max-frames", "2", "--quiet"])
            XCTAssertEqual(r.code, 0, r.stderr)
            let v = CLI.streams(try CLI.probe(args[2]), "video")[0]
            XCTAssertEqual(v["pix_fmt"] as? String, pixfmt, "\(args)")
            XCTAssertEqual("\(CLI.int(v["width"]) ?? 0)x\(CLI.int(v["height"]) ?? 0)", size, "\(args)")
            XCTAssertEqual(CLI.decodedFrames(try CLI.probe(args[2])), 2)
        }
    }

    func testY4MRoundTripsAreBitExact() throws {
        let dir = try CLI.tempDir()
        let layouts: [(pixfmt: String, tag: String)] = [("yuv420p", "420"), ("yuv422p", "C422"), ("yuv444p", "C444"), ("gray", "Cmono")]
        for (pixfmt, tag) in layouts {
            let y4m = dir + "/\(pixfmt).y4m"
            try CLI.ffmpeg(["-i", CLI.clip("odd-161x91-25fps.webm"), "-pix_fmt", pixfmt, "-f", "yuv4mpegpipe", y4m])
            let original = try Data(contentsOf: URL(fileURLWithPath: y4m))
            XCTAssertTrue(String(decoding: original.prefix(120), as: UTF8.self).contains(tag))
            let r = try CLI.vivify(["run", "-", "-"], stdinFile: y4m)
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertEqual(r.stdout.count, original.count, pixfmt)
            XCTAssertTrue(r.stdout == original, "\(pixfmt) y4m round trip is bit-exact")
        }
    }

    func testY4MChromaSitingTagsAreKept() throws {
        let dir = try CLI.tempDir()
        let frameBytes = 16 * 8 + 2 * 8 * 4
        for tag in ["420jpeg", "420mpeg2", "420paldv"] {
            var data = Data("YUV4MPEG2 W16 H8 F24000:1001 It A10:11 C\(tag)\n".utf8)
            for i in 0..<3 {
                data.append(contentsOf: Array("FRAME\n".utf8))
                data.append(contentsOf: (0..<frameBytes).map { UInt8(($0 * 7 + i * 31) % 256) })
            }
            let path = dir + "/\(tag).y4m"
            try data.write(to: URL(fileURLWithPath: path))
            let r = try CLI.vivify(["run", "-", "-"], stdinFile: path)
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertTrue(r.stdout == data, "\(tag): header tokens (rate, interlacing, aspect) and frames unchanged")
        }
    }

    func testRawRGBAndGrayRoundTripsAreBitExact() throws {
        let dir = try CLI.tempDir()
        for fmt in ["rgb24", "gray"] {
            let raw = dir + "/in.\(fmt)"
            try CLI.ffmpeg(["-i", CLI.clip("testsrc-320x180-30fps-audio.mp4"), "-pix_fmt", fmt, "-f", "rawvideo", raw])
            let original = try Data(contentsOf: URL(fileURLWithPath: raw))
            let r = try CLI.vivify(["run", "-", "-", "--input-format", fmt, "--size", "320x180", "--rate", "30", "--output-format", fmt], stdinFile: raw)
            XCTAssertEqual(r.code, 0, r.stderr)
            XCTAssertEqual(r.stdout.count, 60 * 320 * 180 * (fmt == "rgb24" ? 3 : 1))
            XCTAssertTrue(r.stdout == original, "\(fmt) raw round trip is bit-exact")
        }
    }

    func testY4MPipeIntoMediaFileAndBack() throws {
        let dir = try CLI.tempDir()
        let y4m = dir + "/in.y4m"
        try CLI.ffmpeg(["-i", CLI.clip("testsrc-320x180-30fps-audio.mp4"), "-f", "yuv4mpegpipe", y4m])
        let mp4 = dir + "/out.mp4"
        let r = try CLI.vivify(["run", "-", mp4, "--quiet", "--preset", "ultrafast"], stdinFile: y4m)
        XCTAssertEqual(r.code, 0, r.stderr)
        let p = try CLI.probe(mp4)
        XCTAssertEqual(CLI.decodedFrames(p), 60)
        XCTAssertEqual(CLI.double(CLI.streams(p, "video")[0]["duration"])!, 2.0, accuracy: 1.0 / 30)
        // And from a media file to y4m on stdout: frame count from the byte length.
        let back = try CLI.vivify(["run", mp4, "-"])
        XCTAssertEqual(back.code, 0, back.stderr)
        let header = String(decoding: back.stdout.prefix(while: { $0 != 0x0A }), as: UTF8.self)
        XCTAssertTrue(header.hasPrefix("YUV4MPEG2 W320 H180 F30:1"), header)
        XCTAssertEqual(back.stdout.count - header.utf8.count - 1, 60 * (6 + 320 * 180 * 3 / 2))
    }

    func testRawRGBFromAVideoFile() throws {
        let r = try CLI.vivify(["run", CLI.clip("untagged-240x136-24fps.avi"), "-", "--output-format", "rgb24"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(r.stdout.count, 24 * 240 * 136 * 3)
        XCTAssertTrue(r.stderr.contains("assuming matrix smpte170m"), "the BT.601 assumption is stated: \(r.stderr)")
    }
}
