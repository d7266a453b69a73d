package import MediaIO
internal import Pipeline
import Models

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
