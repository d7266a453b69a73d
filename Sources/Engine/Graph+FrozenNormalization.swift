/// An instance normalisation's statistics over a whole picture: per channel, the mean and the
/// (population) variance of its input, as the operation itself computes them.
public struct ChannelStatistics: Sendable, Equatable {
    /// Per channel.
    public var mean: [Double], variance: [Double]

    /// Makes statistics.
    public init(mean: [Double], variance: [Double]) {
        self.mean = mean
        self.variance = variance
    }
}

extension Graph {
    /// Indices (into `nodes`) of the instance normalisations, in execution order.
    public var instanceNormIndices: [Int] {
        nodes.indices.filter { if case .instanceNorm = nodes[$0].op { return true } else { return false } }
    }

    /// The graph with the instance normalisations at `statistics`' node indices frozen: each
    /// becomes the per-channel affine operation it is for those statistics,
    /// `x · k + (bias − mean · k)` with `k = scale / √(variance + ε)`, which every backend
    /// runs (and folds into a preceding convolution where it can).
    public func freezingInstanceNorms(_ statistics: [Int: ChannelStatistics]) -> Graph {
        var g = self
        for (index, stats) in statistics {
            guard case .instanceNorm(let scale, let bias, let eps) = nodes[index].op else {
                preconditionFailure("node \(index) (\(nodes[index].name)) is not an instance normalisation")
            }
            var k = [Float](repeating: 0, count: scale.count), b = k
            for c in scale.indices {
                let kc = Double(scale[c]) / (stats.variance[c] + Double(eps)).squareRoot()
                k[c] = Float(kc)
                b[c] = Float(Double(bias[c]) - stats.mean[c] * kc)
            }
            g.nodes[index].op = .channelAffine(scale: k, bias: b)
        }
        return g
    }

    /// The graph that ends at `value`: its output is `value`, and only the nodes it needs are
    /// left.
    public func truncated(at value: Int) -> Graph {
        var needed = Set([value])
        var kept: [Node] = []
        for node in nodes.reversed() where needed.contains(node.output) {
            kept.append(node)
            needed.formUnion(node.inputs)
        }
        var g = self
        g.nodes = kept.reversed()
        g.output = value
        return g
    }
}
