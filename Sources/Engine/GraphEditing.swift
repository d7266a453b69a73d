extension Graph {
    /// The graph with `x · scale + bias` applied to its input first (per channel when `bias`
    /// has one value per channel): adapts a model that expects, say, 0–255 pixels to the
    /// engine's [0, 1] frames, or applies a bundle's declared normalisation.
    public func prependingAffine(scale: [Float], bias: [Float]) -> Graph {
        var g = self
        let newInput = g.valueNames.count
        g.valueNames.append(valueNames[input] + "#raw")
        let op: Operation = scale.count == 1 && bias.allSatisfy({ $0 == bias.first ?? 0 }) && (bias.first ?? 0) == 0
            ? .scalar(.mul, scale[0], scalarFirst: false)
            : .channelAffine(scale: Self.expand(scale, bias.count), bias: Self.expand(bias, scale.count))
        g.nodes.insert(Node(name: "input-normalisation", op: op, inputs: [newInput], output: input), at: 0)
        g.input = newInput
        return g
    }

    /// The graph with `y · scale + bias` applied to its output last (per channel as above).
    public func appendingAffine(scale: [Float], bias: [Float]) -> Graph {
        var g = self
        let newOutput = g.valueNames.count
        g.valueNames.append(valueNames[output] + "#scaled")
        let op: Operation = scale.count == 1 && bias.allSatisfy({ $0 == 0 })
            ? .scalar(.mul, scale[0], scalarFirst: false)
            : .channelAffine(scale: Self.expand(scale, bias.count), bias: Self.expand(bias, scale.count))
        g.nodes.append(Node(name: "output-denormalisation", op: op, inputs: [output], output: newOutput))
        g.output = newOutput
        return g
    }

    /// A per-channel list as long as the longer of the two (a single value repeats).
    static func expand(_ v: [Float], _ other: Int) -> [Float] {
        let n = max(v.count, other)
        if v.count == n { return v }
        return [Float](repeating: v.first ?? 0, count: n)
    }
}
