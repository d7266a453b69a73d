import Engine

/// Convolutions and transposed convolutions (convolution_1x1.comp, convolution_1x1_lanes.comp,
/// convolution_pixels.comp, convolution4.comp, convolution.comp, deconvolution.comp), bias and
/// activation fused.
extension VulkanPrepared {
    /// The push constants convolution and deconvolution shaders share.
    private func parameters(_ p: ConvolutionParameters, _ s: Shape, _ o: Shape) -> [Int32] {
        let act = VulkanActivation.encode(p.activation)
        return [
            Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.c), Int32(o.h), Int32(o.w), Int32(p.kernelH), Int32(p.kernelW),
            Int32(p.strideH), Int32(p.strideW), Int32(p.dilationH), Int32(p.dilationW), Int32(p.padTop), Int32(p.padLeft),
            Int32(p.groups), p.bias.isEmpty ? 0 : 1, act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
        ]
    }

    /// Bias and PReLU slopes as buffers (nil where absent).
    private func biasAndSlopes(_ p: ConvolutionParameters) throws -> (VulkanSlice?, VulkanSlice?) {
        let slopes = VulkanActivation.encode(p.activation).slopes
        return (p.bias.isEmpty ? nil : try constant(p.bias), slopes.isEmpty ? nil : try constant(slopes))
    }

    func convolution(_ p: ConvolutionParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let (bias, slopes) = try biasAndSlopes(p)
        let k = p.kernelH * p.kernelW
        if pointwiseGEMM, Self.isPointwise(p) {
            // A matrix product: the weights [OC][C] zero-padded to multiples of 16 both ways
            // (whole vec4 loads, no bounds checks on them).
            let cp = (p.inChannels + 15) / 16 * 16, blocks = (p.outChannels + 15) / 16
            var t = [Float](repeating: 0, count: blocks * 16 * cp)
            for oc in 0..<p.outChannels {
                for ic in 0..<p.inChannels { t[oc * cp + ic] = p.weights[oc * p.inChannels + ic] }
            }
            let plane = o.h * o.w
            let tiles = (plane + 15) / 16, gx = min(tiles, Int(context.maxGroupsX))
            try dispatch("convolution_1x1", groups: (gx, blocks, (tiles + gx - 1) / gx), [x, try constant(t), y, bias, slopes],
                         parameters(p, s, o) + [Int32(cp), plane % 4 == 0 ? 1 : 0])
        } else if p.groups == 1 {
            // Lanes across pixels, 16 output channels per invocation (the weights in blocks
            // of 16 channels: [OC/16][C][KH][KW][16], zero past the last channel); 1×1 ones
            // without the window's loops and bounds checks (6–10% faster for the colorizer on
            // lavapipe).
            let blocks = (p.outChannels + 15) / 16
            var t = [Float](repeating: 0, count: blocks * p.inChannels * k * 16)
            for oc in 0..<p.outChannels {
                for i in 0..<(p.inChannels * k) { t[((oc / 16) * p.inChannels * k + i) * 16 + oc % 16] = p.weights[oc * p.inChannels * k + i] }
            }
            let groups = (o.h * o.w + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
            try dispatch(Self.isPointwise(p) ? "convolution_1x1_lanes" : "convolution_pixels", groups: (gx, blocks, (groups + gx - 1) / gx), [x, try constant(t), y, bias, slopes], parameters(p, s, o))
        } else {
            // Four output channels per invocation where the groups allow.
            let four = (p.outChannels / p.groups) % 4 == 0
            try dispatch(four ? "convolution4" : "convolution", count: four ? o.count / 4 : o.count, [x, try constant(p.weights), y, bias, slopes],
                         parameters(p, s, o))
        }
    }

    /// A dense 1×1 convolution with stride 1 and no padding: each output pixel is a matrix
    /// product of its input pixel's channels.
    static func isPointwise(_ p: ConvolutionParameters) -> Bool {
        p.groups == 1 && p.kernelH == 1 && p.kernelW == 1 && p.strideH == 1 && p.strideW == 1
            && p.padTop == 0 && p.padLeft == 0 && p.padBottom == 0 && p.padRight == 0
    }

    /// Transposed convolution, any kernel, stride, dilation, cropping and groups: each output
    /// value gathers the input pixels whose scatter reaches it.
    func deconvolution(_ p: ConvolutionParameters, _ node: Node) throws {
        let (x, s, y, o) = operands(node)
        let (bias, slopes) = try biasAndSlopes(p)
        try dispatch("deconvolution", count: o.count, [x, try constant(p.weights), y, bias, slopes], parameters(p, s, o))
    }
}
