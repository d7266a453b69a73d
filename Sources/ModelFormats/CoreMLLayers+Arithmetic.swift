import Engine
import Foundation

// The arithmetic layers of NeuralNetwork.proto (add, multiply, average, max, min with folded
// loadConstant operands; scale; bias) → graph nodes.

extension CoreMLImporter.NetworkBuilder {
        /// AddLayerParams / MultiplyLayerParams (alpha 1, used with one input), average, max,
        /// min. Constants from loadConstant layers fold in as per-channel addends or factors.
        mutating func elementwise(_ l: CoreMLImporter.Layer, _ field: Int) throws {
            let kind: BinaryKind = [230: .add, 231: .mul, 240: .add, 260: .max, 261: .min][field]!
            var folded: [CoreMLImporter.Constant] = []
            var ins: [Int] = []
            for blob in l.inputs {
                if let c = constants[blob], field == 230 || field == 231 {
                    guard c.shape[1] == 1, c.shape[2] == 1 else {
                        throw l.unsupported("a \(c.shape[0])×\(c.shape[1])×\(c.shape[2]) constant from loadConstant layer '\(c.layer)' (only per-channel C×1×1 constants fold into an add or multiply)")
                    }
                    folded.append(c)
                } else {
                    ins.append(try value(blob, l))
                }
            }
            guard !ins.isEmpty else { throw l.unsupported("an \(l.type) of constants only") }
            var ops: [Engine.Operation] = []
            if ins.count == 1 && folded.isEmpty && (field == 230 || field == 231) {
                // One input: y = x + alpha or y = alpha · x.
                let alpha = l.params.float(1)
                if field == 230 && alpha != 0 { ops.append(.scalar(.add, alpha, scalarFirst: false)) }
                if field == 231 && alpha != 1 { ops.append(.scalar(.mul, alpha, scalarFirst: false)) }
            }
            if !folded.isEmpty {
                var acc: [Float] = [kind == .add ? 0 : 1]
                for c in folded {
                    if acc.count == 1 && c.values.count > 1 { acc = [Float](repeating: acc[0], count: c.values.count) }
                    guard c.values.count == 1 || c.values.count == acc.count else {
                        throw l.fail("combines constants of \(acc.count) and \(c.values.count) channels")
                    }
                    for i in 0..<acc.count {
                        let v = c.values.count == 1 ? c.values[0] : c.values[i]
                        acc[i] = kind == .add ? acc[i] + v : acc[i] * v
                    }
                }
                if acc.count == 1 {
                    ops.append(.scalar(kind, acc[0], scalarFirst: false))
                } else {
                    let ones = [Float](repeating: 1, count: acc.count), zeros = [Float](repeating: 0, count: acc.count)
                    ops.append(.channelAffine(scale: kind == .mul ? acc : ones, bias: kind == .add ? acc : zeros))
                }
            }
            if field == 240 && ins.count > 1 { ops.append(.scalar(.mul, 1 / Float(ins.count), scalarFirst: false)) }
            var current = ins[0]
            for (k, next) in ins.dropFirst().enumerated() {
                let writesOutput = k == ins.count - 2 && ops.isEmpty
                current = emit(l, .binary(kind, coefficients: nil), inputs: [current, next], name: writesOutput ? nil : "\(l.outputs[0])#sum\(k)")
            }
            if ins.count == 1 || !ops.isEmpty { emit(l, ops, from: current) }
        }

        /// Values of a scale or bias parameter of shape [1] or [C] (or [1|C, 1, 1]).
        func perChannel(_ l: CoreMLImporter.Layer, shape: [Int], field: Int, _ what: String) throws -> [Float] {
            guard !shape.isEmpty, let count = ModelLimits.elementCount(shape), count > 0 else { throw l.fail("has \(what) shape \(shape)") }
            guard shape.count == 1 || shape.dropFirst().allSatisfy({ $0 == 1 }) else {
                throw l.unsupported("a \(what) of shape \(shape.map(String.init).joined(separator: "×")) that varies across the picture (only [1] and [C] are)")
            }
            return try l.weights(field, count: count, what)
        }

        /// ScaleLayerParams: shapeScale 1, scale 2, hasBias 3, shapeBias 4, bias 5.
        mutating func scale(_ l: CoreMLImporter.Layer) throws {
            let p = l.params
            let s = try perChannel(l, shape: p.ints(1), field: 2, "scale")
            let b = p.bool(3) ? try perChannel(l, shape: p.ints(4), field: 5, "bias") : [0]
            let x = try value(l.inputs[0], l)
            if s.count == 1 && b.count == 1 {
                emit(l, (s[0] == 1 ? [] : [.scalar(.mul, s[0], scalarFirst: false)]) + (b[0] == 0 ? [] : [.scalar(.add, b[0], scalarFirst: false)]), from: x)
                return
            }
            guard s.count == 1 || b.count == 1 || s.count == b.count else { throw l.fail("has \(s.count) scales but \(b.count) biases") }
            let n = max(s.count, b.count)
            emit(l, [.channelAffine(scale: s.count == n ? s : [Float](repeating: s[0], count: n), bias: b.count == n ? b : [Float](repeating: b[0], count: n))], from: x)
        }

        /// BiasLayerParams: shape 1, bias 2.
        mutating func bias(_ l: CoreMLImporter.Layer) throws {
            let b = try perChannel(l, shape: l.params.ints(1), field: 2, "bias")
            let x = try value(l.inputs[0], l)
            emit(l, [b.count == 1 ? .scalar(.add, b[0], scalarFirst: false) : .channelAffine(scale: [Float](repeating: 1, count: b.count), bias: b)], from: x)
        }
}
