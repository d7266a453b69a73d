import Foundation
import XCTest

/// Vivify decodes every codec and container the brief names, with every frame out.
final class DecodeMatrixTests: XCTestCase {
    func testEveryCodecInItsContainers() throws {
        let dir = try CLI.tempDir()
        let source = ["-f", "lavfi", "-i", "testsrc2=size=128x72:rate=25:duration=0.6"]
        let cases: [(file: String, args: [String])] = [
            ("h264.mp4", ["-c:v", "libx264", "-preset", "ultrafast", "-bf", "2"]),
            ("h264.mov", ["-c:v", "libx264", "-preset", "ultrafast"]),
            ("hevc.mkv", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=none"]),
            ("hevc.mp4", ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", "log-level=none", "-tag:v", "hvc1"]),
            ("vp9.webm", ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8"]),
            ("av1.mkv", ["-c:v", "libsvtav1", "-preset", "12"]),
            ("av1.webm", ["-c:v", "libsvtav1", "-preset", "12"]),
            ("ffv1.mkv", ["-c:v", "ffv1"]),
            ("ffv1.avi", ["-c:v", "ffv1"]),
            ("mpeg4.avi", ["-c:v", "mpeg4", "-q:v", "5"]),
            ("mpeg4.mp4", ["-c:v", "mpeg4", "-q:v", "5"]),
        ]
        for c in cases {
            let path = "\(dir)/\(c.file)"
            try CLI.ffmpeg(source + c.args + ["-pix_fmt", "yuv420p", path])
            let expected = try XCTUnwrap(CLI.decodedFrames(try CLI.probe(path)), c.file)
            XCTAssertEqual(expected, 15, c.file)
            // Decode to raw RGB on stdout: the byte count is the frame count.
            let r = try CLI.vivify(["run", path, "-", "--output-format", "rgb24", "--quiet"])
            XCTAssertEqual(r.code, 0, "\(c.file): \(r.stderr)")
            XCTAssertEqual(r.stdout.count, expected * 128 * 72 * 3, c.file)
            // testsrc2's frame is far from black: the decode produced real pictures.
            let mean = r.stdout.prefix(128 * 72 * 3).reduce(0) { $0 + Int($1) } / (128 * 72 * 3)
            XCTAssertGreaterThan(mean, 30, c.file)
        }
    }
}
