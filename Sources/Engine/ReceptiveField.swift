extension Graph {
    /// How far, in input pixels, an output pixel can see from its own position: the border a
    /// tile needs so that "same"-padded models give exactly the whole-frame result. Global
    /// pooling and fully connected layers are ignored (they see everything by design).
    ///
    /// Every operation is listed: a new one must say how far it reaches, or tiles would get too
    /// little border.
    public func receptiveRadius() -> Int {
        // Per value: radius in input pixels, and resolution relative to the input.
        var radius = [Double](repeating: 0, count: valueNames.count)
        var scale = [Double](repeating: 1, count: valueNames.count)
        for node in nodes {
            let ins = node.inputs
            var r = ins.map { radius[$0] }.max() ?? 0
            var s = ins.first.map { scale[$0] } ?? 1
            switch node.op {
            case .convolution(let p):
                let reach = Double(max(p.dilationH * (p.kernelH - 1), p.dilationW * (p.kernelW - 1))) / 2
                r += reach / s
                s /= Double(p.strideH)
            case .deconvolution(let p):
                s *= Double(p.strideH)
                r += Double(max(p.kernelH, p.kernelW)) / 2 / s
            case .pixelShuffle(let f, _):
                s *= Double(f)
            case .resize(let mode, let sh, _, let oh, _, _):
                let factor = oh > 0 ? 1 : Double(sh)
                s *= factor
                r += Self.resizeReach(mode) / s
            case .upsampleDetail(let mode, _, let f):
                // resize×f(base) + pixelShuffle×f(detail): the resize reaches around the base.
                s *= Double(f)
                r = max(radius[ins[0]] + Self.resizeReach(mode) / s, radius[ins[1]])
            case .pad(let t, let l, let b, let rt, _), .crop(let t, let l, let b, let rt):
                // Padding or cropping both sides alike only moves the origin (the layers after
                // it see a centred window); unequal sides shift the centre by half the difference.
                r += Double(max(abs(t - b), abs(l - rt))) / 2 / s
            case .cropLike(let t, let l):
                // The far side depends on the other input's size: count the whole offset.
                r += Double(max(t, l)) / s
            case .pool(let p):
                let reach = Double(max(p.dilationH * (p.kernelH - 1), p.dilationW * (p.kernelW - 1))) / 2
                r += reach / s
                s /= Double(p.strideH)
            case .spaceToDepth(let f):
                r += Double(f) / 2 / s
                s /= Double(f)
            case .resample(let p):
                let factor = p.outH > 0 ? 1 : Double(p.scaleH)
                s *= factor
                r += (Self.resizeReach(p.mode) + (p.coordinates == .halfPixel || p.coordinates == .pytorchHalfPixel ? 0 : 1)) / s
            case .activation, .binary, .scalar, .channelAffine, .softmaxChannels, .sliceChannels, .concatChannels, .constant:
                // Per pixel: sees nothing beyond its inputs' reach.
                break
            case .external(let e):
                // Its own reach at its input's resolution, then the scaling, then unequal
                // sides as a crop's; without a geometry it may see everything, like the rest.
                guard let g = e.kernel.geometry else { break }
                r += Double(g.radius) / s
                s *= Double(g.scale)
                r += Double(max(abs(g.top - g.bottom), abs(g.left - g.right))) / 2 / s
            case .globalAveragePool, .fullyConnected, .instanceNorm, .reshape, .softmax, .concat, .transpose, .rowMatMul:
                // See everything by design: no border makes a tile exact. (Instance norm with
                // its statistics frozen, as statistics tiling runs it, is per pixel.)
                break
            }
            radius[node.output] = r
            scale[node.output] = s
        }
        return Int(radius[output].rounded(.up))
    }

    /// Input pixels (at the output's resolution) a resize's taps reach on either side.
    private static func resizeReach(_ mode: ResizeMode) -> Double {
        switch mode {
        case .bicubic: return 2
        case .bilinear, .nearest: return 1
        }
    }
}
