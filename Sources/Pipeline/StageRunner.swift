/// Runs items through an ordered list of steps on the calling thread: the one rule for
/// passing and flushing that the processing chain, a pipeline stage holding several
/// processors, and `Pipeline.runSequentially` share.
///
///     item ─▶ step 0 ─▶ step 1 ─▶ … ─▶ step N-1 ─▶ out
///     end:    flush 0 ─▶ step 1 ─▶ … ─▶ out, then flush 1 ─▶ step 2 ─▶ … ─▶ out, …
///
/// Each step turns one item into the items to pass on (none, one or several); every item a
/// step gives goes through all the steps after it. At the end of the stream each step, in
/// order, gives what it still holds, which the steps after it still process.
public struct StageRunner<Item> {
    /// How many steps there are.
    public let count: Int
    private let step: (Int, Item) throws -> [Item]
    private let held: (Int) throws -> [Item]

    /// A runner of `count` steps: `step(k, item)` runs step `k` on one item, `flush(k)` gives
    /// what step `k` holds at the end of the stream.
    public init(count: Int, step: @escaping (Int, Item) throws -> [Item], flush: @escaping (Int) throws -> [Item] = { _ in [] }) {
        self.count = count
        self.step = step
        held = flush
    }

    /// Runs `items` through the steps from `first` on, step by step (every item through one
    /// step before the next step starts).
    ///
    /// - Complexity: one call of each step per item that reaches it.
    public func pass(_ items: [Item], from first: Int = 0) throws -> [Item] {
        var items = items
        for k in first..<count where !items.isEmpty {
            var next: [Item] = []
            for item in items { next += try step(k, item) }
            items = next
        }
        return items
    }

    /// The end of the stream: what each step still holds, through the steps after it.
    public func flush() throws -> [Item] {
        var out: [Item] = []
        for k in 0..<count { out += try pass(try held(k), from: k + 1) }
        return out
    }
}
