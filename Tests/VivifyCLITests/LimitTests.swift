import Foundation
import MediaIO
import XCTest

/// Sizes and rates from files and options are bounded before anything is allocated (issue 14):
/// each case of the red-team report is a clear error with the documented exit code, no output
/// file, and `--max-pixels` raises the limit.
final class LimitTests: XCTestCase {
    func testHugeY4MHeaderIsRefusedFromTheHeader() throws {
        let dir = try CLI.tempDir()
        for (header, needle) in [("W1000000 H1000000 F25:1", "1000000x1000000"), ("W65536 H65536 F25:1", "65536x65536")] {
            let path = dir + "/big.y4m"
            // A 2 MB file declaring frames of gigabytes: refused before a frame is allocated.
            var data = Data("YUV4MPEG2 \(header) C420jpeg\nFRAME\n".utf8)
            data.append(Data(count: 2 << 20))
            try data.write(to: URL(fileURLWithPath: path))
            let started = Date()
            let r = try CLI.vivify(["run", path, dir + "/out.mp4"])
            XCTAssertEqual(r.code, 65, r.stderr)
            XCTAssertTrue(r.stderr.contains(needle) && r.stderr.contains("--max-pixels") && r.stderr.contains("big.y4m"), r.stderr)
            XCTAssertLessThan(Date().timeIntervalSince(started), 10)
            XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.mp4"))
        }
    }

    func testAbsurdFrameRatesAreRefused() throws {
        let dir = try CLI.tempDir()
        for f in ["F99999999999:1", "F1:99999999999", "F5000:1"] {
            try "YUV4MPEG2 W16 H16 \(f) C444\nFRAME\n\(String(repeating: "\0", count: 768))".write(toFile: dir + "/r.y4m", atomically: true, encoding: .utf8)
            let r = try CLI.vivify(["run", dir + "/r.y4m", dir + "/out.mp4", "-y"])
            XCTAssertEqual(r.code, 65, "\(f): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains(f) && r.stderr.contains("1000 fps"), r.stderr)
        }
        for rate in ["99999999999", "0", "-5", "5000", "nan"] {
            let r = try CLI.vivify(["run", "-", dir + "/out.mp4", "--input-format", "rgb24", "--size", "16x16", "--rate", rate, "-y"])
            XCTAssertEqual(r.code, 64, "--rate \(rate): \(r.stderr)")
            XCTAssertTrue(r.stderr.contains("--rate"), r.stderr)
        }
    }

    func testLargePNGIsRefusedFromItsHeaderAndMaxPixelsAllowsIt() throws {
        let dir = try CLI.tempDir()
        let png = dir + "/big.png"
        // 8000×8000 of one colour: a 200 KB file that once decoded into gigabytes.
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:s=8000x8000", "-frames:v", "1", "-update", "1", png])
        let refused = try CLI.vivify(["image", png, dir + "/out.png"])
        XCTAssertEqual(refused.code, 65, refused.stderr)
        XCTAssertTrue(refused.stderr.contains("8000x8000") && refused.stderr.contains("big.png") && refused.stderr.contains("--max-pixels"), refused.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out.png"))
        let jpeg = dir + "/big.jpg"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:s=7000x7000", "-frames:v", "1", "-update", "1", jpeg])
        let refusedJPEG = try CLI.vivify(["image", jpeg, dir + "/out.png"])
        XCTAssertEqual(refusedJPEG.code, 65, refusedJPEG.stderr)
        XCTAssertTrue(refusedJPEG.stderr.contains("7000x7000"), refusedJPEG.stderr)
        // Over the limit as a video stream too (a one-frame MJPEG-in-MOV).
        let video = dir + "/big.mov"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "color=c=gray:s=7000x7000:d=0.04", "-c:v", "mjpeg", video])
        let refusedVideo = try CLI.vivify(["run", video, dir + "/out.mp4"])
        XCTAssertEqual(refusedVideo.code, 65, refusedVideo.stderr)
        // MJPEG is sized by decoding, which the limit stops: the message says so.
        XCTAssertTrue(refusedVideo.stderr.contains("big.mov") && refusedVideo.stderr.contains("--max-pixels"), refusedVideo.stderr)
        let allowed = try CLI.vivify(["image", png, dir + "/out.png", "--max-pixels", "64000000"])
        XCTAssertEqual(allowed.code, 0, allowed.stderr)
        let v = CLI.streams(try CLI.probe(dir + "/out.png", countFrames: false), "video")[0]
        XCTAssertEqual(CLI.int(v["width"]), 8000)
    }

    func testAModelScaleBeyondTheLimitIsRefusedBeforeAnyWork() throws {
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mp4"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=5000x4000:d=0.2:r=10", "-c:v", "libx264", "-preset", "ultrafast", clip])
        let existing = dir + "/out.mp4"
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: existing))
        let r = try CLI.vivify(["run", clip, existing, "--upscale", "-y"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("10000x8000") && r.stderr.contains("upscale") && r.stderr.contains("--max-pixels"), r.stderr)
        XCTAssertEqual(try String(contentsOfFile: existing, encoding: .utf8), "keep me", "the existing output is untouched")
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.contains("partial") || $0.contains("incomplete") }, [])
    }

    func testRationalParsingStaysWithin32Bits() {
        XCTAssertEqual(Rational(parsing: "30000/1001"), Rational(30000, 1001))
        XCTAssertEqual(Rational(parsing: "2147483647:1"), Rational(2_147_483_647, 1))
        for text in ["99999999999", "1/99999999999", "2147483648:1", "0", "-1", "1e300", "inf", "nan", ""] {
            XCTAssertNil(Rational(parsing: text), text)
        }
        XCTAssertFalse(MediaLimits.isPlausible(frameRate: Rational(2_147_483_647, 1)))
        XCTAssertTrue(MediaLimits.isPlausible(frameRate: Rational(30000, 1001)))
    }
}
