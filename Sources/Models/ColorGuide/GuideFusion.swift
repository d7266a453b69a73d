internal import BuiltinModelData
internal import Engine
import Foundation
internal import ModelFormats

/// The learned fusion of colour from references (issue 28; trained by training/fusion.py, on
/// crops of photographs whose other crop is the reference): on the 112×112 fine grid it takes
/// what the matcher transferred, how confident the match was, the automatic model's colour and
/// the frame's L, and corrects the hand-set blend (confidence × transferred + (1 − confidence)
/// × automatic). It learns what the fixed blend cannot: where an unconfident match is still
/// the better guess (the same scene's palette), and where the model's colour is.
///
///     L, transferred ab, confidence w, automatic ab, blend (8 @ 112²) ─▶ network ─▶ z, r (3 @ 112²)
///     g = sigmoid(z + 8 (w − 0.5)),  ab = g × transferred + (1 − g) × automatic + 64 r
///
/// With z = r = 0 that is close to the hand-set blend, which training starts from.
final class GuideFusion {
    /// The network's input planes.
    static let planes = 8
    /// The scale of ab in the network's planes.
    static let abScale: Float = 64

    private let prepared: PreparedGraph
    private var input: [Float]
    private var output: [Float]

    /// Whether this binary carries the fusion (a build without trained weights colours with
    /// the blend alone).
    static var isEmbedded: Bool { !BuiltinModelData.guideFusion.param.isEmpty }

    /// Prepares the embedded network on `backend` under `precision` (as an unmeasured model),
    /// on `threads` threads.
    init(backend: BackendChoice, precision: PrecisionChoice, threads: Int) throws {
        let embedded = BuiltinModelData.guideFusion
        guard let weights = Data(base64Encoded: embedded.weights.replacingOccurrences(of: "\n", with: "")) else {
            throw EngineError(.invalidGraph, "The colour guide's fusion network is damaged in this vivify binary. Rebuild vivify.")
        }
        let graph = try NCNNImporter.parse(param: embedded.param, weights: weights, source: "the colour guide's fusion network")
        let f = ColourReference.fineSide
        prepared = try backend.make(precision: precision, threads: threads).prepare(graph, input: Shape(c: Self.planes, h: f, w: f))
        guard prepared.outputShape == Shape(c: 3, h: f, w: f) else {
            throw EngineError(.invalidGraph, "The colour guide's fusion network gives \(prepared.outputShape), not 3×\(f)×\(f).")
        }
        input = [Float](repeating: 0, count: Self.planes * f * f)
        output = [Float](repeating: 0, count: 3 * f * f)
    }

    /// Replaces `blend` (a then b on the fine grid, the hand-set mix of `transferred` and
    /// `automatic` by `weight`) with the fused colour. `l` is the frame's L on the fine grid.
    func correct(_ blend: inout [Float], l: [Float], transferred: [Float], weight: [Float], automatic: [Float]) throws {
        let n = ColourReference.fineSide * ColourReference.fineSide
        precondition(l.count == n && weight.count == n && transferred.count == 2 * n && automatic.count == 2 * n && blend.count == 2 * n)
        let s = 1 / Self.abScale
        // The planes as training/fusion.py's `inputs`: L, transferred ab, weight, automatic ab, blend.
        for i in 0..<n {
            input[i] = (l[i] - 50) / 50
            input[n + i] = transferred[i] * s
            input[2 * n + i] = transferred[n + i] * s
            input[3 * n + i] = weight[i]
            input[4 * n + i] = automatic[i] * s
            input[5 * n + i] = automatic[n + i] * s
            input[6 * n + i] = blend[i] * s
            input[7 * n + i] = blend[n + i] * s
        }
        try input.withUnsafeBufferPointer { i in try output.withUnsafeMutableBufferPointer { try prepared.run(input: i, output: $0) } }
        if let bad = output.withUnsafeBufferPointer(firstNonFinite) {
            throw EngineError(.nonFiniteOutput, "The colour guide's fusion network produced a non-finite value (\(output[bad])); the built-in model is damaged. Reinstall vivify.")
        }
        for i in 0..<n {
            let g = 1 / (1 + exp(-(output[i] + 8 * (weight[i] - 0.5))))
            for c in 0..<2 {
                let k = c * n + i
                blend[k] = g * transferred[k] + (1 - g) * automatic[k] + Self.abScale * output[(c + 1) * n + i]
            }
        }
    }
}
