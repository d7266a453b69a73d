/// How a queue between two stages behaves when its consumer is slower than its producer.
public enum QueuePolicy: Sendable, Equatable, CustomStringConvertible {
    /// Holds up to `capacity` items and makes the producer wait when full: nothing is ever
    /// dropped (offline mode).
    case backpressure(capacity: Int)
    /// Keeps only the newest droppable item: one that is still waiting when a newer one arrives
    /// is dropped and reported (live mode, in front of a model stage). Items that must not be
    /// dropped (audio packets, the end marker) are kept in order; the producer never waits.
    case newestOnly

    public var description: String {
        switch self {
        case .backpressure(let c): return "backpressure(\(c))"
        case .newestOnly: return "newest-only"
        }
    }
}

/// The queue's logic as a plain value: every operation returns what the caller must do, so
/// the policies are tested without threads (the `FrameQueue` class only adds a lock).
public struct QueueState<Element> {
    /// What `push` decided.
    public enum PushAction {
        /// Stored.
        case accepted
        /// Stored, and these older items were dropped to make it the newest.
        case acceptedDropping([Element])
        /// Not stored: the queue is full; wait for a pop and push again.
        case wait
        /// Not stored: the queue was cancelled.
        case cancelled
    }

    /// What `pop` decided.
    public enum PopAction {
        /// The next item.
        case element(Element)
        /// Nothing yet; wait for a push.
        case wait
        /// The producer finished and everything was taken (or the queue was cancelled).
        case finished
    }

    /// The policy.
    public let policy: QueuePolicy
    private var items: [Element] = []
    private var head = 0
    private let isDroppable: (Element) -> Bool
    /// Whether the producer said it will push nothing more.
    public private(set) var isFinished = false
    /// Whether the queue was cancelled (an error elsewhere): pushes and pops stop at once.
    public private(set) var isCancelled = false
    /// Items dropped so far.
    public private(set) var dropped = 0

    /// Makes an empty queue; `isDroppable` says which items `newestOnly` may drop.
    public init(policy: QueuePolicy, isDroppable: @escaping (Element) -> Bool = { _ in true }) {
        self.policy = policy
        self.isDroppable = isDroppable
        if case .backpressure(let c) = policy { items.reserveCapacity(c) }
    }

    /// Items waiting.
    public var count: Int { items.count - head }

    /// Offers an item.
    public mutating func push(_ element: Element) -> PushAction {
        if isCancelled { return .cancelled }
        precondition(!isFinished, "push after finish")
        switch policy {
        case .backpressure(let capacity):
            if count >= capacity { return .wait }
            compact()
            items.append(element)
            return .accepted
        case .newestOnly:
            // Only items still waiting (from `head` on) may be dropped.
            if head > 0 {
                items.removeFirst(head)
                head = 0
            }
            guard isDroppable(element) else {
                items.append(element)
                return .accepted
            }
            let stale = items.filter(isDroppable)
            if !stale.isEmpty { items.removeAll(where: isDroppable) }
            items.append(element)
            dropped += stale.count
            return stale.isEmpty ? .accepted : .acceptedDropping(stale)
        }
    }

    /// Takes the oldest item.
    public mutating func pop() -> PopAction {
        if isCancelled { return .finished }
        if head < items.count {
            let e = items[head]
            head += 1
            return .element(e)
        }
        return isFinished ? .finished : .wait
    }

    /// The producer will push nothing more; consumers drain what is left.
    public mutating func finish() { isFinished = true }

    /// Stops everything now (after an error): waiting producers and consumers return.
    public mutating func cancel() {
        isCancelled = true
        items.removeAll()
        head = 0
    }

    private mutating func compact() {
        if head > 0 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
    }
}
