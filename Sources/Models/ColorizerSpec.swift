import Foundation
internal import MediaIO

/// A colorizer's inputs and outputs, described declaratively (from a model bundle or a
/// `.json` beside the model), so a new model needs no code:
///
///     { "input": "l", "inputSize": 256, "lCenter": 50, "lScale": 100,
///       "output": "ab", "abScale": 110, "upsample": "bilinear" }
package struct ColorizerSpec: Codable, Sendable, Equatable {
    /// Which channels the model reads.
    package enum Input: String, Codable, Sendable {
        /// Lightness only (1 channel), e.g. ECCV16.
        case l
        /// Lightness, two hint channels (ab / abScale) and a mask − 0.5 (4 channels), e.g. SIGGRAPH17.
        case lHintsMask = "l+hints+mask"
    }

    /// How the colour returns to the frame's resolution.
    package enum Upsample: String, Codable, Sendable {
        /// Bilinear interpolation of ab.
        case bilinear
        /// A guided filter with the full-resolution L as guide: colour follows L's edges.
        case guided
    }

    /// What the model produces.
    package enum Output: String, Codable, Sendable {
        /// The two colour channels, multiplied by `abScale` to get CIE a*, b*.
        case ab
        /// RGB in [0, 1] directly; Vivify keeps only its colour (the source's L is kept).
        case rgb
    }

    /// Input channels.
    package var input: Input
    /// Side of the square the lightness is resized to for the model; nil runs the model at
    /// the frame's own size (rounded up to `inputMultiple`).
    package var inputSize: Int?
    /// The model's input sides must be multiples of this (strided encoders).
    package var inputMultiple: Int
    /// L is fed as (L − lCenter) / lScale.
    package var lCenter: Float
    /// L is fed as (L − lCenter) / lScale.
    package var lScale: Float
    /// What the model produces.
    package var output: Output
    /// Model ab × abScale = CIE a*, b*.
    package var abScale: Float
    /// How ab is brought back to full resolution.
    package var upsample: Upsample

    /// Makes a spec.
    package init(input: Input = .l, inputSize: Int? = 256, inputMultiple: Int = 8, lCenter: Float = 50, lScale: Float = 100,
                output: Output = .ab, abScale: Float = 110, upsample: Upsample = .bilinear) {
        self.input = input
        self.inputSize = inputSize
        self.inputMultiple = inputMultiple
        self.lCenter = lCenter
        self.lScale = lScale
        self.output = output
        self.abScale = abScale
        self.upsample = upsample
    }

    enum CodingKeys: String, CodingKey {
        case input, inputSize, inputMultiple, lCenter, lScale, output, abScale, upsample
    }

    /// Decodes with defaults for every key left out.
    package init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = ColorizerSpec()
        input = try c.decodeIfPresent(Input.self, forKey: .input) ?? d.input
        inputSize = try c.decodeIfPresent(Int.self, forKey: .inputSize) ?? (c.contains(.inputSize) ? nil : d.inputSize)
        inputMultiple = try c.decodeIfPresent(Int.self, forKey: .inputMultiple) ?? d.inputMultiple
        lCenter = try c.decodeIfPresent(Float.self, forKey: .lCenter) ?? d.lCenter
        lScale = try c.decodeIfPresent(Float.self, forKey: .lScale) ?? d.lScale
        output = try c.decodeIfPresent(Output.self, forKey: .output) ?? d.output
        abScale = try c.decodeIfPresent(Float.self, forKey: .abScale) ?? d.abScale
        let method = try c.decodeIfPresent(String.self, forKey: .upsample) ?? d.upsample.rawValue
        guard let upsample = Upsample(rawValue: method) else {
            throw MediaError(.invalidOptions, "Colorizer upsample '\(method)' is not supported; use \"bilinear\" or \"guided\".")
        }
        self.upsample = upsample
        try validate()
    }

    /// The largest `inputSize` (a side of the square the model reads): 2048² L values, as much
    /// as any published colorizer reads and within the engine's tensor limit for its layers.
    package static let maxInputSize = 2048
    /// The largest `inputMultiple`.
    package static let maxInputMultiple = 1024

    /// Checks the numbers before anything is sized from them (a description is untrusted: an
    /// `inputSize` of 65537 asked for 17 GB, an `inputMultiple` of 0 divided by zero).
    package func validate(name: String = "the colorizer description") throws {
        let fix = "Fix the description (see README, \"Colorizer description\")."
        if let inputSize, !(1...Self.maxInputSize).contains(inputSize) {
            throw MediaError(.invalidOptions, "\(name): inputSize \(inputSize) is out of range; it must be 1–\(Self.maxInputSize) (or null for the frame's size). \(fix)")
        }
        guard (1...Self.maxInputMultiple).contains(inputMultiple) else {
            throw MediaError(.invalidOptions, "\(name): inputMultiple \(inputMultiple) is out of range; it must be 1–\(Self.maxInputMultiple). \(fix)")
        }
        guard lScale != 0, lScale.isFinite, lCenter.isFinite else {
            throw MediaError(.invalidOptions, "\(name): lScale \(lScale) and lCenter \(lCenter) must be finite and lScale not 0. \(fix)")
        }
        guard abScale.isFinite, abScale != 0 else {
            throw MediaError(.invalidOptions, "\(name): abScale \(abScale) must be finite and not 0. \(fix)")
        }
    }

    /// Whether a model file has a description beside it (`NAME.json` next to `NAME.param`).
    package static func hasDescription(beside param: String) -> Bool {
        FileManager.default.fileExists(atPath: (param as NSString).deletingPathExtension + ".json")
    }

    /// Reads the description beside a model: `NAME.json` next to `NAME.param`.
    package static func beside(param: String) throws -> ColorizerSpec {
        let json = (param as NSString).deletingPathExtension + ".json"
        guard let data = FileManager.default.contents(atPath: json) else {
            throw MediaError(.inputUnreadable, "The colorizer '\(param)' has no description '\(json)'. Put a JSON file with its input and output (see README, \"Colorizer description\") beside it.")
        }
        do {
            return try JSONDecoder().decode(ColorizerSpec.self, from: data)
        } catch let e as MediaError {
            throw e
        } catch {
            throw MediaError(.corruptInput, "Cannot read the colorizer description '\(json)': \(error). Fix the JSON.")
        }
    }
}
