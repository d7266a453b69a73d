import Foundation
import XCTest

/// What a new user's trial found unsaid (issue 33): options that do nothing, colour thrown
/// away, files a batch cannot read, a damaged model called missing.
final class TellingTheTruthTests: XCTestCase {
    func testIgnoredOptionsAndDiscardedColourAreSaid() throws {
        let dir = try CLI.tempDir()
        let colour = dir + "/colour.mkv", grey = dir + "/grey.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:d=0.2", "-c:v", "ffv1", colour])
        try CLI.ffmpeg(["-i", colour, "-vf", "format=gray", "-c:v", "ffv1", grey])
        // --saturation without a colorizer, and a negative one: refused, naming the fix.
        var r = try CLI.vivify(["run", colour, dir + "/a.mkv", "--saturation", "1.3"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("Add --colorize"), r.stderr)
        r = try CLI.vivify(["run", colour, dir + "/a.mkv", "--colorize", "--saturation", "-1"])
        XCTAssertEqual(r.code, 64, r.stderr)
        XCTAssertTrue(r.stderr.contains("out of range"), "a value, not 'Missing value': \(r.stderr)")
        // --colorize on colour footage: said once; on grey footage: nothing to say.
        r = try CLI.vivify(["run", colour, dir + "/b.mkv", "--colorize"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertEqual(r.stderr.components(separatedBy: "is in colour").count - 1, 1, r.stderr)
        r = try CLI.vivify(["run", grey, dir + "/c.mkv", "--colorize"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("is in colour"), r.stderr)
        // `bench --colorize` on its own generated frames: not the user's colour, nothing to say.
        r = try CLI.vivify(["bench", "--colorize", "--size", "64x48", "--frames", "2"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertFalse(r.stderr.contains("is in colour"), r.stderr)
    }

    func testBatchesTakeWhatTheyReadAndDamagedModelsAreDamaged() throws {
        let dir = try CLI.tempDir()
        try FileManager.default.createDirectory(atPath: dir + "/in", withIntermediateDirectories: true)
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48", "-frames:v", "1", dir + "/in/a.png"])
        // BMP, TIFF and WebP are read too (stop 48): files that are none of them are named and
        // skipped, the batch goes on, and it ends with the first failure's code.
        for (name, ext) in [("b", "bmp"), ("c", "tif"), ("d", "webp")] { try Data("not a picture".utf8).write(to: URL(fileURLWithPath: dir + "/in/\(name).\(ext)")) }
        try FileManager.default.copyItem(atPath: dir + "/in/a.png", toPath: dir + "/in/e.bmp.png")
        var r = try CLI.vivify(["image", dir + "/in", dir + "/out", "--upscale"])
        XCTAssertEqual(r.code, 66, r.stderr)
        for name in ["b.bmp", "c.tif", "d.webp"] { XCTAssertTrue(r.stderr.contains(name), "\(name) named: \(r.stderr)") }
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/out").sorted(), ["a.png", "e.bmp.png"])
        // A .param that is there but not text: damaged (65), not missing (66).
        try Data([0xFF, 0xFE, 0x00, 0x93, 0x80]).write(to: URL(fileURLWithPath: dir + "/m.param"))
        try Data(count: 16).write(to: URL(fileURLWithPath: dir + "/m.bin"))
        r = try CLI.vivify(["image", dir + "/in/a.png", dir + "/x.png", "--upscale", dir + "/m.param"])
        XCTAssertEqual(r.code, 65, r.stderr)
        XCTAssertTrue(r.stderr.contains("damaged"), r.stderr)
    }

    /// Fetching a catalog model is news, not a warning.
    func testFetchingAModelIsNotAWarning() throws {
        let mirror = CLI.packageRoot.deletingLastPathComponent().appendingPathComponent("shared/models").path
        guard FileManager.default.fileExists(atPath: mirror) else { throw XCTSkip("../shared/models is not beside the checkout") }
        let dir = try CLI.tempDir()
        let clip = dir + "/in.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc=s=64x48:d=0.1", "-c:v", "ffv1", clip])
        let r = try CLI.vivify(["run", clip, dir + "/out.mkv", "--upscale", "waifu2x-photo-2x"],
                               environment: ["VIVIFY_MODELS": dir + "/models", "VIVIFY_MODEL_MIRROR": mirror])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("vivify: fetched model waifu2x-photo-2x"), r.stderr)
        XCTAssertFalse(r.stderr.contains("warning: fetched"), r.stderr)
    }

    /// A file cut short decodes without an error: the run says how many of the declared frames
    /// it found. A Matroska file stores no frame count: the progress line's total comes from
    /// its duration and rate.
    func testTruncatedFilesAndTotalsAreSaid() throws {
        let dir = try CLI.tempDir()
        let full = dir + "/full.mp4", cut = dir + "/cut.mp4", mkv = dir + "/clip.mkv"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30:duration=2", "-c:v", "libx264", "-movflags", "+faststart", full])
        let bytes = try Data(contentsOf: URL(fileURLWithPath: full))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: cut))
        var r = try CLI.vivify(["run", cut, dir + "/o.mkv"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("of the 60 frames its header declares"), r.stderr)
        r = try CLI.vivify(["run", full, dir + "/o2.mkv"])
        XCTAssertFalse(r.stderr.contains("declares"), "a whole file: nothing to say: \(r.stderr)")
        try CLI.ffmpeg(["-i", full, "-c:v", "ffv1", mkv])
        r = try CLI.vivify(["run", mkv, dir + "/o3.mkv"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("frame 60/60"), "a total from the duration: \(r.stderr)")
    }

    /// Two MPEG-TS files joined with `cat`: the timestamps restart, so the file cannot be cut
    /// into resumable segments; it runs in one piece, saying so, every frame kept.
    func testRestartingTimestampsRunInOnePiece() throws {
        let dir = try CLI.tempDir()
        for (name, pattern) in [("a", "testsrc2"), ("b", "testsrc")] {
            try CLI.ffmpeg(["-f", "lavfi", "-i", "\(pattern)=size=160x96:rate=30:duration=1", "-c:v", "libx264", dir + "/\(name).ts"])
        }
        var joined = try Data(contentsOf: URL(fileURLWithPath: dir + "/a.ts"))
        joined.append(try Data(contentsOf: URL(fileURLWithPath: dir + "/b.ts")))
        try joined.write(to: URL(fileURLWithPath: dir + "/ab.ts"))
        let r = try CLI.vivify(["run", dir + "/ab.ts", dir + "/ab.mkv", "--codec", "ffv1"])
        XCTAssertEqual(r.code, 0, r.stderr)
        XCTAssertTrue(r.stderr.contains("processing it in one piece"), r.stderr)
        XCTAssertEqual(CLI.decodedFrames(try CLI.probe(dir + "/ab.mkv")), 60)
    }
}
