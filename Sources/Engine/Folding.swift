extension Graph {
    /// The same graph with every per-channel affine (inference batch norm) that directly
    /// follows a convolution without activation folded into that convolution's weights and
    /// bias, when nothing else reads the convolution's output.
    package func withFoldedChannelAffine() -> Graph {
        foldingIntoConvolutions { op, p in
            guard case .channelAffine(let scale, let bias) = op, p.activation == .identity else { return false }
            let perOut = p.weights.count / p.outChannels
            for o in 0..<p.outChannels {
                for j in 0..<perOut { p.weights[o * perOut + j] *= scale[o] }
            }
            p.bias = (0..<p.outChannels).map { (p.bias.isEmpty ? 0 : p.bias[$0]) * scale[$0] + bias[$0] }
            return true
        }
    }

    /// The same graph with every activation node that directly follows a convolution without
    /// activation moved into that convolution (backends fuse it as a post-op, or run PReLU on
    /// the convolution's own output), when nothing else reads the convolution's output.
    package func withFusedActivations() -> Graph {
        foldingIntoConvolutions { op, p in
            guard case .activation(let a) = op, a != .identity, p.activation == .identity else { return false }
            p.activation = a
            return true
        }
    }

    /// The graph with each one-input node that directly follows a convolution read by nothing
    /// else merged into it where `fold` can (it edits the convolution and returns true).
    private func foldingIntoConvolutions(_ fold: (Operation, inout ConvolutionParameters) -> Bool) -> Graph {
        var readers = [Int](repeating: 0, count: valueNames.count)
        for node in nodes { for i in node.inputs { readers[i] += 1 } }
        readers[output] += 1
        var producer: [Int: Int] = [:]
        var out: [Node] = []
        for node in nodes {
            if node.inputs.count == 1, let k = producer[node.inputs[0]], readers[node.inputs[0]] == 1,
               case .convolution(var p) = out[k].op, fold(node.op, &p) {
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
