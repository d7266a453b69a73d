/// Places a backend's activation buffers in blocks by lifetime: two buffers alive at the same
/// step never share bytes, any others may. Lifetimes are inclusive step ranges, so the input and
/// the output of one step always get separate bytes. Backend-neutral: oneDNN counts its
/// primitives as steps (ActivationArena.swift), the Vulkan backend its nodes
/// (`Graph.valueLifetimes`).
///
///     lifetimes   a ▕███▏            block 0  ┌──a──┬─b─┐
///                 b ▕ ██████▏   ─▶            └──c──┘
///                 c ▕      ███▏              (c takes a's bytes: a is dead by then)
///
/// Each block is at most `blockLimit` bytes (a Vulkan binding's range, a device's largest
/// allocation); a buffer that fits in no block opens a new one.
public struct BufferPlan: Sendable, Equatable {
    /// One buffer: its size and the first and last step that touch it.
    public struct Request: Equatable, Sendable {
        /// The buffer's size in bytes.
        public var bytes: Int
        /// The first step that writes or reads it.
        public var first: Int
        /// The last step that reads or writes it (its bytes are free after this step).
        public var last: Int

        /// Makes a request.
        public init(bytes: Int, first: Int, last: Int) {
            self.bytes = bytes
            self.first = first
            self.last = last
        }
    }

    /// Where one buffer lives: a block and a byte offset in it.
    public struct Place: Equatable, Sendable {
        /// The index of its block in `blocks`.
        public var block: Int
        /// Its byte offset in the block: a multiple of the plan's alignment.
        public var offset: Int
    }

    /// The default alignment of offsets (AVX-512 loads, oneDNN's own alignment, a cache line).
    public static let alignment = 64

    /// Each request's place, in the order given.
    public let places: [Place]
    /// The size in bytes of each block: a multiple of the alignment, or the block limit.
    public let blocks: [Int]

    /// Bytes in all blocks.
    public var total: Int { blocks.reduce(0, +) }

    /// Places `requests` largest first, each at the lowest offset of the first block where it
    /// is clear of the buffers already placed whose lifetimes overlap its own (greedy by size,
    /// as TensorFlow Lite's arena planner and ncnn's blob allocator do); O(n²) in the number of
    /// buffers, a few hundred at most.
    /// - Parameters:
    ///   - alignment: offsets are multiples of it (a power of two; Vulkan's
    ///     `minStorageBufferOffsetAlignment` or more).
    ///   - blockLimit: the most bytes one block may hold.
    /// - Throws: `EngineError` `.invalidSetting` when one buffer is larger than `blockLimit`.
    public init(_ requests: [Request], alignment: Int = BufferPlan.alignment, blockLimit: Int = .max) throws {
        precondition(alignment > 0 && alignment & (alignment - 1) == 0, "alignment \(alignment) is not a power of two")
        func aligned(_ n: Int) -> Int { (n + alignment - 1) / alignment * alignment }
        if let big = requests.first(where: { $0.bytes > blockLimit }) {
            throw EngineError(.invalidSetting, "A value of \(big.bytes) bytes does not fit in one buffer of the device (at most \(blockLimit) bytes). Use smaller tiles (--tile, or a smaller --max-memory), a smaller input (--size), --precision fp16 (half the bytes), or --backend onednn.")
        }
        let order = requests.indices.sorted { a, b in
            requests[a].bytes != requests[b].bytes ? requests[a].bytes > requests[b].bytes : a < b
        }
        var places = [Place](repeating: Place(block: 0, offset: 0), count: requests.count)
        var placed: [[Int]] = []
        var blocks: [Int] = []
        for i in order {
            let r = requests[i]
            var chosen: Place?
            for b in placed.indices {
                let busy = placed[b].filter { requests[$0].first <= r.last && r.first <= requests[$0].last }
                    .map { (start: places[$0].offset, end: places[$0].offset + aligned(requests[$0].bytes)) }
                    .sorted { $0.start < $1.start }
                var at = 0
                for span in busy {
                    if at + aligned(r.bytes) <= span.start { break }
                    at = max(at, span.end)
                }
                if at + r.bytes <= blockLimit {
                    chosen = Place(block: b, offset: at)
                    break
                }
            }
            let place = chosen ?? Place(block: placed.count, offset: 0)
            if place.block == placed.count {
                placed.append([])
                blocks.append(0)
            }
            places[i] = place
            placed[place.block].append(i)
            // Alignment padding past the limit is cut (the buffer itself fits).
            blocks[place.block] = max(blocks[place.block], min(place.offset + aligned(r.bytes), blockLimit))
        }
        self.places = places
        self.blocks = blocks
    }

    /// Each request's byte offset in one block, and the block's size (no limit on it).
    public static func offsets(_ requests: [Request]) -> (offsets: [Int], total: Int) {
        // A single block cannot be refused: no buffer is larger than no limit.
        let plan = try! BufferPlan(requests)
        return (plan.places.map(\.offset), plan.total)
    }
}

extension Graph {
    /// Each value's lifetime over the node order, for `BufferPlan` (step i is node i):
    /// - a value lives from the node that writes it to the last node that reads it;
    /// - the input from step 0 (the host, or a copy, writes it before the first node);
    /// - the output until `nodes.count`, a step after the last node (the host, or a copy,
    ///   reads it after every node ran);
    /// - a constant's output through every step (it is written once, when the graph is
    ///   prepared, and read by every run);
    /// - a value never written nor read (a dead node's, or one no shape reaches) at its
    ///   writer's step, or step 0.
    public func valueLifetimes() -> [(first: Int, last: Int)] {
        var first = [Int?](repeating: nil, count: valueNames.count)
        var last = [Int](repeating: 0, count: valueNames.count)
        first[input] = 0
        for (i, node) in nodes.enumerated() {
            for v in node.inputs {
                last[v] = max(last[v], i)
            }
            if case .constant = node.op {
                first[node.output] = 0
                last[node.output] = nodes.count
            } else if first[node.output] == nil {
                first[node.output] = i
            }
        }
        last[output] = nodes.count
        return valueNames.indices.map { v in
            let f = first[v] ?? 0
            return (f, max(f, last[v]))
        }
    }
}
