import ColorScience
import Engine
import Foundation
import MediaIO
import ModelFormats

/// The colorizer stage: reads the lightness L of a frame, lets a model predict the colour
/// channels ab (at the model's own input size), brings ab back to full resolution, and
/// recombines it with the frame's full-resolution L — so the source's luminance detail is
/// never lost and only colour comes from the model.
///
///     rgb ─▶ L (full) ─▶ resize to model size ─▶ normalise ─▶ model ─▶ ab × abScale
///                │                                                    │
///                │                      [temporal stabilizer] ◀───────┘
///                │                                  │
///                └──────────────▶ Lab → RGB ◀── bilinear upsample, gamut fit keeping L
public final class Colorizer {
    /// The model's declared inputs and outputs.
    public let spec: ColorizerSpec
    /// The graph.
    public let graph: Graph
    /// Name for messages (file stem).
    public let name: String
    /// The stabilizer, when on (video).
    public let stabilizer: TemporalStabilizer?
    private let backend: InferenceBackend
    private let bundle: ModelBundle?
    private var prepared: [Shape: PreparedGraph] = [:]
    private let lab = LabConverter()
    private var fullL: [Float] = [], lowL: [Float] = [], outL: [Float] = []
    private var modelInput: [Float] = [], modelOutput: [Float] = []
    private var a: [Float] = [], b: [Float] = []
    /// ab at the model's output size (both planes): kept between frames.
    private var ab: [Float] = []

    /// Loads a colorizer: the built-in `vivify-color`, a `colorize` .wifm bundle, or an ncnn
    /// `.param` (Core ML `.mlmodel`/`.mlpackage`) with its `.bin` and `.json` description beside it.
    public init(model argument: String, backend: BackendChoice = .onednn, stabilize: Bool) throws {
        let model = try BuiltinModels.resolve(colorize: argument)
        guard FileManager.default.fileExists(atPath: model) else {
            throw MediaError(.inputUnreadable, "Cannot open the colorizer '\(model)': no such file. Check the path, or give --colorize alone for the built-in \(BuiltinModels.color).")
        }
        if model.lowercased().hasSuffix(".wifm") {
            let loaded = try ModelLoader.load(model, task: .colorize)
            graph = loaded.graph
            spec = loaded.colorizer ?? ColorizerSpec()
            bundle = loaded.bundle
        } else if model.hasSuffix(".param") || ModelLoader.handles(model) {
            spec = try ColorizerSpec.beside(param: model)
            graph = try ModelLoader.importGraph(model).0
            bundle = nil
        } else {
            throw MediaError(.invalidOptions, "Colorizer '\(model)': give a .wifm bundle, or an ncnn .param, Core ML .mlmodel or .mlpackage with its .json description beside it.")
        }
        name = ((model as NSString).lastPathComponent as NSString).deletingPathExtension
        self.backend = try backend.make()
        stabilizer = stabilize ? TemporalStabilizer() : nil
        let channels = spec.input == .l ? 1 : 4
        if let c = graph.inputChannels, c != channels {
            throw MediaError(.invalidOptions, "Colorizer '\(model)' reads \(c) channels but its description says input \"\(spec.input.rawValue)\" (\(channels)). Fix the .json.")
        }
    }

    private func roundUp(_ v: Int) -> Int { (v + spec.inputMultiple - 1) / spec.inputMultiple * spec.inputMultiple }

    /// The model input size for a frame.
    public func modelSize(width: Int, height: Int) -> (w: Int, h: Int) {
        if let s = spec.inputSize { return (roundUp(s), roundUp(s)) }
        return (roundUp(width), roundUp(height))
    }

    /// Colorizes an `rgb24` frame into `output` (same size), keeping its L.
    public func colorize(_ frame: VideoFrame, into output: inout VideoFrame) throws {
        precondition(frame.format == .rgb24, "the colorizer takes rgb24 frames")
        let w = frame.width, h = frame.height, n = w * h
        if fullL.count != n { fullL = [Float](repeating: 0, count: n); a = fullL; b = fullL }
        frame.planes[0].withUnsafeBufferPointer { rgb in
            fullL.withUnsafeMutableBufferPointer { lab.lightness(rgb: rgb, width: w, height: h, l: $0) }
        }
        // The model's view: L at its input size, normalised, plus empty hints and mask.
        let (mw, mh) = modelSize(width: w, height: h)
        if lowL.count != mw * mh { lowL = [Float](repeating: 0, count: mw * mh) }
        Resample.bilinear(fullL, w, h, into: &lowL, mw, mh)
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
        let o = run.outputShape
        guard (spec.output == .ab && o.c == 2) || (spec.output == .rgb && o.c == 3) else {
            throw MediaError(.invalidOptions, "Colorizer '\(name)' produces \(o.c) channels, but its description says \"\(spec.output.rawValue)\".")
        }
        if modelOutput.count != o.count { modelOutput = [Float](repeating: 0, count: o.count) }
        try modelInput.withUnsafeBufferPointer { i in try modelOutput.withUnsafeMutableBufferPointer { try run.run(input: i, output: $0) } }

        // ab at the model's output size, in CIE units.
        let op = o.h * o.w
        if outL.count != op { outL = [Float](repeating: 0, count: op) }
        Resample.bilinear(fullL, w, h, into: &outL, o.w, o.h)
        if ab.count != 2 * op { ab = [Float](repeating: 0, count: 2 * op) }
        switch spec.output {
        case .ab:
            for i in 0..<(2 * op) { ab[i] = modelOutput[i] * spec.abScale }
        case .rgb:
            for i in 0..<op {
                let c = LabReference.rgbToLab(Double(min(max(modelOutput[i], 0), 1)), Double(min(max(modelOutput[op + i], 0), 1)),
                                              Double(min(max(modelOutput[2 * op + i], 0), 1)))
                ab[i] = Float(c.a)
                ab[op + i] = Float(c.b)
            }
        }
        stabilizer?.apply(l: outL, ab: &ab, width: o.w, height: o.h)

        // Back to full resolution, then fit each pixel's chroma into the RGB gamut at its own L.
        Resample.bilinearAB(ab, o.w, o.h, fittedTo: fullL, a: &a, b: &b, w, h)
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

    /// Runs once on a blank frame (so the first real frame pays no set-up cost), then forgets
    /// it in the stabilizer.
    public func warmUp(width: Int, height: Int) throws {
        let blank = VideoFrame(format: .rgb24, width: width, height: height)
        var out = VideoFrame(format: .rgb24, width: 1, height: 1)
        try colorize(blank, into: &out)
        stabilizer?.reset()
    }

    private func preparedGraph(_ shape: Shape) throws -> PreparedGraph {
        if let g = prepared[shape] { return g }
        let g = try backend.prepare(graph, input: shape)
        prepared[shape] = g
        return g
    }
}

/// Plane resampling.
public enum Resample {
    /// Both planes of `ab` (a then b, each `sw`×`sh`) brought to `dw`×`dh` by `bilinear`'s
    /// arithmetic, each pixel then fitted into the RGB gamut at its own lightness `l`
    /// (`GamutFit`): one pass over the frame, rows split over the cores, column taps computed
    /// once. The result equals `bilinear` on each plane followed by `GamutFit.fit`.
    public static func bilinearAB(_ ab: [Float], _ sw: Int, _ sh: Int, fittedTo l: [Float], a: inout [Float], b: inout [Float],
                                  _ dw: Int, _ dh: Int) {
        let n = dw * dh
        if a.count != n { a = [Float](repeating: 0, count: n) }
        if b.count != n { b = [Float](repeating: 0, count: n) }
        let sx = Float(sw) / Float(dw), sy = Float(sh) / Float(dh)
        let same = sw == dw && sh == dh
        var x0s = [Int](repeating: 0, count: dw), x1s = x0s, txs = [Float](repeating: 0, count: dw)
        for x in 0..<dw {
            let fx = same ? Float(x) : max(0, (Float(x) + 0.5) * sx - 0.5)
            x0s[x] = min(Int(fx), sw - 1)
            x1s[x] = min(x0s[x] + 1, sw - 1)
            txs[x] = fx - Float(x0s[x])
        }
        let chunks = min(dh, max(1, ProcessInfo.processInfo.activeProcessorCount))
        ab.withUnsafeBufferPointer { abp in
            l.withUnsafeBufferPointer { lp in
                a.withUnsafeMutableBufferPointer { ap in
                    b.withUnsafeMutableBufferPointer { bp in
                        x0s.withUnsafeBufferPointer { x0p in
                            x1s.withUnsafeBufferPointer { x1p in
                                txs.withUnsafeBufferPointer { txp in
                                    // Each worker writes its own rows of a and b.
                                    nonisolated(unsafe) let (sa, sl, da, db) = (abp.baseAddress!, lp.baseAddress!, ap.baseAddress!, bp.baseAddress!)
                                    nonisolated(unsafe) let (cx0, cx1, ctx) = (x0p.baseAddress!, x1p.baseAddress!, txp.baseAddress!)
                                    nonisolated(unsafe) let sb = sa + sw * sh
                                    DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
                                        for y in (dh * chunk / chunks)..<(dh * (chunk + 1) / chunks) {
                                            let fy = same ? Float(y) : max(0, (Float(y) + 0.5) * sy - 0.5)
                                            let y0 = min(Int(fy), sh - 1), y1 = min(y0 + 1, sh - 1)
                                            let ty = fy - Float(y0)
                                            for x in 0..<dw {
                                                let x0 = cx0[x], x1 = cx1[x], tx = ctx[x]
                                                @inline(__always) func sample(_ s: UnsafePointer<Float>) -> Float {
                                                    let top = s[y0 * sw + x0] * (1 - tx) + s[y0 * sw + x1] * tx
                                                    let bottom = s[y1 * sw + x0] * (1 - tx) + s[y1 * sw + x1] * tx
                                                    return top * (1 - ty) + bottom * ty
                                                }
                                                var va = sample(sa), vb = sample(sb)
                                                GamutFit.fit(l: sl[y * dw + x], a: &va, b: &vb)
                                                da[y * dw + x] = va
                                                db[y * dw + x] = vb
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Bilinear resize of one float plane with half-pixel centres (align_corners = false),
    /// edges clamped.
    public static func bilinear(_ src: [Float], _ sw: Int, _ sh: Int, into dst: inout [Float], _ dw: Int, _ dh: Int) {
        if dst.count != dw * dh { dst = [Float](repeating: 0, count: dw * dh) }
        if sw == dw && sh == dh { dst = src; return }
        let sx = Float(sw) / Float(dw), sy = Float(sh) / Float(dh)
        src.withUnsafeBufferPointer { s in
            dst.withUnsafeMutableBufferPointer { d in
                for y in 0..<dh {
                    let fy = max(0, (Float(y) + 0.5) * sy - 0.5)
                    let y0 = min(Int(fy), sh - 1), y1 = min(y0 + 1, sh - 1)
                    let ty = fy - Float(y0)
                    for x in 0..<dw {
                        let fx = max(0, (Float(x) + 0.5) * sx - 0.5)
                        let x0 = min(Int(fx), sw - 1), x1 = min(x0 + 1, sw - 1)
                        let tx = fx - Float(x0)
                        let top = s[y0 * sw + x0] * (1 - tx) + s[y0 * sw + x1] * tx
                        let bottom = s[y1 * sw + x0] * (1 - tx) + s[y1 * sw + x1] * tx
                        d[y * dw + x] = top * (1 - ty) + bottom * ty
                    }
                }
            }
        }
    }
}

/// Brings a Lab colour into the sRGB gamut by reducing its chroma, never its lightness: a
/// model's colour must not change the source's L (plain RGB clipping would).
public enum GamutFit {
    @inline(__always)
    static func linearRGB(_ l: Float, _ a: Float, _ b: Float) -> (Float, Float, Float) {
        let fy = (l + 16) / 116, fx = a / 500 + fy, fz = fy - b / 200
        @inline(__always) func finv(_ t: Float) -> Float { t > 0.2068966 ? t * t * t : (t - 16.0 / 116) / 7.787 }
        let x = 0.95047 * finv(fx), y = finv(fy), z = 1.08883 * finv(fz)
        return (3.24048134 * x - 1.53715152 * y - 0.49853633 * z,
                -0.96925495 * x + 1.87599 * y + 0.04155593 * z,
                0.05564664 * x - 0.20404134 * y + 1.05731107 * z)
    }

    @inline(__always)
    static func inGamut(_ l: Float, _ a: Float, _ b: Float) -> Bool {
        let (r, g, bl) = linearRGB(l, a, b)
        let lo: Float = -1e-4, hi: Float = 1 + 1e-4
        return r >= lo && r <= hi && g >= lo && g <= hi && bl >= lo && bl <= hi
    }

    /// Scales (a, b) towards grey until the colour fits, keeping `l` (clamped to [0, 100]).
    @inline(__always)
    public static func fit(l: Float, a: inout Float, b: inout Float) {
        let l = min(max(l, 0), 100)
        if inGamut(l, a, b) { return }
        var lo: Float = 0, hi: Float = 1
        for _ in 0..<12 {
            let mid = (lo + hi) / 2
            if inGamut(l, a * mid, b * mid) { lo = mid } else { hi = mid }
        }
        a *= lo
        b *= lo
    }
}
