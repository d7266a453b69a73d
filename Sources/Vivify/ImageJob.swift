import Foundation
internal import MediaIO
internal import SafeFiles
import Models

/// `vivify image`: one still image through the stages, written to a temporary file beside the
/// target and renamed at the end.
package enum ImageJob {
    /// Reads the configuration's input picture, runs it through the same processing chain as
    /// `vivify run` (colorize and upscale in the configured order; alpha upscaled beside the
    /// colour) and writes its output picture. Returns warnings (e.g. alpha dropped by JPEG).
    /// Of the configuration, the image job reads the input and output paths, the rule for an
    /// existing output, the stages (the models run: a picture has no stabilizer, and is not
    /// resized), the backend (`auto` resolved here) and the limits.
    package static func run(_ configuration: RunConfiguration, log: (String) -> Void = { _ in }) throws -> [String] {
        let backend = try configuration.run.backend.resolved()
        let input = configuration.input.path, output = configuration.output.path
        let stages = configuration.stages, existingOutput = configuration.output.existing
        let limits = configuration.limits
        try ImageIO.validateOutputPath(output)
        // Checked before any work, as for video: never a device or the input, and an existing
        // picture only replaced with -y.
        let url: URL
        switch try OutputGuard.check(output: output, inputs: [input], reads: configuration.readFiles, existing: existingOutput) {
        case .write(let target): url = target
        case .skip: return ["'\(output)' exists; skipped (-n)."]
        }
        let models = try makeModels(stages, backend: backend, limits: limits, log: log)
        let image = try process(try ImageIO.read(path: input, maxPixels: limits.pixelLimit), name: input, models: models,
                                maxPixels: limits.pixelLimit, outputExtension: url.pathExtension, log: log)
        return try save(image, to: url, output: output, replacing: existingOutput == .replace)
    }

    /// The model stages of an image job, made once (a batch reuses them for every picture),
    /// loaded under `limits`.
    static func makeModels(_ stages: [StageSpec], backend: BackendChoice, limits: RunLimits, log: (String) -> Void) throws -> [FrameProcessor] {
        let models = try ProcessorFactory.models(of: stages.map(\.forStills), backend: backend, settings: limits.compute, log: log)
        models.forEach { $0.place(.stills) }
        return models
    }

    /// One picture through `models` (the same chain as `vivify run`, no stage making more than
    /// `maxPixels` pixels); `outputExtension` says whether it will be stored with 8 bits.
    static func process(_ source: StillImage, name input: String, models: [FrameProcessor], maxPixels: Int, outputExtension: String,
                        log: (String) -> Void) throws -> StillImage {
        var image = source
        // 8-bit pictures enter packed, as a decoder gives frames to `vivify run`, so one frame
        // through either command gives the same pixels; 16-bit ones enter as planar float.
        let pixels: FramePixels
        if image.bitDepth == 8 {
            var packed = VideoFrame(format: .rgb24, width: 1, height: 1)
            image.color.store(into: &packed)
            pixels = .packed(packed)
        } else {
            pixels = .planar(image.color)
        }
        var chain = try ProcessingChain(models, input: FrameDescription(
            width: image.width, height: image.height, frameRate: Rational(1, 1), layout: pixels.layout, hasAlpha: image.alpha != nil),
                                     maxPixels: maxPixels)
        // Written with 8 bits: rounded once, in the chain's last stage, as the video sink's frames are.
        let eightBit = image.bitDepth == 8 || ["jpg", "jpeg"].contains(outputExtension.lowercased())
        if eightBit && chain.output.layout != PixelLayout.packed(chain.output.layout.packedFormat) {
            try chain.append(OutputConversionProcessor(format: chain.output.layout.packedFormat))
        }
        let started = Date()
        let timing = FrameTiming(of: VideoFrame(format: .gray, width: 0, height: 0))
        let frames = try chain.process(ChainFrame(id: 0, pixels: pixels, alpha: image.alpha, timing: timing)) + chain.flush()
        guard let result = frames.first else {
            throw MediaError(.invalidOptions, "The stages gave no picture for '\(input)'.")
        }
        // The result holds its own pixels: the stages' frame-sized buffers (a 4× upscale of
        // 1920×1080 keeps 398 MB of float) go before the picture is converted and encoded.
        chain.releaseBuffers()
        switch result.pixels {
        case .packed(let f): image.color.load(from: f)
        case .planar(let p): image.color = p
        }
        image.alpha = result.alpha
        // The upscaler's tiles, or a filter's when there is no upscaler.
        if let upscaler = models.compactMap({ ($0 as? UpscaleProcessor)?.upscaler }).first ?? models.compactMap({ ($0 as? FilterProcessor)?.model }).first {
            let (th, tw) = upscaler.tileInterior(height: chain.input.height, width: chain.input.width)
            let passes = upscaler.passes(height: chain.input.height, width: chain.input.width)
            let tiles = th >= chain.input.height && tw >= chain.input.width ? "whole picture"
                : "tiles \(tw)x\(th)" + (passes > 1 ? ", \(passes) passes" : "")
            log(String(format: "%@: %dx%d with %@ (%d×, %@) in %.2f s", (input as NSString).lastPathComponent,
                       chain.input.width, chain.input.height, upscaler.name, upscaler.scale, tiles, Date().timeIntervalSince(started)))
        }
        return image
    }

    /// Writes `image` beside `url` and renames it into place; returns the writer's warnings.
    static func save(_ image: StillImage, to url: URL, output: String, replacing: Bool = true) throws -> [String] {
        let partial = PartialFile(target: url, keepExtension: true, replacing: replacing)
        do {
            return try partial.write { try ImageIO.write(image, to: $0.path, named: output) }
        } catch let e as PartialFile.Failure {
            throw MediaError(.outputUnwritable, "Cannot move the finished image into place as '\(output)': \(e.reason).")
        }
    }
}
