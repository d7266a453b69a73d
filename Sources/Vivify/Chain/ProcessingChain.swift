package import MediaIO
internal import Pipeline
import Models

/// One stage of a job as configuration: what to build, before any model is loaded.
package enum StageSpec: Sendable, Equatable {
    /// Decoded frames to packed RGB.
    case toRGB
    /// A colorizer (built-in name, bundle or path), with its stabilizer, saturation and
    /// guidance (references, keyframes, hints), and whether shots anchor their colour (with
    /// the stabilizer).
    case colorize(model: String, stabilize: Bool, saturation: Float, guide: ColourGuideSpec = ColourGuideSpec(), anchor: Bool = true)
    /// An upscaler (built-in or catalog name, bundle or path) with its tile size.
    case upscale(model: String, tile: Int?)
    /// An image-to-image model (`--filter`: style transfer, denoise, deblock; any scale) with
    /// its tile size, how much of its output is kept (`strength`, the rest is the input) and
    /// its stage name ("filter", "filter2", …).
    case filter(model: String, tile: Int?, strength: Float, name: String)
    /// Resize to a fixed size.
    case resize(FrameSize)
    /// Round to 8 bits and convert to the sink's packed format.
    case output(PixelFormat)

    /// Whether the stage runs a model.
    package var runsModel: Bool {
        switch self {
        case .colorize, .upscale, .filter: return true
        case .toRGB, .resize, .output: return false
        }
    }
}

/// Makes processors from stage specs (video2x's ProcessorFactory).
package enum ProcessorFactory {
    /// Builds the processor for `spec`, loading its model on `backend`; `log` gets one line
    /// when a model is fetched.
    /// `settings`: the run's precision, memory budget and pixel limit the model loads under.
    package static func make(_ spec: StageSpec, backend: BackendChoice, settings: ComputeSettings = ComputeSettings(),
                             log: (String) -> Void = { _ in }) throws -> FrameProcessor {
        switch spec {
        case .toRGB: return ToRGBProcessor()
        case .colorize(let model, let stabilize, let saturation, let guide, let anchor):
            return ColorizeProcessor(try Colorizer(model: model, backend: backend, settings: settings, stabilize: stabilize,
                                                   saturation: saturation, guide: guide, anchorShots: anchor),
                                     precision: settings.precision)
        case .upscale(let model, let tile):
            return UpscaleProcessor(try Upscaler(model: model, tile: tile, backend: backend, settings: settings, log: log))
        case .filter(let model, let tile, let strength, let name):
            return FilterProcessor(try Upscaler(model: model, tile: tile, backend: backend, settings: settings, allowInt8: false, log: log),
                                   strength: strength, name: name)
        case .resize(let size): return ResizeProcessor(size: size)
        case .output(let format): return OutputConversionProcessor(format: format)
        }
    }
}

/// Processors configured in order: each one's output description is the next one's input.
/// `vivify run`, `vivify image` and `vivify bench` all go through one.
package struct ProcessingChain {
    /// The processors, in order.
    package private(set) var processors: [FrameProcessor]
    /// What the chain takes.
    package let input: FrameDescription
    /// What the chain gives (after every processor).
    package private(set) var output: FrameDescription
    /// The largest frame, in pixels, any stage may make (`--max-pixels`).
    package let maxPixels: Int

    /// Configures `processors` in order for frames described by `input`, none of them making
    /// frames beyond `maxPixels` pixels.
    package init(_ processors: [FrameProcessor], input: FrameDescription, maxPixels: Int = MediaLimits.defaultMaxPixels) throws {
        self.processors = []
        self.input = input
        self.maxPixels = maxPixels
        output = input
        try MediaLimits.checkFrame(width: input.width, height: input.height, what: "The input", kind: .invalidOptions, limit: maxPixels)
        for p in processors { try append(p) }
    }

    /// Adds a processor at the end, configured for what the chain gives now.
    package mutating func append(_ processor: FrameProcessor) throws {
        let next = try processor.configure(input: output)
        // Before any frame flows: a stage may not make frames beyond the pixel limit (a model
        // scale on a large input, a resize), which would otherwise be found as an allocation
        // failure or an encoder error after the work had started.
        try MediaLimits.checkFrame(width: next.width, height: next.height,
                                   what: "The \(processor.name) stage's output (from \(output.width)x\(output.height))", kind: .invalidOptions,
                                   limit: maxPixels)
        output = next
        processors.append(processor)
    }

    /// Runs one frame through every processor, on this thread (then `flush()` at the end).
    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        try Self.runner(processors, lastStateful: lastStateful).pass([frame])
    }

    /// What the processors still hold at the end of the stream, through the ones after them.
    package func flush() throws -> [ChainFrame] {
        try Self.runner(processors, lastStateful: lastStateful).flush()
    }

    /// The last processor that keeps state from frame to frame: a segment's warm-up frames
    /// go no further.
    var lastStateful: FrameProcessor? { processors.last { $0.warmUpFrames > 0 } }

    /// The one runner of processors (pass and flush) for the whole chain and for each
    /// pipeline stage of a job: warm-up frames are dropped after `lastStateful`.
    static func runner(_ members: [FrameProcessor], lastStateful: FrameProcessor?) -> StageRunner<ChainFrame> {
        StageRunner(count: members.count, step: { k, frame in
            let out = try members[k].process(frame)
            return members[k] === lastStateful ? out.filter { !$0.isWarmUp } : out
        }, flush: { k in try members[k].flush() })
    }

    /// Every stage gives back its frame-sized buffers (`FrameProcessor.releaseBuffers`).
    package func releaseBuffers() {
        processors.forEach { $0.releaseBuffers() }
    }

    /// Warms up every model stage (live mode measures every frame, the first one too).
    package func warmUp() throws {
        for p in processors where p.runsModel { try p.warmUp() }
    }

    /// FLOPs per frame of each model stage, by name.
    package func flopsPerFrame() throws -> [String: Double] {
        var flops: [String: Double] = [:]
        for p in processors where p.runsModel { flops[p.name] = try p.flopsPerFrame() }
        return flops
    }

    /// The processors grouped into pipeline stages, each group on its own thread: one per
    /// model, one per conversion before the first model ("convert"), and everything after
    /// the last model (resize, final conversion: cheap) together as "finish".
    package var stageGroups: [(name: String, processors: [FrameProcessor])] {
        let lastModel = processors.lastIndex { $0.runsModel } ?? -1
        var groups: [(name: String, processors: [FrameProcessor])] = []
        for (k, p) in processors.enumerated() {
            if k > lastModel {
                if k == lastModel + 1 { groups.append(("finish", [p])) } else { groups[groups.count - 1].processors.append(p) }
            } else {
                groups.append((p.name, [p]))
            }
        }
        return groups
    }
}

extension PixelLayout {
    /// The packed format frames of this layout become at the sink (planar float is rounded
    /// to rgb24 or gray).
    package var packedFormat: PixelFormat {
        switch self {
        case .packed(let f): return f
        case .planarFloat(let c): return c == 1 ? .gray : .rgb24
        }
    }
}
