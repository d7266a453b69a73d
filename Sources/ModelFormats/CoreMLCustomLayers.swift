import Engine
import Foundation

// Core ML custom layers (NeuralNetworkLayer field 500, CustomLayerParams: className 10,
// weights 20, parameters 30 (map<string, CustomLayerParamValue>: doubleValue 10,
// stringValue 20, intValue 30, longValue 40, boolValue 50), description 40), lowered through
// their declarations (`CustomLayerDeclarations`) onto the engine's operations. Output shapes
// follow from those operations, so shape checks, tiling and receptive fields need nothing new.
// Compiled layers (`--custom-layers`) tile through the geometry their library gives.

extension CoreMLImporter {
    /// The message for a custom layer that nothing declares: the class, the model's own
    /// description of it, and the key to add.
    static func undeclaredCustomLayer(layer: String, className: String, description: String, source: String,
                                      declarations: CustomLayerDeclarations?, library: String? = nil) -> ModelFormatError {
        let about = description.isEmpty ? "the model gives no description of it" : "the model describes it as \"\(description.prefix(200))\""
        let file = CustomLayerDeclarations.besidePath(for: source)
        var whereNow = declarations.map { " The declarations in \($0.origin) do not name it (they declare \($0.classes.keys.sorted().map { "'\($0)'" }.joined(separator: ", ")))." } ?? ""
        if let library { whereNow += " The custom layer library '\(library)' does not implement it." }
        return ModelFormatError(.unsupported, "Layer '\(layer)' in \(source) is a custom layer of class '\(className)' (\(about)), which Vivify runs only when it is declared.\(whereNow) Add `\(CustomLayerDeclarations.key).\(className)` to the bundle's manifest.json, or to '\(file)' beside the model: {\"\(CustomLayerDeclarations.key)\": {\"\(className)\": {\"ops\": [ ... ]}}} with the engine operations it computes, or pass --custom-layers LIB.so, a library that implements it (see README, \"Core ML custom layers\").")
    }
}

extension CoreMLImporter {
    /// A custom layer's weight array as plain floats for a compiled layer, its length from its
    /// own encoding (floatValue, float16Value, rawValue fp32); quantized arrays, whose length
    /// the bytes do not say exactly, are refused.
    static func plainWeights(_ m: Message, param: String, layer: String, className: String, source: String) throws -> [Float] {
        if m.has(40) {
            throw ModelFormatError(.unsupported, "Layer '\(layer)' (custom, class '\(className)') in \(source): \(param) is quantized, which compiled custom layers do not take. Use a model with float or fp16 custom-layer weights.")
        }
        let count = m.floats(1).count + (m.bytes(2)?.count ?? 0) / 2 + (m.bytes(30)?.count ?? 0) / 4
        guard count <= ModelLimits.maxTensorElements else {
            throw ModelFormatError(.malformed, "Layer '\(layer)' (custom, class '\(className)') in \(source): \(param) holds \(count) values, beyond \(ModelLimits.maxTensorElements).")
        }
        return try weights(m, count: count, param: param, layer: layer, type: "custom, class '\(className)'", source: source)
    }
}

extension CoreMLImporter.NetworkBuilder {
    /// A custom layer's parameters and weights, read from its CustomLayerParams.
    struct CustomLayer {
        var className: String
        var parameters: [String: Double] = [:]
        /// Parameters that are not numbers (strings), for messages.
        var textParameters: [String: String] = [:]
        var weights: [CoreMLImporter.Message] = []
        /// `customLayers.CLASS` for messages.
        var key: String { "\(CustomLayerDeclarations.key).\(className)" }
    }

    /// Lowers a custom layer through its declaration.
    mutating func custom(_ l: CoreMLImporter.Layer) throws {
        let className = l.params.string(10)
        guard !className.isEmpty else { throw l.fail("is a custom layer without a className") }
        let ops = customLayers?.classes[className]
        let library = ops == nil ? try customLayerLibrary.map(CompiledCustomLayers.open) : nil
        guard ops != nil || library?.supports(className) == true else {
            throw CoreMLImporter.undeclaredCustomLayer(layer: l.name, className: className, description: l.params.string(40),
                                                       source: source, declarations: customLayers, library: library?.path)
        }
        guard l.inputs.count == 1 else { throw l.unsupported("a custom layer with \(l.inputs.count) inputs (declarations and compiled layers take one)") }
        var layer = CustomLayer(className: className)
        layer.weights = try l.params.messages(20, what: "the weights of layer '\(l.name)'", source: source)
        for (name, value) in try l.params.map(30, what: "the parameters of layer '\(l.name)'", source: source) {
            if let d = value.value(10)?.double {
                layer.parameters[name] = d
            } else if let i = value.value(30)?.int ?? value.value(40)?.int {
                layer.parameters[name] = Double(i)
            } else if let b = value.value(50)?.bool {
                layer.parameters[name] = b ? 1 : 0
            } else {
                layer.textParameters[name] = value.string(20)
            }
        }
        let start = try value(l.inputs[0], l)
        if let library {
            // Compiled: one external node, the layer's weights as the library gets them.
            let weights = try layer.weights.enumerated().map { k, w in try CoreMLImporter.plainWeights(w, param: "weights[\(k)]", layer: l.name, className: className, source: source) }
            let kernel = try library.instantiate(className: className, layer: l.name, parameters: layer.parameters, weights: weights)
            _ = emit(l, .external(ExternalLayer(kernel)), inputs: [start])
            if let g = kernel.geometry {
                note("Its custom layers of class '\(className)' run in the compiled library '\(library.path)' (--custom-layers), placed by the geometry it gives (\(g)): in tiles like the engine's own layers.")
            } else {
                note("Its custom layers of class '\(className)' run in the compiled library '\(library.path)' (--custom-layers), on whole frames: \(library.version < 2 ? "the library speaks ABI version \(library.version), which cannot say how a layer treats positions" : "the library gives no geometry for them"); export vivify_custom_layer_geometry (version \(CompiledCustomLayers.abiVersion)) to run them in tiles.")
            }
            return
        }
        var current = start
        for (k, op) in (ops ?? []).enumerated() {
            current = try lower(op, from: current, layer: layer, path: "\(layer.key).ops[\(k)]", l)
        }
        if current == start {
            blobs[l.outputs[0]] = start
        } else {
            graph.rename(current, to: l.outputs[0])
            blobs[l.outputs[0]] = current
        }
    }

    /// An error in lowering a declaration onto this layer: names the layer, the key and the file.
    func declarationError(_ l: CoreMLImporter.Layer, _ path: String, _ why: String, _ fix: String) -> ModelFormatError {
        ModelFormatError(.malformed, "Layer '\(l.name)' (custom, class '\(l.params.string(10))') in \(source): the declaration `\(path)` in \(customLayers?.origin ?? "the declarations") \(why). \(fix)")
    }

    func resolve(_ n: CustomLayerNumber, layer: CustomLayer, path: String, _ l: CoreMLImporter.Layer) throws -> Double {
        switch n {
        case .value(let v): return v
        case .parameter(let name):
            if let v = layer.parameters[name] {
                guard v.isFinite, abs(v) <= 1e30 else { throw declarationError(l, path, "reads parameter '\(name)', which is \(v) in the model", "Give the layer a finite parameter.") }
                return v
            }
            if layer.textParameters[name] != nil { throw declarationError(l, path, "reads parameter '\(name)', which is text in the model, not a number", "Read a numeric parameter.") }
            let known = (layer.parameters.keys.sorted() + layer.textParameters.keys.sorted()).map { "'\($0)'" }
            throw declarationError(l, path, "reads parameter '\(name)', which the layer does not have (it has \(known.isEmpty ? "no parameters" : known.joined(separator: ", ")))", "Name one of its parameters, or write the number.")
        }
    }

    /// A whole number of pixels 0…`maxPad` (or a factor 1…`maxScale`).
    func whole(_ n: CustomLayerNumber, in range: ClosedRange<Int>, layer: CustomLayer, path: String, _ l: CoreMLImporter.Layer) throws -> Int {
        let v = try resolve(n, layer: layer, path: path, l)
        guard v.rounded() == v, v >= Double(range.lowerBound), v <= Double(range.upperBound) else {
            throw declarationError(l, path, "comes to \(v), not a whole number \(range.lowerBound)–\(range.upperBound)", "Give a value in that range.")
        }
        return Int(v)
    }

    func vector(_ v: CustomLayerVector, channels: Int, layer: CustomLayer, path: String, _ l: CoreMLImporter.Layer) throws -> [Float] {
        switch v {
        case .number(let n): return [Float](repeating: Float(try resolve(n, layer: layer, path: path, l)), count: channels)
        case .values(let values):
            guard values.count == channels || values.count == 1 else {
                throw declarationError(l, path, "has \(values.count) values for an input of \(channels) channels", "Give one value, or one per channel.")
            }
            return values.count == 1 ? [Float](repeating: values[0], count: channels) : values
        case .weights(let k):
            guard k < layer.weights.count else {
                throw declarationError(l, path, "reads weights[\(k)], but the layer has \(layer.weights.count) weight array\(layer.weights.count == 1 ? "" : "s")", "Read an index below \(layer.weights.count).")
            }
            let w = try CoreMLImporter.weights(layer.weights[k], count: channels, param: "weights[\(k)] (read by `\(path)`, one per channel)",
                                               layer: l.name, type: "custom, class '\(layer.className)'", source: source)
            guard w.allSatisfy(\.isFinite) else { throw declarationError(l, path, "reads weights[\(k)], which holds NaN or infinity", "The model's weights are damaged.") }
            return w
        }
    }

    /// Appends the engine operations of `op` after value `x`; returns the last value.
    mutating func lower(_ op: CustomLayerOperation, from x: Int, layer: CustomLayer, path: String, _ l: CoreMLImporter.Layer) throws -> Int {
        func amounts(_ s: CustomLayerSides) throws -> (Int, Int, Int, Int) {
            let r = 0...ModelLimits.maxPad
            return (try whole(s.top, in: r, layer: layer, path: path, l), try whole(s.left, in: r, layer: layer, path: path, l),
                    try whole(s.bottom, in: r, layer: layer, path: path, l), try whole(s.right, in: r, layer: layer, path: path, l))
        }
        func number(_ n: CustomLayerNumber) throws -> Float { Float(try resolve(n, layer: layer, path: path, l)) }
        switch op {
        case .crop(let s):
            let (t, left, b, r) = try amounts(s)
            return emitNode(l, .crop(top: t, left: left, bottom: b, right: r), inputs: [x])
        case .pad(let s, let mode, let value):
            let (t, left, b, r) = try amounts(s)
            let m: PaddingMode = mode == "reflect" ? .reflect : mode == "replicate" ? .replicate : .constant(try number(value))
            return emitNode(l, .pad(top: t, left: left, bottom: b, right: r, mode: m), inputs: [x])
        case .clamp(let lo, let hi):
            let a = try number(lo), b = try number(hi)
            guard a <= b else { throw declarationError(l, path, "clamps to [\(a), \(b)], an empty range", "Give min ≤ max.") }
            return emitNode(l, .activation(.clip(min: a, max: b)), inputs: [x])
        case .activation(let f, let p):
            let a: Activation
            switch f {
            case "relu": a = .relu
            case "sigmoid": a = .sigmoid
            case "tanh": a = .tanh
            case "silu": a = .silu
            case "sqrt": a = .sqrt
            case "leakyRelu": a = .leakyRelu(slope: try number(p ?? .value(0.01)))
            default: a = .elu(alpha: try number(p ?? .value(1)))
            }
            return emitNode(l, .activation(a), inputs: [x])
        case .scaleBias(let scale, let bias):
            let c = try shape(of: x, l, needsSize: false, for: "a per-channel scale and bias").c
            let s = try vector(scale, channels: c, layer: layer, path: "\(path).scale", l)
            let b = try vector(bias, channels: c, layer: layer, path: "\(path).bias", l)
            return emitNode(l, .channelAffine(scale: s, bias: b), inputs: [x])
        case .resize(let sh, let sw, let mode, let align):
            let h = try number(sh), w = try number(sw)
            let limit = Float(ModelLimits.maxScale)
            guard h >= 1 / limit, h <= limit, w >= 1 / limit, w <= limit else {
                throw declarationError(l, path, "resizes by \(h)×\(w), outside 1/\(ModelLimits.maxScale)–\(ModelLimits.maxScale)", "Give factors in that range.")
            }
            return emitNode(l, .resize(mode, scaleH: h, scaleW: w, outH: 0, outW: 0, alignCorners: align), inputs: [x])
        case .pixelShuffle(let f, let order):
            let r = try whole(f, in: 1...ModelLimits.maxScale, layer: layer, path: "\(path).factor", l)
            return emitNode(l, .pixelShuffle(factor: r, order: order), inputs: [x])
        case .expression(let e):
            var nodes = 0
            switch try lower(e, x: x, layer: layer, path: "\(path).expression", nodes: &nodes, l) {
            case .tensor(let v): return v
            case .constant:
                throw declarationError(l, "\(path).expression", "does not depend on x", "Write the layer's output as a function of its input x.")
            }
        }
    }

    /// An expression's value while lowering: folded to a constant, or a graph value.
    enum Lowered {
        case constant(Double)
        case tensor(Int)
    }

    mutating func emitNode(_ l: CoreMLImporter.Layer, _ op: Engine.Operation, inputs: [Int]) -> Int {
        emit(l, op, inputs: inputs, name: "\(l.outputs[0])#custom\(graph.names.count)")
    }

    /// Lowers an expression: constants fold (in Double), a constant and a tensor meet in a
    /// scalar operation, two tensors in a binary one, functions become activations.
    mutating func lower(_ e: CustomLayerExpression, x: Int, layer: CustomLayer, path: String, nodes: inout Int,
                        _ l: CoreMLImporter.Layer) throws -> Lowered {
        nodes += 1
        guard nodes <= CustomLayerExpression.maxNodes else { throw declarationError(l, path, "is too large", "Write a shorter expression.") }
        func finite(_ v: Double) throws -> Lowered {
            guard v.isFinite, abs(v) <= Double(Float.greatestFiniteMagnitude) else { throw declarationError(l, path, "folds to \(v) from its constants", "Check the constants and parameters (a division by zero?).") }
            return .constant(v)
        }
        func sub(_ a: CustomLayerExpression) throws -> Lowered { try lower(a, x: x, layer: layer, path: path, nodes: &nodes, l) }
        func binary(_ kind: BinaryKind, _ a: Lowered, _ b: Lowered, fold: (Double, Double) -> Double) throws -> Lowered {
            switch (a, b) {
            case (.constant(let p), .constant(let q)): return try finite(fold(p, q))
            case (.tensor(let t), .constant(let q)):
                if kind == .div && q == 0 { throw declarationError(l, path, "divides by a constant 0", "Check the constants and parameters.") }
                // x + 0, x - 0, x * 1, x / 1 need no node.
                if (q == 0 && (kind == .add || kind == .sub)) || (q == 1 && (kind == .mul || kind == .div)) { return a }
                return .tensor(emitNode(l, .scalar(kind, Float(q), scalarFirst: false), inputs: [t]))
            case (.constant(let p), .tensor(let t)):
                if (p == 0 && kind == .add) || (p == 1 && kind == .mul) { return b }
                return .tensor(emitNode(l, .scalar(kind, Float(p), scalarFirst: true), inputs: [t]))
            case (.tensor(let s), .tensor(let t)):
                return .tensor(emitNode(l, .binary(kind, coefficients: nil), inputs: [s, t]))
            }
        }
        func activation(_ a: Activation, _ v: Lowered, fold: (Double) -> Double) throws -> Lowered {
            switch v {
            case .constant(let c): return try finite(fold(c))
            case .tensor(let t): return .tensor(emitNode(l, .activation(a), inputs: [t]))
            }
        }
        func constant(_ v: Lowered, _ what: String) throws -> Float {
            guard case .constant(let c) = v else { throw declarationError(l, path, "has \(what) that depends on x", "Give \(what) as a number or a parameter.") }
            return Float(c)
        }
        switch e {
        case .x: return .tensor(x)
        case .number(let v): return .constant(v)
        case .parameter(let name): return .constant(try resolve(.parameter(name), layer: layer, path: path, l))
        case .negate(let a): return try binary(.mul, .constant(-1), try sub(a)) { $0 * $1 }
        case .binary(let op, let a, let b):
            let p = try sub(a), q = try sub(b)
            switch op {
            case "+": return try binary(.add, p, q, fold: +)
            case "-": return try binary(.sub, p, q, fold: -)
            case "*": return try binary(.mul, p, q, fold: *)
            default: return try binary(.div, p, q, fold: /)
            }
        case .call(let f, let args):
            let v = try args.map { try sub($0) }
            switch f {
            case "relu": return try activation(.relu, v[0]) { max($0, 0) }
            case "sigmoid": return try activation(.sigmoid, v[0]) { 1 / (1 + Foundation.exp(-$0)) }
            case "tanh": return try activation(.tanh, v[0]) { Foundation.tanh($0) }
            case "silu": return try activation(.silu, v[0]) { $0 / (1 + Foundation.exp(-$0)) }
            case "sqrt": return try activation(.sqrt, v[0]) { $0.squareRoot() }
            case "abs":
                guard case .tensor(let t) = v[0] else { return try finite(abs(Double(try constant(v[0], "an argument")))) }
                let negated = emitNode(l, .scalar(.mul, -1, scalarFirst: false), inputs: [t])
                return .tensor(emitNode(l, .binary(.max, coefficients: nil), inputs: [t, negated]))
            case "min": return try binary(.min, v[0], v[1]) { Swift.min($0, $1) }
            case "max": return try binary(.max, v[0], v[1]) { Swift.max($0, $1) }
            case "pow":
                if case .tensor(let t) = v[0], case .constant(let p) = v[1] {
                    return p == 1 ? v[0] : .tensor(emitNode(l, .activation(.pow(exponent: Float(p))), inputs: [t]))
                }
                return try binary(.pow, v[0], v[1]) { Foundation.pow($0, $1) }
            case "leakyRelu":
                let slope = try constant(v[1], "a slope")
                return try activation(.leakyRelu(slope: slope), v[0]) { $0 >= 0 ? $0 : Double(slope) * $0 }
            case "elu":
                let alpha = try constant(v[1], "an alpha")
                return try activation(.elu(alpha: alpha), v[0]) { $0 > 0 ? $0 : Double(alpha) * (Foundation.exp($0) - 1) }
            default:  // clamp
                let lo = try constant(v[1], "a lower bound"), hi = try constant(v[2], "an upper bound")
                guard lo <= hi else { throw declarationError(l, path, "clamps to [\(lo), \(hi)], an empty range", "Give lo ≤ hi.") }
                return try activation(.clip(min: lo, max: hi), v[0]) { Swift.min(Swift.max($0, Double(lo)), Double(hi)) }
            }
        }
    }
}
