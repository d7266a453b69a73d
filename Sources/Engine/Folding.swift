extension Graph {
    /// The same graph with every per-channel affine (inference batch norm) that directly
    /// follows a convolution without activation folded into that convolution's weights and
    /// bias, when nothing else reads the convolution's output.
    package func withFoldedChannelAffine() -> Graph {
        var readers = [Int](repeating: 0, count: valueNames.count)
        for node in nodes { for i in node.inputs { readers[i] += 1 } }
        readers[output] += 1
        var producer: [Int: Int] = [:]
        var out: [Node] = []
        for node in nodes {
            if case .channelAffine(let scale, let bias) = node.op, let k = producer[node.inputs[0]],
               readers[node.inputs[0]] == 1, case .convolution(var p) = out[k].op, p.activation == .identity {
                let perOut = p.weights.count / p.outChannels
                for o in 0..<p.outChannels {
                    for j in 0..<perOut { p.weights[o * perOut + j] *= scale[o] }
                }
                p.bias = (0..<p.outChannels).map { (p.bias.isEmpty ? 0 : p.bias[$0]) * scale[$0] + bias[$0] }
                out[k].op = .convolution(p)
                out[k].output = node.output
                producer[node.output] = k
                continue
            }
            producer[node.output] = out.count
            out.append(node)
        }
        var g = self
        g.nodes = out
        return g
    }
}

extension Graph {
    /// The same graph with every activation node that directly follows a convolution without
    /// activation moved into that convolution (backends fuse it as a post-op, or run PReLU on
    /// the convolution's own output), when nothing else reads the convolution's output.
    package func withFusedActivations() -> Graph {
        var readers = [Int](repeating: 0, count: valueNames.count)
        for node in nodes { for i in node.inputs { readers[i] += 1 } }
        readers[output] += 1
        var producer: [Int: Int] = [:]
        var out: [Node] = []
        for node in nodes {
            if case .activation(let a) = node.op, a != .identity, let k = producer[node.inputs[0]],
               readers[node.inputs[0]] == 1, case .convolution(var p) = out[k].op, p.activation == .identity {
                p.activation = a
                out[k].op = .convolution(p)
                out[k].output = node.output
                producer[node.output] = k
                continue
            }
            producer[node.output] = out.count
            out.append(node)
        }
        var g = self
        g.nodes = out
        return g
    }
}
