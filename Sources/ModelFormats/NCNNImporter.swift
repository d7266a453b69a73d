import Engine
import Foundation

/// Reads ncnn models (`.param` text + `.bin` weights, fp16 or fp32) onto the engine's graph IR.
///
/// Structure comes from `.param` (one layer per line: `Type name nIn nOut in… out… k=v…`,
/// arrays as `-233xx=n,v1,v2…`); weights are then read from `.bin` in layer order: each weight
/// array starts with a 4-byte tag (0x01306B47: fp16 follows; 0: fp32), biases and PReLU slopes
/// are raw fp32. Split layers become aliases; every other layer becomes one node.
public enum NCNNImporter {
    /// Loads `paramPath` and the `.bin` beside it (or `binPath`).
    public static func load(paramPath: String, binPath: String? = nil, inputName: String? = nil,
                            outputName: String? = nil) throws -> Graph {
        let bin = binPath ?? ModelFileFormat.weightsFile(beside: paramPath) ?? paramPath + ".bin"
        guard let data = FileManager.default.contents(atPath: paramPath) else {
            throw ModelFormatError(.unreadable, "Cannot read the ncnn model '\(paramPath)'. Check the path.")
        }
        // A file that is there but not text is damaged (65), not missing (66).
        guard let text = String(data: data, encoding: .utf8) else {
            throw ModelFormatError(.malformed, "'\(paramPath)' is not an ncnn .param text file (it is not UTF-8 text): it is damaged or another format. Export the model again.")
        }
        guard let weights = FileManager.default.contents(atPath: bin) else {
            throw ModelFormatError(.unreadable, "Cannot read '\(bin)', the weights of '\(paramPath)'. Put the .bin file beside the .param file.")
        }
        return try parse(param: text, weights: weights, source: paramPath, inputName: inputName, outputName: outputName)
    }

    /// One parsed `.param` line.
    struct Layer {
        var type: String
        var name: String
        var bottoms: [String]
        var tops: [String]
        var ints: [Int: Int] = [:]
        var floats: [Int: Float] = [:]
        var arrays: [Int: [Float]] = [:]

        /// An integer parameter; a float one that is not a finite 32-bit value reads Int.min,
        /// which every range check refuses.
        func int(_ k: Int, _ d: Int) -> Int { ints[k] ?? floats[k].map { ModelLimits.integer($0) ?? Int.min } ?? d }
        func float(_ k: Int, _ d: Float) -> Float { floats[k] ?? ints[k].map { Float($0) } ?? d }
    }

    /// Parses the text of a `.param` file and its weights.
    public static func parse(param: String, weights: Data, source: String, inputName: String? = nil,
                             outputName: String? = nil) throws -> Graph {
        var lines = param.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        guard lines.first == "7767517" else {
            throw ModelFormatError(.malformed, "\(source) is not an ncnn .param file (the first line is not the magic number 7767517).")
        }
        lines.removeFirst()
        guard !lines.isEmpty else { throw ModelFormatError(.malformed, "\(source) has no layer count line.") }
        lines.removeFirst()
        guard lines.count <= ModelLimits.maxLayers else {
            throw ModelFormatError(.malformed, "\(source) has \(lines.count) layers, more than the limit of \(ModelLimits.maxLayers).")
        }
        var layers: [Layer] = []
        for (n, line) in lines.enumerated() {
            let f = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
            // Input and output counts are checked against the fields there are before any
            // arithmetic, so a negative or huge count is a parse error, not a trap.
            guard f.count >= 4, let nb = Int(f[2]), let nt = Int(f[3]), nb >= 0, nt >= 0,
                  nb <= f.count - 4, nt <= f.count - 4 - nb else {
                throw ModelFormatError(.malformed, "\(source), layer line \(n + 3): cannot parse '\(line)' (type, name, input count, output count, then that many blob names).")
            }
            var layer = Layer(type: f[0], name: f[1], bottoms: Array(f[4..<4 + nb]), tops: Array(f[4 + nb..<4 + nb + nt]))
            for kv in f[(4 + nb + nt)...] {
                let parts = kv.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let key = Int(parts[0]) else {
                    throw ModelFormatError(.malformed, "\(source), layer '\(layer.name)': cannot parse parameter '\(kv)'.")
                }
                if key <= -23300 {
                    guard key > -23400 else {
                        throw ModelFormatError(.malformed, "\(source), layer '\(layer.name)': parameter key \(key) is out of range.")
                    }
                    let values = parts[1].split(separator: ",").compactMap { Float($0) }
                    layer.arrays[-key - 23300] = Array(values.dropFirst())
                } else if let i = Int(parts[1]) {
                    layer.ints[key] = i
                } else if let v = Float(parts[1]) {
                    layer.floats[key] = v
                } else {
                    throw ModelFormatError(.malformed, "\(source), layer '\(layer.name)': cannot parse parameter '\(kv)'.")
                }
            }
            layers.append(layer)
        }
        var builder = Builder(source: source, reader: WeightReader(data: weights, source: source))
        for layer in layers { try builder.add(layer) }
        guard let input = builder.inputValue ?? inputName.flatMap({ builder.blobs[$0] }) else {
            throw ModelFormatError(.malformed, "\(source) has no Input layer.")
        }
        let outName = outputName ?? layers.last?.tops.first ?? ""
        guard let output = builder.blobs[outName] else {
            throw ModelFormatError(.malformed, "\(source) has no blob named '\(outName)' to use as output.")
        }
        if !builder.reader.atEnd {
            throw ModelFormatError(.malformed, "\(source): the .bin file has \(builder.reader.remaining) bytes left over after the last layer; the .param and .bin do not belong together.")
        }
        if let inputName, builder.blobs[inputName] == nil {
            throw ModelFormatError(.malformed, "\(source) has no input blob '\(inputName)'.")
        }
        return builder.graph.graph(input: input, output: output, source: source)
    }

    struct WeightReader {
        let data: Data
        let source: String
        var offset = 0
        var atEnd: Bool { offset == data.count }
        var remaining: Int { data.count - offset }

        init(data: Data, source: String) {
            self.data = data
            self.source = source
        }

        mutating func raw(_ count: Int, layer: String) throws -> [Float] {
            // A weight count can never exceed what the file holds: checked before allocating.
            guard count >= 0, count <= remaining / 4 else { throw wrongCount(count, layer) }
            var out = [Float](repeating: 0, count: count)
            out.withUnsafeMutableBytes { dst in
                data.withUnsafeBytes { src in dst.copyMemory(from: UnsafeRawBufferPointer(rebasing: src[offset..<offset + count * 4])) }
            }
            offset += count * 4
            return out
        }

        /// A tagged weight array: fp16 (tag 0x01306B47) or fp32 (tag 0 or 0x0002C056).
        mutating func tagged(_ count: Int, layer: String) throws -> [Float] {
            guard offset + 4 <= data.count else { throw short(layer) }
            let tag = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt32.self) }
            offset += 4
            guard count >= 0, count <= remaining / 2 else { throw wrongCount(count, layer) }
            switch tag {
            case 0x0130_6B47:
                guard count <= remaining / 2 else { throw short(layer) }
                let out = data.withUnsafeBytes { HalfFloats.decode($0, offset: offset, count: count) }
                offset += (count * 2 + 3) / 4 * 4
                return out
            case 0, 0x0002_C056:
                return try raw(count, layer: layer)
            case 0x000D_4B38:
                throw ModelFormatError(.unsupported, "Layer '\(layer)' in \(source): int8-quantised ncnn weights are not supported. Use the fp16 or fp32 model files.")
            default:
                throw ModelFormatError(.unsupported, "Layer '\(layer)' in \(source): codebook-quantised ncnn weights (tag \(String(tag, radix: 16))) are not supported. Use the fp16 or fp32 model files.")
            }
        }

        func wrongCount(_ count: Int, _ layer: String) -> ModelFormatError {
            if count < 0 {
                return ModelFormatError(.malformed, "Layer '\(layer)' in \(source): weight count \(count) is negative; the .param file is damaged.")
            }
            return short(layer)
        }

        func short(_ layer: String) -> ModelFormatError {
            ModelFormatError(.malformed, "Layer '\(layer)' in \(source): the .bin file ends before this layer's weights; the .param and .bin do not belong together.")
        }
    }

    struct Builder {
        let source: String
        var reader: WeightReader
        var graph = GraphBuilder()
        var blobs: [String: Int] = [:]
        var inputValue: Int?

        init(source: String, reader: WeightReader) {
            self.source = source
            self.reader = reader
        }

        mutating func newValue(_ name: String) -> Int {
            let v = graph.newValue(name)
            blobs[name] = v
            return v
        }

        func value(_ name: String, _ layer: Layer) throws -> Int {
            guard let v = blobs[name] else {
                throw ModelFormatError(.malformed, "Layer '\(layer.name)' in \(source) reads blob '\(name)', which no earlier layer produces.")
            }
            return v
        }

        func unsupported(_ layer: Layer, _ why: String) -> ModelFormatError {
            ModelFormatError(.unsupported, "Layer '\(layer.name)' (\(layer.type)) in \(source): \(why) is not supported by Vivify's engine.")
        }

        func activation(_ layer: Layer) throws -> Activation {
            let params = layer.arrays[10] ?? []
            switch layer.int(9, 0) {
            case 0: return .identity
            case 1: return .relu
            case 2: return .leakyRelu(slope: params.first ?? 0)
            case 3: return .clip(min: params.count > 0 ? params[0] : -.greatestFiniteMagnitude, max: params.count > 1 ? params[1] : .greatestFiniteMagnitude)
            case 4: return .sigmoid
            case let t: throw unsupported(layer, "fused activation type \(t)")
            }
        }

        mutating func emit(_ layer: Layer, _ op: Engine.Operation, inputs: [Int], top: String? = nil) {
            let out = newValue(top ?? layer.tops[0])
            graph.append(Node(name: layer.name, op: op, inputs: inputs, output: out))
        }

        mutating func add(_ l: Layer) throws {
            let ins = try l.bottoms.map { try value($0, l) }
            // Every layer makes at least one blob, and every layer but Input reads one.
            guard !l.tops.isEmpty, l.type == "Input" || !ins.isEmpty else {
                throw ModelFormatError(.malformed, "Layer '\(l.name)' (\(l.type)) in \(source) has \(ins.count) inputs and \(l.tops.count) outputs; it needs at least one of each.")
            }
            switch l.type {
            case "Input":
                inputValue = newValue(l.tops[0])
            case "Split":
                for top in l.tops { blobs[top] = ins[0] }
            case "Noop", "Dropout":
                blobs[l.tops[0]] = ins[0]
            case "Convolution", "ConvolutionDepthWise", "Deconvolution", "DeconvolutionDepthWise":
                try convolution(l, ins)
            case "PReLU":
                let n = l.int(0, 1)
                emit(l, .activation(.prelu(slopes: try reader.raw(n, layer: l.name))), inputs: ins)
            case "ReLU":
                let slope = l.float(0, 0)
                emit(l, .activation(slope == 0 ? .relu : .leakyRelu(slope: slope)), inputs: ins)
            case "Sigmoid": emit(l, .activation(.sigmoid), inputs: ins)
            case "TanH": emit(l, .activation(.tanh), inputs: ins)
            case "Swish": emit(l, .activation(.silu), inputs: ins)
            case "Clip": emit(l, .activation(.clip(min: l.float(0, -.greatestFiniteMagnitude), max: l.float(1, .greatestFiniteMagnitude))), inputs: ins)
            case "Eltwise":
                let kind: BinaryKind
                switch l.int(0, 1) {
                case 0: kind = .mul
                case 1: kind = .add
                case 2: kind = .max
                default: throw unsupported(l, "Eltwise operation \(l.int(0, 1))")
                }
                let coeffs = l.arrays[1]
                guard ins.count >= 2 else { throw unsupported(l, "Eltwise with one input") }
                if let coeffs, coeffs.count < ins.count {
                    throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): \(coeffs.count) coefficients for \(ins.count) inputs.")
                }
                var acc = ins[0]
                for (k, next) in ins.dropFirst().enumerated() {
                    let c: [Float]? = coeffs.map { [k == 0 ? $0[0] : 1, $0[k + 1]] }
                    let isLast = k == ins.count - 2
                    let out = newValue(isLast ? l.tops[0] : "\(l.tops[0])#\(k)")
                    graph.append(Node(name: l.name, op: .binary(kind, coefficients: c), inputs: [acc, next], output: out))
                    acc = out
                }
            case "BinaryOp":
                let t = l.int(0, 0)
                let kinds: [Int: BinaryKind] = [0: .add, 1: .sub, 2: .mul, 3: .div, 4: .max, 5: .min, 7: .sub, 8: .div]
                guard let kind = kinds[t] else { throw unsupported(l, "BinaryOp type \(t)") }
                if l.int(1, 0) == 1 {
                    emit(l, .scalar(kind, l.float(2, 0), scalarFirst: t >= 7), inputs: ins)
                } else {
                    guard ins.count == 2 else {
                        throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): BinaryOp with \(ins.count) inputs; it takes two (or one and a scalar).")
                    }
                    emit(l, .binary(kind, coefficients: nil), inputs: t >= 7 ? [ins[1], ins[0]] : ins)
                }
            case "Scale":
                let size = l.int(0, 0)
                if size == -233 {
                    guard ins.count == 2, l.int(1, 0) == 0 else { throw unsupported(l, "Scale with a bias and a scale blob") }
                    emit(l, .binary(.mul, coefficients: nil), inputs: ins)
                } else {
                    let scale = try reader.raw(size, layer: l.name)
                    let bias = l.int(1, 0) == 1 ? try reader.raw(size, layer: l.name) : [Float](repeating: 0, count: size)
                    emit(l, .channelAffine(scale: scale, bias: bias), inputs: ins)
                }
            case "BatchNorm":
                let n = l.int(0, 0)
                let slope = try reader.raw(n, layer: l.name), mean = try reader.raw(n, layer: l.name)
                let variance = try reader.raw(n, layer: l.name), bias = try reader.raw(n, layer: l.name)
                let eps = l.float(1, 0)
                var scale = [Float](repeating: 0, count: n), shift = [Float](repeating: 0, count: n)
                for c in 0..<n {
                    scale[c] = slope[c] / (variance[c] + eps).squareRoot()
                    shift[c] = bias[c] - mean[c] * scale[c]
                }
                emit(l, .channelAffine(scale: scale, bias: shift), inputs: ins)
            case "Pooling":
                guard l.int(0, 0) == 1, l.int(4, 0) == 1 else { throw unsupported(l, "Pooling other than global average") }
                emit(l, .globalAveragePool, inputs: ins)
            case "InnerProduct":
                let out = l.int(0, 0), count = l.int(2, 0)
                guard (1...ModelLimits.maxChannels).contains(out) else {
                    throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): \(out) outputs; it must be 1–\(ModelLimits.maxChannels).")
                }
                let w = try reader.tagged(count, layer: l.name)
                let b = l.int(1, 0) == 1 ? try reader.raw(out, layer: l.name) : []
                emit(l, .fullyConnected(outFeatures: out, weights: w, bias: b, activation: try activation(l)), inputs: ins)
            case "PixelShuffle":
                emit(l, .pixelShuffle(factor: l.int(0, 1), order: l.int(1, 0) == 0 ? .crd : .dcr), inputs: ins)
            case "Interp":
                let modes: [Int: ResizeMode] = [1: .nearest, 2: .bilinear, 3: .bicubic]
                guard let mode = modes[l.int(0, 0)] else { throw unsupported(l, "Interp resize type \(l.int(0, 0))") }
                if ins.count != 1 { throw unsupported(l, "Interp with a reference blob") }
                emit(l, .resize(mode, scaleH: l.float(1, 1), scaleW: l.float(2, 1), outH: l.int(3, 0), outW: l.int(4, 0),
                                alignCorners: l.int(6, 0) == 1), inputs: ins)
            case "Crop":
                try crop(l, ins)
            case "Concat":
                guard l.int(0, 0) == 0 else { throw unsupported(l, "Concat along axis \(l.int(0, 0))") }
                emit(l, .concatChannels, inputs: ins)
            case "Softmax":
                guard l.int(0, 0) == 0 else { throw unsupported(l, "Softmax along axis \(l.int(0, 0))") }
                emit(l, .softmaxChannels, inputs: ins)
            case "Padding":
                let modes: [Int: PaddingMode] = [0: .constant(l.float(5, 0)), 1: .replicate, 2: .reflect]
                guard let mode = modes[l.int(4, 0)], l.int(6, 0) == 0 else { throw unsupported(l, "Padding type \(l.int(4, 0))") }
                emit(l, .pad(top: l.int(0, 0), left: l.int(2, 0), bottom: l.int(1, 0), right: l.int(3, 0), mode: mode), inputs: ins)
            default:
                throw ModelFormatError(.unsupported, "Layer '\(l.name)' in \(source): the ncnn layer type '\(l.type)' is not supported by Vivify's engine.")
            }
        }

        mutating func convolution(_ l: Layer, _ ins: [Int]) throws {
            let out = l.int(0, 0)
            let kw = l.int(1, 0), kh = l.int(11, kw)
            let dw = l.int(2, 1), dh = l.int(12, dw)
            let sw = l.int(3, 1), sh = l.int(13, sw)
            let pl = l.int(4, 0), pr = l.int(15, pl), pt = l.int(14, pl), pb = l.int(16, pt)
            let count = l.int(6, 0)
            let depthwise = l.type.hasSuffix("DepthWise")
            let groups = depthwise ? l.int(7, 1) : 1
            let transposed = l.type.hasPrefix("Deconvolution")
            guard pl >= 0 || pl == Int.min, pt >= 0 || pt == Int.min else { throw unsupported(l, "automatic 'same' padding (\(pl))") }
            let L = ModelLimits.self
            guard (1...L.maxChannels).contains(out), (1...L.maxKernel).contains(kw), (1...L.maxKernel).contains(kh),
                  (1...L.maxStride).contains(sw), (1...L.maxStride).contains(sh), (1...L.maxDilation).contains(dw),
                  (1...L.maxDilation).contains(dh), [pl, pr, pt, pb].allSatisfy({ (0...L.maxPad).contains($0) }),
                  (1...L.maxChannels).contains(groups), out % groups == 0 else {
                throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): parameters out of range (outputs \(out) of 1–\(L.maxChannels), kernel \(kw)x\(kh) of 1–\(L.maxKernel), stride \(sw)x\(sh) of 1–\(L.maxStride), dilation \(dw)x\(dh) of 1–\(L.maxDilation), padding \(pl),\(pr),\(pt),\(pb) of 0–\(L.maxPad), groups \(groups) dividing the outputs); the .param file is damaged.")
            }
            guard count > 0, count % (out * kw * kh) == 0, count / (out * kw * kh) <= L.maxChannels else {
                throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): weight count \(count) does not fit \(out) outputs of \(kw)x\(kh).")
            }
            if l.int(8, 0) != 0 { throw unsupported(l, "int8 convolution") }
            let inPerGroup = transposed ? count / (out * kw * kh) : count / (out * kw * kh)
            let inChannels = transposed ? inPerGroup * groups : inPerGroup * groups
            var weights = try reader.tagged(count, layer: l.name)
            let bias = l.int(5, 0) == 1 ? try reader.raw(out, layer: l.name) : []
            if transposed {
                // ncnn stores [out][in/g][kh][kw] per group; the IR wants [in][out/g][kh][kw].
                let ocg = out / groups, icg = inChannels / groups, k = kh * kw
                var t = [Float](repeating: 0, count: count)
                for g in 0..<groups {
                    for o in 0..<ocg {
                        for i in 0..<icg {
                            for j in 0..<k {
                                t[((g * icg + i) * ocg + o) * k + j] = weights[((g * ocg + o) * icg + i) * k + j]
                            }
                        }
                    }
                }
                weights = t
            }
            let p = ConvolutionParameters(
                outChannels: out, inChannels: inChannels, kernelH: kh, kernelW: kw, strideH: sh, strideW: sw,
                dilationH: dh, dilationW: dw, padTop: pt, padLeft: pl, padBottom: pb, padRight: pr,
                outputPadH: transposed ? l.int(19, 0) : 0, outputPadW: transposed ? l.int(18, 0) : 0,
                groups: groups, weights: weights, bias: bias, activation: try activation(l))
            if transposed && (l.int(20, 0) != 0 || l.int(21, 0) != 0) { throw unsupported(l, "explicit output size") }
            emit(l, transposed ? .deconvolution(p) : .convolution(p), inputs: ins)
        }

        mutating func crop(_ l: Layer, _ ins: [Int]) throws {
            if ins.count == 2 {
                emit(l, .cropLike(top: l.int(1, 0), left: l.int(0, 0)), inputs: ins)
                return
            }
            if let starts = l.arrays[9] {
                let ends = l.arrays[10] ?? []
                let axes = l.arrays[11] ?? []
                var t = 0, left = 0, b = 0, r = 0
                guard starts.count >= axes.count else {
                    throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): Crop has \(axes.count) axes but \(starts.count) starts.")
                }
                for (k, axisValue) in axes.enumerated() {
                    guard let axis = ModelLimits.integer(axisValue), let start = ModelLimits.integer(starts[k]),
                          (0...ModelLimits.maxDimension).contains(start) else {
                        throw ModelFormatError(.malformed, "Layer '\(l.name)' in \(source): Crop axis \(axisValue) or start \(starts[k]) is out of range.")
                    }
                    let end = k < ends.count ? (ModelLimits.integer(ends[k]) ?? Int.max) : Int.max
                    guard end <= 0 || end >= 1 << 29 else { throw unsupported(l, "Crop with a positive end") }
                    let cropEnd = end >= 1 << 29 ? 0 : -end
                    switch axis {
                    case -2, 1: t = start; b = cropEnd
                    case -1, 2: left = start; r = cropEnd
                    default: throw unsupported(l, "Crop along axis \(axis)")
                    }
                }
                emit(l, .crop(top: t, left: left, bottom: b, right: r), inputs: ins)
                return
            }
            throw unsupported(l, "Crop with fixed output size")
        }
    }
}
