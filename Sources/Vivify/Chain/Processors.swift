import Foundation
internal import Engine
package import MediaIO
import Models

// The stages of a job, one processor each:
//
//     ToRGB ─▶ Colorize ─▶ Upscale ─▶ Resize ─▶ OutputConversion ─▶ sink
//     packed   rgb24 or    rgb24 or   packed or  planar float or
//     any  ─▶  float  ─▶   float  ─▶  float  ─▶  packed ─▶ the sink's packed format
//
// (Colorize and upscale swap places with --colorize-after; each --filter model runs where it
// stands among them, FilterProcessor.swift.) Model stages hand planar float to each other;
// Resize and OutputConversion round to 8 bits, once.

/// A stage that refuses the frames it would get: names the stage, what it got and the fix.
func layoutError(_ stage: String, _ input: FrameDescription, wants: String) -> MediaError {
    MediaError(.invalidOptions, "The \(stage) stage takes \(wants), but the stage before it gives \(input.layout). Put a to-RGB conversion before it.")
}

/// Decoded frames (YUV, grey) to packed RGB for the models (bicubic swscale, the frame's own
/// matrix and range).
package final class ToRGBProcessor: FrameProcessor {
    package let name = "convert"
    private let converter = FrameConverter(filter: .bicubic)
    private var rgb = VideoFrame(format: .rgb24, width: 1, height: 1)

    /// Makes the stage.
    package init() {}

    package func configure(input: FrameDescription) throws -> FrameDescription {
        var out = input
        if case .packed = input.layout { out.layout = .packed(.rgb24) }
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        guard case .packed(var source) = frame.pixels, source.format != .rgb24 else { return [frame] }
        frame.timing.apply(to: &source)
        rgb.reshape(format: .rgb24, width: source.width, height: source.height)
        try converter.convert(source, into: &rgb)
        var out = frame
        out.pixels = .packed(rgb)
        out.timing.color = rgb.color
        return [out]
    }
}

/// The colorizer as a stage: rgb24 or planar float in, planar float RGB out (same size).
package final class ColorizeProcessor: FrameProcessor {
    package let name = "colorize"
    package var runsModel: Bool { true }
    /// The model.
    package let colorizer: Colorizer
    private var input: FrameDescription?
    private var output = FloatPlanarImage(channels: 3, width: 1, height: 1)
    private var grey = VideoFrame(format: .rgb24, width: 1, height: 1)

    /// Still pictures (`vivify image`): frames have no place in a video, so keyframes and
    /// scene cuts do not apply.
    private var stills = false
    /// Added to frame ids to give the whole input's frame number (a segment's window starts
    /// mid-video; keyframes are numbered in the whole video).
    private var indexOffset = 0
    /// Presentation time of the whole input's first frame, seconds (see `FramePlacement`).
    private var origin: Double?

    /// The `--precision` the colorizer was loaded under.
    package let precision: PrecisionChoice

    /// Wraps a colorizer loaded under `precision`.
    package init(_ colorizer: Colorizer, precision: PrecisionChoice = .fp32) {
        self.colorizer = colorizer
        self.precision = precision
    }

    package func releaseBuffers() {
        output = FloatPlanarImage(channels: 3, width: 1, height: 1)
        grey = VideoFrame(format: .rgb24, width: 1, height: 1)
    }

    package func place(_ placement: FramePlacement) {
        switch placement {
        case .stills:
            (stills, indexOffset, origin) = (true, 0, nil)
            colorizer.guide?.knownShotStart = nil
            colorizer.guide?.shotStarts = nil
            colorizer.guide?.frameTimes = nil
            colorizer.guide?.startsMidVideo = false
        case .video(let first, let o, let shotStart, let starts, let times):
            (stills, indexOffset, origin) = (false, first, o)
            colorizer.guide?.knownShotStart = shotStart
            colorizer.guide?.shotStarts = starts
            colorizer.guide?.frameTimes = times
            colorizer.guide?.startsMidVideo = first > 0
        }
    }

    package func configure(input: FrameDescription) throws -> FrameDescription {
        switch input.layout {
        case .packed(.rgb24), .packed(.gray), .planarFloat(channels: 1), .planarFloat(channels: 3): break
        default: throw layoutError(name, input, wants: "rgb24, gray or planar float")
        }
        self.input = input
        try colorizer.guide?.configure(width: input.width, height: input.height, frameRate: input.frameRate.doubleValue,
                                       sourceWidth: input.sourceWidth, sourceHeight: input.sourceHeight)
        var out = input
        out.layout = .planarFloat(channels: 3)
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        if stills {
            colorizer.position = nil
        } else {
            // Seconds from the whole input's first frame (keyframe times count from there,
            // whatever the file's first timestamp: MPEG-TS starts at 1.4 s and more).
            let rate = input?.frameRate.doubleValue ?? 30, perSecond = rate > 0 ? rate : 30
            let index = frame.id + indexOffset, t = frame.timing
            if let pts = t.pts {
                let stamp = Double(pts) * t.timeBase.doubleValue
                if origin == nil { origin = stamp - Double(index) / perSecond }
                colorizer.position = FramePosition(index: index, seconds: stamp - (origin ?? 0))
            } else {
                colorizer.position = FramePosition(index: index, seconds: Double(index) / perSecond)
            }
        }
        switch frame.pixels {
        case .packed(let f) where f.format == .gray:
            grey.reshape(format: .rgb24, width: f.width, height: f.height)
            f.planes[0].withUnsafeBufferPointer { g in
                grey.planes[0].withUnsafeMutableBufferPointer { rgb in
                    for i in 0..<g.count { rgb[3 * i] = g[i]; rgb[3 * i + 1] = g[i]; rgb[3 * i + 2] = g[i] }
                }
            }
            try colorizer.colorize(grey, into: &output)
        case .packed(let f): try colorizer.colorize(f, into: &output)
        case .planar(let p): try colorizer.colorize(p, into: &output)
        }
        var out = frame
        out.pixels = .planar(output)
        return [out]
    }

    package func warmUp() throws {
        guard let input else { return }
        try colorizer.warmUp(width: input.width, height: input.height)
    }

    /// With the stabilizer on, enough frames for the history a cut started afresh to fall
    /// below 0.5% of its weight (64 at the default strength 0.92); with shots anchoring their
    /// colour, at least `anchorWarmUpSeconds` of frames, so that a segment colours a shot that
    /// began within that time before it as one unsegmented run does (a longer shot is
    /// anchored afresh at the segment's warm-up start).
    package var warmUpFrames: Int {
        guard let s = colorizer.stabilizer, s.strength > 0, s.strength < 1 else { return 0 }
        let stabilizer = Int((log(0.005) / log(Double(s.strength))).rounded(.up))
        guard colorizer.guide?.anchorShots == true else { return stabilizer }
        let rate = input?.frameRate.doubleValue ?? 30
        return max(stabilizer, Int((Self.anchorWarmUpSeconds * (rate.isFinite && rate > 0 ? min(rate, 240) : 30)).rounded(.up)))
    }

    /// How far back a segment starts colouring to find its shot's anchor.
    package static let anchorWarmUpSeconds = 6.0

    package func reset() {
        colorizer.stabilizer?.reset()
        colorizer.guide?.reset()
    }

    package func flopsPerFrame() throws -> Double {
        guard let input else { return 0 }
        let (mw, mh) = colorizer.modelSize(width: input.width, height: input.height)
        let channels = colorizer.spec.input == .l ? 1 : 4
        return 2 * Double(try colorizer.graph.multiplyAdds(input: Shape(c: channels, h: mh, w: mw)))
    }
}

/// The upscaler as a stage: rgb24 or planar float in, planar float out (`scale ×`); an alpha
/// plane is upscaled too (through the bundle's alpha model when it has one).
package final class UpscaleProcessor: FrameProcessor {
    package let name = "upscale"
    package var runsModel: Bool { true }
    /// The model.
    package let upscaler: Upscaler
    private var input: FrameDescription?
    private var output = FloatPlanarImage(channels: 3, width: 1, height: 1)

    /// Wraps a loaded upscaler.
    package init(_ upscaler: Upscaler) { self.upscaler = upscaler }

    package func configure(input: FrameDescription) throws -> FrameDescription {
        let out = try Self.output(of: name, input: input, scale: upscaler.scale)
        self.input = input
        return out
    }

    /// What a model stage that reads RGB or grey (packed or planar float) and enlarges it
    /// `scale` times gives: planar float of the same channels. Throws for other layouts,
    /// naming `stage`.
    static func output(of stage: String, input: FrameDescription, scale: Int) throws -> FrameDescription {
        var out = input
        switch input.layout {
        case .packed(.rgb24): out.layout = .planarFloat(channels: 3)
        case .packed(.gray): out.layout = .planarFloat(channels: 1)
        case .planarFloat(channels: 1), .planarFloat(channels: 3): break
        default: throw layoutError(stage, input, wants: "rgb24, gray or planar float")
        }
        out.width = input.width * scale
        out.height = input.height * scale
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        var out = frame
        switch frame.pixels {
        case .packed(let f) where f.format == .gray:
            var plane = FloatPlanarImage(channels: 1, width: f.width, height: f.height)
            plane.load(from: f)
            out.pixels = .planar(try upscaler.upscale(plane))
        case .packed(let f):
            try upscaler.upscale(f, into: &output)
            out.pixels = .planar(output)
        case .planar(let p) where p.channels == 3:
            try upscaler.upscale(p, into: &output)
            out.pixels = .planar(output)
        case .planar(let p):
            out.pixels = .planar(try upscaler.upscale(p))
        }
        if let alpha = frame.alpha { out.alpha = try upscaler.upscaleAlpha(alpha) }
        return [out]
    }

    package func warmUp() throws {
        guard let input else { return }
        try upscaler.warmUp(width: input.width, height: input.height)
    }

    package func releaseBuffers() {
        output = FloatPlanarImage(channels: 3, width: 1, height: 1)
        upscaler.releaseBuffers()
    }

    package func flopsPerFrame() throws -> Double {
        guard let input else { return 0 }
        return try upscaler.flopsPerFrame(width: input.width, height: input.height)
    }
}

/// Rounds planar float to packed 8 bits (rgb24 or gray): the one quantisation of the chain.
/// The frame as packed 8 bits with its timing: planar float is rounded (the one quantisation
/// of the chain) into `scratch`, packed frames pass as they are.
func packedFrame(_ frame: ChainFrame, scratch: inout VideoFrame) -> VideoFrame {
    switch frame.pixels {
    case .packed(var f):
        frame.timing.apply(to: &f)
        return f
    case .planar(let p):
        p.store(into: &scratch)
        frame.timing.apply(to: &scratch)
        return scratch
    }
}

/// Resizes to a fixed size (lanczos swscale). Planar float is rounded to 8 bits first.
package final class ResizeProcessor: FrameProcessor {
    package let name = "resize"
    /// The output size.
    package let size: FrameSize
    private let resizer = FrameConverter(filter: .lanczos)
    private var packed = VideoFrame(format: .rgb24, width: 1, height: 1)
    private var resized = VideoFrame(format: .rgb24, width: 1, height: 1)

    /// Makes the stage.
    package init(size: FrameSize) { self.size = size }

    package func configure(input: FrameDescription) throws -> FrameDescription {
        if input.hasAlpha {
            throw MediaError(.invalidOptions, "Resizing keeps no alpha plane. Drop the resize, or use a source without alpha.")
        }
        var out = input
        out.width = size.width
        out.height = size.height
        if case .planarFloat(let c) = input.layout { out.layout = .packed(c == 1 ? .gray : .rgb24) }
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        let source = packedFrame(frame, scratch: &packed)
        guard source.width != size.width || source.height != size.height else {
            var out = frame
            out.pixels = .packed(source)
            return [out]
        }
        resized.reshape(format: source.format, width: size.width, height: size.height)
        resized.color = source.color
        try resizer.convert(source, into: &resized)
        var out = frame
        out.pixels = .packed(resized)
        out.timing.color = resized.color
        return [out]
    }
}

/// The last stage before the sink: planar float rounded to 8 bits (once), then converted to
/// the packed format the sink takes (bicubic swscale; the sink's matrix and range when it
/// settled them, as an encoder does, else the frame's).
package final class OutputConversionProcessor: FrameProcessor {
    package let name = "finish"
    /// The format the sink takes.
    package let format: PixelFormat
    /// The colour the sink takes (nil: the frame's).
    package let color: ColorInfo?
    private let converter = FrameConverter(filter: .bicubic)
    private var packed = VideoFrame(format: .rgb24, width: 1, height: 1)
    private var converted = VideoFrame(format: .rgb24, width: 1, height: 1)

    /// Makes the stage.
    package init(format: PixelFormat, color: ColorInfo? = nil) {
        self.format = format
        self.color = color
    }

    package func configure(input: FrameDescription) throws -> FrameDescription {
        var out = input
        out.layout = .packed(format)
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        let source = packedFrame(frame, scratch: &packed)
        var out = frame
        if source.format == format {
            out.pixels = .packed(source)
            return [out]
        }
        converted.reshape(format: format, width: source.width, height: source.height)
        converted.color = source.color
        try converter.convert(source, into: &converted, color: color)
        out.pixels = .packed(converted)
        out.timing.color = converted.color
        return [out]
    }

    package func releaseBuffers() {
        packed = VideoFrame(format: .rgb24, width: 1, height: 1)
        converted = VideoFrame(format: .rgb24, width: 1, height: 1)
    }
}

extension ColorizeProcessor: ModelStage {
    package var modelName: String { colorizer.name }
    package var modelFiles: [String] { colorizer.modelFiles }
    /// What an unmeasured model runs in under the precision asked for, on the backend that
    /// runs it: the colorizer is never calibrated, so int8 asked is fp32 run, and fp16 is
    /// stored on Vulkan only when asked for by name.
    package var computePrecision: String { colorizer.computePrecision }
}

extension UpscaleProcessor: ModelStage {
    package var modelName: String { upscaler.name }
    package var modelFiles: [String] { upscaler.modelFiles }
    package var computePrecision: String { upscaler.computePrecision }
}
