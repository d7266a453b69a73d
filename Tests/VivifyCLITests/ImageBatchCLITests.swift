import Foundation
import XCTest

/// `vivify image IN… OUTDIR`: a directory, several files or a glob in one process; each
/// picture equals the one a single `vivify image` run writes; a bad file is named and
/// skipped, the rest are written, and the exit code is the bad file's; inputs are never
/// overwritten; -n leaves existing outputs alone.
final class ImageBatchCLITests: XCTestCase {
    func pixels(_ path: String) throws -> Data {
        try CLI.run("/usr/bin/ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-f", "rawvideo", "-pix_fmt", "rgb24", "-"]).stdout
    }

    func testDirectoryBatchEqualsSingleRunsAndSkipsABadFile() throws {
        let dir = try CLI.tempDir()
        let input = dir + "/in"
        try FileManager.default.createDirectory(atPath: input, withIntermediateDirectories: true)
        // Different sizes, grey and colour, PNG and JPEG, and one file that is not a picture.
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=96x64:rate=1", "-frames:v", "1", input + "/a.png"])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=size=80x48:rate=1", "-frames:v", "1", input + "/b.jpg"])
        try CLI.ffmpeg(["-f", "lavfi", "-i", "mandelbrot=size=64x72:rate=1", "-frames:v", "1", "-pix_fmt", "gray", input + "/c.png"])
        try "not a picture".write(toFile: input + "/broken.png", atomically: true, encoding: .utf8)
        try "notes".write(toFile: input + "/notes.txt", atomically: true, encoding: .utf8)

        let out = dir + "/out"
        let r = try CLI.vivify(["image", input, out, "--colorize", "--upscale"])
        XCTAssertEqual(r.code, 66, "the broken file's code (not readable as a picture): \(r.stderr)")
        XCTAssertTrue(r.stderr.contains("skipped '\(input)/broken.png'"), r.stderr)
        XCTAssertTrue(r.stderr.contains("3 of 4 pictures written"), r.stderr)
        XCTAssertTrue(r.stderr.contains("image 4/4 (100%)"), r.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out).sorted(), ["a.png", "b.jpg", "c.png"])
        for name in ["a.png", "b.jpg", "c.png"] {
            let single = dir + "/single-" + name
            let s = try CLI.vivify(["image", input + "/" + name, single, "--colorize", "--upscale", "--quiet"])
            XCTAssertEqual(s.code, 0, s.stderr)
            let a = try pixels(out + "/" + name), b = try pixels(single)
            XCTAssertEqual(a.count, b.count, name)
            let worst = zip(a, b).map { abs(Int($0) - Int($1)) }.max() ?? 255
            // JPEG: the same pixels encoded twice give the same file; PNG is exact.
            XCTAssertEqual(worst, 0, "\(name): the batch gives the single run's picture")
        }

        // Several files and a glob, --format jpg, an output folder that does not exist yet.
        let glob = try CLI.vivify(["image", input + "/a.png", input + "/[bc].*", dir + "/out2/", "--upscale", "--format", "jpg", "--quiet"])
        XCTAssertEqual(glob.code, 0, glob.stderr)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/out2").sorted(), ["a.jpg", "b.jpg", "c.jpg"])

        // Existing outputs: refused (73) without -y, left alone with -n, replaced with -y.
        let again = try CLI.vivify(["image", input + "/a.png", input + "/c.png", out, "--upscale"])
        XCTAssertEqual(again.code, 73, again.stderr)
        let keep = try CLI.vivify(["image", input + "/a.png", input + "/c.png", out, "--upscale", "-n"])
        XCTAssertEqual(keep.code, 0, keep.stderr)
        XCTAssertTrue(keep.stderr.contains("2 left as they were"), keep.stderr)

        // Never onto an input: writing a folder into itself, even with -y.
        let before = try Data(contentsOf: URL(fileURLWithPath: input + "/a.png"))
        let onto = try CLI.vivify(["image", input + "/a.png", input, "--upscale", "-y"])
        XCTAssertNotEqual(onto.code, 0, onto.stderr)
        XCTAssertEqual(onto.code, 64, onto.stderr)
        XCTAssertTrue(onto.stderr.contains("would be written over its own input"), onto.stderr)
        XCTAssertEqual(try Data(contentsOf: URL(fileURLWithPath: input + "/a.png")), before, "the input is untouched")

        // Two inputs with one output name are refused before any work.
        try FileManager.default.createDirectory(atPath: dir + "/other", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: input + "/a.png", toPath: dir + "/other/a.png")
        let clash = try CLI.vivify(["image", input + "/a.png", dir + "/other/a.png", dir + "/out3", "--upscale"])
        XCTAssertEqual(clash.code, 64, clash.stderr)
        XCTAssertFalse(FileManager.default.fileExists(atPath: dir + "/out3"))
    }
}
