extension Graph {
    /// How far, in input pixels, an output pixel can see from its own position: the border a
    /// tile needs so that "same"-padded models give exactly the whole-frame result. Global
    /// pooling is ignored (it sees everything by design).
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
                r += (mode == .bicubic ? 2 : 1) / s
            case .cropLike, .crop, .pad, .globalAveragePool, .fullyConnected:
                break
            default:
                break
            }
            radius[node.output] = r
            scale[node.output] = s
        }
        return Int(radius[output].rounded(.up))
    }
}
