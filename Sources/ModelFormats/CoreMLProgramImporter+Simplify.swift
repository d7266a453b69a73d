import Engine

// The ML Program importer's clean-up pass over the graph it built (split from
// CoreMLProgramOps.swift): folds and fusions, then only what the output needs.

extension CoreMLProgramImporter {
    /// Folds scalar scales into the convolution after them and per-channel affines into the
    /// convolution before them, and fuses activations into the convolution (or transposed
    /// convolution) before them, wherever nothing else reads the value in between; drops
    /// nodes that do not lead to the output.
    static func simplify(_ g: Graph) -> Graph {
        var readers = [Int](repeating: 0, count: g.valueNames.count)
        for node in g.nodes { for i in node.inputs { readers[i] += 1 } }
        readers[g.output] += 1
        var producer: [Int: Int] = [:]
        var out: [Node] = []
        for var node in g.nodes {
            // x · s (or x / s) read only by a convolution: scale its weights instead (zero
            // padding stays zero). Image programs open with such a scale (1/255); after the
            // fold the graph starts with its convolution. The scale node becomes dead.
            if case .convolution(var p) = node.op, let i = node.inputs.first, readers[i] == 1, let k = producer[i],
               case .scalar(let kind, let s, let first) = out[k].op, kind == .mul || (kind == .div && !first) {
                let f = kind == .mul ? s : 1 / s
                p.weights = p.weights.map { $0 * f }
                node.op = .convolution(p)
                node.inputs = out[k].inputs
            }
            if let i = node.inputs.first, node.inputs.count == 1, readers[i] == 1, let k = producer[i] {
                switch (node.op, out[k].op) {
                case (.channelAffine(let scale, let bias), .convolution(var p)) where p.activation == .identity:
                    let perOut = p.weights.count / p.outChannels
                    for o in 0..<p.outChannels { for j in 0..<perOut { p.weights[o * perOut + j] *= scale[o] } }
                    p.bias = (0..<p.outChannels).map { (p.bias.isEmpty ? 0 : p.bias[$0]) * scale[$0] + bias[$0] }
                    out[k].op = .convolution(p)
                case (.activation(let a), .convolution(var p)) where p.activation == .identity:
                    p.activation = a
                    out[k].op = .convolution(p)
                case (.activation(let a), .deconvolution(var p)) where p.activation == .identity:
                    p.activation = a
                    out[k].op = .deconvolution(p)
                default:
                    producer[node.output] = out.count
                    out.append(node)
                    continue
                }
                out[k].output = node.output
                producer[node.output] = k
                continue
            }
            producer[node.output] = out.count
            out.append(node)
        }
        // Keep only what the output needs.
        var result = g
        result.nodes = out
        return result.truncated(at: g.output)
    }
}
