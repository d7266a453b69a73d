import ColorScience
import Foundation
import MediaIO
import ModelCatalog
import Models
import Vivify
import XCTest

/// The processing chain: stages describe their output before frames flow, frames match the
/// description, a stage refuses frames it cannot take, and model stages hand planar float to
/// each other (rounded to 8 bits once, before the sink).
final class ProcessingChainTests: XCTestCase {
    static let historic = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/media/images/historic-bw").path

    /// A YUV 4:2:0 frame with structure.
    static func yuvFrame(width: Int, height: Int) throws -> VideoFrame {
        let rgb = ColorizerTests.greyFrame(width: width, height: height)
        var yuv = VideoFrame(format: .yuv420p, width: width, height: height, color: .bt709)
        try FrameConverter(filter: .bicubic).convert(rgb, into: &yuv)
        return yuv
    }

    func testChainDescribesItsOutputBeforeFramesFlowAndFramesMatchIt() throws {
        let input = FrameDescription(width: 96, height: 54, frameRate: Rational(30, 1), layout: .packed(.yuv420p))
        let specs: [StageSpec] = [.colorize(model: "vivify-color", stabilize: false, saturation: 1), .upscale(model: "2", tile: nil)]
        var chain = try ProcessingChain([ToRGBProcessor()] + specs.map { try ProcessorFactory.make($0, backend: .reference) }, input: input)
        XCTAssertEqual(chain.output, FrameDescription(width: 192, height: 108, frameRate: Rational(30, 1), layout: .planarFloat(channels: 3)))
        try chain.append(OutputConversionProcessor(format: .yuv420p))
        XCTAssertEqual(chain.output.layout, .packed(.yuv420p))
        XCTAssertEqual(chain.stageGroups.map(\.name), ["convert", "colorize", "upscale", "finish"])

        var frame = try Self.yuvFrame(width: 96, height: 54)
        frame.pts = 7
        frame.timeBase = Rational(1, 30)
        let out = try chain.process(ChainFrame(id: 3, frame: frame)) + chain.flush()
        XCTAssertEqual(out.count, 1)
        let video = try XCTUnwrap(out[0].videoFrame)
        XCTAssertEqual(out[0].id, 3)
        XCTAssertEqual([video.width, video.height], [chain.output.width, chain.output.height])
        XCTAssertEqual(video.format, .yuv420p)
        XCTAssertEqual(video.pts, 7)
        XCTAssertEqual(video.timeBase, Rational(1, 30))

        let flops = try chain.flopsPerFrame()
        XCTAssertEqual(Set(flops.keys), ["colorize", "upscale"])
        XCTAssertGreaterThan(flops["upscale"]!, 1e6)
        XCTAssertGreaterThan(flops["colorize"]!, 1e6)
    }

    func testAStageRefusesFramesItCannotTakeAndSaysWhy() throws {
        let input = FrameDescription(width: 64, height: 64, frameRate: Rational(25, 1), layout: .packed(.yuv420p))
        let colorize = try ProcessorFactory.make(.colorize(model: "vivify-color", stabilize: false, saturation: 1), backend: .reference)
        XCTAssertThrowsError(try ProcessingChain([colorize], input: input)) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("colorize") && text.contains("yuv420p") && text.contains("to-RGB"), text)
        }
        // With the conversion in front it is accepted.
        XCTAssertNoThrow(try ProcessingChain([ToRGBProcessor(), colorize], input: input))
    }

    func testResizeAndOutputConversionRoundOnceAndReachTheSinkSize() throws {
        let input = FrameDescription(width: 80, height: 48, frameRate: Rational(24, 1), layout: .packed(.rgb24))
        var chain = try ProcessingChain([try ProcessorFactory.make(.upscale(model: "2", tile: nil), backend: .onednn),
                                         ResizeProcessor(size: FrameSize(width: 100, height: 60))], input: input)
        XCTAssertEqual(chain.output.layout, .packed(.rgb24))
        XCTAssertEqual(chain.output.size, FrameSize(width: 100, height: 60))
        try chain.append(OutputConversionProcessor(format: .yuv444p))
        XCTAssertEqual(chain.stageGroups.map(\.name), ["upscale", "finish"])
        let out = try chain.process(ChainFrame(id: 0, frame: ColorizerTests.greyFrame(width: 80, height: 48)))
        let v = try XCTUnwrap(out.first?.videoFrame)
        XCTAssertEqual([v.width, v.height], [100, 60])
        XCTAssertEqual(v.format, .yuv444p)
    }

    /// Colorize → upscale on real photos: the float hand-over, rounded once at the end, is
    /// closer to the unrounded result than today's 8-bit hand-over between the two models.
    func testFloatHandOverBeatsEightBitHandOver() throws {
        let names = ["1890Surfer.jpg", "1899NycBlizzard.jpg", "1925Girl.jpg"]
        let colorizer = try Colorizer(model: "vivify-color", stabilize: false)
        let upscaler = try Upscaler(model: "2")
        var lines: [String] = []
        var gains: [Double] = []
        for name in names {
            let path = "\(Self.historic)/\(name)"
            guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip("\(path) is missing (../shared/media)") }
            var image = try ImageIO.read(path: path).color.expandedToRGB()
            image = Self.crop(image, 320, 240)
            var rgb = VideoFrame(format: .rgb24, width: 1, height: 1)
            image.store(into: &rgb)
            // Reference: no rounding anywhere.
            var colour = FloatPlanarImage(channels: 3, width: 1, height: 1), exact = colour
            try colorizer.colorize(rgb, into: &colour)
            try upscaler.upscale(colour, into: &exact)
            // The chain: float between the models, one rounding at the end.
            var once = VideoFrame(format: .rgb24, width: 1, height: 1)
            exact.store(into: &once)
            // Before: 8 bits between the models, then 8 bits again.
            var colour8 = VideoFrame(format: .rgb24, width: 1, height: 1), twice = colour8
            try colorizer.colorize(rgb, into: &colour8)
            try UpscaleQualityTests.upscale(upscaler, colour8, into: &twice)
            let pOnce = Self.psnr(once, exact), pTwice = Self.psnr(twice, exact)
            gains.append(pOnce - pTwice)
            lines.append(String(format: "%@: PSNR against the unrounded result %.2f dB (float hand-over) vs %.2f dB (8-bit hand-over)", name, pOnce, pTwice))
        }
        print(lines.joined(separator: "\n"))
        for (g, line) in zip(gains, lines) { XCTAssertGreaterThan(g, 2.0, line) }
    }

    static func crop(_ image: FloatPlanarImage, _ w: Int, _ h: Int) -> FloatPlanarImage {
        let w = min(w, image.width), h = min(h, image.height)
        var out = FloatPlanarImage(channels: image.channels, width: w, height: h)
        for c in 0..<image.channels {
            for y in 0..<h {
                for x in 0..<w {
                    out.data[(c * h + y) * w + x] = image.data[(c * image.height + y) * image.width + x]
                }
            }
        }
        return out
    }

    /// PSNR (8-bit scale) of an rgb24 frame against planar float RGB.
    static func psnr(_ frame: VideoFrame, _ reference: FloatPlanarImage) -> Double {
        let n = frame.width * frame.height
        var se = 0.0
        for i in 0..<n {
            for c in 0..<3 {
                let d = Double(frame.planes[0][3 * i + c]) - Double(reference.data[c * n + i]) * 255
                se += d * d
            }
        }
        return 10 * log10(255 * 255 / (se / Double(3 * n)))
    }

    /// The encoder says which pixel format and colour it takes, so the last conversion is the
    /// chain's traced "finish" stage; what it writes is byte for byte what the encoder's own
    /// conversion wrote (issue 30, item 4). The frames carry BT.601 and the encoder BT.709:
    /// converting with the frames' colour instead would differ.
    func testEncoderConversionIsAChainStageWithTheSameResult() throws {
        let dir = NSTemporaryDirectory() + "vivify-sink-format-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (width, height) = (66, 38)
        var frames: [VideoFrame] = []
        for i in 0..<4 {
            var f = VideoFrame(format: .rgb24, width: width, height: height, color: .bt601)
            for y in 0..<height {
                for x in 0..<width {
                    let p = (y * width + x) * 3
                    f.planes[0][p] = UInt8((x * 255 / width + i * 20) % 256)
                    f.planes[0][p + 1] = UInt8(y * 255 / height)
                    f.planes[0][p + 2] = UInt8((x * y + i * 37) % 256)
                }
            }
            f.pts = Int64(i)
            f.timeBase = Rational(1, 25)
            frames.append(f)
        }
        func description(_ w: Int) -> OutputVideoDescription {
            OutputVideoDescription(pixelFormat: .rgb24, width: w, height: height, frameRate: Rational(25, 1),
                                   timeBase: Rational(1, 25), sampleAspectRatio: Rational(1, 1), color: .bt709)
        }
        func writer(_ name: String, _ settings: EncoderSettings, width w: Int = width) throws -> MediaWriter {
            try MediaWriter(path: dir + "/" + name, targetName: dir + "/" + name, video: description(w), settings: settings, copyStreams: [])
        }
        // Frames an encoder cannot be handed in its own layout are converted by the writer.
        XCTAssertNil(try writer("j.mkv", EncoderSettings(codec: "libx264", pixelFormat: "yuvj420p")).requiredFormat)
        XCTAssertEqual(try writer("odd.mkv", EncoderSettings(codec: "libx264"), width: 65).requiredFormat, .yuv444p)

        let settings = EncoderSettings(codec: "ffv1", pixelFormat: "yuv420p")
        let inside = try writer("inside.mkv", settings)
        for f in frames { try inside.write(f) }
        try inside.finish()

        let staged = try writer("staged.mkv", settings)
        XCTAssertEqual(staged.requiredFormat, .yuv420p)
        XCTAssertEqual(staged.requiredColor, .bt709)
        var chain = try ProcessingChain([], input: FrameDescription(width: width, height: height, frameRate: Rational(25, 1),
                                                                     layout: .packed(.rgb24)))
        try chain.append(OutputConversionProcessor(format: try XCTUnwrap(staged.requiredFormat), color: staged.requiredColor))
        XCTAssertEqual(chain.stageGroups.map(\.name), ["finish"])
        for (i, f) in frames.enumerated() {
            let out = try XCTUnwrap(try chain.process(ChainFrame(id: i, frame: f)).first?.videoFrame)
            XCTAssertEqual(out.format, .yuv420p)
            try staged.write(out)
        }
        try staged.finish()

        func decoded(_ name: String) throws -> [[[UInt8]]] {
            let reader = try MediaReader(path: dir + "/" + name, copyStreams: false)
            var frame = VideoFrame(format: .yuv420p, width: 1, height: 1), planes: [[[UInt8]]] = []
            while true {
                switch try reader.read(into: &frame) {
                case .end: return planes
                case .packet: continue
                case .frame: planes.append(frame.planes)
                }
            }
        }
        let a = try decoded("inside.mkv"), b = try decoded("staged.mkv")
        XCTAssertEqual(a.count, 4)
        XCTAssertTrue(a == b, "the chain's conversion wrote other pixels than the encoder's own")
        // The frames' own colour (BT.601) would have given other pixels: the test can tell.
        var other = VideoFrame(format: .yuv420p, width: width, height: height)
        other.color = frames[0].color
        try FrameConverter(filter: .bicubic).convert(frames[0], into: &other)
        XCTAssertNotEqual(other.planes[1], a[0][1])
    }
}
