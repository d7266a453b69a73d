import Engine

/// The value and node lists every importer builds its graph from: values are numbered as they
/// are made, each node writes one new value. One helper for ncnn, Core ML NeuralNetwork and
/// ML Program (each keeps its own name lookup: blobs, or MIL symbols).
struct GraphBuilder {
    /// Value names, by value number.
    private(set) var names: [String] = []
    /// Nodes in execution order.
    private(set) var nodes: [Node] = []

    /// A new value named `name`; returns its number.
    mutating func newValue(_ name: String) -> Int {
        names.append(name)
        return names.count - 1
    }

    /// Renames value `v` (a layer lowered to several nodes names its last value after its blob).
    mutating func rename(_ v: Int, to name: String) { names[v] = name }

    /// Appends a node whose output value already exists.
    mutating func append(_ node: Node) { nodes.append(node) }

    /// The graph from `input` to `output` (a partial one while building, for shape questions).
    func graph(input: Int, output: Int, source: String, nodes override: [Node]? = nil) -> Graph {
        Graph(valueNames: names, nodes: override ?? nodes, input: input, output: output, source: source)
    }
}
