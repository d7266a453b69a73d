import Foundation

/// The `manifest.json` of a `.wifm` model bundle, validated.
///
/// Version 1 is the waifu2x iOS custom model format (`shared/specs/wifm-custom-model-spec.md`):
///
///     { "version": 1, "name": "Custom 2x Model", "type": "coreml",
///       "subModels": { "main": { "file": "main.mlpackage", "inputName": "input_1",
///                                "outputName": "Identity" } },
///       "dataFormat": "nchw", "inputShape": [1, 3, 128, 128], "shrinkSize": 16,
///       "scale": 2, "alphaMode": "sameAsMain" }
///
/// Rules of v1, each refused with its own `BundleError.Kind`: `version` is 1; `name` has
/// 5–100 characters; `type` is `coreml` with `.mlmodel` or `.mlpackage` files; `subModels`
/// has `main` and optionally `alpha`, nothing else, each with `file`, `inputName`,
/// `outputName`; `dataFormat` is `nchw` (`inputShape` `[1, C, H, W]`) or `chw` (`[C, H, W]`);
/// H equals W; C is 3 (monochrome models are wrapped to 3 channels, as the spec's
/// *Monochrome Models* says); `shrinkSize` is an integer ≥ 0 leaving a tile
/// (`2 * shrinkSize < side`); `scale` is an integer ≥ 1; `alphaMode` is `sameAsMain` or
/// `separateModel`, the latter with an `alpha` submodel; `info.md`, if present, is UTF-8
/// and at most 1 MiB; input and output are float32 (*Precision*), so a Tensor/IO `dtype`
/// other than `float32` and `quantize`/`dequantize` are refused. Keys are case sensitive.
///
/// Read with a warning (`warnings`), because bundles in circulation have them — the spec's
/// own first example has the first two:
/// - a trailing comma before `}` or `]` (ignored);
/// - `main.mlmodel` named where the archive holds `main.mlpackage` (the package is used);
/// - a `file` with a folder prefix, `models/main.mlmodel` (the root entry `main.mlmodel` is
///   used when it exists, else the path as written).
/// Unknown keys are warnings too (they are usually misspellings).
///
/// Extensions beyond v1 (Vivify's; still `version` 1):
/// - `type`: `ncnn` — `file` names the `.param`; the `.bin` with the same stem sits beside
///   it in the archive (`weightsFile`). `onnx` — `file` names an `.onnx` file.
/// - `task`: `upscale` (default) or `colorize`. For `colorize`, `dataFormat` (default
///   `nchw`), `inputShape`, `shrinkSize` (default 0), `scale` (default and only value 1) and
///   `alphaMode` are optional; `inputShape` has 1 channel (L) or 4 (L, two ab hints, mask).
/// - Colorizer keys, read for `colorize` bundles (see `Colorizer`): `inputSize` (default 256,
///   or the `inputShape` side; `null` runs at the frame's own size), `inputMultiple` (8),
///   `lCenter` (50), `lScale` (100), `abScale` (110), `upsample` (`bilinear` or `guided`).
/// - `inputs` / `outputs`: arrays of Tensor/IO-style entries (see `Tensor`), each naming a
///   submodel's `inputName` / `outputName`: `type` (`image` | `array`), `shape`, `format`
///   (`RGB` | `BGR`), `dtype` (`float32` only), `role` (`rgb` | `lab-l` | `lab-ab`), and
///   `normalize` (inputs) / `denormalize` (outputs) with `standard` (`"[0,1]"` | `"[-1,1]"`)
///   or `scale` and per-channel `bias` `{ "r", "g", "b" }`, applied with Tensor/IO's exact
///   formulas (`PixelNormalization`, `PixelDenormalization`).
public struct WifmManifest: Sendable, Equatable {
    /// The model file format (`type`).
    public enum ModelType: String, Sendable, CaseIterable {
        /// Core ML `.mlmodel` or `.mlpackage` (v1).
        case coreml
        /// ncnn `.param` with its `.bin` beside it (extension).
        case ncnn
        /// ONNX `.onnx` (extension).
        case onnx
    }

    /// What the model does (`task`, an extension; v1 bundles are `upscale`).
    public enum Task: String, Sendable, CaseIterable {
        /// RGB in, RGB `scale` times larger out.
        case upscale
        /// Lightness in, colour out.
        case colorize
    }

    /// Tensor layout of input and output (`dataFormat`).
    public enum DataFormat: String, Sendable, CaseIterable {
        /// `[1, C, H, W]`.
        case nchw
        /// `[C, H, W]`.
        case chw
    }

    /// How the alpha channel of transparent images is processed (`alphaMode`).
    public enum AlphaMode: String, Sendable, CaseIterable {
        /// Alpha goes through the main model like colour.
        case sameAsMain
        /// Alpha goes through the `alpha` submodel.
        case separateModel
    }

    /// One model file of the bundle (`subModels.main`, `subModels.alpha`).
    public struct SubModel: Sendable, Equatable {
        /// Which submodel this is.
        public enum Role: String, Sendable, CaseIterable {
            /// The model that processes colour.
            case main
            /// The optional model for the alpha channel.
            case alpha
        }

        /// Which submodel this is.
        public let role: Role
        /// Its path inside the archive, after the tolerated mistakes were corrected (a folder
        /// for `.mlpackage`).
        public let file: String
        /// `file` exactly as `manifest.json` wrote it.
        public let declaredFile: String
        /// Name of the input tensor.
        public let inputName: String
        /// Name of the output tensor.
        public let outputName: String
        /// ncnn: the `.bin` beside the `.param` (same stem); nil for other types.
        public let weightsFile: String?
        /// Whether `file` is a folder (`.mlpackage`).
        public var isDirectory: Bool { file.hasSuffix(".mlpackage") }

        /// Makes a submodel description.
        public init(role: Role, file: String, declaredFile: String? = nil, inputName: String, outputName: String,
                    weightsFile: String? = nil) {
            self.role = role
            self.file = file
            self.declaredFile = declaredFile ?? file
            self.inputName = inputName
            self.outputName = outputName
            self.weightsFile = weightsFile
        }
    }

    /// A Tensor/IO-style description of one input or output tensor (`inputs[i]`, `outputs[i]`).
    public struct Tensor: Sendable, Equatable {
        /// Tensor/IO's `type`.
        public enum Kind: String, Sendable, CaseIterable {
            /// Pixels.
            case image
            /// Other numbers (hints, masks).
            case array
        }

        /// Channel order in the tensor (`format`).
        public enum ChannelOrder: String, Sendable, CaseIterable {
            /// Red first.
            case rgb = "RGB"
            /// Blue first.
            case bgr = "BGR"
        }

        /// What the channels mean (`role`), read by the upscaler and colorizer stages.
        public enum ColorRole: String, Sendable, CaseIterable {
            /// Red, green, blue.
            case rgb
            /// CIE L* lightness (colorizer input).
            case labL = "lab-l"
            /// CIE a*, b* (colorizer output).
            case labAB = "lab-ab"
        }

        /// The submodel's `inputName` or `outputName` this entry describes.
        public var name: String
        /// `image` (default) or `array`.
        public var kind: Kind
        /// Tensor/IO `shape`, when given (`-1` allowed first for a free batch).
        public var shape: [Int]?
        /// `RGB` (default) or `BGR`.
        public var format: ChannelOrder
        /// What the channels mean.
        public var role: ColorRole
        /// For inputs: pixel values `0...255` to model values; nil when the stage decides.
        public var normalize: PixelNormalization?
        /// For outputs: model values to pixel values `0...255`; nil when the stage decides.
        public var denormalize: PixelDenormalization?

        /// Makes a tensor description.
        public init(name: String, kind: Kind = .image, shape: [Int]? = nil, format: ChannelOrder = .rgb,
                    role: ColorRole = .rgb, normalize: PixelNormalization? = nil, denormalize: PixelDenormalization? = nil) {
            self.name = name
            self.kind = kind
            self.shape = shape
            self.format = format
            self.role = role
            self.normalize = normalize
            self.denormalize = denormalize
        }
    }

    /// The colorizer description of a `colorize` bundle (same meaning as a colorizer's
    /// `.json`): L is fed as `(L − lCenter) / lScale` at `inputSize`, and the model's output
    /// times `abScale` is CIE a*, b*.
    public struct Colorizer: Sendable, Equatable {
        /// Side of the square L is resized to; nil runs at the frame's size (rounded up to
        /// `inputMultiple`).
        public var inputSize: Int?
        /// The model's input sides must be multiples of this.
        public var inputMultiple: Int
        /// Subtracted from L.
        public var lCenter: Float
        /// L is divided by this after centring.
        public var lScale: Float
        /// Model output × abScale = a*, b*.
        public var abScale: Float
        /// How the colour returns to full resolution: "bilinear" or "guided" (by the full L).
        public var upsample: String = "bilinear"

        /// Makes a description; the defaults are those of the ECCV16 / SIGGRAPH17 colorizers.
        public init(inputSize: Int? = 256, inputMultiple: Int = 8, lCenter: Float = 50, lScale: Float = 100, abScale: Float = 110) {
            self.inputSize = inputSize
            self.inputMultiple = inputMultiple
            self.lCenter = lCenter
            self.lScale = lScale
            self.abScale = abScale
        }
    }

    /// `version`: 1.
    public var version: Int
    /// `name`: 5–100 characters; also identifies the model.
    public var name: String
    /// `type`.
    public var type: ModelType
    /// `task` (extension; `upscale` when absent).
    public var task: Task
    /// `subModels.main`.
    public var main: SubModel
    /// `subModels.alpha`.
    public var alpha: SubModel?
    /// `dataFormat`.
    public var dataFormat: DataFormat
    /// `inputShape`: `[1, C, H, W]` or `[C, H, W]`; required for `upscale`.
    public var inputShape: [Int]?
    /// `shrinkSize`: pixels discarded on each side of an output tile, in input pixels.
    public var shrinkSize: Int
    /// `scale`: the upscaling factor.
    public var scale: Int
    /// `alphaMode`.
    public var alphaMode: AlphaMode
    /// Tensor/IO-style `inputs` as written (see `input(for:)` for defaults).
    public var inputs: [Tensor]
    /// Tensor/IO-style `outputs` as written (see `output(for:)` for defaults).
    public var outputs: [Tensor]
    /// The colorizer description; nil unless `task` is `colorize`.
    public var colorizer: Colorizer?
    /// `customLayers` (extension): what the Core ML custom layers of the bundle's models
    /// compute (see `CustomLayerDeclarations`); nil when absent.
    public var customLayers: CustomLayerDeclarations? = nil

    /// Main, then alpha if present.
    public var subModels: [SubModel] { [main] + (alpha.map { [$0] } ?? []) }

    /// Input channels (C of `inputShape`).
    public var channels: Int? {
        guard let shape = inputShape else { return nil }
        return dataFormat == .nchw ? shape[1] : shape[0]
    }

    /// The side of the square input tile (W of `inputShape`).
    public var tileSide: Int? { inputShape?.last }

    /// `(tileSide − 2 · shrinkSize) · scale`: the side of the output a tile contributes.
    public var outputTileSide: Int? { tileSide.map { ($0 - 2 * shrinkSize) * scale } }

    /// The description of `subModel`'s input: the `inputs` entry with its `inputName`, or the
    /// default — an RGB image normalized to `[0,1]` for `upscale`, L (`lab-l`, normalized by
    /// the colorizer keys, so `normalize` nil) for `colorize`.
    public func input(for subModel: SubModel) -> Tensor {
        if let t = inputs.first(where: { $0.name == subModel.inputName }) { return t }
        return task == .upscale
            ? Tensor(name: subModel.inputName, role: .rgb, normalize: .zeroToOne)
            : Tensor(name: subModel.inputName, role: .labL)
    }

    /// The description of `subModel`'s output: the `outputs` entry with its `outputName`, or
    /// the default — an RGB image denormalized from `[0,1]` for `upscale`, a*b* (`lab-ab`,
    /// scaled by `abScale`) for `colorize`.
    public func output(for subModel: SubModel) -> Tensor {
        if let t = outputs.first(where: { $0.name == subModel.outputName }) { return t }
        return task == .upscale
            ? Tensor(name: subModel.outputName, role: .rgb, denormalize: .zeroToOne)
            : Tensor(name: subModel.outputName, role: .labAB)
    }

    /// A few aligned lines for `vivify models info`.
    public var summary: String {
        var lines: [(String, String)] = [
            ("Name", name),
            ("Type", "\(type.rawValue), \(task.rawValue), manifest version \(version)"),
        ]
        for sub in subModels {
            var text = "\(sub.file) (input \(sub.inputName), output \(sub.outputName))"
            if let bin = sub.weightsFile { text += ", weights \(bin)" }
            lines.append((sub.role == .main ? "Main model" : "Alpha model", text))
        }
        if let shape = inputShape {
            var tile = "\(dataFormat.rawValue) \(shape)"
            if let out = outputTileSide { tile += ", shrink \(shrinkSize) → output tile \(out)×\(out)" }
            lines.append(("Input tile", tile))
        } else {
            lines.append(("Input tile", "\(dataFormat.rawValue), any size"))
        }
        if task == .upscale {
            lines.append(("Scale", "\(scale)×"))
            lines.append(("Alpha", alphaMode == .separateModel ? "separate model" : "same as main"))
        }
        if let d = customLayers {
            lines.append(("Custom layers", d.classes.keys.sorted().map { "\($0) (\(d.classes[$0]!.count) op\(d.classes[$0]!.count == 1 ? "" : "s"))" }.joined(separator: ", ")))
        }
        if let c = colorizer {
            let size = c.inputSize.map { "\($0)×\($0)" } ?? "frame size"
            lines.append(("Colorizer", "L at \(size) (multiple of \(c.inputMultiple)), (L − \(c.lCenter)) / \(c.lScale), ab × \(c.abScale)"))
        }
        let i = input(for: main), o = output(for: main)
        var io = "\(i.role.rawValue) \(i.format.rawValue)"
        if let n = i.normalize { io += " normalized \(n.label)" }
        io += " → \(o.role.rawValue) \(o.format.rawValue)"
        if let d = o.denormalize { io += " denormalized \(d.label)" }
        lines.append(("Pixels", io))
        let width = lines.map(\.0.count).max() ?? 0
        return lines.map { $0.0 + ":" + String(repeating: " ", count: width - $0.0.count + 1) + $0.1 }.joined(separator: "\n")
    }
}
