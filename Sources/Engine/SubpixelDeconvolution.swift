extension Graph {
    /// The same graph with every strided transposed convolution rewritten as a convolution at
    /// input resolution, a pixel shuffle and a crop ("sub-pixel convolution"). Same result; but
    /// the work becomes an ordinary convolution with `s²`× more output channels, which CPU
    /// kernels run far better than a scatter with a handful of output channels.
    ///
    /// For stride s and kernel k, output row Z = q·s + r (before cropping the padding) is
    /// Σ_m in[q − m] · W[r + s·m] over m < T = ⌈k/s⌉: a T-tap convolution per phase r.
    package func withSubpixelDeconvolutions() -> Graph {
        var g = self
        var nodes: [Node] = []
        for node in self.nodes {
            guard case .deconvolution(let p) = node.op, p.groups == 1, p.strideH >= 2, p.strideH == p.strideW,
                  p.dilationH == 1, p.dilationW == 1, p.outputPadH == 0, p.outputPadW == 0 else {
                nodes.append(node)
                continue
            }
            let sh = p.strideH, sw = p.strideW
            let th = (p.kernelH + sh - 1) / sh, tw = (p.kernelW + sw - 1) / sw
            let phases = sh * sw
            let outC = p.outChannels * phases, inC = p.inChannels
            var w = [Float](repeating: 0, count: outC * inC * th * tw)
            for o in 0..<p.outChannels {
                for ry in 0..<sh {
                    for rx in 0..<sw {
                        let c = (o * sh + ry) * sw + rx
                        for i in 0..<inC {
                            for ty in 0..<th {
                                let ky = ry + sh * (th - 1 - ty)
                                if ky >= p.kernelH { continue }
                                for tx in 0..<tw {
                                    let kx = rx + sw * (tw - 1 - tx)
                                    if kx >= p.kernelW { continue }
                                    w[((c * inC + i) * th + ty) * tw + tx] = p.weights[((i * p.outChannels + o) * p.kernelH + ky) * p.kernelW + kx]
                                }
                            }
                        }
                    }
                }
            }
            var activation = p.activation
            if case .prelu(let slopes) = p.activation, slopes.count > 1 {
                activation = .prelu(slopes: slopes.flatMap { Array(repeating: $0, count: phases) })
            }
            let bias = p.bias.isEmpty ? [] : p.bias.flatMap { Array(repeating: $0, count: phases) }
            let conv = ConvolutionParameters(outChannels: outC, inChannels: inC, kernelH: th, kernelW: tw,
                                             padTop: th - 1, padLeft: tw - 1, padBottom: th - 1, padRight: tw - 1,
                                             weights: w, bias: bias, activation: activation)
            let convOut = g.valueNames.count
            g.valueNames.append(valueNames[node.output] + "#subpixel")
            nodes.append(Node(name: node.name, op: .convolution(conv), inputs: node.inputs, output: convOut))
            // The shuffled picture is T·s − k rows longer than the uncropped transposed output
            // at the bottom (whatever the input size); the deconvolution's padding comes off too.
            let bottom = th * sh - p.kernelH + p.padBottom, right = tw * sw - p.kernelW + p.padRight
            if p.padTop == 0 && p.padLeft == 0 && bottom == 0 && right == 0 {
                // Nothing to crop (a k = s layer without padding, Real-CUGAN's upsamplers): the
                // shuffle is the output, not a copy of it.
                nodes.append(Node(name: node.name, op: .pixelShuffle(factor: sh, order: .crd), inputs: [convOut], output: node.output))
                continue
            }
            let shuffled = g.valueNames.count
            g.valueNames.append(valueNames[node.output] + "#shuffled")
            nodes.append(Node(name: node.name, op: .pixelShuffle(factor: sh, order: .crd), inputs: [convOut], output: shuffled))
            nodes.append(Node(name: node.name, op: .crop(top: p.padTop, left: p.padLeft, bottom: bottom, right: right), inputs: [shuffled], output: node.output))
        }
        g.nodes = nodes
        return g
    }
}
