import Compute
import Foundation

// Plain implementations of every operation on CHW float buffers. The reference backend runs
// everything through these; the oneDNN backend uses them only for operations oneDNN lacks
// (pixel shuffle, padding, slicing, …), and the op tests say which. Its own fast loops (the
// fused upscaler tail, separable bicubic) live in EngineDNNL, built with -Ounchecked.

package enum Kernels {
    @inline(__always)
    static func activate(_ x: Float, _ a: Activation, channel: Int) -> Float {
        switch a {
        case .identity: return x
        case .relu: return max(x, 0)
        case .leakyRelu(let s): return x > 0 ? x : x * s
        case .prelu(let slopes): return x > 0 ? x : x * (slopes.count == 1 ? slopes[0] : slopes[channel])
        case .silu: return x / (1 + exp(-x))
        case .sigmoid: return 1 / (1 + exp(-x))
        case .tanh: return Foundation.tanh(x)
        case .clip(let lo, let hi): return min(max(x, lo), hi)
        case .elu(let alpha): return x > 0 ? x : alpha * (exp(x) - 1)
        case .sqrt: return x.squareRoot()
        case .pow(let e): return Foundation.pow(x, e)
        }
    }

    static func activation(_ a: Activation, _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>) {
        let plane = s.h * s.w
        for c in 0..<s.c {
            for i in 0..<plane { y[c * plane + i] = activate(x[c * plane + i], a, channel: c) }
        }
    }

    /// Runs `body` over `0..<count` in contiguous bands, one per thread of `threads` (the
    /// run's `--threads`). Each index is written by exactly one band, so results do not depend
    /// on the split.
    static func inBands(_ count: Int, threads: Int, _ body: (Range<Int>) -> Void) {
        let bands = min(count, max(1, threads))
        if bands <= 1 { body(0..<count); return }
        // The bands touch disjoint outputs and only read what they share.
        withoutActuallyEscaping(body) { body in
            nonisolated(unsafe) let body = body
            DispatchQueue.concurrentPerform(iterations: bands) { k in
                body((count * k / bands)..<(count * (k + 1) / bands))
            }
        }
    }

    /// Direct convolution. Every output value sums bias, then input channels, kernel rows and
    /// columns in that order, skipping taps outside the input, whichever thread computes it and
    /// however the row is walked, so the result is the same for any thread count. Rows of
    /// output channels are split across the compute threads; within a row each tap is added
    /// to every output column it reaches (a loop the compiler vectorises), in that same order.
    static func convolution(_ p: ConvolutionParameters, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                            _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape, threads: Int) {
        let icg = p.inChannels / p.groups, ocg = p.outChannels / p.groups
        // Output columns each kernel column reaches inside the input: ox in lo[kx]..<hi[kx].
        var lo = [Int](repeating: 0, count: p.kernelW), hi = lo
        for kx in 0..<p.kernelW {
            let offset = kx * p.dilationW - p.padLeft   // ix = ox * strideW + offset
            lo[kx] = min(o.w, max(0, ceilDivide(-offset, p.strideW)))
            hi[kx] = max(lo[kx], min(o.w, floorDivide(s.w - 1 - offset, p.strideW) + 1))
        }
        p.weights.withUnsafeBufferPointer { w in
            inBands(p.outChannels * o.h, threads: threads) { rows in
                let sum = UnsafeMutableBufferPointer<Float>.allocate(capacity: max(o.w, 1))
                defer { sum.deallocate() }
                for row in rows {
                    let oc = row / o.h, oy = row % o.h
                    let g = oc / ocg
                    sum.initialize(repeating: p.bias.isEmpty ? 0 : p.bias[oc])
                    for ic in 0..<icg {
                        let cin = g * icg + ic
                        for ky in 0..<p.kernelH {
                            let iy = oy * p.strideH - p.padTop + ky * p.dilationH
                            if iy < 0 || iy >= s.h { continue }
                            let line = (cin * s.h + iy) * s.w
                            for kx in 0..<p.kernelW {
                                let wv = w[((oc * icg + ic) * p.kernelH + ky) * p.kernelW + kx]
                                let start = line + kx * p.dilationW - p.padLeft
                                if p.strideW == 1 {
                                    for ox in lo[kx]..<hi[kx] { sum[ox] += x[start + ox] * wv }
                                } else {
                                    for ox in lo[kx]..<hi[kx] { sum[ox] += x[start + ox * p.strideW] * wv }
                                }
                            }
                        }
                    }
                    let out = (oc * o.h + oy) * o.w
                    for ox in 0..<o.w { y[out + ox] = activate(sum[ox], p.activation, channel: oc) }
                }
            }
        }
    }

    @inline(__always) private static func floorDivide(_ a: Int, _ b: Int) -> Int {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    @inline(__always) private static func ceilDivide(_ a: Int, _ b: Int) -> Int {
        -floorDivide(-a, b)
    }

    /// Transposed convolution as a scatter-add of every input pixel (no kernel flip). Output
    /// channels are split across the compute threads; each output value takes its terms in
    /// the same order (input channel, input row, column, kernel row, column) whatever the split.
    static func deconvolution(_ p: ConvolutionParameters, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                              _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape, threads: Int) {
        let icg = p.inChannels / p.groups, ocg = p.outChannels / p.groups
        p.weights.withUnsafeBufferPointer { w in
            inBands(p.outChannels, threads: threads) { channels in
                for oc in channels {
                    let b = p.bias.isEmpty ? 0 : p.bias[oc]
                    for i in 0..<(o.h * o.w) { y[oc * o.h * o.w + i] = b }
                    let g = oc / ocg, ocl = oc % ocg
                    for ic in (g * icg)..<((g + 1) * icg) {
                        for iy in 0..<s.h {
                            for ix in 0..<s.w {
                                let v = x[(ic * s.h + iy) * s.w + ix]
                                for ky in 0..<p.kernelH {
                                    let oy = iy * p.strideH + ky * p.dilationH - p.padTop
                                    if oy < 0 || oy >= o.h { continue }
                                    for kx in 0..<p.kernelW {
                                        let ox = ix * p.strideW + kx * p.dilationW - p.padLeft
                                        if ox < 0 || ox >= o.w { continue }
                                        y[(oc * o.h + oy) * o.w + ox] += v * w[((ic * ocg + ocl) * p.kernelH + ky) * p.kernelW + kx]
                                    }
                                }
                            }
                        }
                    }
                    if p.activation != .identity {
                        for i in 0..<(o.h * o.w) { y[oc * o.h * o.w + i] = activate(y[oc * o.h * o.w + i], p.activation, channel: oc) }
                    }
                }
            }
        }
    }

    @inline(__always)
    static func apply(_ k: BinaryKind, _ a: Float, _ b: Float) -> Float {
        switch k {
        case .add: return a + b
        case .sub: return a - b
        case .mul: return a * b
        case .div: return a / b
        case .max: return max(a, b)
        case .min: return min(a, b)
        case .pow: return Foundation.pow(a, b)
        }
    }

    static func binary(_ k: BinaryKind, _ coefficients: [Float]?, _ a: UnsafeBufferPointer<Float>, _ sa: Shape,
                       _ b: UnsafeBufferPointer<Float>, _ sb: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        let ca = coefficients?[0] ?? 1, cb = coefficients?[1] ?? 1
        for c in 0..<o.c {
            let ac = sa.c == 1 ? 0 : c, bc = sb.c == 1 ? 0 : c
            for yy in 0..<o.h {
                let ay = sa.h == 1 ? 0 : yy, by = sb.h == 1 ? 0 : yy
                for xx in 0..<o.w {
                    let ax = sa.w == 1 ? 0 : xx, bx = sb.w == 1 ? 0 : xx
                    let va = a[(ac * sa.h + ay) * sa.w + ax] * ca
                    let vb = b[(bc * sb.h + by) * sb.w + bx] * cb
                    y[(c * o.h + yy) * o.w + xx] = apply(k, va, vb)
                }
            }
        }
    }

    static func scalar(_ k: BinaryKind, _ v: Float, _ first: Bool, _ x: UnsafeBufferPointer<Float>, _ y: UnsafeMutableBufferPointer<Float>) {
        for i in 0..<x.count { y[i] = first ? apply(k, v, x[i]) : apply(k, x[i], v) }
    }

    static func channelAffine(_ scale: [Float], _ bias: [Float], _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>) {
        let plane = s.h * s.w
        for c in 0..<s.c { for i in 0..<plane { y[c * plane + i] = x[c * plane + i] * scale[c] + bias[c] } }
    }

    static func softmaxChannels(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>) {
        let plane = s.h * s.w
        for i in 0..<plane {
            var m = -Float.infinity
            for c in 0..<s.c { m = max(m, x[c * plane + i]) }
            var sum: Float = 0
            for c in 0..<s.c { let e = exp(x[c * plane + i] - m); y[c * plane + i] = e; sum += e }
            for c in 0..<s.c { y[c * plane + i] /= sum }
        }
    }

    static func pixelShuffle(_ r: Int, _ order: ShuffleOrder, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                             _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        for c in 0..<o.c {
            for dy in 0..<r {
                for dx in 0..<r {
                    let ic = order == .crd ? c * r * r + dy * r + dx : (dy * r + dx) * o.c + c
                    for iy in 0..<s.h {
                        for ix in 0..<s.w {
                            y[(c * o.h + iy * r + dy) * o.w + ix * r + dx] = x[(ic * s.h + iy) * s.w + ix]
                        }
                    }
                }
            }
        }
    }

    /// Cubic convolution weights (Keys, A = −0.75, as PyTorch, OpenCV and ncnn use).
    @inline(__always)
    package static func cubicWeights(_ t: Float) -> (Float, Float, Float, Float) {
        let a: Float = -0.75
        func near(_ d: Float) -> Float { ((a + 2) * d - (a + 3)) * d * d + 1 }
        func far(_ d: Float) -> Float { ((a * d - 5 * a) * d + 8 * a) * d - 4 * a }
        return (far(t + 1), near(t), near(1 - t), far(2 - t))
    }

    static func resize(_ mode: ResizeMode, _ alignCorners: Bool, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                       _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        func source(_ d: Int, _ inSize: Int, _ outSize: Int) -> Float {
            if alignCorners { return outSize > 1 ? Float(d) * Float(inSize - 1) / Float(outSize - 1) : 0 }
            return (Float(d) + 0.5) * Float(inSize) / Float(outSize) - 0.5
        }
        for c in 0..<s.c {
            let base = c * s.h * s.w
            @inline(__always) func px(_ yy: Int, _ xx: Int) -> Float {
                x[base + min(max(yy, 0), s.h - 1) * s.w + min(max(xx, 0), s.w - 1)]
            }
            for oy in 0..<o.h {
                for ox in 0..<o.w {
                    let v: Float
                    switch mode {
                    case .nearest:
                        // Floor of the scaled coordinate (PyTorch "nearest", ncnn Interp type 1).
                        let sy = min(Int(Float(oy) * Float(s.h) / Float(o.h)), s.h - 1)
                        let sx = min(Int(Float(ox) * Float(s.w) / Float(o.w)), s.w - 1)
                        v = px(sy, sx)
                    case .bilinear:
                        let fy = max(source(oy, s.h, o.h), 0), fx = max(source(ox, s.w, o.w), 0)
                        let y0 = Int(fy), x0 = Int(fx)
                        let ty = fy - Float(y0), tx = fx - Float(x0)
                        let top = px(y0, x0) * (1 - tx) + px(y0, x0 + 1) * tx
                        let bottom = px(y0 + 1, x0) * (1 - tx) + px(y0 + 1, x0 + 1) * tx
                        v = top * (1 - ty) + bottom * ty
                    case .bicubic:
                        let fy = source(oy, s.h, o.h), fx = source(ox, s.w, o.w)
                        let y0 = Int(fy.rounded(.down)), x0 = Int(fx.rounded(.down))
                        let wy = cubicWeights(fy - Float(y0)), wx = cubicWeights(fx - Float(x0))
                        func row(_ yy: Int) -> Float {
                            px(yy, x0 - 1) * wx.0 + px(yy, x0) * wx.1 + px(yy, x0 + 1) * wx.2 + px(yy, x0 + 2) * wx.3
                        }
                        v = row(y0 - 1) * wy.0 + row(y0) * wy.1 + row(y0 + 1) * wy.2 + row(y0 + 2) * wy.3
                    }
                    y[(c * o.h + oy) * o.w + ox] = v
                }
            }
        }
    }

    static func pad(_ t: Int, _ l: Int, _ mode: PaddingMode, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                    _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        @inline(__always) func map(_ i: Int, _ n: Int) -> Int? {
            if i >= 0 && i < n { return i }
            switch mode {
            case .constant: return nil
            case .replicate: return min(max(i, 0), n - 1)
            case .reflect: return i < 0 ? -i : 2 * (n - 1) - i
            }
        }
        let fill: Float
        if case .constant(let v) = mode { fill = v } else { fill = 0 }
        for c in 0..<s.c {
            for oy in 0..<o.h {
                let sy = map(oy - t, s.h)
                for ox in 0..<o.w {
                    let sx = map(ox - l, s.w)
                    if let sy, let sx {
                        y[(c * o.h + oy) * o.w + ox] = x[(c * s.h + sy) * s.w + sx]
                    } else {
                        y[(c * o.h + oy) * o.w + ox] = fill
                    }
                }
            }
        }
    }

    /// Copies the window starting at (top, left) of size `o` from `x`, channels from `c0`.
    static func window(_ top: Int, _ left: Int, _ c0: Int, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                       _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        for c in 0..<o.c {
            for oy in 0..<o.h {
                for ox in 0..<o.w {
                    y[(c * o.h + oy) * o.w + ox] = x[((c + c0) * s.h + oy + top) * s.w + ox + left]
                }
            }
        }
    }

    static func globalAveragePool(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>) {
        let plane = s.h * s.w
        for c in 0..<s.c {
            var sum: Float = 0
            for i in 0..<plane { sum += x[c * plane + i] }
            y[c] = sum / Float(plane)
        }
    }

    static func fullyConnected(_ out: Int, _ w: [Float], _ b: [Float], _ a: Activation, _ x: UnsafeBufferPointer<Float>,
                               _ y: UnsafeMutableBufferPointer<Float>) {
        let n = x.count
        for o in 0..<out {
            var sum = b.isEmpty ? 0 : b[o]
            for i in 0..<n { sum += w[o * n + i] * x[i] }
            y[o] = activate(sum, a, channel: o)
        }
    }

    /// `resize×r(base) + pixelShuffle×r(detail)` done the plain way: the reference resize,
    /// then each output pixel adds its detail value (the one detail channel set for every
    /// channel when `detail` has r² channels).
    static func upsampleDetail(_ mode: ResizeMode, _ order: ShuffleOrder, _ r: Int, _ base: UnsafeBufferPointer<Float>, _ s: Shape,
                               _ detail: UnsafeBufferPointer<Float>, _ ds: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        resize(mode, false, base, s, y, o)
        let perPhase = ds.c / (r * r)
        for c in 0..<o.c {
            let dc = perPhase == 1 ? 0 : c
            for oy in 0..<o.h {
                for ox in 0..<o.w {
                    let phase = (oy % r) * r + ox % r
                    let ic = order == .crd ? dc * r * r + phase : phase * perPhase + dc
                    y[(c * o.h + oy) * o.w + ox] += detail[(ic * ds.h + oy / r) * ds.w + ox / r]
                }
            }
        }
    }

    /// Runs `op` on plain CHW inputs into `y`: the one dispatcher both backends use for the
    /// operations they run as loops. The convolutions split their rows over `threads` (the
    /// backend's own count, from the run's `--threads`).
    package static func execute(_ op: Operation, _ inputs: [UnsafeBufferPointer<Float>], _ shapes: [Shape],
                                _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape, threads: Int) throws {
        if case .constant(_, let values) = op {
            values.withUnsafeBufferPointer { y.baseAddress!.update(from: $0.baseAddress!, count: $0.count) }
            return
        }
        let x = inputs[0], s0 = shapes[0]
        switch op {
        case .convolution(let p): convolution(p, x, s0, y, o, threads: threads)
        case .deconvolution(let p): deconvolution(p, x, s0, y, o, threads: threads)
        case .activation(let a): activation(a, x, s0, y)
        case .binary(let k, let c): binary(k, c, x, s0, inputs[1], shapes[1], y, o)
        case .scalar(let k, let v, let first): scalar(k, v, first, x, y)
        case .channelAffine(let scale, let bias): channelAffine(scale, bias, x, s0, y)
        case .softmaxChannels: softmaxChannels(x, s0, y)
        case .pixelShuffle(let r, let order): pixelShuffle(r, order, x, s0, y, o)
        case .resize(let mode, _, _, _, _, let align): resize(mode, align, x, s0, y, o)
        case .pad(let t, let l, _, _, let mode): pad(t, l, mode, x, s0, y, o)
        case .crop(let t, let l, _, _), .cropLike(let t, let l): window(t, l, 0, x, s0, y, o)
        case .sliceChannels(let start, _): window(0, 0, start, x, s0, y, o)
        case .concatChannels:
            var offset = 0
            for src in inputs {
                (y.baseAddress! + offset).update(from: src.baseAddress!, count: src.count)
                offset += src.count
            }
        case .globalAveragePool: globalAveragePool(x, s0, y)
        case .fullyConnected(let out, let w, let b, let a): fullyConnected(out, w, b, a, x, y)
        case .upsampleDetail(let mode, let order, let r): upsampleDetail(mode, order, r, x, s0, inputs[1], shapes[1], y, o)
        case .instanceNorm(let scale, let bias, let eps): instanceNorm(scale, bias, eps, x, s0, y)
        case .pool(let p): pool(p, x, s0, y, o)
        case .spaceToDepth(let r): spaceToDepth(r, x, s0, y, o)
        case .resample(let p): resample(p, x, s0, y, o)
        case .constant: break
        case .reshape: y.baseAddress!.update(from: x.baseAddress!, count: x.count)
        case .softmax(let axis): softmaxAlong(axis, x, s0, y)
        case .concat(let axis):
            for c in 0..<o.c {
                var offset = 0
                for (k, src) in inputs.enumerated() {
                    let si = shapes[k]
                    for r in 0..<si.h {
                        for col in 0..<si.w {
                            let (oy, ox) = axis == 2 ? (r + offset, col) : (r, col + offset)
                            y[(c * o.h + oy) * o.w + ox] = src[(c * si.h + r) * si.w + col]
                        }
                    }
                    offset += axis == 2 ? si.h : si.w
                }
            }
        case .transpose(let perm):
            let inStrides = [s0.h * s0.w, s0.w, 1]
            let (a, b, c) = (inStrides[perm[0]], inStrides[perm[1]], inStrides[perm[2]])
            for i in 0..<o.c { for j in 0..<o.h { for k in 0..<o.w { y[(i * o.h + j) * o.w + k] = x[i * a + j * b + k * c] } } }
        case .rowMatMul(let k, let n, let w, let bias):
            for row in 0..<(s0.c * s0.h) {
                for j in 0..<n {
                    var sum: Float = bias.isEmpty ? 0 : bias[j]
                    for i in 0..<k { sum += x[row * k + i] * w[i * n + j] }
                    y[row * n + j] = sum
                }
            }
        case .external(let e):
            try e.kernel.evaluate(x, s0, y, o)
        }
    }

    static func softmaxAlong(_ axis: Int, _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>) {
        // Lines of `n` values `step` apart: rows (axis 3, along a row) or columns (axis 2).
        let (n, step, lines) = axis == 3 ? (s.w, 1, s.c * s.h) : (s.h, s.w, s.c * s.w)
        for line in 0..<lines {
            let start = axis == 3 ? line * s.w : (line / s.w) * s.h * s.w + line % s.w
            var m = -Float.infinity
            for i in 0..<n { m = max(m, x[start + i * step]) }
            var sum: Float = 0
            for i in 0..<n { let e = exp(x[start + i * step] - m); y[start + i * step] = e; sum += e }
            for i in 0..<n { y[start + i * step] /= sum }
        }
    }

    static func instanceNorm(_ scale: [Float], _ bias: [Float], _ eps: Float, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                             _ y: UnsafeMutableBufferPointer<Float>) {
        let plane = s.h * s.w
        for c in 0..<s.c {
            // Two passes in double: the mean, then the spread around it.
            var sum = 0.0
            for i in 0..<plane { sum += Double(x[c * plane + i]) }
            let mean = sum / Double(plane)
            var spread = 0.0
            for i in 0..<plane { let d = Double(x[c * plane + i]) - mean; spread += d * d }
            let k = Double(scale[c]) / (spread / Double(plane) + Double(eps)).squareRoot()
            let b = Double(bias[c]) - mean * k
            for i in 0..<plane { y[c * plane + i] = Float(Double(x[c * plane + i]) * k + b) }
        }
    }

    static func pool(_ p: PoolParameters, _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        for c in 0..<s.c {
            for oy in 0..<o.h {
                for ox in 0..<o.w {
                    var best = -Float.infinity, sum: Float = 0, inside = 0, padded = 0
                    for ky in 0..<p.kernelH {
                        let iy = oy * p.strideH - p.padTop + ky * p.dilationH
                        // Positions past the padding (ceil mode's last window) count for nothing.
                        if iy >= s.h + p.padBottom { continue }
                        for kx in 0..<p.kernelW {
                            let ix = ox * p.strideW - p.padLeft + kx * p.dilationW
                            if ix >= s.w + p.padRight { continue }
                            guard iy >= 0, iy < s.h, ix >= 0, ix < s.w else { padded += 1; continue }
                            let v = x[(c * s.h + iy) * s.w + ix]
                            best = max(best, v)
                            sum += v
                            inside += 1
                        }
                    }
                    let v: Float
                    switch p.kind {
                    case .max: v = best
                    case .average(let countPadding): v = sum / Float(max(countPadding ? inside + padded : inside, 1))
                    }
                    y[(c * o.h + oy) * o.w + ox] = v
                }
            }
        }
    }

    static func spaceToDepth(_ r: Int, _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        for c in 0..<s.c {
            for dy in 0..<r {
                for dx in 0..<r {
                    let oc = (dy * r + dx) * s.c + c
                    for oy in 0..<o.h {
                        for ox in 0..<o.w {
                            y[(oc * o.h + oy) * o.w + ox] = x[(c * s.h + oy * r + dy) * s.w + ox * r + dx]
                        }
                    }
                }
            }
        }
    }

    /// One axis of ONNX Resize: for each output position, the input taps and their weights
    /// (also the Vulkan backend's tap tables).
    package static func resampleTaps(_ p: ResampleParameters, inSize n: Int, outSize m: Int, scale given: Float,
                             roi: (Float, Float) = (0, 1)) -> [(index: [Int], weight: [Float])] {
        let scale = given > 0 ? Double(given) : Double(m) / Double(n)
        // ONNX's reference maps with the scale (n · scale may be fractional), not m / n.
        let outLength = scale * Double(n)
        return (0..<m).map { d in
            let x = Double(d)
            let source: Double
            switch p.coordinates {
            case .halfPixel: source = (x + 0.5) / scale - 0.5
            case .pytorchHalfPixel: source = m > 1 ? (x + 0.5) / scale - 0.5 : 0
            case .alignCorners: source = outLength == 1 ? 0 : x * Double(n - 1) / (outLength - 1)
            case .asymmetric: source = x / scale
            case .tfHalfPixelForNN: source = (x + 0.5) / scale
            case .tfCropAndResize:
                let (start, end) = (Double(roi.0), Double(roi.1))
                source = m > 1 ? start * Double(n - 1) + x * (end - start) * Double(n - 1) / Double(m - 1) : 0.5 * (start + end) * Double(n - 1)
                // Outside the input: the extrapolation value (an empty tap list).
                if source < 0 || source > Double(n - 1) { return ([], []) }
            }
            func clamp(_ i: Int) -> Int { min(max(i, 0), n - 1) }
            switch p.mode {
            case .nearest:
                let f = source.rounded(.down), frac = source - f
                let i: Int
                switch p.rounding {
                case .roundPreferFloor: i = Int(frac <= 0.5 ? f : f + 1)
                case .roundPreferCeil: i = Int(frac < 0.5 ? f : f + 1)
                case .floor: i = Int(f)
                case .ceil: i = Int(source.rounded(.up))
                }
                return ([clamp(i)], [1])
            case .bilinear, .bicubic:
                var base = Int(source.rounded(.down))
                var t = source - Double(base)
                // A whole coordinate takes the upper tap at full weight (the reference's ratio 1).
                if t == 0 { base -= 1; t = 1 }
                var taps: [Int], weights: [Double]
                if p.mode == .bilinear {
                    taps = [base, base + 1]
                    weights = [1 - t, t]
                } else {
                    let a = Double(p.cubicA)
                    func near(_ d: Double) -> Double { ((a + 2) * d - (a + 3)) * d * d + 1 }
                    func far(_ d: Double) -> Double { ((a * d - 5 * a) * d + 8 * a) * d - 4 * a }
                    taps = [base - 1, base, base + 1, base + 2]
                    weights = [far(t + 1), near(t), near(1 - t), far(2 - t)]
                }
                if p.excludeOutside {
                    for k in taps.indices where taps[k] < 0 || taps[k] >= n { weights[k] = 0 }
                    let total = weights.reduce(0, +)
                    if total != 0 { weights = weights.map { $0 / total } }
                }
                return (taps.map(clamp), weights.map(Float.init))
            }
        }
    }

    static func resample(_ p: ResampleParameters, _ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        let rows = resampleTaps(p, inSize: s.h, outSize: o.h, scale: p.outH > 0 ? 0 : p.scaleH, roi: (p.roi[0], p.roi[1]))
        let cols = resampleTaps(p, inSize: s.w, outSize: o.w, scale: p.outW > 0 ? 0 : p.scaleW, roi: (p.roi[2], p.roi[3]))
        // Columns first, then rows (separable, as the reference's nested 1-D interpolations).
        var mid = [Float](repeating: 0, count: s.h * o.w)
        for c in 0..<s.c {
            let base = c * s.h * s.w
            for iy in 0..<s.h {
                for (ox, tap) in cols.enumerated() {
                    var v: Float = tap.index.isEmpty ? p.extrapolation : 0
                    for k in tap.index.indices { v += tap.weight[k] * x[base + iy * s.w + tap.index[k]] }
                    mid[iy * o.w + ox] = v
                }
            }
            for (oy, tap) in rows.enumerated() {
                for ox in 0..<o.w {
                    var v: Float = tap.index.isEmpty || cols[ox].index.isEmpty ? p.extrapolation : 0
                    for k in tap.index.indices where !cols[ox].index.isEmpty { v += tap.weight[k] * mid[tap.index[k] * o.w + ox] }
                    y[(c * o.h + oy) * o.w + ox] = v
                }
            }
        }
    }
}
