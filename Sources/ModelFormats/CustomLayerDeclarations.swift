import Engine
import Foundation

/// What a Core ML model's custom layers compute, declared as a short list of the engine's own
/// operations per `className`: the Linux counterpart of the `MLCustomLayer` classes an app
/// ships on Apple's systems, for layers that are simple enough to say in a few words (Keras
/// `Lambda` layers, mostly).
///
/// The declaration is the value of the key `customLayers`, in a `.wifm` bundle's
/// `manifest.json` or in a file `NAME.layers.json` beside a bare `NAME.mlmodel`:
///
///     { "customLayers": {
///         "ResCropBlockLambda":  { "ops": [ { "op": "crop", "all": 2 } ] },
///         "RescaleOutputLambda": { "ops": [ { "op": "expression", "expression": "(x + 1) * 127.5" } ] } } }
///
/// Operations (each an object with `op`; numbers may be `{"param": "NAME"}`, a numeric
/// parameter of the layer; vectors may be `{"weights": K}`, the layer's K-th weight array):
///
/// | op | keys | engine operation |
/// |---|---|---|
/// | `crop` | `all` or `top` `left` `bottom` `right` (default 0) | crop |
/// | `pad` | amounts as `crop`, `mode` constant/reflect/replicate, `value` | pad |
/// | `expression` | `expression`: `x`, numbers, parameters, `+ - * /`, functions | scalar, binary, activation |
/// | `clamp` | `min`, `max` | clip |
/// | `activation` | `function` relu/sigmoid/tanh/silu/sqrt/leakyRelu (`slope`)/elu (`alpha`) | activation |
/// | `scaleBias` | `scale`, `bias`: a number, one per channel, or weights | channel affine |
/// | `resize` | `scale` or `scaleH` `scaleW`, `mode` nearest/bilinear/bicubic, `alignCorners` | resize |
/// | `pixelShuffle` | `factor`, `order` crd/dcr | pixel shuffle |
///
/// Everything here is untrusted input: every key, type and size is checked when the
/// declaration is read, and every parameter and weight it names when a model's layer is
/// lowered, with errors that name the class, the key and the fix.
public struct CustomLayerDeclarations: Sendable, Equatable {
    /// The operations of each declared class, in order.
    public let classes: [String: [CustomLayerOperation]]
    /// Where the declaration came from, for messages ("'style.layers.json'").
    public let origin: String

    /// The key that holds the declarations, in a manifest and in a `.layers.json` file.
    public static let key = "customLayers"
    /// The suffix of the file beside a bare model: `NAME.layers.json` next to `NAME.mlmodel`.
    public static let fileSuffix = ".layers.json"
    /// The most classes and operations a declaration may hold (a model has a handful).
    static let maxClasses = 256, maxOperations = 64

    /// Makes declarations from already checked operations.
    public init(classes: [String: [CustomLayerOperation]], origin: String) {
        self.classes = classes
        self.origin = origin
    }

    /// The declaration file beside `model`: `NAME.layers.json` for `NAME.mlmodel`.
    public static func besidePath(for model: String) -> String {
        (model as NSString).deletingPathExtension + fileSuffix
    }

    /// Reads the declaration file at `path` (an object with the key `customLayers`).
    public static func read(path: String) throws -> CustomLayerDeclarations {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot read the custom layer declarations '\(path)'. Check the path and its permissions.")
        }
        let origin = "'\(path)'"
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(error)"
            throw ModelFormatError(.malformed, "The custom layer declarations \(origin) are not valid JSON (\(detail)). Fix the syntax, for example with `python3 -m json.tool`.")
        }
        guard let root = parsed as? [String: Any] else {
            throw ModelFormatError(.malformed, "The custom layer declarations \(origin) hold \(WifmManifestReader.jsonKind(parsed)), but they must be a JSON object with the key `\(key)`.")
        }
        let unknown = root.keys.filter { $0 != key }.sorted()
        guard unknown.isEmpty, let value = root[key] else {
            throw ModelFormatError(.malformed, "The custom layer declarations \(origin) must hold one key, `\(key)`\(unknown.isEmpty ? "" : ", not \(unknown.map { "`\($0)`" }.joined(separator: ", "))"). Write {\"\(key)\": {\"CLASS\": {\"ops\": [...]}}}.")
        }
        return try CustomLayerDeclarations(json: value, origin: origin)
    }

    /// Checks and reads the value of `customLayers` (an object from class names to
    /// declarations). Errors are `ModelFormatError`s (malformed) naming the key path.
    public init(json: Any, origin: String) throws {
        var reader = DeclarationReader(origin: origin)
        classes = try reader.classes(json)
        self.origin = origin
    }
}

/// A number in a declaration: a constant, or a numeric parameter of the layer by name.
public enum CustomLayerNumber: Sendable, Equatable {
    case value(Double)
    case parameter(String)
}

/// A per-channel vector in a declaration: one number for every channel, one value per
/// channel, or the layer's weight array at an index.
public enum CustomLayerVector: Sendable, Equatable {
    case number(CustomLayerNumber)
    case values([Float])
    case weights(Int)
}

/// Amounts on each side of the picture.
public struct CustomLayerSides: Sendable, Equatable {
    public var top, left, bottom, right: CustomLayerNumber
}

/// One operation of a declared custom layer.
public enum CustomLayerOperation: Sendable, Equatable {
    case crop(CustomLayerSides)
    case pad(CustomLayerSides, mode: String, value: CustomLayerNumber)
    case expression(CustomLayerExpression)
    case clamp(min: CustomLayerNumber, max: CustomLayerNumber)
    /// relu, sigmoid, tanh, silu, sqrt, leakyRelu (with `parameter` the slope), elu (alpha).
    case activation(String, parameter: CustomLayerNumber?)
    case scaleBias(scale: CustomLayerVector, bias: CustomLayerVector)
    case resize(scaleH: CustomLayerNumber, scaleW: CustomLayerNumber, mode: ResizeMode, alignCorners: Bool)
    case pixelShuffle(factor: CustomLayerNumber, order: ShuffleOrder)

    /// The operation names, for messages.
    static let names = ["crop", "pad", "expression", "clamp", "activation", "scaleBias", "resize", "pixelShuffle"]
    /// The activation functions, for messages.
    static let functions = ["relu", "sigmoid", "tanh", "silu", "sqrt", "leakyRelu", "elu"]
}

/// Walks the JSON of a declaration, naming the key path in every refusal.
private struct DeclarationReader {
    let origin: String

    func fail(_ path: String, _ why: String, _ fix: String) -> ModelFormatError {
        ModelFormatError(.malformed, "The custom layer declarations in \(origin): `\(path)` \(why). \(fix)")
    }

    func show(_ v: Any) -> String { "\(WifmManifestReader.show(v)) (\(WifmManifestReader.jsonKind(v)))" }

    mutating func classes(_ json: Any) throws -> [String: [CustomLayerOperation]] {
        let key = CustomLayerDeclarations.key
        guard let object = json as? [String: Any] else {
            throw fail(key, "is \(show(json)), but it must be an object from class names to declarations", "Write {\"CLASS\": {\"ops\": [...]}}.")
        }
        guard object.count <= CustomLayerDeclarations.maxClasses else {
            throw fail(key, "declares \(object.count) classes, more than \(CustomLayerDeclarations.maxClasses)", "Declare only the classes the model uses.")
        }
        var out: [String: [CustomLayerOperation]] = [:]
        for (name, value) in object {
            let path = "\(key).\(name)"
            guard !name.isEmpty, name.count <= 256 else { throw fail(path, "has an empty or over-long class name", "Use the layer's className.") }
            guard let decl = value as? [String: Any] else {
                throw fail(path, "is \(show(value)), but a declaration is an object", "Write {\"ops\": [ {\"op\": ...} ]}.")
            }
            let unknown = decl.keys.filter { $0 != "ops" && $0 != "description" }.sorted()
            guard unknown.isEmpty else {
                throw fail("\(path).\(unknown[0])", "is not a key of a declaration", "A declaration has `ops` (and an optional `description`).")
            }
            if let d = decl["description"], !(d is String) { throw fail("\(path).description", "is \(show(d)), not a string", "Write text in double quotes.") }
            guard let ops = decl["ops"] as? [Any] else {
                throw fail("\(path).ops", decl["ops"].map { "is \(show($0)), not an array" } ?? "is missing", "Give the layer's operations as an array: \"ops\": [ {\"op\": \"crop\", \"all\": 2} ].")
            }
            guard ops.count <= CustomLayerDeclarations.maxOperations else {
                throw fail("\(path).ops", "has \(ops.count) operations, more than \(CustomLayerDeclarations.maxOperations)", "Declare fewer operations.")
            }
            out[name] = try ops.enumerated().map { try operation($1, path: "\(path).ops[\($0)]") }
        }
        return out
    }

    func operation(_ json: Any, path: String) throws -> CustomLayerOperation {
        guard let o = json as? [String: Any] else { throw fail(path, "is \(show(json)), but an operation is an object", "Write {\"op\": \"crop\", \"all\": 2}.") }
        guard let op = o["op"] as? String else {
            throw fail("\(path).op", o["op"].map { "is \(show($0)), not a string" } ?? "is missing", "Name the operation: one of \(CustomLayerOperation.names.joined(separator: ", ")).")
        }
        func allow(_ keys: [String]) throws {
            if let k = o.keys.filter({ $0 != "op" && !keys.contains($0) }).sorted().first {
                throw fail("\(path).\(k)", "is not a key of the `\(op)` operation", keys.isEmpty ? "It takes no keys." : "It takes \(keys.map { "`\($0)`" }.joined(separator: ", ")).")
            }
        }
        let sideKeys = ["all", "top", "left", "bottom", "right"]
        switch op {
        case "crop":
            try allow(sideKeys)
            return .crop(try sides(o, path: path))
        case "pad":
            try allow(sideKeys + ["mode", "value"])
            let mode = try choice(o, "mode", path: path, among: ["constant", "reflect", "replicate"]) ?? "constant"
            return .pad(try sides(o, path: path), mode: mode, value: try number(o, "value", path: path) ?? .value(0))
        case "expression":
            try allow(["expression"])
            guard let text = o["expression"] as? String else {
                throw fail("\(path).expression", o["expression"].map { "is \(show($0)), not a string" } ?? "is missing", "Write the layer's function of x, for example \"(x + 1) * 127.5\".")
            }
            do {
                return .expression(try CustomLayerExpression(parsing: text))
            } catch let e as CustomLayerExpression.SyntaxError {
                throw fail("\(path).expression", "is \"\(text.prefix(80))\", which does not parse: \(e.message)", "Write an expression of x, numbers and parameter names with + - * / and \(CustomLayerExpression.functionList).")
            }
        case "clamp":
            try allow(["min", "max"])
            let lo = try number(o, "min", path: path), hi = try number(o, "max", path: path)
            guard lo != nil || hi != nil else { throw fail(path, "has neither `min` nor `max`", "Give at least one bound.") }
            if case .value(let a)? = lo, case .value(let b)? = hi, a > b { throw fail("\(path).min", "is \(a), above `max` \(b)", "Give min ≤ max.") }
            return .clamp(min: lo ?? .value(-Double(Float.greatestFiniteMagnitude)), max: hi ?? .value(Double(Float.greatestFiniteMagnitude)))
        case "activation":
            try allow(["function", "slope", "alpha"])
            guard let f = try choice(o, "function", path: path, among: CustomLayerOperation.functions) else {
                throw fail("\(path).function", "is missing", "Name one of \(CustomLayerOperation.functions.joined(separator: ", ")).")
            }
            let slope = try number(o, "slope", path: path), alpha = try number(o, "alpha", path: path)
            if slope != nil && f != "leakyRelu" { throw fail("\(path).slope", "only applies to leakyRelu", "Remove it.") }
            if alpha != nil && f != "elu" { throw fail("\(path).alpha", "only applies to elu", "Remove it.") }
            return .activation(f, parameter: f == "leakyRelu" ? slope ?? .value(0.01) : f == "elu" ? alpha ?? .value(1) : nil)
        case "scaleBias":
            try allow(["scale", "bias"])
            guard o["scale"] != nil || o["bias"] != nil else { throw fail(path, "has neither `scale` nor `bias`", "Give one or both.") }
            return .scaleBias(scale: try vector(o, "scale", path: path) ?? .number(.value(1)), bias: try vector(o, "bias", path: path) ?? .number(.value(0)))
        case "resize":
            try allow(["scale", "scaleH", "scaleW", "mode", "alignCorners"])
            let s = try number(o, "scale", path: path), sh = try number(o, "scaleH", path: path), sw = try number(o, "scaleW", path: path)
            guard (s != nil) != (sh != nil || sw != nil) else {
                throw fail(path, s == nil ? "has no scale" : "has both `scale` and `scaleH`/`scaleW`", "Give `scale`, or `scaleH` and `scaleW`.")
            }
            for (k, v) in [("scale", s), ("scaleH", sh), ("scaleW", sw)] {
                if case .value(let f)? = v, !(f >= 1.0 / Double(ModelLimits.maxScale) && f <= Double(ModelLimits.maxScale)) {
                    throw fail("\(path).\(k)", "is \(f), outside 1/\(ModelLimits.maxScale)–\(ModelLimits.maxScale)", "Give a factor in that range.")
                }
            }
            let mode = ResizeMode(rawValue: try choice(o, "mode", path: path, among: ["nearest", "bilinear", "bicubic"]) ?? "nearest")!
            var align = false
            if let a = o["alignCorners"] {
                guard let n = a as? NSNumber, String(cString: n.objCType) == "c" else { throw fail("\(path).alignCorners", "is \(show(a)), not true or false", "Write true or false.") }
                align = n.boolValue
            }
            return .resize(scaleH: s ?? sh ?? .value(1), scaleW: s ?? sw ?? .value(1), mode: mode, alignCorners: align)
        case "pixelShuffle":
            try allow(["factor", "order"])
            guard let f = try number(o, "factor", path: path) else { throw fail("\(path).factor", "is missing", "Give the block size, 2 to \(ModelLimits.maxScale).") }
            if case .value(let v) = f, !(v >= 1 && v <= Double(ModelLimits.maxScale) && v.rounded() == v) {
                throw fail("\(path).factor", "is \(v), not a whole number 1–\(ModelLimits.maxScale)", "Give the block size.")
            }
            let order = ShuffleOrder(rawValue: try choice(o, "order", path: path, among: ["crd", "dcr"]) ?? "crd")!
            return .pixelShuffle(factor: f, order: order)
        default:
            throw fail("\(path).op", "is \"\(op)\", which is not an operation of the declaration vocabulary", "Use one of \(CustomLayerOperation.names.joined(separator: ", ")), or a compiled layer (--custom-layers) for anything else.")
        }
    }

    func choice(_ o: [String: Any], _ key: String, path: String, among: [String]) throws -> String? {
        guard let v = o[key] else { return nil }
        guard let s = v as? String, among.contains(s) else {
            throw fail("\(path).\(key)", "is \(show(v))", "Use one of \(among.map { "\"\($0)\"" }.joined(separator: ", ")).")
        }
        return s
    }

    /// A number or `{"param": "NAME"}`; finite and within ±1e30.
    func number(_ o: [String: Any], _ key: String, path: String) throws -> CustomLayerNumber? {
        guard let v = o[key] else { return nil }
        return try number(v, path: "\(path).\(key)")
    }

    func number(_ v: Any, path: String) throws -> CustomLayerNumber {
        if let p = v as? [String: Any] {
            guard p.count == 1, let name = p["param"] as? String, !name.isEmpty else {
                throw fail(path, "is \(show(v))", "Write a number, or {\"param\": \"NAME\"} for a numeric parameter of the layer.")
            }
            return .parameter(name)
        }
        guard let d = WifmManifestReader.numberValue(v), !(v is NSNumber && String(cString: (v as! NSNumber).objCType) == "c") else {
            throw fail(path, "is \(show(v)), not a number", "Write a plain number, or {\"param\": \"NAME\"}.")
        }
        guard d.isFinite, abs(d) <= 1e30 else { throw fail(path, "is \(d)", "Give a finite number of at most 1e30 in size.") }
        return .value(d)
    }

    func sides(_ o: [String: Any], path: String) throws -> CustomLayerSides {
        let all = try number(o, "all", path: path)
        let each = try ["top", "left", "bottom", "right"].map { try number(o, $0, path: path) }
        if all != nil, let k = zip(["top", "left", "bottom", "right"], each).first(where: { $0.1 != nil })?.0 {
            throw fail("\(path).\(k)", "is given with `all`", "Give `all`, or the sides one by one.")
        }
        for (k, n) in zip(["all", "top", "left", "bottom", "right"], [all] + each) {
            if case .value(let v)? = n, !(v >= 0 && v <= Double(ModelLimits.maxPad) && v.rounded() == v) {
                throw fail("\(path).\(k)", "is \(v), not a whole number of pixels 0–\(ModelLimits.maxPad)", "Give the amount in pixels.")
            }
        }
        if all == nil && each.allSatisfy({ $0 == nil }) { throw fail(path, "gives no amounts", "Give `all`, or `top`, `left`, `bottom`, `right`.") }
        let zero = CustomLayerNumber.value(0)
        return CustomLayerSides(top: all ?? each[0] ?? zero, left: all ?? each[1] ?? zero, bottom: all ?? each[2] ?? zero, right: all ?? each[3] ?? zero)
    }

    func vector(_ o: [String: Any], _ key: String, path: String) throws -> CustomLayerVector? {
        guard let v = o[key] else { return nil }
        let p = "\(path).\(key)"
        if let w = v as? [String: Any], w.keys.contains("weights") {
            guard w.count == 1, let n = w["weights"].flatMap(WifmManifestReader.numberValue), n >= 0, n < 1_000, n.rounded() == n else {
                throw fail(p, "is \(show(v))", "Write {\"weights\": K} with K the index of the layer's weight array (0 for the first).")
            }
            return .weights(Int(n))
        }
        if let a = v as? [Any] {
            guard !a.isEmpty, a.count <= ModelLimits.maxChannels else { throw fail(p, "has \(a.count) values", "Give one value per channel.") }
            return .values(try a.enumerated().map { k, e in
                guard case .value(let d) = try number(e, path: "\(p)[\(k)]") else { throw fail("\(p)[\(k)]", "is a parameter inside an array", "Write numbers in the array.") }
                return Float(d)
            })
        }
        return .number(try number(v, path: p))
    }
}
