import CDNNL
import Engine
#if canImport(Glibc)
import Glibc
#endif

/// The activations and scratchpads of one prepared graph. They are made without storage while
/// the graph compiles, each step's uses are recorded, and `plan` then gives each a place in
/// the backend's shared arena by lifetime (the Engine's `BufferPlan`, in one block). Weights,
/// the input and views keep storage of their own.
final class ActivationPlanner {
    private(set) var memories: [DNNLMemory] = []
    private var index: [ObjectIdentifier: Int] = [:]
    private var first: [Int] = []
    private var last: [Int] = []
    private(set) var offsets: [Int] = []
    /// Bytes the plan needs.
    private(set) var total = 0
    /// Bytes the buffers would take with storage each (for comparison).
    private(set) var unplannedTotal = 0

    /// A buffer for `md` whose storage the plan will give.
    func make(md: dnnl_memory_desc_t, engine: dnnl_engine_t, isPlain: Bool) throws -> DNNLMemory {
        let m = try DNNLMemory(md: md, engine: engine, isPlain: isPlain, unbacked: true)
        index[ObjectIdentifier(m)] = memories.count
        memories.append(m)
        first.append(Int.max)
        last.append(-1)
        return m
    }

    /// Records that step `step` reads or writes `objects` (those not planned here are ignored).
    func use(_ objects: [AnyObject], atStep step: Int) {
        for o in objects {
            guard let i = index[ObjectIdentifier(o)] else { continue }
            first[i] = min(first[i], step)
            last[i] = max(last[i], step)
        }
    }

    /// Places every buffer; `steps` is the step count, `keep` the buffers read after the last step.
    func plan(steps: Int, keep: [DNNLMemory]) {
        use(keep, atStep: steps)
        let requests = memories.indices.map { i -> BufferPlan.Request in
            var md = memories[i].md
            // A buffer no step touches still gets a place (at step 0), never dangling.
            let f = first[i] == Int.max ? 0 : first[i]
            return BufferPlan.Request(bytes: dnnl_memory_desc_get_size(&md), first: f, last: max(f, last[i]))
        }
        (offsets, total) = BufferPlan.offsets(requests)
        unplannedTotal = requests.reduce(0) { $0 + $1.bytes }
    }

    /// Points every buffer into the block at `base`.
    func bind(base: UnsafeMutableRawPointer) {
        for (m, offset) in zip(memories, offsets) {
            dnnl_memory_set_data_handle(m.memory, base + offset)
        }
    }
}

/// One block for the activations of every graph a backend prepared (one per tile shape, the
/// alpha model beside the colour one): it grows to the largest plan, and graphs rebind to it
/// when it moved. Runs take the block in turn (they share the backend's stream as well).
final class ActivationArena: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var buffer: UnsafeMutableRawPointer?
    private var size = 0
    private var generation = 0

    init() { pthread_mutex_init(mutex, nil) }

    deinit {
        buffer?.deallocate()
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Bytes the block holds now.
    var capacity: Int { locked { size } }

    /// Runs `body` holding the block of at least `bytes`, with its address and a number that
    /// changes whenever the block moves.
    func withBlock<T>(bytes: Int, _ body: (UnsafeMutableRawPointer, Int) throws -> T) rethrows -> T {
        try locked {
            if bytes > size || buffer == nil {
                buffer?.deallocate()
                size = max(bytes, size)
                buffer = UnsafeMutableRawPointer.allocate(byteCount: max(size, BufferPlan.alignment), alignment: 4096)
                generation += 1
            }
            return try body(buffer!, generation)
        }
    }

    private func locked<T>(_ body: () throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}
