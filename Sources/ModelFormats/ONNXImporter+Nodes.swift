import Engine
import Foundation

extension ONNXImporter.Builder {
    mutating func node(_ n: ProtobufMessage, index: Int) throws {
        let op = n.string(4)
        let domain = n.string(7)
        let name = n.string(3).isEmpty ? "\(op)_\(index)" : n.string(3)
        let inputs = n.strings(1)
        let outputs = n.strings(2)
        var attributes = Attributes()
        for a in try n.messages(5, what: "the attributes of node '\(name)'", source: source) { attributes.map[a.string(1)] = a }
        opCounts[op, default: 0] += 1
        let context = NodeContext(op: op, name: name, source: source, out: outputs.first ?? "")
        rank = inputs.first.flatMap { modelRanks[$0] } ?? inputRank
        outputRank = nil
        defer {
            for o in outputs where !o.isEmpty && (values[o] != nil || views[o] != nil) && modelRanks[o] == nil {
                modelRanks[o] = outputRank ?? rank
            }
        }
        guard domain.isEmpty || domain == "ai.onnx" else { throw context.unsupported("is in the custom domain '\(domain)'") }
        guard let out = outputs.first, !out.isEmpty else { throw context.malformed("has no output") }
        // Every op but Constant reads at least its first input.
        guard op == "Constant" || inputs.first.map({ !$0.isEmpty }) == true else { throw context.malformed("has no input") }

        // Constant inputs (initializers, Constant nodes); "" is an omitted optional input.
        func constant(_ i: Int) -> Constant? { self.constant(inputs, i) }
        func runtime(_ i: Int) throws -> Int {
            if i < inputs.count, let view = views[inputs[i]] {
                throw context.unsupported("reads '\(inputs[i])', an image reshaped to \(view.dims); the engine runs 1×C×H×W images (a reshape–transpose–reshape must be a pixel shuffle)")
            }
            guard i < inputs.count, let v = values[inputs[i]] else {
                throw context.unsupported("reads '\(i < inputs.count ? inputs[i] : "?")' as a constant where the engine needs an image (or the value is never computed)")
            }
            return v
        }
        func emit(_ operation: Engine.Operation, _ ins: [Int]) { self.emit(operation, ins, context) }
        func alias(_ v: Int) { values[out] = v }

        // Everything computed from constants alone is folded here.
        if op == "Constant" {
            if let t = attributes.map["value"], let m = try t.message(5, what: "the value of node '\(name)'", source: source) {
                constants[out] = try ONNXImporter.tensor(m, source: source, directory: directory).value
            } else if let f = attributes.float("value_float") {
                constants[out] = Constant(dims: [], floats: [f], ints: nil)
            } else if let fs = attributes.floats("value_floats") {
                constants[out] = Constant(dims: [fs.count], floats: fs, ints: nil)
            } else if let i = attributes.int("value_int") {
                constants[out] = Constant(dims: [], floats: [Float(i)], ints: [Int64(i)])
            } else if let is_ = attributes.ints("value_ints") {
                constants[out] = Constant(dims: [is_.count], floats: is_.map(Float.init), ints: is_.map(Int64.init))
            } else {
                throw context.unsupported("holds a kind of constant the engine does not read")
            }
            return
        }
        let runtimeInputs = inputs.filter { values[$0] != nil || views[$0] != nil }
        if runtimeInputs.isEmpty, inputs.contains(where: { !$0.isEmpty }) || op == "ConstantOfShape" {
            do {
                if let c = try fold(op, attributes, inputs: inputs, context) {
                    constants[out] = c
                    return
                }
            } catch let e as FoldingError {
                throw context.unsupported("cannot be worked out from its constant inputs: it \(e.why)")
            }
        }

        switch op {
        case "Identity", "Dropout":
            if op == "Dropout" {
                // Inference drops nothing; training mode (opset 12's third input) and the mask output are refused.
                // Training mode with ratio 0 drops nothing either.
                let ratio = opset >= 12 ? constant(1)?.floats.first ?? 0.5 : attributes.float("ratio") ?? 0.5
                if let t = constant(2), t.floats.first.map({ $0 != 0 }) ?? false, ratio != 0 {
                    throw context.unsupported("runs in training mode (it drops values at random); export the model for inference")
                }
                if inputs.count > 2, !inputs[2].isEmpty, constant(2) == nil { throw context.unsupported("takes its training mode from a computed value") }
                if outputs.count > 1, !outputs[1].isEmpty { throw context.unsupported("also returns its mask") }
            }
            if let v = views[inputs[0]] { views[out] = v; return }
            alias(try runtime(0))
        case "Cast":
            // Every runtime value is float32 here; a cast to a float type changes nothing.
            guard let to = attributes.int("to"), [1, 10, 11].contains(to) else { throw context.unsupported("casts an image to data type \(attributes.int("to") ?? 0)") }
            alias(try runtime(0))
        case "Conv", "ConvTranspose":
            try convolution(op == "ConvTranspose", attributes, inputs: inputs, context, runtime: runtime(0))
        case "Relu": emit(.activation(.relu), [try runtime(0)])
        case "Sigmoid": emit(.activation(.sigmoid), [try runtime(0)])
        case "Tanh": emit(.activation(.tanh), [try runtime(0)])
        case "Elu": emit(.activation(.elu(alpha: attributes.float("alpha") ?? 1)), [try runtime(0)])
        case "Sqrt": emit(.activation(.sqrt), [try runtime(0)])
        case "Pow":
            let x = try runtime(0)
            guard let e = constant(1) else { throw context.unsupported("raises to a computed power; the engine raises to constants") }
            if e.count == 1 {
                emit(.activation(.pow(exponent: e.floats[0])), [x])
            } else {
                // A constant power per element, broadcast against the image.
                outputRank = max(rank, e.dims.count)
                let k = try constantNode(e, context)
                emit(.binary(.pow, coefficients: nil), [x, k])
            }
        case "LeakyRelu": emit(.activation(.leakyRelu(slope: attributes.float("alpha") ?? 0.01)), [try runtime(0)])
        case "PRelu":
            let x = try runtime(0)
            guard let s = constant(1) else { throw context.unsupported("takes its slopes from a computed value") }
            guard !s.floats.isEmpty, s.count <= ModelLimits.maxTensorElements else { throw context.malformed("has \(s.count) slopes") }
            if let perChannel = perChannel(s, context), perChannel.count <= ModelLimits.maxChannels {
                emit(.activation(.prelu(slopes: perChannel)), [x])
            } else {
                // Slopes along other axes: relu(x) + slope · min(x, 0).
                let slopes = try constantNode(s, context)
                let positive = builder.newValue(out + "/positive"), negative = builder.newValue(out + "/negative")
                let scaled = builder.newValue(out + "/scaled")
                builder.append(Node(name: name, op: .activation(.relu), inputs: [x], output: positive))
                builder.append(Node(name: name, op: .scalar(.min, 0, scalarFirst: false), inputs: [x], output: negative))
                builder.append(Node(name: name, op: .binary(.mul, coefficients: nil), inputs: [negative, slopes], output: scaled))
                emit(.binary(.add, coefficients: nil), [positive, scaled])
            }
        case "Clip":
            var lo = -Float.infinity, hi = Float.infinity
            if opset < 11 {
                lo = attributes.float("min") ?? lo
                hi = attributes.float("max") ?? hi
            } else {
                if inputs.count > 1, !inputs[1].isEmpty {
                    guard let c = constant(1), c.count == 1 else { throw context.unsupported("takes its minimum from a computed value") }
                    lo = c.floats[0]
                }
                if inputs.count > 2, !inputs[2].isEmpty {
                    guard let c = constant(2), c.count == 1 else { throw context.unsupported("takes its maximum from a computed value") }
                    hi = c.floats[0]
                }
            }
            emit(.activation(.clip(min: lo, max: hi)), [try runtime(0)])
        case "HardSigmoid":
            let alpha = attributes.float("alpha") ?? 0.2, beta = attributes.float("beta") ?? 0.5
            let x = try runtime(0)
            let scaled = builder.newValue(out + "/scaled"), shifted = builder.newValue(out + "/shifted")
            builder.append(Node(name: name, op: .scalar(.mul, alpha, scalarFirst: false), inputs: [x], output: scaled))
            builder.append(Node(name: name, op: .scalar(.add, beta, scalarFirst: false), inputs: [scaled], output: shifted))
            emit(.activation(.clip(min: 0, max: 1)), [shifted])
        case "Add", "Sub", "Mul", "Div":
            try binary(op, inputs: inputs, context)
        case "Max", "Min":
            // Variadic: one operand is itself, more fold left to right.
            let operands = inputs.filter { !$0.isEmpty }
            if operands.count == 1 { alias(try runtime(0)); return }
            var acc = operands[0]
            for (k, next) in operands.dropFirst().enumerated() {
                let last = k == operands.count - 2
                let target = last ? out : out + "/\(k)"
                try binary(op, inputs: [acc, next], NodeContext(op: op, name: name, source: source, out: target))
                acc = target
            }
        case "BatchNormalization":
            guard let s = constant(1), let b = constant(2), let m = constant(3), let v = constant(4),
                  s.count == b.count, b.count == m.count, m.count == v.count else {
                throw context.unsupported("takes its statistics from computed values")
            }
            guard (attributes.int("training_mode") ?? 0) == 0, outputs.filter({ !$0.isEmpty }).count == 1 else {
                throw context.unsupported("runs in training mode (it updates running statistics); export the model for inference")
            }
            guard s.count > 0, s.count <= ModelLimits.maxChannels else { throw context.malformed("normalises \(s.count) channels") }
            let eps = attributes.float("epsilon") ?? 1e-5
            let scale = (0..<s.count).map { s.floats[$0] / (v.floats[$0] + eps).squareRoot() }
            let bias = (0..<s.count).map { b.floats[$0] - m.floats[$0] * scale[$0] }
            emit(.channelAffine(scale: scale, bias: bias), [try runtime(0)])
        case "InstanceNormalization":
            guard rank == 4 else { throw context.unsupported("normalises a rank-\(rank) tensor; the engine's images are 1×C×H×W") }
            guard let s = constant(1), let b = constant(2), s.count == b.count, s.count > 0, s.count <= ModelLimits.maxChannels else {
                throw context.unsupported("takes its scale and bias from computed values")
            }
            emit(.instanceNorm(scale: s.floats, bias: b.floats, epsilon: attributes.float("epsilon") ?? 1e-5), [try runtime(0)])
        case "Softmax":
            let x = try runtime(0)
            let axis = try engineAxis(attributes.int("axis") ?? (opset >= 13 ? -1 : 1), context)
            // Before opset 13 the softmax runs over all axes from `axis` on, flattened.
            // Before opset 13 the softmax runs over every axis from `axis` on, flattened: the
            // same as one axis when the axes after it have length 1.
            let later = shape(of: x).map { [1, $0.c, $0.h, $0.w][(axis + 1)...].allSatisfy { $0 == 1 } } ?? false
            guard opset >= 13 || axis == 3 || later else {
                throw context.unsupported("takes an opset-\(opset) softmax over axes \(attributes.int("axis") ?? 1) and after of a rank-\(rank) input; the engine's runs along one axis")
            }
            switch axis {
            case 1: emit(.softmaxChannels, [x])
            case 2, 3: emit(.softmax(axis: axis), [x])
            default: throw context.unsupported("takes the softmax over the batch")
            }
        case "DepthToSpace":
            guard let bs = attributes.int("blocksize"), (1...ModelLimits.maxScale).contains(bs) else { throw context.malformed("has no valid blocksize") }
            let mode = attributes.string("mode") ?? "DCR"
            guard mode == "DCR" || mode == "CRD" else { throw context.unsupported("has mode '\(mode)'") }
            emit(.pixelShuffle(factor: bs, order: mode == "DCR" ? .dcr : .crd), [try runtime(0)])
        case "SpaceToDepth":
            guard let bs = attributes.int("blocksize"), (1...ModelLimits.maxScale).contains(bs) else { throw context.malformed("has no valid blocksize") }
            emit(.spaceToDepth(factor: bs), [try runtime(0)])
        case "Resize", "Upsample":
            try resize(op, attributes, inputs: inputs, context, runtime: runtime(0))
        case "Pad":
            try pad(attributes, inputs: inputs, context, runtime: runtime(0))
        case "Slice":
            try slice(attributes, inputs: inputs, context, runtime: runtime(0))
        case "Concat":
            let axis = try engineAxis(attributes.int("axis") ?? 1, context)
            guard axis >= 1 else { throw context.unsupported("concatenates along the batch axis") }
            let parts = try inputs.indices.filter { !inputs[$0].isEmpty }.map { i -> Int in
                if let v = values[inputs[i]] { return v }
                if let c = constant(i) { return try constantNode(c, context) }
                return try runtime(i)
            }
            emit(axis == 1 ? .concatChannels : .concat(axis: axis), parts)
        case "Split":
            try split(attributes, inputs: inputs, outputs: outputs, context, runtime: runtime(0))
        case "GlobalAveragePool":
            guard rank == 4 else { throw context.unsupported("pools a rank-\(rank) tensor") }
            emit(.globalAveragePool, [try runtime(0)])
        case "AveragePool", "MaxPool":
            guard outputs.filter({ !$0.isEmpty }).count == 1 else { throw context.unsupported("also returns the indices of the maxima") }
            try pool(op == "MaxPool", attributes, context, runtime: runtime(0))
        case "Shape":
            let dims = try modelDimensions(of: try runtime(0), context)
            let r = dims.count
            var start = attributes.int("start") ?? 0, end = attributes.int("end") ?? r
            if start < 0 { start += r }
            if end < 0 { end += r }
            start = min(max(start, 0), r)
            end = min(max(end, start), r)
            let picked = dims[start..<end].map { Int64($0) }
            constants[out] = Constant(ints: picked, dims: [picked.count])
        case "Flatten", "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Expand":
            try reshape(op, attributes, inputs: inputs, context)
        case "Gemm", "MatMul":
            try fullyConnected(op, attributes, inputs: inputs, context, runtime: runtime(0))
        default:
            throw context.unsupported("is not an op Vivify's engine runs (supported: \(ONNXImporter.supportedOps.joined(separator: ", ")))")
        }
    }

    /// The value of a node whose inputs are all constants; nil when `op` is not folded.
    func fold(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext) throws -> Constant? {
        func c(_ i: Int) throws -> Constant {
            guard let v = constant(inputs, i) else { throw FoldingError(why: "lacks input \(i)") }
            return v
        }
        switch op {
        case "Identity", "Dropout": return try c(0)
        case "Cast":
            var v = try c(0)
            let to = a.int("to") ?? 1
            if [1, 10, 11].contains(to) {
                v.ints = nil
            } else {
                v.ints = v.ints ?? v.floats.map { $0.isFinite ? Int64($0.rounded(.towardZero)) : 0 }
                v.floats = v.ints!.map { Float($0) }
            }
            return v
        case "Add", "Sub", "Mul", "Div", "Pow":
            return try ConstantFolding.binary(op, try c(0), try c(1))
        case "Max", "Min":
            let operands = inputs.indices.filter { !inputs[$0].isEmpty }
            var acc = try c(operands[0])
            for i in operands.dropFirst() { acc = try ConstantFolding.binary(op, acc, try c(i)) }
            return acc
        case "Sqrt":
            let v = try c(0)
            return Constant(floats: v.floats.map { $0.squareRoot() }, dims: v.dims)
        case "Shape":
            let v = try c(0)
            return Constant(ints: v.dims.map { Int64($0) }, dims: [v.dims.count])
        case "Gather":
            return try ConstantFolding.gather(try c(0), try c(1), axis: a.int("axis") ?? 0)
        case "Unsqueeze", "Squeeze":
            let v = try c(0)
            let axes = opset >= 13 ? (constant(inputs, 1)?.ints?.map { Int($0) }) : a.ints("axes")
            var dims = v.dims
            if op == "Unsqueeze" {
                guard let axes else { throw FoldingError(why: "names no axes") }
                let r = dims.count + axes.count
                for ax in try axes.map({ try ConstantFolding.axis($0, rank: r) }).sorted() {
                    guard ax <= dims.count else { throw FoldingError(why: "unsqueezes axes \(axes) of a rank-\(v.dims.count) tensor") }
                    dims.insert(1, at: ax)
                }
            } else if let axes {
                let drop = Set(try axes.map { try ConstantFolding.axis($0, rank: dims.count) })
                guard drop.allSatisfy({ dims[$0] == 1 }) else { throw FoldingError(why: "squeezes an axis longer than 1") }
                dims = dims.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
            } else {
                dims = dims.filter { $0 != 1 }
            }
            return Constant(dims: dims, floats: v.floats, ints: v.ints)
        case "Concat":
            return try ConstantFolding.concat(inputs.indices.filter { !inputs[$0].isEmpty }.map { try c($0) }, axis: a.int("axis") ?? 0)
        case "Reshape":
            let v = try c(0)
            guard let spec = try c(1).ints else { throw FoldingError(why: "reshapes to a non-integer shape") }
            return Constant(dims: try ConstantFolding.reshapeDims(v.dims, spec, allowZero: (a.int("allowzero") ?? 0) == 1), floats: v.floats, ints: v.ints)
        case "Flatten":
            let v = try c(0)
            let ax = a.int("axis") ?? 1
            let k = ax < 0 ? ax + v.dims.count : ax
            guard k >= 0, k <= v.dims.count else { throw FoldingError(why: "flattens at axis \(ax)") }
            guard let rows = ModelLimits.elementCount(v.dims[..<k]), let columns = ModelLimits.elementCount(v.dims[k...]) else {
                throw FoldingError(why: "flattens a tensor of shape \(v.dims)")
            }
            return Constant(dims: [rows, columns], floats: v.floats, ints: v.ints)
        case "Transpose":
            return try ConstantFolding.transpose(try c(0), perm: a.ints("perm"))
        case "ConstantOfShape":
            guard let dims = try c(0).ints?.map({ Int($0) }), dims.allSatisfy({ $0 >= 0 }),
                  let n = ModelLimits.elementCount(dims) else { throw FoldingError(why: "has a shape that is not a list of sizes") }
            var fill = Constant(floats: [0], dims: [1])
            if let t = a.map["value"], let m = try t.message(5, what: "the value of node '\(context.name)'", source: source) {
                fill = try ONNXImporter.tensor(m, source: source, directory: directory).value
            }
            guard fill.count == 1 else { throw FoldingError(why: "fills with \(fill.count) values") }
            return Constant(dims: dims, floats: [Float](repeating: fill.floats[0], count: n), ints: fill.ints.map { [Int64](repeating: $0[0], count: n) })
        case "Expand":
            let v = try c(0)
            guard let spec = try c(1).ints?.map({ Int($0) }) else { throw FoldingError(why: "expands to a non-integer shape") }
            let dims = try ConstantFolding.broadcast(v.dims, spec)
            guard ModelLimits.elementCount(dims) != nil else { throw FoldingError(why: "expands to \(dims), beyond the model limits") }
            return try ConstantFolding.expand(v, to: dims)
        case "Slice":
            let v = try c(0)
            if opset < 10 {
                return try ConstantFolding.slice(v, starts: (a.ints("starts") ?? []).map(Int64.init), ends: (a.ints("ends") ?? []).map(Int64.init),
                                                 axes: a.ints("axes")?.map(Int64.init), steps: nil)
            }
            guard let st = try c(1).ints, let en = try c(2).ints else { throw FoldingError(why: "has non-integer bounds") }
            return try ConstantFolding.slice(v, starts: st, ends: en, axes: constant(inputs, 3)?.ints, steps: constant(inputs, 4)?.ints)
        default:
            return nil
        }
    }

    /// A constant with one value per channel of a runtime value (shape C, C×1×1 or 1×C×1×1 at
    /// rank 4; a lower-rank model's trailing dims lined up NumPy's way), or nil.
    func perChannel(_ c: Constant, _ context: NodeContext) -> [Float]? {
        if c.count == 1 { return c.floats }
        // Line the constant's dims up with the lifted 1×C×H×W (NumPy aligns trailing axes).
        let own = c.dims.count > rank ? c.dims : [Int](repeating: 1, count: rank - c.dims.count) + c.dims
        let lifted = [Int](repeating: 1, count: max(0, 4 - own.count)) + own
        guard lifted.count == 4, lifted[0] == 1, lifted[2] == 1, lifted[3] == 1 else { return nil }
        return c.floats
    }

    /// A node making constant `c` as an engine tensor (lined up with the lifted 1×C×H×W).
    mutating func constantNode(_ c: Constant, _ context: NodeContext) throws -> Int {
        let own = c.dims.count >= rank ? c.dims : [Int](repeating: 1, count: rank - c.dims.count) + c.dims
        let lifted = [Int](repeating: 1, count: max(0, 4 - own.count)) + own
        guard lifted.count == 4, lifted[0] == 1, c.count > 0 else {
            throw context.unsupported("combines an image with a constant of shape \(c.dims), which does not line up with 1×C×H×W")
        }
        let v = builder.newValue(context.out + "/constant")
        builder.append(Node(name: context.name, op: .constant(Shape(c: lifted[1], h: lifted[2], w: lifted[3]), values: c.floats), inputs: [], output: v))
        return v
    }

    /// Split into the node's outputs: channel slices, or crops of rows or columns.
    mutating func split(_ a: Attributes, inputs: [String], outputs: [String], _ context: NodeContext, runtime x: Int) throws {
        let axis = try engineAxis(a.int("axis") ?? 0, context)
        guard axis >= 1 else { throw context.unsupported("splits the batch") }
        guard let size = shape(of: x) else { throw context.unsupported("splits a value whose size is not known before running") }
        let n = [1, size.c, size.h, size.w][axis]
        if axis >= 2, options.inputShape == nil, liftedDimensions[2] == nil || liftedDimensions[3] == nil { shapeDependent = true }
        var parts: [Int]
        if let given = opset >= 13 ? constant(inputs, 1)?.ints.map({ $0.map { Int($0) } }) : a.ints("split") {
            parts = given
        } else {
            let count = a.int("num_outputs") ?? outputs.count
            guard count > 0 else { throw context.malformed("splits into no parts") }
            let part = (n + count - 1) / count
            parts = (0..<count).map { min(part, max(0, n - $0 * part)) }
        }
        guard parts.count == outputs.count, parts.reduce(0, +) == n else {
            throw context.malformed("splits \(n) into \(parts) for \(outputs.count) outputs")
        }
        guard parts.allSatisfy({ $0 > 0 }) else { throw context.unsupported("splits off an empty part (\(parts)); the engine's tensors are never empty") }
        var start = 0
        for (k, name) in outputs.enumerated() {
            let v = builder.newValue(name)
            let end = start + parts[k]
            let op: Engine.Operation
            switch axis {
            case 1: op = .sliceChannels(start: start, end: end)
            case 2: op = .crop(top: start, left: 0, bottom: n - end, right: 0)
            default: op = .crop(top: 0, left: start, bottom: 0, right: n - end)
            }
            builder.append(Node(name: context.name, op: op, inputs: [x], output: v))
            values[name] = v
            start = end
        }
    }

    /// Max pooling, and average pooling the general way (a depthwise convolution where that is the same).
    mutating func pool(_ isMax: Bool, _ a: Attributes, _ context: NodeContext, runtime x: Int) throws {
        guard rank == 4 else { throw context.unsupported("pools a rank-\(rank) tensor; the engine pools 2-D images") }
        guard let k = a.ints("kernel_shape"), k.count == 2 else { throw context.unsupported("has no 2-D kernel_shape") }
        let strides = a.ints("strides") ?? [1, 1], dilations = a.ints("dilations") ?? [1, 1]
        var pads = a.ints("pads") ?? [0, 0, 0, 0]
        guard k.allSatisfy({ (1...ModelLimits.maxKernel).contains($0) }), strides.count == 2, pads.count == 4, dilations.count == 2,
              strides.allSatisfy({ (1...ModelLimits.maxStride).contains($0) }), pads.allSatisfy({ (0...ModelLimits.maxPad).contains($0) }),
              dilations.allSatisfy({ (1...ModelLimits.maxDilation).contains($0) }) else {
            throw context.malformed("has kernel \(k), strides \(strides), dilations \(dilations) or pads \(pads) beyond the model limits")
        }
        let ceil = (a.int("ceil_mode") ?? 0) != 0
        switch a.string("auto_pad") ?? "NOTSET" {
        case "NOTSET", "": break
        case "VALID": pads = [0, 0, 0, 0]
        case let mode where mode == "SAME_UPPER" || mode == "SAME_LOWER":
            // Output ceil(n / stride): the padding depends on the size unless the stride is 1.
            let dims = strides == [1, 1] ? [1, 1, 1, 1] : try modelDimensions(of: x, context)
            var p = [0, 0, 0, 0]
            for axis in 0..<2 {
                let n = strides == [1, 1] ? 1 : dims[2 + axis]
                let out = (n + strides[axis] - 1) / strides[axis]
                let total = max((out - 1) * strides[axis] + dilations[axis] * (k[axis] - 1) + 1 - n, 0)
                let small = total / 2
                p[axis] = mode == "SAME_UPPER" ? small : total - small
                p[axis + 2] = total - p[axis]
            }
            pads = p
        case let mode: throw context.unsupported("has auto_pad '\(mode)'")
        }
        let countPadding = (a.int("count_include_pad") ?? 0) != 0
        if !isMax, !ceil, dilations == [1, 1], countPadding || pads.allSatisfy({ $0 == 0 }), let c = channelCount(of: x), c <= ModelLimits.maxChannels {
            // A depthwise convolution with equal weights is the same average (oneDNN's fast path).
            let w = [Float](repeating: 1 / Float(k[0] * k[1]), count: c * k[0] * k[1])
            emit(.convolution(ConvolutionParameters(outChannels: c, inChannels: c, kernelH: k[0], kernelW: k[1], strideH: strides[0], strideW: strides[1],
                                                    padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3], groups: c, weights: w)), [x], context)
            return
        }
        emit(.pool(PoolParameters(kind: isMax ? .max : .average(countPadding: countPadding), kernelH: k[0], kernelW: k[1],
                                  strideH: strides[0], strideW: strides[1], dilationH: dilations[0], dilationW: dilations[1],
                                  padTop: pads[0], padLeft: pads[1], padBottom: pads[2], padRight: pads[3], ceilMode: ceil)), [x], context)
    }

    /// Flatten, Reshape, Transpose, Squeeze, Unsqueeze and Expand of an image: the same values
    /// (a pooled vector, an unchanged shape), or the Reshape → Transpose → Reshape of a pixel
    /// shuffle; anything else is refused.
    mutating func reshape(_ op: String, _ a: Attributes, inputs: [String], _ context: NodeContext) throws {
        if let view = views[inputs[0]] {
            try reshapeView(op, view, a, inputs: inputs, context)
            return
        }
        guard let x = values[inputs[0]] else { throw context.unsupported("reads a value that is never computed") }
        if producesVector(x), ["Flatten", "Reshape", "Squeeze"].contains(op), shape(of: x) == nil {
            // A pooled 1×C×1×1 map and a 1×C vector are the same values, whatever C is.
            values[context.out] = x
            outputRank = 2
            return
        }
        let dims = try modelDimensions(of: x, context)
        var target: [Int] = []
        switch op {
        case "Reshape":
            guard let spec = constant(inputs, 1)?.ints else { throw context.unsupported("reshapes to a computed shape") }
            do { target = try ConstantFolding.reshapeDims(dims, spec, allowZero: (a.int("allowzero") ?? 0) == 1) } catch let e as FoldingError {
                throw context.unsupported("cannot reshape: it \(e.why)")
            }
        case "Flatten":
            let ax = a.int("axis") ?? 1
            let k = ax < 0 ? ax + dims.count : ax
            guard k >= 0, k <= dims.count else { throw context.malformed("flattens at axis \(ax) of a rank-\(dims.count) value") }
            guard let rows = ModelLimits.elementCount(dims[..<k]), let columns = ModelLimits.elementCount(dims[k...]) else {
                throw context.malformed("flattens a value of shape \(dims), beyond \(ModelLimits.maxTensorElements) values")
            }
            target = [rows, columns]
        case "Squeeze", "Unsqueeze":
            let axes = opset >= 13 ? constant(inputs, 1)?.ints?.map { Int($0) } : a.ints("axes")
            if op == "Unsqueeze" {
                guard let axes else { throw context.malformed("names no axes") }
                let r = dims.count + axes.count
                target = dims
                for ax in axes.map({ $0 < 0 ? $0 + r : $0 }).sorted() {
                    guard ax >= 0, ax <= target.count else { throw context.malformed("unsqueezes axis \(ax)") }
                    target.insert(1, at: ax)
                }
            } else if let axes {
                let drop = Set(axes.map { $0 < 0 ? $0 + dims.count : $0 })
                guard drop.allSatisfy({ $0 >= 0 && $0 < dims.count && dims[$0] == 1 }) else { throw context.malformed("squeezes axes \(axes) of \(dims)") }
                target = dims.enumerated().filter { !drop.contains($0.offset) }.map(\.element)
            } else {
                target = dims.filter { $0 != 1 }
            }
        case "Transpose":
            let perm = a.ints("perm") ?? Array((0..<dims.count).reversed())
            guard perm.sorted() == Array(0..<dims.count) else { throw context.malformed("has permutation \(perm) for rank \(dims.count)") }
            // Only axes of length 1 may move: the values stay in the same order.
            let kept = perm.filter { dims[$0] != 1 }
            target = perm.map { dims[$0] }
            if kept != kept.sorted() {
                // Axes move: a permutation of channels, rows and columns (the batch stays first).
                let lift = 4 - dims.count
                let full = Array(0..<lift) + perm.map { $0 + lift }
                guard full[0] == 0 else { throw context.unsupported("moves the batch axis (perm \(perm))") }
                outputRank = target.count
                emit(.transpose(perm: full.dropFirst().map { $0 - 1 }), [x], context)
                return
            }
        default:  // Expand
            guard let spec = constant(inputs, 1)?.ints?.map({ Int($0) }) else { throw context.unsupported("expands to a computed shape") }
            target = (try? ConstantFolding.broadcast(dims, spec)) ?? []
            if ModelLimits.elementCount(target) != ModelLimits.elementCount(dims) {
                // x + zeros of the target shape: the engine's element-wise broadcast.
                guard !target.isEmpty, target.count <= 4, ([Int](repeating: 1, count: 4 - target.count) + target)[0] == 1,
                      let n = ModelLimits.elementCount(target) else {
                    throw context.unsupported("expands an image of shape \(dims) to \(spec), which is not 1×C×H×W")
                }
                outputRank = target.count
                let zeros = try constantNode(Constant(floats: [Float](repeating: 0, count: n), dims: target), context)
                emit(.binary(.add, coefficients: nil), [x, zeros], context)
                return
            }
        }
        if op == "Reshape" && target.count > 4 {
            views[context.out] = View(source: x, dims: target, perm: nil)
            outputRank = target.count
            return
        }
        // The same values in the same order: fine when the result, lifted to 1×C×H×W with
        // leading ones, is the same image (or a pooled vector flattened).
        func lifted(_ d: [Int]) -> [Int]? { d.count <= 4 ? [Int](repeating: 1, count: 4 - d.count) + d : nil }
        let vector = producesVector(x) && ModelLimits.elementCount(target) == ModelLimits.elementCount(dims) && target.filter({ $0 != 1 }).count <= 1
        outputRank = target.count
        let engineShape = shape(of: x).map { [1, $0.c, $0.h, $0.w] }
        if vector || (lifted(target) != nil && (lifted(target) == lifted(dims) || lifted(target) == engineShape)) {
            values[context.out] = x
            return
        }
        // Another 1×C×H×W view of the same values (a whole-frame operation: pixels move between rows).
        guard let t = lifted(target), t[0] == 1, ModelLimits.elementCount(target) != nil, ModelLimits.elementCount(target) == ModelLimits.elementCount(dims) else {
            throw context.unsupported("changes an image of shape \(dims) to \(target); the engine's tensors are 1×C×H×W (it reshapes within that, flattens pooled vectors and turns Reshape–Transpose–Reshape into a pixel shuffle)")
        }
        emit(.reshape(Shape(c: t[1], h: t[2], w: t[3])), [x], context)
    }

    /// A Transpose or the closing Reshape of a pixel shuffle written with reshapes.
    mutating func reshapeView(_ op: String, _ view: View, _ a: Attributes, inputs: [String], _ context: NodeContext) throws {
        let d = view.dims
        // A permutation of the axes, each once (an index past them trapped).
        if op == "Transpose", view.perm == nil, let perm = a.ints("perm"), perm.count == d.count, perm.sorted() == Array(0..<d.count) {
            views[context.out] = View(source: view.source, dims: perm.map { d[$0] }, perm: perm)
            return
        }
        guard op == "Reshape", let perm = view.perm, let spec = constant(inputs, 1)?.ints, d.count == 6 else {
            throw context.unsupported("reshapes an image to \(d.count) dimensions in a way the engine does not run (only the Reshape–Transpose–Reshape of a pixel shuffle)")
        }
        let total = ModelLimits.elementCount(d) ?? -1
        let target = (try? ConstantFolding.reshapeDims(d, spec)) ?? []
        let source = try modelDimensions(of: view.source, context)
        guard source.count == 4, target.count == 4, ModelLimits.elementCount(target) == total else {
            throw context.unsupported("reshapes a transposed image to \(spec)")
        }
        let (c, h, w) = (source[1], source[2], source[3])
        // CRD (PyTorch pixel_shuffle): [1, C', r, r, H, W] → perm [0, 1, 4, 2, 5, 3].
        // DCR (TensorFlow depth_to_space): [1, r, r, C', H, W] → perm [0, 3, 4, 1, 5, 2].
        for (order, pattern) in [(ShuffleOrder.crd, [0, 1, 4, 2, 5, 3]), (.dcr, [0, 3, 4, 1, 5, 2])] where perm == pattern {
            let r = d[3]
            guard r > 0, d[5] == r, d[1] * r * r == c, d[2] == h, d[4] == w,
                  target == [1, c / (r * r), h * r, w * r] else { continue }
            let unshuffled = order == .crd ? [1, c / (r * r), r, r, h, w] : [1, r, r, c / (r * r), h, w]
            guard perm.map({ unshuffled[$0] }) == d else { continue }
            emit(.pixelShuffle(factor: r, order: order), [view.source], context)
            return
        }
        throw context.unsupported("reshapes and transposes an image (perm \(perm)) in a way that is not a pixel shuffle")
    }

    /// Appends a node writing the node's output.
    mutating func emit(_ operation: Engine.Operation, _ ins: [Int], _ context: NodeContext) {
        let v = builder.newValue(context.out)
        builder.append(Node(name: context.name, op: operation, inputs: ins, output: v))
        values[context.out] = v
    }

    /// Input `i` when it is a constant ("" is an omitted optional input).
    func constant(_ inputs: [String], _ i: Int) -> Constant? { i < inputs.count && !inputs[i].isEmpty ? constants[inputs[i]] : nil }

    /// Whether value `v` is a 1×C×1×1 vector (the output of pooling or a fully connected layer).
    func producesVector(_ v: Int) -> Bool {
        guard let n = builder.nodes.last(where: { $0.output == v }) else { return false }
        switch n.op {
        case .globalAveragePool, .fullyConnected: return true
        case .activation, .scalar, .channelAffine: return producesVector(n.inputs[0])
        default: return false
        }
    }
}
