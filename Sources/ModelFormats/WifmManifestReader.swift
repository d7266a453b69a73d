import Engine
import Foundation

extension WifmManifest {
    /// Reads and validates `manifest.json`.
    ///
    /// - Parameters:
    ///   - json: the bytes of `manifest.json`.
    ///   - entries: the paths in the archive (folders as `name/` or implied by their files),
    ///     to check and correct submodel `file`s against; nil skips those checks.
    /// - Returns: the manifest and the warnings for tolerated mistakes and unknown keys.
    /// - Throws: `BundleError` naming the first broken rule, its key and value.
    public static func read(json: Data, entries: [String]?) throws -> (manifest: WifmManifest, warnings: [String]) {
        var reader = WifmManifestReader(listing: entries.map(WifmFileListing.init(paths:)))
        let manifest = try reader.read(json)
        return (manifest, reader.warnings)
    }
}

/// `info.md`: CommonMark, UTF-8, at most 1 MiB.
enum WifmInfo {
    /// The spec's "1MB", read as 1 MiB.
    static let maxBytes = 1 << 20

    /// The refusal for an `info.md` of `size` bytes, or nil when the size is allowed.
    static func sizeError(_ size: UInt64) -> BundleError? {
        guard size > UInt64(maxBytes) else { return nil }
        return BundleError(.infoTooLarge, key: "info.md",
                           "info.md is \(size) bytes, but the spec allows at most 1 MiB (\(maxBytes) bytes); shorten it or link to a longer text.")
    }

    /// The text of `info.md`, or the refusal.
    static func text(_ data: Data) throws -> String {
        if let e = sizeError(UInt64(data.count)) { throw e }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw BundleError(.infoNotUTF8, key: "info.md",
                              "info.md is not valid UTF-8, which the spec requires; save it as UTF-8 (for example `iconv -t UTF-8`).")
        }
        return text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text
    }
}

/// The files and folders present in an archive, or given to `ModelBundle.pack`, by their
/// path inside the archive.
struct WifmFileListing: Sendable {
    /// Paths of regular files.
    private(set) var files: Set<String> = []
    /// Paths of folders, without the trailing slash: explicit folder entries and every parent.
    private(set) var directories: Set<String> = []

    /// Makes the listing of `paths` (`name/` is a folder).
    init(paths: [String]) {
        for path in paths {
            let isDirectory = path.hasSuffix("/")
            let parts = path.split(separator: "/").map(String.init)
            guard !parts.isEmpty else { continue }
            for n in 1..<parts.count { directories.insert(parts[..<n].joined(separator: "/")) }
            if isDirectory { directories.insert(parts.joined(separator: "/")) } else { files.insert(parts.joined(separator: "/")) }
        }
    }

    func isFile(_ path: String) -> Bool { files.contains(path) }
    func isDirectory(_ path: String) -> Bool { directories.contains(path) }
    func exists(_ path: String) -> Bool { isFile(path) || isDirectory(path) }

    /// The names at the root, sorted, for error messages.
    var rootNames: [String] {
        (files.union(directories)).filter { !$0.contains("/") }.sorted()
    }
}

/// The hand validator behind `WifmManifest.read`: walks `JSONSerialization` output so that
/// every refusal can name its key and value.
struct WifmManifestReader {
    private(set) var warnings: [String] = []
    let listing: WifmFileListing?

    init(listing: WifmFileListing?) {
        self.listing = listing
    }

    /// An object of the manifest and its key path (`""` at the root, `subModels.main`, `inputs[0]`).
    struct Object {
        let values: [String: Any]
        let path: String
        func key(_ k: String) -> String { path.isEmpty ? k : "\(path).\(k)" }
        subscript(_ k: String) -> Any? { values[k] }
    }

    private static let rootKeys: Set<String> = [
        "version", "name", "type", "subModels", "dataFormat", "inputShape", "shrinkSize", "scale", "alphaMode",
        "task", "inputs", "outputs", CustomLayerDeclarations.key,
    ]
    private static let colorizerKeys = ["inputSize", "inputMultiple", "lCenter", "lScale", "abScale", "upsample"]

    mutating func read(_ data: Data) throws -> WifmManifest {
        var bytes = [UInt8](data)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        let commaLines = Self.blankTrailingCommas(&bytes)
        if !commaLines.isEmpty {
            let where_ = commaLines.map(String.init).joined(separator: ", ")
            warnings.append("manifest.json has a trailing comma before '}' or ']' (line \(where_)); it was ignored, but strict JSON readers refuse it: remove it.")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(bytes))
        } catch {
            var detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            if let (line, column) = Self.lineAndColumn(of: detail, in: bytes) { detail += " That is line \(line), column \(column)." }
            throw BundleError(.invalidJSON, key: nil,
                              "manifest.json is not valid JSON (\(detail)); fix the syntax, for example with `python3 -m json.tool manifest.json`.")
        }
        guard let values = parsed as? [String: Any] else {
            throw BundleError(.invalidJSON, key: nil,
                              "manifest.json holds \(Self.jsonKind(parsed)), but it must be a JSON object; write the keys inside { … } as the spec's example does.")
        }
        let root = Object(values: values, path: "")
        warnUnknownKeys(root, known: Self.rootKeys.union(Self.colorizerKeys))

        // version, name, type, task
        let version = try integer(root, "version", required: true, kind: .unsupportedVersion,
                                  rule: "the only manifest version is 1", fix: "set `version` to 1")!
        guard version == 1 else {
            throw failure(.unsupportedVersion, root.key("version"), version, "the only manifest version is 1", "set `version` to 1")
        }
        let name = try string(root, "name", required: true)!
        guard (5...100).contains(name.count) else {
            throw failure(.invalidName, "name", name, "a name must have 5 to 100 characters (it has \(name.count))",
                          "give the model a name of 5 to 100 characters")
        }
        let typeText = try string(root, "type", required: true)!
        guard let type = WifmManifest.ModelType(rawValue: typeText) else {
            throw failure(.unsupportedModelType, "type", typeText,
                          "supported types are \"coreml\" (spec v1) and Vivify's \"ncnn\" and \"onnx\"",
                          "set `type` to one of them (types are case sensitive)")
        }
        let task: WifmManifest.Task
        if let taskText = try string(root, "task", required: false) {
            guard let t = WifmManifest.Task(rawValue: taskText) else {
                throw failure(.unsupportedTask, "task", taskText, "a task is \"upscale\" or \"colorize\"",
                              "set `task` to one of them, or leave it out for an upscaler")
            }
            task = t
        } else {
            task = .upscale
        }
        let upscale = task == .upscale

        // subModels
        guard let subValue = root["subModels"] else {
            throw BundleError(.missingKey, key: "subModels",
                              "manifest.json has no `subModels`, which the spec requires; add { \"main\": { \"file\": …, \"inputName\": …, \"outputName\": … } }.")
        }
        let subs = try object(subValue, key: "subModels")
        for key in subs.keys.sorted() where WifmManifest.SubModel.Role(rawValue: key) == nil {
            throw failure(.unknownSubModel, "subModels.\(key)", subs[key]!,
                          "the only submodels are `main` and `alpha`", "rename or remove `\(key)` (names are case sensitive)")
        }
        guard let mainValue = subs["main"] else {
            throw BundleError(.missingKey, key: "subModels.main",
                              "manifest.json has no `subModels.main`, but at least a main model is required; add \"main\": { \"file\": …, \"inputName\": …, \"outputName\": … } to `subModels`.")
        }
        let main = try subModel(.main, mainValue, type: type)
        let alpha = try subs["alpha"].map { try subModel(.alpha, $0, type: type) }

        // dataFormat, inputShape, shrinkSize, scale, alphaMode
        let dataFormat: WifmManifest.DataFormat
        if let text = try string(root, "dataFormat", required: upscale) {
            guard let f = WifmManifest.DataFormat(rawValue: text) else {
                throw failure(.unsupportedDataFormat, "dataFormat", text, "supported data formats are \"nchw\" and \"chw\"",
                              "set `dataFormat` to the layout of the model's tensors (case sensitive)")
            }
            dataFormat = f
        } else {
            dataFormat = .nchw
        }
        let inputShape = try shape(root, dataFormat: dataFormat, task: task)
        let side = inputShape?.last
        let shrinkRule = "`shrinkSize` must be a whole number of pixels from 0 to \(ModelLimits.maxPad)"
        let shrinkSize = try integer(root, "shrinkSize", required: upscale, kind: .invalidShrinkSize, rule: shrinkRule,
                                     fix: "set it to the width of the unstable border, such as 16") ?? 0
        guard shrinkSize >= 0, shrinkSize <= ModelLimits.maxPad else {
            throw failure(.invalidShrinkSize, "shrinkSize", shrinkSize, shrinkRule, "set it to 0 or more")
        }
        if let side, 2 * shrinkSize >= side {
            throw failure(.invalidShrinkSize, "shrinkSize", shrinkSize,
                          "twice the shrink size must be less than the input side \(side), or nothing of a tile is left",
                          "lower `shrinkSize` or raise the side of `inputShape`")
        }
        let scaleRule = upscale ? "the spec requires an integer scale of at least 1 (Vivify runs scales up to \(ModelLimits.maxScale))" : "a colorize model keeps the size, so its scale is 1"
        let scale = try integer(root, "scale", required: upscale, kind: .invalidScale, rule: scaleRule,
                                fix: upscale ? "set it to a whole number such as 2" : "set `scale` to 1 or leave it out") ?? 1
        guard upscale ? (1...ModelLimits.maxScale).contains(scale) : scale == 1 else {
            throw failure(.invalidScale, "scale", scale, scaleRule,
                          upscale ? "set it to a whole number such as 2" : "set `scale` to 1 or leave it out")
        }
        let alphaMode: WifmManifest.AlphaMode
        if let text = try string(root, "alphaMode", required: upscale) {
            guard let m = WifmManifest.AlphaMode(rawValue: text) else {
                throw failure(.unsupportedAlphaMode, "alphaMode", text,
                              "supported alpha modes are \"sameAsMain\" and \"separateModel\"", "set `alphaMode` to one of them (case sensitive)")
            }
            alphaMode = m
        } else {
            alphaMode = .sameAsMain
        }
        if alphaMode == .separateModel, alpha == nil {
            throw BundleError(.missingAlphaModel, key: "subModels.alpha",
                              "manifest.json key `alphaMode` is \"separateModel\", but there is no `subModels.alpha` to run; add an `alpha` submodel or set `alphaMode` to \"sameAsMain\".")
        }
        if let alpha, !upscale || alphaMode == .sameAsMain {
            warnings.append("manifest.json names an alpha model '\(alpha.declaredFile)' that is not used (\(upscale ? "`alphaMode` is \"sameAsMain\"" : "colorize models have no alpha pass")); set `alphaMode` to \"separateModel\" or remove `subModels.alpha`.")
        }

        // Extensions: inputs / outputs, colorizer keys
        let inputs = try tensors(root, "inputs", isInput: true, names: Set([main.inputName] + [alpha?.inputName].compactMap { $0 }), task: task)
        let outputs = try tensors(root, "outputs", isInput: false, names: Set([main.outputName] + [alpha?.outputName].compactMap { $0 }), task: task)
        let colorizer: WifmManifest.Colorizer?
        if upscale {
            colorizer = nil
            let present = Self.colorizerKeys.filter { root[$0] != nil }
            if !present.isEmpty {
                warnings.append("manifest.json keys \(present.map { "`\($0)`" }.joined(separator: ", ")) only apply to colorize models and were ignored; set `task` to \"colorize\" or remove them.")
            }
        } else {
            colorizer = try colorizerKeys(root, side: side)
        }

        // Extension: customLayers, checked here so a bad declaration fails when the bundle opens.
        var customLayers: CustomLayerDeclarations?
        if let value = root[CustomLayerDeclarations.key] {
            do {
                customLayers = try CustomLayerDeclarations(json: value, origin: "manifest.json")
            } catch let e as ModelFormatError {
                throw BundleError(.invalidCustomLayers, key: CustomLayerDeclarations.key, e.message)
            }
        }

        return WifmManifest(version: version, name: name, type: type, task: task, main: main, alpha: alpha,
                            dataFormat: dataFormat, inputShape: inputShape, shrinkSize: shrinkSize, scale: scale,
                            alphaMode: alphaMode, inputs: inputs, outputs: outputs, colorizer: colorizer, customLayers: customLayers)
    }

    // MARK: Submodels and their files

    private mutating func subModel(_ role: WifmManifest.SubModel.Role, _ value: Any, type: WifmManifest.ModelType) throws -> WifmManifest.SubModel {
        let o = Object(values: try object(value, key: "subModels.\(role.rawValue)"), path: "subModels.\(role.rawValue)")
        warnUnknownKeys(o, known: ["file", "inputName", "outputName"])
        let declared = try nonEmptyString(o, "file", what: "the path of the model file inside the archive")
        let inputName = try nonEmptyString(o, "inputName", what: "the name of the model's input tensor")
        let outputName = try nonEmptyString(o, "outputName", what: "the name of the model's output tensor")
        let file = try resolveFile(declared, key: o.key("file"), type: type)
        var weights: String?
        if type == .ncnn, let bin = ModelFileFormat.weightsFile(beside: file) {
            if let listing, !listing.isFile(bin) {
                throw BundleError(.missingFile, key: o.key("file"),
                                  "manifest.json key `\(o.key("file"))` names the ncnn model '\(file)', but the archive has no weights '\(bin)' beside it; add the .bin with the same name as the .param.")
            }
            weights = bin
        }
        return WifmManifest.SubModel(role: role, file: file, declaredFile: declared, inputName: inputName,
                                     outputName: outputName, weightsFile: weights)
    }

    /// The archive path for `declared`, correcting the two tolerated mistakes with a warning.
    private mutating func resolveFile(_ declared: String, key: String, type: WifmManifest.ModelType) throws -> String {
        var name = declared
        if let listing {
            let trimmed = declared.hasSuffix("/") ? String(declared.dropLast()) : declared
            name = trimmed
            if trimmed.contains("/") {
                let last = String(trimmed.split(separator: "/").last ?? "")
                let lastAsPackage = last.hasSuffix(".mlmodel") ? String(last.dropLast(".mlmodel".count)) + ".mlpackage" : nil
                if !last.isEmpty, listing.exists(last) || lastAsPackage.map(listing.isDirectory) == true {
                    warnings.append("manifest.json key `\(key)` is \"\(declared)\", with a folder prefix; '\(last)' at the root of the archive was used, as the spec puts every file there: write just \"\(last)\".")
                    name = last
                } else if listing.exists(trimmed) {
                    warnings.append("manifest.json key `\(key)` is \"\(declared)\", a file inside a folder of the archive; it was used, but the spec puts every file at the root: move it there.")
                }
            }
            if !listing.exists(name), type == .coreml, name.hasSuffix(".mlmodel") {
                let package = String(name.dropLast(".mlmodel".count)) + ".mlpackage"
                if listing.isDirectory(package) {
                    warnings.append("manifest.json key `\(key)` is \"\(declared)\", but the archive holds '\(package)'; the package was used: write \"\(package)\".")
                    name = package
                }
            }
        }
        let ext = (name as NSString).pathExtension
        let allowed: [String]
        switch type {
        case .coreml: allowed = ["mlmodel", "mlpackage"]
        case .ncnn: allowed = ["param"]
        case .onnx: allowed = ["onnx"]
        }
        guard allowed.contains(ext) else {
            throw failure(.unsupportedFileType, key, declared,
                          "a `\(type.rawValue)` model file ends in \(allowed.map { ".\($0)" }.joined(separator: " or "))",
                          "name the model file with its extension, or set `type` to match it")
        }
        guard let listing else { return name }
        guard listing.exists(name) else {
            let held = listing.rootNames.prefix(8).joined(separator: ", ")
            throw failure(.missingFile, key, declared, "the archive has no such file (its root holds: \(held.isEmpty ? "nothing" : held))",
                          "put the file at the root of the archive or correct the name (names are case sensitive)")
        }
        if ext == "mlpackage", !listing.isDirectory(name) {
            throw failure(.unsupportedFileType, key, declared, "it is a single file in the archive, while an .mlpackage is a folder",
                          "add the whole .mlpackage folder to the archive")
        }
        if ext != "mlpackage", !listing.isFile(name) {
            throw failure(.unsupportedFileType, key, declared, "it is a folder in the archive, while a .\(ext) model is one file",
                          "add the model file itself")
        }
        return name
    }

    // MARK: inputShape

    private func shape(_ root: Object, dataFormat: WifmManifest.DataFormat, task: WifmManifest.Task) throws -> [Int]? {
        let key = "inputShape"
        guard let value = root[key] else {
            guard task == .colorize else {
                throw BundleError(.missingKey, key: key,
                                  "manifest.json has no `inputShape`, which the spec requires; add the model's input tile shape, such as [1, 3, 128, 128].")
            }
            return nil
        }
        guard let items = value as? [Any] else { throw wrongType(key, value, expected: "an array") }
        let rank = dataFormat == .nchw ? 4 : 3
        let layout = dataFormat == .nchw ? "[1, C, H, W]" : "[C, H, W]"
        let example = dataFormat == .nchw ? "[1, 3, 128, 128]" : "[3, 128, 128]"
        var ints: [Int] = []
        for item in items {
            guard let n = Self.integerValue(item), n >= 1, n <= ModelLimits.maxDimension else {
                throw failure(.invalidInputShape, key, value, "every dimension must be a whole number from 1 to \(ModelLimits.maxDimension)",
                              "write the shape as \(layout), such as \(example)")
            }
            ints.append(n)
        }
        guard ints.count == rank else {
            throw failure(.invalidInputShape, key, value, "with `dataFormat` \"\(dataFormat.rawValue)\" it has \(rank) dimensions \(layout)",
                          "write it as \(layout), such as \(example), or change `dataFormat`")
        }
        if dataFormat == .nchw, ints[0] != 1 {
            throw failure(.invalidInputShape, key, value, "the batch dimension N must be 1 (one tile at a time)",
                          "export the model with batch 1, such as \(example)")
        }
        let (c, h, w) = (ints[rank - 3], ints[rank - 2], ints[rank - 1])
        guard h == w else {
            throw failure(.nonSquareInput, key, value, "the spec requires width and height to be equal (here H \(h), W \(w))",
                          "use a square tile such as \(example)")
        }
        if task == .upscale, c != 3 {
            throw failure(.invalidInputShape, key, value,
                          "only 3-channel (RGB) models are supported, here C is \(c)",
                          "wrap a monochrome model to take and return 3 channels, as the spec's *Monochrome Models* section shows")
        }
        if task == .colorize, c != 1, c != 4 {
            throw failure(.invalidInputShape, key, value,
                          "a colorize model takes 1 channel (L) or 4 (L, two ab hints and a mask), here C is \(c)",
                          "correct the channel count of `inputShape`")
        }
        return ints
    }

    // MARK: Tensor/IO inputs and outputs

    private enum Transform {
        case none, zeroToOne, negativeOneToOne
        case custom(scale: Float, r: Float, g: Float, b: Float)
    }

    private mutating func tensors(_ root: Object, _ key: String, isInput: Bool, names: Set<String>,
                                  task: WifmManifest.Task) throws -> [WifmManifest.Tensor] {
        guard let value = root[key] else { return [] }
        guard let items = value as? [Any] else { throw wrongType(key, value, expected: "an array") }
        let nameKey = isInput ? "inputName" : "outputName"
        var result: [WifmManifest.Tensor] = []
        for (i, item) in items.enumerated() {
            let o = Object(values: try object(item, key: "\(key)[\(i)]"), path: "\(key)[\(i)]")
            warnUnknownKeys(o, known: ["name", "type", "shape", "format", "dtype", "role", "normalize", "denormalize",
                                       "quantize", "dequantize"])
            let name = try nonEmptyString(o, "name", what: "the submodel `\(nameKey)` it describes")
            guard names.contains(name) else {
                throw failure(.invalidTensorDescription, o.key("name"), name,
                              "it matches no submodel `\(nameKey)` (\(names.sorted().joined(separator: ", ")))",
                              "use the tensor name given in `subModels`")
            }
            guard !result.contains(where: { $0.name == name }) else {
                throw failure(.invalidTensorDescription, o.key("name"), name, "another `\(key)` entry already describes it",
                              "keep one entry per tensor")
            }
            var tensor = WifmManifest.Tensor(name: name)
            if let text = try string(o, "type", required: false) {
                guard let kind = WifmManifest.Tensor.Kind(rawValue: text) else {
                    throw failure(.invalidTensorDescription, o.key("type"), text, "a tensor type is \"image\" or \"array\"", "set it to one of them")
                }
                tensor.kind = kind
            }
            if let shapeValue = o["shape"] {
                guard let dims = shapeValue as? [Any] else { throw wrongType(o.key("shape"), shapeValue, expected: "an array") }
                var ints: [Int] = []
                for (d, dim) in dims.enumerated() {
                    guard let n = Self.integerValue(dim), n >= 1 || (n == -1 && d == 0) else {
                        throw failure(.invalidTensorDescription, o.key("shape"), shapeValue,
                                      "dimensions are whole numbers ≥ 1 (−1 only first, for a free batch)", "correct the shape")
                    }
                    ints.append(n)
                }
                tensor.shape = ints
            }
            if let text = try string(o, "format", required: false) {
                guard let format = WifmManifest.Tensor.ChannelOrder(rawValue: text) else {
                    throw failure(.invalidTensorDescription, o.key("format"), text, "a pixel format is \"RGB\" or \"BGR\"",
                                  "set it to one of them (upper case)")
                }
                tensor.format = format
            }
            if let text = try string(o, "dtype", required: false), text != "float32" {
                throw failure(.invalidTensorDescription, o.key("dtype"), text,
                              "the spec supports only float32 input and output tensors (see its *Precision* section)",
                              "export the model with float32 input and output")
            }
            for q in ["quantize", "dequantize"] where o[q] != nil {
                throw failure(.invalidTensorDescription, o.key(q), o[q]!,
                              "quantized (uint8) input and output are not supported, only float32 (the spec's *Precision* section)",
                              "remove `\(q)` and export the model with float32 input and output")
            }
            let allowedRoles: [WifmManifest.Tensor.ColorRole] = task == .upscale ? [.rgb] : isInput ? [.labL, .rgb] : [.labAB, .rgb]
            tensor.role = allowedRoles[0]
            if let text = try string(o, "role", required: false) {
                guard let role = WifmManifest.Tensor.ColorRole(rawValue: text), allowedRoles.contains(role) else {
                    let list = allowedRoles.map { "\"\($0.rawValue)\"" }.joined(separator: " or ")
                    throw failure(.invalidTensorDescription, o.key("role"), text,
                                  "the \(isInput ? "input" : "output") of a\(task == .upscale ? "n" : "") \(task.rawValue) model has the role \(list)",
                                  "set `role` to \(list)")
                }
                tensor.role = role
            }
            let (own, other) = isInput ? ("normalize", "denormalize") : ("denormalize", "normalize")
            if let wrong = o[other] {
                throw failure(.invalidTensorDescription, o.key(other), wrong,
                              "`\(other)` belongs in \(isInput ? "`outputs`" : "`inputs`") entries (Tensor/IO \(isInput ? "normalizes inputs" : "denormalizes outputs"))",
                              "use `\(own)` here")
            }
            if let t = o[own] {
                let transform = try self.transform(t, key: o.key(own))
                if isInput {
                    switch transform {
                    case .none: tensor.normalize = PixelNormalization.none
                    case .zeroToOne: tensor.normalize = .zeroToOne
                    case .negativeOneToOne: tensor.normalize = .negativeOneToOne
                    case let .custom(s, r, g, b): tensor.normalize = PixelNormalization(scale: s, redBias: r, greenBias: g, blueBias: b)
                    }
                } else {
                    switch transform {
                    case .none: tensor.denormalize = PixelDenormalization.none
                    case .zeroToOne: tensor.denormalize = .zeroToOne
                    case .negativeOneToOne: tensor.denormalize = .negativeOneToOne
                    case let .custom(s, r, g, b): tensor.denormalize = PixelDenormalization(scale: s, redBias: r, greenBias: g, blueBias: b)
                    }
                }
            }
            result.append(tensor)
        }
        return result
    }

    /// A `normalize` or `denormalize` object, read as Tensor/IO reads it: `standard` wins over
    /// `scale`/`bias`; a missing scale is 1 and a missing bias channel 0; an empty object is none.
    private mutating func transform(_ value: Any, key: String) throws -> Transform {
        let o = Object(values: try object(value, key: key), path: key)
        warnUnknownKeys(o, known: ["standard", "scale", "bias"])
        if let standard = try string(o, "standard", required: false) {
            if o["scale"] != nil || o["bias"] != nil {
                warnings.append("manifest.json key `\(key)` has `standard` and also `scale`/`bias`; `standard` wins, as in Tensor/IO: remove one of them.")
            }
            switch standard {
            case "[0,1]": return .zeroToOne
            case "[-1,1]": return .negativeOneToOne
            default:
                throw failure(.invalidTensorDescription, o.key("standard"), standard, "the standard ranges are \"[0,1]\" and \"[-1,1]\"",
                              "write one of them exactly (no spaces), or give `scale` and `bias`")
            }
        }
        guard o["scale"] != nil || o["bias"] != nil else { return .none }
        var scale: Float = 1
        if let s = o["scale"] {
            guard let d = Self.numberValue(s) else { throw wrongType(o.key("scale"), s, expected: "a number") }
            guard d.isFinite, d != 0 else {
                throw failure(.invalidTensorDescription, o.key("scale"), s, "a scale must be a finite number other than 0",
                              "correct `scale`")
            }
            scale = Float(d)
        }
        var bias: [Float] = [0, 0, 0]
        if let b = o["bias"] {
            guard let channels = b as? [String: Any] else {
                throw failure(.wrongType, o.key("bias"), b, "Tensor/IO biases are per channel, an object with `r`, `g` and `b`",
                              "write it as { \"r\": …, \"g\": …, \"b\": … }")
            }
            let bo = Object(values: channels, path: o.key("bias"))
            warnUnknownKeys(bo, known: ["r", "g", "b"])
            for (i, c) in ["r", "g", "b"].enumerated() {
                guard let v = bo[c] else {
                    warnings.append("manifest.json key `\(bo.key(c))` is missing and counts as 0, as in Tensor/IO; give all of `r`, `g` and `b`.")
                    continue
                }
                guard let d = Self.numberValue(v) else { throw wrongType(bo.key(c), v, expected: "a number") }
                guard d.isFinite else {
                    throw failure(.invalidTensorDescription, bo.key(c), v, "a bias must be a finite number", "correct it")
                }
                bias[i] = Float(d)
            }
        }
        return .custom(scale: scale, r: bias[0], g: bias[1], b: bias[2])
    }

    // MARK: Colorizer keys

    private func colorizerKeys(_ root: Object, side: Int?) throws -> WifmManifest.Colorizer {
        var c = WifmManifest.Colorizer(inputSize: side ?? 256)
        if let v = root["inputSize"] {
            if v is NSNull {
                c.inputSize = nil
            } else {
                guard let n = try integer(root, "inputSize", required: false, kind: .invalidColorizerValue,
                                          rule: "`inputSize` must be a whole number of pixels ≥ 1, or null", fix: "set it to the model's side, such as 256"),
                      n >= 1 else {
                    throw failure(.invalidColorizerValue, "inputSize", v, "`inputSize` must be a whole number of pixels ≥ 1, or null",
                                  "set it to the model's side, such as 256")
                }
                if let side, n != side {
                    throw failure(.invalidColorizerValue, "inputSize", n, "it differs from the side \(side) of `inputShape`",
                                  "make the two agree, or leave `inputSize` out")
                }
                c.inputSize = n
            }
        }
        if let n = try integer(root, "inputMultiple", required: false, kind: .invalidColorizerValue,
                               rule: "`inputMultiple` must be a whole number ≥ 1", fix: "set it to the model's total stride, such as 8") {
            guard n >= 1 else {
                throw failure(.invalidColorizerValue, "inputMultiple", n, "`inputMultiple` must be a whole number ≥ 1",
                              "set it to the model's total stride, such as 8")
            }
            c.inputMultiple = n
        }
        for key in ["lCenter", "lScale", "abScale"] {
            guard let v = root[key] else { continue }
            guard let d = Self.numberValue(v) else { throw wrongType(key, v, expected: "a number") }
            guard d.isFinite, key == "lCenter" || d != 0 else {
                throw failure(.invalidColorizerValue, key, v, "it must be a finite number\(key == "lCenter" ? "" : " other than 0")",
                              "correct `\(key)` (defaults: lCenter 50, lScale 100, abScale 110)")
            }
            switch key {
            case "lCenter": c.lCenter = Float(d)
            case "lScale": c.lScale = Float(d)
            default: c.abScale = Float(d)
            }
        }
        if let method = try string(root, "upsample", required: false) {
            guard ["bilinear", "guided"].contains(method) else {
                throw failure(.invalidColorizerValue, "upsample", method, "`upsample` must be \"bilinear\" or \"guided\"",
                              "use \"guided\" (colour follows the full-resolution L) or \"bilinear\"")
            }
            c.upsample = method
        }
        return c
    }

    private mutating func warnUnknownKeys(_ o: Object, known: Set<String>) {
        for key in o.values.keys.sorted() where !known.contains(key) {
            warnings.append("manifest.json key `\(o.key(key))` is not part of the format and was ignored; check its spelling (keys are case sensitive) or remove it.")
        }
    }
}
