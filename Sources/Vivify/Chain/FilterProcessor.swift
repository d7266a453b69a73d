import Foundation
internal import MediaIO
import Models

/// An image-to-image model as a stage (`--filter`): style transfer, denoise, deblock, or any
/// other RGB-to-RGB network of any format Vivify reads, at its own scale (1× or N×).
///
///     rgb24 or planar float ─▶ model (tiled as an upscaler is) ─▶ planar float (scale ×)
///                          └──────────── · (1 − strength) ───────────▶ + ◀── · strength
///
/// The model runs through the upscaler's machinery: its input and output ranges (0–255
/// pixels or 0–1, a bundle's normalisation) are adapted to the chain's [0, 1] RGB by the
/// resolver, and it is tiled by its own rules (a model that sees the whole picture runs on
/// whole frames; one with instance normalisation, asked for tiles, in statistics passes). With `strength` below 1 the output
/// is blended with the input (nearest-neighbour enlarged for an N× model). An alpha plane
/// passes unchanged through a 1× filter and is enlarged as an upscaler does for an N× one.
package final class FilterProcessor: FrameProcessor {
    package let name: String
    package var runsModel: Bool { true }
    /// The model.
    package let model: Upscaler
    /// How much of the model's output is kept (0…1).
    package let strength: Float
    private var input: FrameDescription?
    private var source = FloatPlanarImage(channels: 3, width: 1, height: 1)
    private var output = FloatPlanarImage(channels: 3, width: 1, height: 1)

    /// Wraps a loaded model; `name` is the stage's name ("filter", "filter2", …).
    package init(_ model: Upscaler, strength: Float = 1, name: String = "filter") {
        self.model = model
        self.strength = min(max(strength, 0), 1)
        self.name = name
    }

    package func configure(input: FrameDescription) throws -> FrameDescription {
        let out = try UpscaleProcessor.output(of: name, input: input, scale: model.scale)
        self.input = input
        return out
    }

    package func process(_ frame: ChainFrame) throws -> [ChainFrame] {
        switch frame.pixels {
        case .packed(let f):
            source.load(from: f)
        case .planar(let p):
            source = p
        }
        if source.channels == 3 {
            try model.upscale(source, into: &output)
        } else {
            output = try model.upscale(source)
        }
        if strength < 1 { blend(&output, with: source) }
        var out = frame
        out.pixels = .planar(output)
        if let alpha = frame.alpha, model.scale > 1 { out.alpha = try model.upscaleAlpha(alpha) }
        return [out]
    }

    /// output = output · strength + input · (1 − strength), the input enlarged by repetition.
    private func blend(_ output: inout FloatPlanarImage, with input: FloatPlanarImage) {
        let s = model.scale, k = strength, rest = 1 - strength
        let (w, h, ow) = (input.width, input.height, output.width)
        let plane = w * h, outPlane = output.width * output.height
        input.data.withUnsafeBufferPointer { src in
            output.data.withUnsafeMutableBufferPointer { dst in
                for c in 0..<min(input.channels, output.channels) {
                    for y in 0..<output.height {
                        let row = c * plane + min(y / s, h - 1) * w
                        let outRow = c * outPlane + y * ow
                        for x in 0..<ow { dst[outRow + x] = dst[outRow + x] * k + src[row + min(x / s, w - 1)] * rest }
                    }
                }
            }
        }
    }

    package func warmUp() throws {
        guard let input else { return }
        try model.warmUp(width: input.width, height: input.height)
    }

    package func releaseBuffers() {
        source = FloatPlanarImage(channels: 3, width: 1, height: 1)
        output = FloatPlanarImage(channels: 3, width: 1, height: 1)
        model.releaseBuffers()
    }

    package func flopsPerFrame() throws -> Double {
        guard let input else { return 0 }
        return try model.flopsPerFrame(width: input.width, height: input.height)
    }
}

extension FilterProcessor: ModelStage {
    package var modelName: String { model.name }
    package var modelFiles: [String] { model.modelFiles }
    package var computePrecision: String { model.computePrecision }
}
