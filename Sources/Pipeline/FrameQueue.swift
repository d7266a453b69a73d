import Foundation

/// A thread-safe queue between two pipeline stages: a `QueueState` behind a lock, with
/// blocking push and pop.
public final class FrameQueue<Element>: @unchecked Sendable {
    private var state: QueueState<Element>
    private let condition = NSCondition()
    /// Name shown in traces ("→ upscale").
    public let name: String
    /// Called (outside the lock) with every item the policy drops.
    public var onDrop: (Element) -> Void = { _ in }

    /// Makes a queue.
    public init(name: String, policy: QueuePolicy, isDroppable: @escaping (Element) -> Bool = { _ in true }) {
        self.name = name
        state = QueueState(policy: policy, isDroppable: isDroppable)
    }

    /// The policy.
    public var policy: QueuePolicy { state.policy }

    /// Adds an item, waiting while a `backpressure` queue is full. Returns false if cancelled.
    @discardableResult
    public func push(_ element: Element) -> Bool {
        condition.lock()
        while true {
            switch state.push(element) {
            case .accepted:
                condition.broadcast()
                condition.unlock()
                return true
            case .acceptedDropping(let dropped):
                condition.broadcast()
                condition.unlock()
                dropped.forEach(onDrop)
                return true
            case .wait:
                condition.wait()
            case .cancelled:
                condition.unlock()
                return false
            }
        }
    }

    /// Takes the next item, waiting while empty; nil once finished and drained, or cancelled.
    public func pop() -> Element? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            switch state.pop() {
            case .element(let e):
                condition.broadcast()
                return e
            case .wait:
                condition.wait()
            case .finished:
                return nil
            }
        }
    }

    /// The producer is done.
    public func finish() {
        condition.lock()
        state.finish()
        condition.broadcast()
        condition.unlock()
    }

    /// Stops producers and consumers now.
    public func cancel() {
        condition.lock()
        state.cancel()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether `cancel()` was called.
    public var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return state.isCancelled
    }

    /// Items dropped so far.
    public var dropped: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.dropped
    }
}
