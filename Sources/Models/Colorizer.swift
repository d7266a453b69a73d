internal import ColorScience
package import Engine
import Foundation
package import MediaIO
internal import ModelFormats

/// The colorizer stage: reads the lightness L of a frame, lets a model predict the colour
/// channels ab (at the model's own input size), brings ab back to full resolution, and
/// recombines it with the frame's full-resolution L — so the source's luminance detail is
/// never lost and only colour comes from the model.
///
///     rgb ─▶ L (full) ─▶ resize to model size ─▶ normalise ─▶ model ─▶ ab × abScale
///                │                                                    │
///                │                      [temporal stabilizer] ◀───────┘
///                │                                  │
///                │                  guided filter (or bilinear) at the model's size: ab = A·L + B
///                │                                  │
///                └──────────────▶ Lab → RGB ◀── A, B to full size applied to the full L,
///                                                  × saturation, gamut fit keeping L
package final class Colorizer {
    /// The model's declared inputs and outputs.
    package let spec: ColorizerSpec
    /// The graph.
    package let graph: Graph
    /// The files the model was read from.
    package let modelFiles: [String]
    /// Name for messages (file stem).
    package let name: String
    /// The stabilizer, when on (video).
    package let stabilizer: TemporalStabilizer?
    /// Chroma multiplier applied before the gamut fit (1 = the model's colour).
    package let saturation: Float
    /// The saturations a colorizer takes (0 is grey).
    package static let saturationRange: ClosedRange<Float> = 0...4
    /// Why a saturation is refused, for the CLI and the library alike.
    package static func saturationError(_ s: Float) -> String {
        "'--saturation \(s)' is out of range. Use a chroma multiplier from 0 (grey) to 4; 1 keeps the model's colour."
    }
    /// References, keyframes and hints, when given (`--reference`, `--keyframe`, `--hint`).
    package let guide: ColourGuide?
    /// Where the next frame sits in its video (set by the stage before each frame; nil for a
    /// still picture), for keyframes and scene cuts.
    package var position: FramePosition?
    /// With a guide and the built-in model: the graph that gives the encoder's features beside
    /// the colour (one forward pass for both).
    private let combinedGraph: Graph?
    private let backend: InferenceBackend
    /// What the model computes in on oneDNN or stores its values in on Vulkan (an unmeasured
    /// model's: fp32 under `auto`); what `--stats` records.
    package var computePrecision: String { BackendChoice.precision(of: backend) }
    private let bundle: ModelBundle?
    private var prepared: [Shape: PreparedGraph] = [:]
    /// Colour conversions, split over the run's threads.
    private let lab: LabConverter
    /// How many threads the per-frame loops use (`ComputeSettings.threads`).
    private let threads: Int
    private var fullL: [Float] = [], lowL: [Float] = [], outL: [Float] = []
    private var modelInput: [Float] = [], modelOutput: [Float] = []
    private var a: [Float] = [], b: [Float] = []
    /// ab at the model's output size (both planes): kept between frames.
    private var ab: [Float] = []
    /// Slope and offset planes of ab as a linear function of L (`Resample.linearModelAB`).
    private var coefficients: [Float] = []

    /// Loads a colorizer: the built-in `vivify-color`, a `colorize` .wifm bundle, or an ncnn
    /// `.param` (Core ML `.mlmodel`/`.mlpackage`) with its `.bin` and `.json` description beside it.
    /// `saturation` multiplies the predicted chroma (1 keeps it; the gamut fit still applies).
    /// `anchorShots` (with `stabilize`): each shot's colour anchored to its own earlier frames.
    /// `settings`: the precision it computes in (what an unmeasured model gets), the largest
    /// guide picture it reads and the threads its model and loops use.
    package init(model argument: String, backend: BackendChoice = .onednn, settings: ComputeSettings = ComputeSettings(),
                stabilize: Bool, saturation: Float = 1, guide: ColourGuideSpec = ColourGuideSpec(), anchorShots: Bool = true) throws {
        guard Self.saturationRange.contains(saturation) else {
            throw MediaError(.invalidOptions, Self.saturationError(saturation))
        }
        self.saturation = saturation
        threads = settings.threads
        lab = LabConverter(threads: settings.threads)
        // Video (the stabilizer on) has a guide even without guidance: shots anchor their own colour.
        let anchor = stabilize && anchorShots
        self.guide = guide.isEmpty && !anchor ? nil : try ColourGuide(spec: guide, backend: backend, settings: settings, anchorShots: anchor)
        let loaded = try ModelResolver.resolve(argument, task: .colorize, library: settings.customLayers)
        graph = loaded.graph
        spec = loaded.colorizer ?? ColorizerSpec()
        // Bundles and descriptions alike: the numbers are checked before anything is sized.
        try spec.validate(name: "The colorizer '\(argument)'")
        bundle = loaded.bundle
        name = loaded.name
        modelFiles = loaded.files
        let model = argument
        self.backend = try backend.make(precision: settings.precision, threads: settings.threads)
        stabilizer = stabilize ? TemporalStabilizer() : nil
        let channels = spec.input == .l ? 1 : 4
        if let c = graph.inputChannels, c != channels {
            throw MediaError(.invalidOptions, "Colorizer '\(model)' reads \(c) channels but its description says input \"\(spec.input.rawValue)\" (\(channels)). Fix the .json.")
        }
        // The built-in model already computes the reference encoder's features: take them from
        // its own forward pass (same L at 224×224) rather than running the encoder again.
        if self.guide != nil, name == BuiltinModels.color, spec.input == .l, spec.output == .ab, spec.inputSize == ReferenceEncoder.inputSide {
            combinedGraph = try ReferenceEncoder.combinedGraph(from: graph)
        } else {
            combinedGraph = nil
        }
    }

    private func roundUp(_ v: Int) -> Int { (v + spec.inputMultiple - 1) / spec.inputMultiple * spec.inputMultiple }

    /// The model input size for a frame.
    package func modelSize(width: Int, height: Int) -> (w: Int, h: Int) {
        if let s = spec.inputSize { return (roundUp(s), roundUp(s)) }
        return (roundUp(width), roundUp(height))
    }

    /// Colorizes an `rgb24` frame into `output` (same size, rgb24), keeping its L.
    package func colorize(_ frame: VideoFrame, into output: inout VideoFrame) throws {
        try lightness(of: frame)
        try predictColour(width: frame.width, height: frame.height)
        let w = frame.width, h = frame.height
        output.reshape(format: .rgb24, width: w, height: h)
        output.pts = frame.pts
        output.duration = frame.duration
        output.timeBase = frame.timeBase
        output.color = frame.color
        output.sampleAspectRatio = frame.sampleAspectRatio
        fullL.withUnsafeBufferPointer { l in
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    output.planes[0].withUnsafeMutableBufferPointer { lab.labToRGB(l: l, a: pa, b: pb, width: w, height: h, rgb: $0) }
                }
            }
        }
    }

    /// Colorizes an `rgb24` frame into planar float RGB in [0, 1], not rounded to 8 bits (the
    /// hand-over to a following model stage).
    package func colorize(_ frame: VideoFrame, into output: inout FloatPlanarImage) throws {
        try lightness(of: frame)
        try predictColour(width: frame.width, height: frame.height)
        storePlanar(width: frame.width, height: frame.height, into: &output)
    }

    /// Colorizes planar float RGB (3 channels) or grey (1 channel), values in [0, 1], into
    /// planar float RGB, not rounded to 8 bits.
    package func colorize(_ image: FloatPlanarImage, into output: inout FloatPlanarImage) throws {
        let w = image.width, h = image.height, n = w * h
        precondition(image.channels == 3 || image.channels == 1, "the colorizer takes 1 or 3 channels")
        if fullL.count != n { fullL = [Float](repeating: 0, count: n); a = fullL; b = fullL }
        if image.channels == 3 {
            image.data.withUnsafeBufferPointer { rgb in
                fullL.withUnsafeMutableBufferPointer { lab.lightness(planarRGB: rgb, width: w, height: h, l: $0) }
            }
        } else {
            let rgb = image.expandedToRGB()
            rgb.data.withUnsafeBufferPointer { p in
                fullL.withUnsafeMutableBufferPointer { lab.lightness(planarRGB: p, width: w, height: h, l: $0) }
            }
        }
        try predictColour(width: w, height: h)
        storePlanar(width: w, height: h, into: &output)
    }

    /// L of an rgb24 frame into `fullL` (sized to the frame).
    private func lightness(of frame: VideoFrame) throws {
        precondition(frame.format == .rgb24, "the colorizer takes rgb24 frames")
        let w = frame.width, h = frame.height, n = w * h
        if fullL.count != n { fullL = [Float](repeating: 0, count: n); a = fullL; b = fullL }
        frame.planes[0].withUnsafeBufferPointer { rgb in
            fullL.withUnsafeMutableBufferPointer { lab.lightness(rgb: rgb, width: w, height: h, l: $0) }
        }
    }

    private func storePlanar(width w: Int, height h: Int, into output: inout FloatPlanarImage) {
        if output.channels != 3 || output.width != w || output.height != h { output = FloatPlanarImage(channels: 3, width: w, height: h) }
        fullL.withUnsafeBufferPointer { l in
            a.withUnsafeBufferPointer { pa in
                b.withUnsafeBufferPointer { pb in
                    output.data.withUnsafeMutableBufferPointer { lab.labToRGB(l: l, a: pa, b: pb, width: w, height: h, planarRGB: $0) }
                }
            }
        }
    }

    /// The model's colour for the L in `fullL`, brought to full resolution into `a` and `b`.
    private func predictColour(width w: Int, height h: Int) throws {
        // The model's view: L at its input size, normalised, plus empty hints and mask.
        let (mw, mh) = modelSize(width: w, height: h)
        if lowL.count != mw * mh { lowL = [Float](repeating: 0, count: mw * mh) }
        Resample.area(fullL, w, h, into: &lowL, mw, mh)
        let channels = spec.input == .l ? 1 : 4
        let shape = Shape(c: channels, h: mh, w: mw)
        if modelInput.count != shape.count { modelInput = [Float](repeating: 0, count: shape.count) }
        let plane = mw * mh
        for i in 0..<plane { modelInput[i] = (lowL[i] - spec.lCenter) / spec.lScale }
        if channels == 4 {
            for i in plane..<(3 * plane) { modelInput[i] = 0 }
            for i in (3 * plane)..<(4 * plane) { modelInput[i] = -0.5 }
        }
        let run = try preparedGraph(shape)
        var o = run.outputShape
        guard o.h >= 1, o.w >= 1, o.h <= ModelLimits.maxDimension, o.w <= ModelLimits.maxDimension else {
            throw MediaError(.invalidOptions, "Colorizer '\(name)' gives a \(o.w)x\(o.h) output for a \(mw)x\(mh) input; it cannot be brought to the frame. Check the model.")
        }
        guard combinedGraph != nil || (spec.output == .ab && o.c == 2) || (spec.output == .rgb && o.c == 3) else {
            throw MediaError(.invalidOptions, "Colorizer '\(name)' produces \(o.c) channels, but its description says \"\(spec.output.rawValue)\".")
        }
        if modelOutput.count != o.count { modelOutput = [Float](repeating: 0, count: o.count) }
        try modelInput.withUnsafeBufferPointer { i in try modelOutput.withUnsafeMutableBufferPointer { try run.run(input: i, output: $0) } }
        if let bad = modelOutput.withUnsafeBufferPointer(firstNonFinite) {
            throw EngineError(.nonFiniteOutput, "The colorizer '\(name)' produced NaN or infinite values (\(modelOutput[bad])): its weights are damaged or its arithmetic overflows. Check or replace the model file.")
        }
        var features: EncodedFeatures?
        var values = modelOutput
        if combinedGraph != nil {
            let split = try ReferenceEncoder.splitCombined(modelOutput, shape: o)
            values = split.ab
            features = split.features
            o = Shape(c: 2, h: split.side, w: split.side)
        }

        // ab at the model's output size, in CIE units; L there for the stabilizer and the
        // guided filter, shrunk from the model's input (area shrinks compose: no second pass
        // over the full frame) unless the output is larger than the input.
        let op = o.h * o.w
        if outL.count != op { outL = [Float](repeating: 0, count: op) }
        if o.w <= mw && o.h <= mh {
            Resample.area(lowL, mw, mh, into: &outL, o.w, o.h)
        } else {
            Resample.area(fullL, w, h, into: &outL, o.w, o.h)
        }
        if ab.count != 2 * op { ab = [Float](repeating: 0, count: 2 * op) }
        switch spec.output {
        case .ab:
            for i in 0..<(2 * op) { ab[i] = values[i] * spec.abScale }
        case .rgb:
            for i in 0..<op {
                let c = LabReference.rgbToLab(Double(min(max(values[i], 0), 1)), Double(min(max(values[op + i], 0), 1)),
                                              Double(min(max(values[2 * op + i], 0), 1)))
                ab[i] = Float(c.a)
                ab[op + i] = Float(c.b)
            }
        }
        if let guide {
            let outcome = try guide.colour(position: position, l: fullL, width: w, height: h, autoAB: ab, o.w, o.h, features: features,
                                         l224: mw == ReferenceEncoder.inputSide && mh == ReferenceEncoder.inputSide ? lowL : nil)
            // An exact keyframe's colour on the fine grid, the stabilizer's history from it; or
            // a frame matched on the fine grid.
            var restart: [Float]?, matched = false
            switch outcome {
            case .automatic:
                try finishAutomatic(o: o, w: w, h: h)
            case .exact(let ka, let kb, let kw, let kh):
                // The keyframe's own colour at this frame's lightness; the stabilizer's history
                // restarts from it.
                if kw == w && kh == h {
                    a = ka
                    b = kb
                } else {
                    Resample.bilinear(ka, kw, kh, into: &a, w, h)
                    Resample.bilinear(kb, kw, kh, into: &b, w, h)
                }
                for i in 0..<(w * h) { GamutFit.fit(l: fullL[i], a: &a[i], b: &b[i]) }
                let f = ColourReference.fineSide
                var fa = [Float](repeating: 0, count: f * f), fb = fa
                Resample.area(a, w, h, into: &fa, f, f)
                Resample.area(b, w, h, into: &fb, f, f)
                restart = fa + fb
            case .fine(var fine, let detail):
                let f = ColourReference.fineSide
                stabilizer?.apply(l: guide.lFine, ab: &fine, width: f, height: f)
                guide.stabilizedFine = fine
                Resample.bilinearModel(fine, f, f, into: &coefficients)
                Resample.linearModelAB(coefficients, f, f, fittedTo: fullL, saturation: saturation, a: &a, b: &b, w, h, threads: threads)
                detail?.apply(l: fullL, a: &a, b: &b, width: w, height: h)
                guide.carry(l: fullL, a: &a, b: &b, width: w, height: h)
                matched = true
            }
            try guide.finish(position: position, l: fullL, a: &a, b: &b, width: w, height: h)
            // After `finish` (the first frame's hints): the history is the frame as output.
            if let restart {
                stabilizer?.restart(l: guide.lFine, ab: restart, final: (fullL, a, b))
            } else if matched && TemporalStabilizer.finalEnabled && guide.userGuided {
                // Frames coloured from the user's keyframes or references only: an anchored
                // automatic frame already flickers far below the truth (bedroom 0.17 against
                // 0.71), and the pass raised its drift (2.65 -> 2.74).
                stabilizer?.applyFinal(l: fullL, a: &a, b: &b, threads: threads)
            }
            return
        }
        try finishAutomatic(o: o, w: w, h: h)
    }

    /// The model's own colour (stabilized) to full resolution.
    private func finishAutomatic(o: Shape, w: Int, h: Int) throws {
        stabilizer?.apply(l: outL, ab: &ab, width: o.w, height: o.h)

        // Back to full resolution, then fit each pixel's chroma into the RGB gamut at its own L.
        switch spec.upsample {
        case .guided: GuidedFilter.coefficients(guide: outL, ab: ab, o.w, o.h, into: &coefficients)
        case .bilinear: Resample.bilinearModel(ab, o.w, o.h, into: &coefficients)
        }
        Resample.linearModelAB(coefficients, o.w, o.h, fittedTo: fullL, saturation: saturation, a: &a, b: &b, w, h, threads: threads)
    }

    /// Runs once on a blank frame (so the first real frame pays no set-up cost), then forgets
    /// it in the stabilizer.
    package func warmUp(width: Int, height: Int) throws {
        let blank = VideoFrame(format: .rgb24, width: width, height: height)
        var out = VideoFrame(format: .rgb24, width: 1, height: 1)
        let kept = position
        position = nil
        try colorize(blank, into: &out)
        position = kept
        stabilizer?.reset()
        guide?.reset()
    }

    private func preparedGraph(_ shape: Shape) throws -> PreparedGraph {
        if let g = prepared[shape] { return g }
        let g = try backend.prepare(combinedGraph ?? graph, input: shape)
        prepared[shape] = g
        return g
    }
}
