/// An instance normalisation's (or a global average pooling's) statistics over a whole
/// picture: per channel, the mean and the (population) variance of its input, as the
/// operation itself computes them (pooling uses the mean alone).
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

    /// Indices (into `nodes`) of the global average poolings (squeeze-excitation's), in
    /// execution order.
    public var globalPoolIndices: [Int] {
        nodes.indices.filter { if case .globalAveragePool = nodes[$0].op { return true } else { return false } }
    }

    /// Indices of the operations that take statistics of the whole picture, instance
    /// normalisations and global average poolings, in execution order.
    public var wholePictureStatisticsIndices: [Int] {
        nodes.indices.filter {
            switch nodes[$0].op {
            case .instanceNorm, .globalAveragePool: return true
            default: return false
            }
        }
    }

    /// The graph with the instance normalisations and global average poolings at
    /// `statistics`' node indices frozen. A normalisation becomes the per-channel affine
    /// operation it is for those statistics, `x · k + (bias − mean · k)` with
    /// `k = scale / √(variance + ε)`, which every backend runs (and folds into a preceding
    /// convolution where it can); a pooling becomes the constant it is, the means as a
    /// C×1×1 value that broadcasts (so what follows it, squeeze-excitation's 1×1 layers and
    /// the product with the features, sees the whole picture's average in every tile).
    public func freezingInstanceNorms(_ statistics: [Int: ChannelStatistics]) -> Graph {
        var g = self
        for (index, stats) in statistics {
            if case .globalAveragePool = nodes[index].op {
                g.nodes[index].op = .constant(Shape(c: stats.mean.count, h: 1, w: 1), values: stats.mean.map { Float($0) })
                g.nodes[index].inputs = []
                continue
            }
            guard case .instanceNorm(let scale, let bias, let eps) = nodes[index].op else {
                preconditionFailure("node \(index) (\(nodes[index].name)) is not an instance normalisation or a global average pooling")
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

    /// The placements of the graph with its global poolings frozen (constants that broadcast;
    /// placement reads no values, one channel stands for all): what a graph whose poolings
    /// take the whole picture's averages places as, and its stride grid.
    public func placementsWithPoolsFrozen() -> [ValuePlacement?]? {
        freezingInstanceNorms(Dictionary(uniqueKeysWithValues: globalPoolIndices.map { ($0, ChannelStatistics(mean: [0], variance: [0])) }))
            .placements()
    }
}
