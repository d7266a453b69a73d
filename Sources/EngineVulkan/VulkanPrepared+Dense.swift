import Engine

/// Fully connected layers (fully_connected.comp over the flattened input, row_matmul.comp
/// along each row).
extension VulkanPrepared {
    func fullyConnected(_ out: Int, _ weights: [Float], _ bias: [Float], _ activation: Activation, _ node: Node) throws {
        let (x, s, y, _) = operands(node)
        let act = VulkanActivation.encode(activation)
        let slopes = act.slopes.isEmpty ? nil : try constant(act.slopes)
        try dispatch("fully_connected", count: out, [x, try constant(weights), y, bias.isEmpty ? nil : try constant(bias), slopes], [
            Int32(s.count), Int32(out), bias.isEmpty ? 0 : 1, act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
        ])
    }

    func rowMatMul(_ k: Int, _ n: Int, _ weights: [Float], _ bias: [Float], _ node: Node) throws {
        let (x, s, y, _) = operands(node)
        try dispatch("row_matmul", count: s.c * s.h * n, [x, try constant(weights), y, bias.isEmpty ? nil : try constant(bias)], [
            Int32(s.c * s.h), Int32(k), Int32(n), bias.isEmpty ? 0 : 1,
        ])
    }
}
