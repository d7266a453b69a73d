import Engine

/// Fast loops the oneDNN backend runs where oneDNN has no primitive (built with -Ounchecked;
/// the reference backend keeps its own plain forms in `Kernels`).
enum FastKernels {
    /// Bicubic resize as two 1-D passes (rows, then columns) with precomputed taps: the same
    /// result as the reference 2-D form (`Kernels.resize`) up to float rounding, at a fraction
    /// of its cost.
    static func separableBicubic(_ alignCorners: Bool, _ x: UnsafeBufferPointer<Float>, _ s: Shape,
                                 _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) {
        func taps(_ outSize: Int, _ inSize: Int) -> (index: [Int], weight: [Float]) {
            var index = [Int](repeating: 0, count: outSize * 4), weight = [Float](repeating: 0, count: outSize * 4)
            for d in 0..<outSize {
                let f: Float = alignCorners
                    ? (outSize > 1 ? Float(d) * Float(inSize - 1) / Float(outSize - 1) : 0)
                    : (Float(d) + 0.5) * Float(inSize) / Float(outSize) - 0.5
                let i0 = Int(f.rounded(.down))
                let w = Kernels.cubicWeights(f - Float(i0))
                let ws = [w.0, w.1, w.2, w.3]
                for k in 0..<4 {
                    index[d * 4 + k] = min(max(i0 - 1 + k, 0), inSize - 1)
                    weight[d * 4 + k] = ws[k]
                }
            }
            return (index, weight)
        }
        let (xi, xw) = taps(o.w, s.w), (yi, yw) = taps(o.h, s.h)
        var rows = [Float](repeating: 0, count: s.h * o.w)
        for c in 0..<s.c {
            let src = x.baseAddress! + c * s.h * s.w
            rows.withUnsafeMutableBufferPointer { r in
                for iy in 0..<s.h {
                    let line = src + iy * s.w
                    for ox in 0..<o.w {
                        let b = ox * 4
                        r[iy * o.w + ox] = line[xi[b]] * xw[b] + line[xi[b + 1]] * xw[b + 1] + line[xi[b + 2]] * xw[b + 2] + line[xi[b + 3]] * xw[b + 3]
                    }
                }
                let dst = y.baseAddress! + c * o.h * o.w
                for oy in 0..<o.h {
                    let b = oy * 4
                    let r0 = r.baseAddress! + yi[b] * o.w, r1 = r.baseAddress! + yi[b + 1] * o.w
                    let r2 = r.baseAddress! + yi[b + 2] * o.w, r3 = r.baseAddress! + yi[b + 3] * o.w
                    let w0 = yw[b], w1 = yw[b + 1], w2 = yw[b + 2], w3 = yw[b + 3]
                    let out = dst + oy * o.w
                    for ox in 0..<o.w { out[ox] = r0[ox] * w0 + r1[ox] * w1 + r2[ox] * w2 + r3[ox] * w3 }
                }
            }
        }
    }
}
