import Foundation

/// How pixel values in `0...255` become model input, with Tensor/IO's formula
/// (`normalize` in a Tensor/IO `inputs` entry):
///
///     normalized = scale * value + bias[channel]
///
/// `standard` `"[0,1]"` is scale 1/255, bias 0; `"[-1,1]"` is scale 2/255, bias −1.
/// Channels are colours, not tensor positions: 0 red, 1 green, 2 blue, whatever the
/// tensor's `format` (RGB or BGR) puts first.
public struct PixelNormalization: Sendable, Equatable {
    /// Multiplies the pixel value.
    public var scale: Float
    /// Added after scaling, to red.
    public var redBias: Float
    /// Added after scaling, to green.
    public var greenBias: Float
    /// Added after scaling, to blue.
    public var blueBias: Float

    /// Makes a normalization; missing biases are 0, as in Tensor/IO.
    public init(scale: Float = 1, redBias: Float = 0, greenBias: Float = 0, blueBias: Float = 0) {
        self.scale = scale
        self.redBias = redBias
        self.greenBias = greenBias
        self.blueBias = blueBias
    }

    /// Scale 1, no bias: pixel values go in as they are (Tensor/IO with an empty `normalize`).
    public static let none = PixelNormalization()
    /// `"standard": "[0,1]"`: scale 1/255, no bias.
    public static let zeroToOne = PixelNormalization(scale: Float(1.0 / 255.0))
    /// `"standard": "[-1,1]"`: scale 2/255, bias −1 on every channel.
    public static let negativeOneToOne = PixelNormalization(scale: Float(2.0 / 255.0), redBias: -1, greenBias: -1, blueBias: -1)

    /// The bias of channel 0 (red), 1 (green) or 2 (blue); channels past blue use blue's.
    @inline(__always)
    public func bias(channel: Int) -> Float {
        channel == 0 ? redBias : channel == 1 ? greenBias : blueBias
    }

    /// Tensor/IO's normalizer: `scale * value + bias[channel]`, for a pixel value in `0...255`.
    @inline(__always)
    public func normalize(_ value: Float, channel: Int) -> Float {
        value * scale + bias(channel: channel)
    }

    /// `"[0,1]"`, `"[-1,1]"`, or the scale and biases, for summaries.
    public var label: String {
        if self == .zeroToOne { return "[0,1]" }
        if self == .negativeOneToOne { return "[-1,1]" }
        return "scale \(scale), bias r \(redBias) g \(greenBias) b \(blueBias)"
    }
}

/// How model output becomes pixel values in `0...255`, with Tensor/IO's formula
/// (`denormalize` in a Tensor/IO `outputs` entry):
///
///     value = (normalized + bias[channel]) * scale
///
/// Note the order: the bias is added *before* scaling, the reverse of `PixelNormalization`.
/// The numbers are therefore those of the inverse: undoing `scale 2/255, bias −1` takes
/// `scale 255/2, bias +1`. `standard` `"[0,1]"` is scale 255, bias 0; `"[-1,1]"` is
/// scale 255/2, bias +1. Channels are 0 red, 1 green, 2 blue.
public struct PixelDenormalization: Sendable, Equatable {
    /// Multiplies the biased value.
    public var scale: Float
    /// Added before scaling, to red.
    public var redBias: Float
    /// Added before scaling, to green.
    public var greenBias: Float
    /// Added before scaling, to blue.
    public var blueBias: Float

    /// Makes a denormalization; missing biases are 0, as in Tensor/IO.
    public init(scale: Float = 1, redBias: Float = 0, greenBias: Float = 0, blueBias: Float = 0) {
        self.scale = scale
        self.redBias = redBias
        self.greenBias = greenBias
        self.blueBias = blueBias
    }

    /// Scale 1, no bias (Tensor/IO with an empty `denormalize`).
    public static let none = PixelDenormalization()
    /// `"standard": "[0,1]"`: scale 255, no bias.
    public static let zeroToOne = PixelDenormalization(scale: 255)
    /// `"standard": "[-1,1]"`: bias +1 on every channel, then scale 255/2.
    public static let negativeOneToOne = PixelDenormalization(scale: Float(255.0 / 2.0), redBias: 1, greenBias: 1, blueBias: 1)

    /// The bias of channel 0 (red), 1 (green) or 2 (blue); channels past blue use blue's.
    @inline(__always)
    public func bias(channel: Int) -> Float {
        channel == 0 ? redBias : channel == 1 ? greenBias : blueBias
    }

    /// Tensor/IO's denormalizer: `(value + bias[channel]) * scale`, unrounded and unclamped.
    @inline(__always)
    public func denormalize(_ value: Float, channel: Int) -> Float {
        (value + bias(channel: channel)) * scale
    }

    /// The denormalized value as a byte the way Tensor/IO stores it: the C conversion from
    /// float to `uint8_t` truncates toward zero. Tensor/IO leaves out-of-range values
    /// undefined; here they clamp to 0 and 255, and NaN becomes 0.
    @inline(__always)
    public func denormalizeToByte(_ value: Float, channel: Int) -> UInt8 {
        let v = denormalize(value, channel: channel)
        guard v > 0 else { return 0 }
        return v >= 255 ? 255 : UInt8(v.rounded(.towardZero))
    }

    /// `"[0,1]"`, `"[-1,1]"`, or the scale and biases, for summaries.
    public var label: String {
        if self == .zeroToOne { return "[0,1]" }
        if self == .negativeOneToOne { return "[-1,1]" }
        return "bias r \(redBias) g \(greenBias) b \(blueBias), scale \(scale)"
    }
}
