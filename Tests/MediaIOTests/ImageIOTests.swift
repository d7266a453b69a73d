@testable import MediaIO
import Foundation
import XCTest

/// Still-image reading and writing through FFmpeg's real png and mjpeg codecs, checked
/// against ffprobe/ffmpeg and against the shared real photos.
final class ImageIOTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("imageio-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: directory)
    }

    private func temp(_ name: String) -> String { directory.appendingPathComponent(name).path }

    // MARK: Helpers

    /// A deterministic pattern with every channel different, quantised to `levels` steps so
    /// that a lossless round trip must reproduce the floats exactly.
    private func pattern(channels: Int, width: Int, height: Int, levels: Int) -> FloatPlanarImage {
        var image = FloatPlanarImage(channels: channels, width: width, height: height)
        let n = width * height
        for c in 0..<channels {
            for y in 0..<height {
                for x in 0..<width {
                    let v = (x * 7919 + y * 104_729 + c * 15_485_863 + x * y * 31) % (levels + 1)
                    image.data[c * n + y * width + x] = Float(v) / Float(levels)
                }
            }
        }
        // The extremes must survive too.
        image.data[0] = 0
        image.data[n - 1] = 1
        return image
    }

    /// A smooth diagonal gradient, the kind of picture JPEG handles well.
    private func gradient(channels: Int, width: Int, height: Int) -> FloatPlanarImage {
        var image = FloatPlanarImage(channels: channels, width: width, height: height)
        let n = width * height
        for c in 0..<channels {
            for y in 0..<height {
                for x in 0..<width {
                    let t = Float(x) / Float(width - 1), s = Float(y) / Float(height - 1)
                    image.data[c * n + y * width + x] = [0.1 + 0.8 * t, 0.2 + 0.6 * s, 0.9 - 0.7 * (t + s) / 2][c % 3]
                }
            }
        }
        return image
    }

    private func psnr(_ a: FloatPlanarImage, _ b: FloatPlanarImage) -> Double {
        precondition(a.data.count == b.data.count)
        let mse = zip(a.data, b.data).reduce(0.0) { $0 + Double(($1.0 - $1.1) * ($1.0 - $1.1)) } / Double(a.data.count)
        return mse == 0 ? .infinity : 10 * log10(1 / mse)
    }

    /// "width,height,pix_fmt" of the first stream, as ffprobe sees it.
    private func probe(_ path: String) throws -> (width: Int, height: Int, pixelFormat: String) {
        let line = try TestMedia.ffprobe(["-show_entries", "stream=width,height,pix_fmt", "-of", "csv=p=0", path])
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let parts = line.split(separator: ",").map(String.init)
        guard parts.count == 3, let w = Int(parts[0]), let h = Int(parts[1]) else {
            throw XCTSkip("ffprobe gave '\(line)' for \(path)")
        }
        return (w, h, parts[2])
    }

    /// Runs the ffmpeg tool; returns its stdout (raw frames when asked for).
    @discardableResult
    private func ffmpeg(_ args: [String]) throws -> Data {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        p.arguments = ["-v", "error", "-nostdin"] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0, "ffmpeg \(args.joined(separator: " "))")
        return data
    }

    /// The decoded picture as ffmpeg's own tool gives it, as interleaved bytes.
    private func ffmpegDecode(_ path: String, pixelFormat: String) throws -> [UInt8] {
        [UInt8](try ffmpeg(["-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", pixelFormat, "-"]))
    }

    /// Our planes back to interleaved 8-bit samples (colour then alpha).
    private func interleaved8(_ image: StillImage) -> [UInt8] {
        let n = image.width * image.height
        let planes = image.color.data.chunked(n).map(Array.init) + (image.alpha.map { [$0.data] } ?? [])
        var out: [UInt8] = []
        out.reserveCapacity(n * planes.count)
        for i in 0..<n {
            for p in planes { out.append(UInt8((p[i] * 255).rounded())) }
        }
        return out
    }

    private static let sharedImages = TestMedia.packageRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/media/images")

    private func sharedImage(_ relative: String) throws -> String {
        let path = Self.sharedImages.appendingPathComponent(relative).path
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is not present") }
        return path
    }

    private func assertError<T>(_ kind: MediaError.Kind, _ body: @autoclosure () throws -> T, mentions: [String] = [],
                                file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try body(), file: file, line: line) { error in
            guard let e = error as? MediaError else { return XCTFail("not a MediaError: \(error)", file: file, line: line) }
            XCTAssertEqual(e.kind, kind, e.message, file: file, line: line)
            for m in mentions { XCTAssertTrue(e.message.contains(m), "'\(e.message)' should mention '\(m)'", file: file, line: line) }
        }
    }

    // MARK: PNG round trips

    func testPNG8BitRGBRoundTripIsExact() throws {
        let color = pattern(channels: 3, width: 37, height: 23, levels: 255)
        let path = temp("rgb8.png")
        XCTAssertEqual(try ImageIO.write(StillImage(color: color), to: path), [])
        let probed = try probe(path)
        XCTAssertEqual(probed.width, 37)
        XCTAssertEqual(probed.height, 23)
        XCTAssertEqual(probed.pixelFormat, "rgb24")
        let back = try ImageIO.read(path: path)
        XCTAssertEqual(back.bitDepth, 8)
        XCTAssertNil(back.alpha)
        XCTAssertEqual(back.color, color, "every 8-bit value comes back exactly")
        // And ffmpeg's own decoder sees the same bytes.
        XCTAssertEqual(try ffmpegDecode(path, pixelFormat: "rgb24"), interleaved8(back))
    }

    func testPNG16BitRGBRoundTripIsExact() throws {
        let color = pattern(channels: 3, width: 19, height: 11, levels: 65535)
        let path = temp("rgb16.png")
        try ImageIO.write(StillImage(color: color, bitDepth: 16), to: path)
        XCTAssertEqual(try probe(path).pixelFormat, "rgb48be")
        let back = try ImageIO.read(path: path)
        XCTAssertEqual(back.bitDepth, 16)
        XCTAssertEqual(back.color, color, "every 16-bit value comes back exactly")

        // An explicit depth overrides the image's: 8-bit output of the same picture.
        let eight = temp("rgb16-as-8.png")
        try ImageIO.write(back, to: eight, bitDepth: 8)
        XCTAssertEqual(try probe(eight).pixelFormat, "rgb24")
        let reread = try ImageIO.read(path: eight)
        XCTAssertEqual(reread.bitDepth, 8)
        XCTAssertLessThanOrEqual(zip(reread.color.data, color.data).map { abs($0 - $1) }.max()!, 0.5 / 255 + 1e-6)
    }

    func testGreyPNGStaysOneChannelAt8And16Bits() throws {
        for (depth, levels, format) in [(8, 255, "gray"), (16, 65535, "gray16be")] {
            let color = pattern(channels: 1, width: 16, height: 9, levels: levels)
            let path = temp("grey\(depth).png")
            try ImageIO.write(StillImage(color: color, bitDepth: depth), to: path)
            XCTAssertEqual(try probe(path).pixelFormat, format)
            let back = try ImageIO.read(path: path)
            XCTAssertEqual(back.color.channels, 1)
            XCTAssertEqual(back.bitDepth, depth)
            XCTAssertEqual(back.color, color)
        }
    }

    func testPNGKeepsAlphaForRGBAAndGreyAlpha() throws {
        for (channels, depth, format) in [(3, 8, "rgba"), (3, 16, "rgba64be"), (1, 8, "ya8"), (1, 16, "ya16be")] {
            let levels = depth == 8 ? 255 : 65535
            let color = pattern(channels: channels, width: 13, height: 7, levels: levels)
            var alpha = pattern(channels: 1, width: 13, height: 7, levels: levels)
            alpha.data.reverse()
            let path = temp("alpha-\(channels)-\(depth).png")
            try ImageIO.write(StillImage(color: color, alpha: alpha, bitDepth: depth), to: path)
            XCTAssertEqual(try probe(path).pixelFormat, format)
            let back = try ImageIO.read(path: path)
            XCTAssertEqual(back.color, color, format)
            XCTAssertEqual(back.alpha, alpha, format)
            XCTAssertEqual(back.bitDepth, depth)
        }
    }

    func testQuantisingRoundsAndClamps() throws {
        var color = FloatPlanarImage(channels: 1, width: 6, height: 1)
        color.data = [-0.5, 1.5, .nan, .infinity, 0.5 / 255 + 1e-4, 0.5 / 255 - 1e-4]
        let path = temp("clamp.png")
        try ImageIO.write(StillImage(color: color), to: path)
        XCTAssertEqual(try ffmpegDecode(path, pixelFormat: "gray"), [0, 255, 0, 255, 1, 0])
    }

    // MARK: JPEG

    func testJPEGRoundTripIsCloseOnASmoothGradient() throws {
        let color = gradient(channels: 3, width: 64, height: 48)
        let path = temp("gradient.jpg")
        XCTAssertEqual(try ImageIO.write(StillImage(color: color), to: path), [])
        XCTAssertEqual(try probe(path).pixelFormat, "yuvj444p")
        let back = try ImageIO.read(path: path)
        XCTAssertEqual(back.color.channels, 3)
        XCTAssertEqual(back.bitDepth, 8)
        XCTAssertNil(back.alpha)
        let db = psnr(back.color, color)
        XCTAssertGreaterThan(db, 35, "PSNR \(db) dB")

        // Lower quality is smaller and further off, but still the same picture.
        let rough = temp("gradient-q30.jpg")
        try ImageIO.write(StillImage(color: color), to: rough, jpegQuality: 30)
        let roughSize = try FileManager.default.attributesOfItem(atPath: rough)[.size] as! Int
        let fineSize = try FileManager.default.attributesOfItem(atPath: path)[.size] as! Int
        XCTAssertLessThan(roughSize, fineSize)
        XCTAssertGreaterThan(psnr(try ImageIO.read(path: rough).color, color), 25)
    }

    func testJPEGUsesFullRangeBT601BothWays() throws {
        // Pure red in full-range BT.601 is Y 76, Cb 85, Cr 255 (limited range: 81, 90, 240).
        var red = FloatPlanarImage(channels: 3, width: 16, height: 16)
        for i in 0..<256 { red.data[i] = 1 }
        let path = temp("red.jpg")
        try ImageIO.write(StillImage(color: red), to: path)
        let planes = try ffmpegDecode(path, pixelFormat: "yuvj444p")
        XCTAssertEqual(planes.count, 3 * 256)
        for (plane, expected) in [(0, 76), (1, 85), (2, 255)] {
            let values = planes[(plane * 256)..<((plane + 1) * 256)]
            XCTAssertTrue(values.allSatisfy { abs(Int($0) - expected) <= 1 }, "plane \(plane): \(Set(values)) vs \(expected)")
        }
        // And a red JPEG made by ffmpeg's tool reads back as red.
        let theirs = temp("their-red.jpg")
        try ffmpeg(["-f", "lavfi", "-i", "color=c=red:size=16x16", "-frames:v", "1", "-pix_fmt", "yuvj444p", "-qmin", "1", "-q:v", "1", "-y", theirs])
        let back = try ImageIO.read(path: theirs)
        XCTAssertEqual(back.color.channels, 3)
        for (c, expected) in [(0, Float(1)), (1, 0), (2, 0)] {
            let values = back.color.data[(c * 256)..<((c + 1) * 256)]
            XCTAssertTrue(values.allSatisfy { abs($0 - expected) <= 2.5 / 255 }, "channel \(c): \(values.min()!)...\(values.max()!)")
        }
    }

    func testJPEGQualityFollowsLibjpegScale() {
        XCTAssertEqual(ImageIO.jpegQScale(quality: 92), 2)
        XCTAssertEqual(ImageIO.jpegQScale(quality: 95), 1)
        XCTAssertEqual(ImageIO.jpegQScale(quality: 100), 1)
        XCTAssertEqual(ImageIO.jpegQScale(quality: 75), 6)
        XCTAssertEqual(ImageIO.jpegQScale(quality: 50), 12)
        XCTAssertEqual(ImageIO.jpegQScale(quality: 1), 31)
    }

    /// The quantisation tables of a JPEG file, in file order.
    private func quantTables(_ path: String) throws -> [[UInt8]] {
        let d = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        var i = 2, tables: [[UInt8]] = []
        while i + 4 <= d.count, d[i] == 0xFF, d[i + 1] != 0xDA {
            let length = Int(d[i + 2]) << 8 | Int(d[i + 3])
            if d[i + 1] == 0xDB {
                var j = i + 4
                while j + 65 <= i + 2 + length { tables.append(Array(d[(j + 1)..<(j + 65)])); j += 65 }
            }
            i += 2 + length
        }
        return tables
    }

    func testJPEGQualityReachesTheEncoder() throws {
        // Same tables as ffmpeg's tool writes with the quantiser our mapping picks.
        let color = gradient(channels: 3, width: 16, height: 16)
        for (quality, qscale) in [(92, 2), (95, 1), (50, 12)] {
            let ours = temp("q\(quality).jpg"), reference = temp("ref\(quality).png"), theirs = temp("ref\(quality).jpg")
            try ImageIO.write(StillImage(color: color), to: ours, jpegQuality: quality)
            try ImageIO.write(StillImage(color: color), to: reference)
            try ffmpeg(["-i", reference, "-pix_fmt", "yuvj444p", "-qmin", "1", "-q:v", String(qscale), "-y", theirs])
            XCTAssertEqual(try quantTables(ours), try quantTables(theirs), "quality \(quality)")
            XCTAssertFalse(try quantTables(ours).isEmpty)
        }
    }

    func testGreyJPEGRoundTripStaysGrey() throws {
        let color = gradient(channels: 1, width: 33, height: 17)
        let path = temp("grey.jpg")
        try ImageIO.write(StillImage(color: color), to: path)
        let back = try ImageIO.read(path: path)
        XCTAssertEqual(back.color.channels, 1, "neutral chroma is read as grey")
        XCTAssertGreaterThan(psnr(back.color, color), 35)
    }

    func testJPEGDropsAlphaAndDepthWithWarnings() throws {
        let image = StillImage(color: gradient(channels: 3, width: 8, height: 8),
                               alpha: FloatPlanarImage(channels: 1, width: 8, height: 8), bitDepth: 16)
        let warnings = try ImageIO.write(image, to: temp("drop.JPEG"))
        XCTAssertEqual(warnings.count, 2)
        XCTAssertTrue(warnings.contains { $0.contains("alpha") })
        XCTAssertTrue(warnings.contains { $0.contains("8 bits") })
        XCTAssertNil(try ImageIO.read(path: temp("drop.JPEG")).alpha)
    }

    /// Inserts an EXIF APP1 segment holding only an Orientation tag right after the SOI marker.
    private func addingEXIFOrientation(_ orientation: UInt8, to jpeg: Data) -> Data {
        let tiff: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8,  // big-endian TIFF, IFD0 at 8
                             0, 1,                                // one entry
                             0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, orientation, 0, 0,  // Orientation, SHORT, 1
                             0, 0, 0, 0]                          // no next IFD
        let payload = Array("Exif".utf8) + [0, 0] + tiff
        let length = payload.count + 2
        var out = Data(jpeg.prefix(2))
        out.append(contentsOf: [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + payload)
        out.append(jpeg.dropFirst(2))
        return out
    }

    func testEXIFOrientationIsApplied() throws {
        // Grey, so that ffmpeg's own decode is the plain luma plane and compares exactly.
        let color = gradient(channels: 1, width: 24, height: 10)
        var marked = color
        for x in 0..<6 { marked.data[x] = 1 }  // a bright bar at the top left shows the turn
        let plain = temp("plain.jpg")
        try ImageIO.write(StillImage(color: marked), to: plain, jpegQuality: 100)
        let upright = try ImageIO.read(path: plain)
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: plain))
        for orientation in 2...8 {
            let path = temp("o\(orientation).jpg")
            try addingEXIFOrientation(UInt8(orientation), to: jpeg).write(to: URL(fileURLWithPath: path))
            let turned = try ImageIO.read(path: path)
            XCTAssertEqual(turned.color, upright.color.reoriented(exif: orientation))
            XCTAssertEqual(turned.width, orientation >= 5 ? 10 : 24)
            // ffmpeg 5.1 autorotates pure rotations (3, 6, 8); the flips it leaves alone.
            if [3, 6, 8].contains(orientation) {
                let reference = try ffmpegDecode(path, pixelFormat: "gray")
                XCTAssertEqual(interleaved8(turned), reference, "orientation \(orientation) matches ffmpeg's autorotation")
            }
        }
        // Transpose (5) by its definition: stored (x, y) lands at (y, x).
        let five = try ImageIO.read(path: temp("o5.jpg")).color
        for y in 0..<10 { for x in 0..<24 { XCTAssertEqual(five.data[x * 10 + y], upright.color.data[y * 24 + x]) } }
    }

    // MARK: Other PNG layouts made by ffmpeg

    func testPaletteAndOneBitPNGs() throws {
        let palette = temp("palette.png")
        try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=40x30:rate=1:duration=1", "-frames:v", "1",
                    "-filter_complex", "split[a][b];[a]palettegen=max_colors=32[p];[b][p]paletteuse", "-y", palette])
        XCTAssertEqual(try probe(palette).pixelFormat, "pal8")
        let image = try ImageIO.read(path: palette)
        XCTAssertEqual(image.color.channels, 3)
        XCTAssertNil(image.alpha, "an opaque palette has no alpha")
        XCTAssertEqual(image.bitDepth, 8)
        XCTAssertEqual(interleaved8(image), try ffmpegDecode(palette, pixelFormat: "rgb24"))

        let mono = temp("mono.png")
        try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=40x30", "-frames:v", "1", "-pix_fmt", "monob", "-y", mono])
        XCTAssertEqual(try probe(mono).pixelFormat, "monob")
        let bits = try ImageIO.read(path: mono)
        XCTAssertEqual(bits.color.channels, 1)
        XCTAssertTrue(bits.color.data.allSatisfy { $0 == 0 || $0 == 1 })
        XCTAssertEqual(interleaved8(bits), try ffmpegDecode(mono, pixelFormat: "gray"))
    }

    // MARK: Real files

    func testRealRGBAPNGHasPartialAlpha() throws {
        let path = try sharedImage("real-inputs/realesrgan_children-alpha.png")
        let probed = try probe(path)
        let image = try ImageIO.read(path: path)
        XCTAssertEqual(probed.pixelFormat, "rgba")
        XCTAssertEqual(image.width, probed.width)
        XCTAssertEqual(image.height, probed.height)
        XCTAssertEqual(image.color.channels, 3)
        XCTAssertEqual(image.bitDepth, 8)
        let alpha = try XCTUnwrap(image.alpha)
        XCTAssertTrue(alpha.data.contains { $0 < 1 })
        XCTAssertEqual(interleaved8(image), try ffmpegDecode(path, pixelFormat: "rgba"))
    }

    func testReal16BitRGBAPNG() throws {
        let path = try sharedImage("real-inputs/realesrgan_tree_alpha_16bit.png")
        let probed = try probe(path)
        let image = try ImageIO.read(path: path)
        XCTAssertEqual(probed.pixelFormat, "rgba64be")
        XCTAssertEqual(image.width, probed.width)
        XCTAssertEqual(image.height, probed.height)
        XCTAssertEqual(image.bitDepth, 16)
        XCTAssertNotNil(image.alpha)
        // 16-bit values really are finer than 8-bit steps.
        XCTAssertTrue(image.color.data.contains { ($0 * 255).rounded() != $0 * 255 })
        // Writing it back keeps 16 bits and every value.
        let copy = temp("tree.png")
        try ImageIO.write(image, to: copy)
        XCTAssertEqual(try probe(copy).pixelFormat, "rgba64be")
        XCTAssertEqual(try ImageIO.read(path: copy), image)
    }

    func testRealGreyJPEGIsOneChannelAndMatchesFFmpeg() throws {
        let path = try sharedImage("historic-bw/1880Paris.jpg")
        let probed = try probe(path)
        XCTAssertEqual(probed.pixelFormat, "gray")
        let image = try ImageIO.read(path: path)
        XCTAssertEqual(image.width, probed.width)
        XCTAssertEqual(image.height, probed.height)
        XCTAssertEqual(image.color.channels, 1)
        XCTAssertEqual(image.bitDepth, 8)
        XCTAssertEqual(interleaved8(image), try ffmpegDecode(path, pixelFormat: "gray"))
    }

    func testRealColourJPEGIsCloseToFFmpeg() throws {
        let path = try sharedImage("real-inputs/realesrgan_0014.jpg")
        let probed = try probe(path)
        let image = try ImageIO.read(path: path)
        XCTAssertEqual(image.width, probed.width)
        XCTAssertEqual(image.height, probed.height)
        XCTAssertEqual(image.color.channels, 3)
        // Same decoder, same full-range BT.601 matrix: ffmpeg's tool gives the same RGB (it is
        // exact with FFmpeg 5.1; a level of slack allows for other swscale flags' rounding).
        let ours = interleaved8(image), theirs = try ffmpegDecode(path, pixelFormat: "rgb24")
        XCTAssertEqual(ours.count, theirs.count)
        let diffs = zip(ours, theirs).map { abs(Int($0) - Int($1)) }
        let mean = Double(diffs.reduce(0, +)) / Double(diffs.count)
        XCTAssertLessThanOrEqual(diffs.max() ?? 0, 1, "mean difference \(mean) levels")
    }

    // MARK: Errors

    func testUnreadableInputsSayWhy() throws {
        let text = temp("notes.png")
        try "just some text\n".write(toFile: text, atomically: false, encoding: .utf8)
        assertError(.inputUnreadable, try ImageIO.read(path: text), mentions: [text, "not a PNG, JPEG, BMP, TIFF or WebP"])
        assertError(.inputUnreadable, try ImageIO.read(path: temp("missing.png")), mentions: ["No such file"])
        assertError(.inputUnreadable, try ImageIO.read(path: directory.path), mentions: ["not a regular file"])
        let empty = temp("empty.jpg")
        XCTAssertTrue(FileManager.default.createFile(atPath: empty, contents: Data()))
        assertError(.inputUnreadable, try ImageIO.read(path: empty), mentions: ["empty"])

        let gif = temp("anim.gif")
        try ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=16x16", "-frames:v", "1", "-y", gif])
        assertError(.unsupported, try ImageIO.read(path: gif), mentions: ["GIF", "PNG"])

        let good = temp("good.png")
        try ImageIO.write(StillImage(color: pattern(channels: 3, width: 64, height: 64, levels: 255)), to: good)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: good))
        let truncated = temp("truncated.png")
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: truncated))
        assertError(.corruptInput, try ImageIO.read(path: truncated), mentions: [truncated])

        let photo = try sharedImage("real-inputs/realesrgan_0014.jpg")
        let jpeg = try Data(contentsOf: URL(fileURLWithPath: photo))
        let cut = temp("cut.jpg")
        try jpeg.prefix(jpeg.count * 6 / 10).write(to: URL(fileURLWithPath: cut))
        assertError(.corruptInput, try ImageIO.read(path: cut), mentions: [cut, "cut short"])
    }

    func testWriteRejectsUnknownExtensionsAndBadOptions() throws {
        let image = StillImage(color: pattern(channels: 3, width: 4, height: 4, levels: 255))
        assertError(.invalidOptions, try ImageIO.write(image, to: temp("out.bmp")), mentions: [".bmp", ".png", ".jpg", ".jpeg"])
        assertError(.invalidOptions, try ImageIO.write(image, to: temp("out")), mentions: ["no extension"])
        assertError(.invalidOptions, try ImageIO.validateOutputPath("x.webp"), mentions: [".webp"])
        XCTAssertNoThrow(try ImageIO.validateOutputPath("x.JPG"))
        assertError(.invalidOptions, try ImageIO.write(image, to: temp("out.png"), bitDepth: 12), mentions: ["12"])
        assertError(.invalidOptions, try ImageIO.write(image, to: temp("out.jpg"), jpegQuality: 0), mentions: ["1 to 100"])
        let twoChannels = StillImage(color: FloatPlanarImage(channels: 2, width: 4, height: 4))
        assertError(.invalidOptions, try ImageIO.write(twoChannels, to: temp("out.png")), mentions: ["2 colour channels"])
        let badAlpha = StillImage(color: image.color, alpha: FloatPlanarImage(channels: 1, width: 3, height: 4))
        assertError(.invalidOptions, try ImageIO.write(badAlpha, to: temp("out.png")), mentions: ["alpha"])
        assertError(.outputUnwritable, try ImageIO.write(image, to: temp("no/such/dir/out.png")), mentions: ["No such file"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: temp("out.bmp")))
    }

    /// The one header reader: both byte orders, 16/24/32 bits, a signed 32-bit value, and
    /// nil for every read that would reach past the end or start before it.
    func testHeaderBytes() {
        let data: [UInt8] = [0x01, 0x02, 0x03, 0x04, 0xFE, 0xFF, 0xFF, 0xFF]
        data.withUnsafeBufferPointer { b in
            let le = HeaderBytes(b, littleEndian: true), be = HeaderBytes(b, littleEndian: false)
            XCTAssertEqual(le.u16(0), 0x0201)
            XCTAssertEqual(be.u16(0), 0x0102)
            XCTAssertEqual(le.u24(1), 0x040302)
            XCTAssertEqual(be.u24(1), 0x020304)
            XCTAssertEqual(le.u32(0), 0x04030201)
            XCTAssertEqual(be.u32(0), 0x01020304)
            XCTAssertEqual(le.i32(4), -2)
            XCTAssertEqual(le.u32(4), 0xFFFFFFFE)
            XCTAssertEqual(be.i32(4), Int(Int32(bitPattern: 0xFEFFFFFF)))
            XCTAssertNil(le.u32(5))
            XCTAssertNil(le.u16(7))
            XCTAssertNil(le.u16(-1))
            XCTAssertNil(be.u24(Int.max))
            XCTAssertEqual(le.u16(6), 0xFFFF)
        }
        [UInt8]().withUnsafeBufferPointer { XCTAssertNil(HeaderBytes($0, littleEndian: true).u16(0)) }
    }
}

private extension Array {
    /// Consecutive slices of `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
