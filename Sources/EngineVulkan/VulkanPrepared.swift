import CVulkan
import Engine
import Foundation

/// A graph prepared for one input shape on the Vulkan device: the values in one arena per kind
/// of memory, placed by lifetime, weights uploaded once, and what a run does recorded once and
/// replayed:
///
///     [input staging ─copy─▶] dispatch ─barrier─▶ dispatch … [─copy─▶ output staging]
///                                   (one command buffer, cut only by host steps)
///
/// Every operation but external layers is a shader dispatch; the shaders of each concern are
/// recorded by the extension named after it (VulkanPrepared+Pooling.swift, …). Memory as
/// `VulkanMemoryPlan` says; each value is a slice of an arena block (`BufferPlan` over the
/// node order: values alive at the same node never share bytes), bound at its offset. Values, weights, biases and slopes are stored as `storage` says
/// (fp16: the `_fp16` build of every shader, arithmetic still fp32; the input and output cross
/// to the host as floats through fp32 staging buffers, converted on the device, or, in mapped
/// memory, by the host); tap tables stay fp32.
final class VulkanPrepared: VulkanProfiledGraph {
    let inputShape: Shape
    let outputShape: Shape
    let context: VulkanContext
    let graph: Graph
    let shapes: [Shape]
    let plan: VulkanMemoryPlan
    /// How values and weights are stored.
    let storage: VulkanStorage
    /// Whether dense 1×1 convolutions run as a matrix product (`VulkanBackend.pointwiseGEMM`).
    let pointwiseGEMM: Bool
    /// Whether 3×3 stride-1 convolutions may run by Winograd's method (`VulkanBackend.winograd`).
    let winograd: VulkanWinograd
    /// Whether Winograd's products run 32 channels × 16 tiles per invocation (`VulkanBackend.winogradBlocked`).
    let winogradBlocked: Bool
    /// Whether transposed convolutions that allow it run per output phase (`VulkanBackend.deconvolutionPhases`).
    let deconvolutionPhases: Bool
    /// Whether dense convolutions run in runs of a row (`VulkanBackend.convolutionRows`).
    let convolutionRows: Bool
    /// Whether dense convolutions run in runs of a row on this device (`VulkanBackend.denseRows`,
    /// which `convolutionRows` implies).
    let denseRows: Bool
    /// Whether the other dense convolutions run as implicit matrix products (`VulkanBackend.implicitGEMM`).
    let implicitGEMM: Bool
    /// Whether, in fp16, they may run on cooperative matrices (`VulkanBackend.cooperativeGEMM`).
    let cooperativeGEMM: Bool
    /// Crops read in place: a crop's output value → the value it crops and the window's
    /// top-left corner. A crop whose every reader is a binary operation on the device (a U-Net's
    /// skip connection cropped and added: Real-CUGAN's four per tile) is not copied; the binary
    /// operations read its window of the source through strides (binary.comp), and the source
    /// lives until the last of them. On an H200 the copies took 2.3 ms of realcugan-2x's
    /// 29 ms at 640×360.
    private(set) var cropViews: [Int: (source: Int, top: Int, left: Int)] = [:]
    /// Whether the operations that can read and write the packed 4-channel layout run by
    /// their pack4 shaders (`VulkanBackend.packed`).
    let pack4: Bool
    /// The values stored in the packed 4-channel layout ([C/4][H][W][4], zero past the last
    /// channel; pack4.glsl): those `packedValues` chooses. Every other value is plain, [C][H][W].
    private(set) var packed: Set<Int> = []
    /// The shader of every dispatch recorded, in order (what tests check the choices by).
    private(set) var shaders: [String] = []
    /// Each value's place: a slice of an arena block.
    private(set) var buffers: [VulkanSlice] = []
    /// The arena blocks: per kind of memory, one, or more where the values outgrow the most
    /// one descriptor binds (`VulkanContext.arenaBlockLimit`).
    private(set) var arenas: [VulkanBuffer] = []
    /// Bytes of the arena blocks, and what a buffer per value would take.
    private(set) var activationBytes: (planned: Int, separate: Int) = (0, 0)
    /// Weights, biases, slopes, tap tables: kept alive as long as the command buffers that read them.
    private var constants: [VulkanBuffer] = []
    /// Winograd's scratch (transformed inputs, products), fp32: buffers of their own, shared by
    /// every Winograd convolution of the graph (each dispatch ends in a global barrier, so one
    /// convolution's use cannot overlap the next's), grown to the largest one needs.
    private var scratchBuffers: [VulkanBuffer?] = [nil, nil]
    /// Staging buffers filled at prepare, copied into their device-local buffers once.
    private var pendingUploads: [(from: VulkanBuffer, to: VulkanSlice)] = []
    /// Staged plan: where a run's input is written and its output read.
    private(set) var inputStaging: VulkanBuffer?
    private(set) var outputStaging: VulkanBuffer?
    private let dummy: VulkanBuffer
    private var commandPool: VkCommandPool?
    /// Descriptor sets come from pools of `setsPerPool`, a new pool when one is used up.
    private var descriptorPools: [VkDescriptorPool?] = []
    private var setsLeft = 0
    private static let setsPerPool = 64
    private var fence: VkFence?
    /// What a run does, in order.
    private enum Step {
        case device(VkCommandBuffer)
        /// The node of this index.
        case host(Int)
    }
    private var steps: [Step] = []
    /// The command buffer being recorded.
    private var recording: VkCommandBuffer?
    /// Profiling (`VulkanBackend.profiling`): a timestamp before each layer's dispatches and
    /// one after each dispatch, reset before every run by a command buffer of their own.
    private var queryPool: VkQueryPool?
    private var resetQueries: VkCommandBuffer?
    private var queries = 0, queryCapacity = 0
    /// Per layer timed on the device: its node (−1 for the input's transfer to the device,
    /// the node count for the output's to the host), the query before its first dispatch, and
    /// per dispatch or copy its shader ("copy") and the query after it.
    private var marks: [(node: Int, start: Int, dispatches: [(shader: String, end: Int)])] = []
    /// The last run's time per layer (`VulkanProfiledGraph`).
    private(set) var layerTimes: [VulkanLayerTime] = []

    init(context: VulkanContext, graph: Graph, input: Shape, plan: VulkanMemoryPlan, storage: VulkanStorage = .fp32,
         blockLimit: Int? = nil, pointwiseGEMM: Bool = false, winograd: VulkanWinograd = .never,
         winogradBlocked: Bool = false, deconvolutionPhases: Bool = false, convolutionRows: Bool = false, denseRows: Bool = false, implicitGEMM: Bool = false,
         cooperativeGEMM: Bool = false, cropsInPlace: Bool = true, packed pack4: Bool = false, profiling: Bool = false) throws {
        self.context = context
        self.pack4 = pack4
        self.convolutionRows = convolutionRows
        self.denseRows = denseRows
        self.implicitGEMM = implicitGEMM
        self.cooperativeGEMM = cooperativeGEMM
        self.deconvolutionPhases = deconvolutionPhases
        self.pointwiseGEMM = pointwiseGEMM
        self.winograd = winograd
        self.winogradBlocked = winogradBlocked
        self.graph = graph
        self.plan = plan
        self.storage = storage
        let inferred = try graph.inferShapes(input: input)
        guard let out = inferred[graph.output] else {
            throw EngineError(.invalidGraph, "\(graph.source): the output '\(graph.valueNames[graph.output])' is never produced.")
        }
        shapes = inferred.map { $0 ?? Shape(c: 0, h: 0, w: 0) }
        inputShape = input
        outputShape = out
        dummy = try VulkanBuffer(context, count: 4, placement: plan == .staged ? .device : .shared)
        let device = context.device
        var poolInfo = VkCommandPoolCreateInfo()
        poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        poolInfo.queueFamilyIndex = context.queueFamily
        try VulkanContext.check(vkCreateCommandPool(device, &poolInfo, nil, &commandPool), "creating a command pool")
        var fenceInfo = VkFenceCreateInfo()
        fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
        try VulkanContext.check(vkCreateFence(device, &fenceInfo, nil, &fence), "creating a fence")
        if profiling && context.timestampBits > 0 {
            var info = VkQueryPoolCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO
            info.queryType = VK_QUERY_TYPE_TIMESTAMP
            // A layer takes one query and one a dispatch: 1 to 3 dispatches for most, up to 18
            // for Winograd's products in uniform-buffer slices; later ones go untimed.
            queryCapacity = 32 * graph.nodes.count + 2
            info.queryCount = UInt32(queryCapacity)
            try VulkanContext.check(vkCreateQueryPool(device, &info, nil, &queryPool), "creating a timestamp query pool")
            let cb = try allocateCommandBuffer()
            vkCmdResetQueryPool(cb, queryPool, 0, info.queryCount)
            try VulkanContext.check(vkEndCommandBuffer(cb), "recording commands")
            resetQueries = cb
        }

        // Values a host step touches stay host-visible whatever the plan.
        var onHost = Set<Int>()
        for node in graph.nodes where !VulkanBackend.runsOnDevice(node.op) {
            onHost.formUnion(node.inputs)
            onHost.insert(node.output)
        }
        if cropsInPlace { cropViews = Self.cropViews(graph, onHost: onHost) }
        if pack4 { packed = packedValues(onHost: onHost, blockLimit: blockLimit ?? context.arenaBlockLimit) }
        let placements = shapes.indices.map { v -> VulkanBuffer.Placement in
            plan == .mapped ? .shared : onHost.contains(v) ? .staging : .device
        }
        buffers = try arena(placements, blockLimit: blockLimit ?? context.arenaBlockLimit)
        if buffers[graph.input].mapped == nil {
            if queryPool != nil { marks.append((-1, try timestamp() ?? -1, [])) }
            // The host writes floats; with fp16 storage the device converts them
            // (to_storage.comp): on a GPU the host's conversion, one value at a time, took
            // more than the model (realesr-animevideov3-4x at 1920×1080 on an H200: 1196 ms a
            // frame in fp16 against 506 ms in fp32).
            let staging = try VulkanBuffer(context, count: input.count, placement: .staging, storage: .fp32)
            inputStaging = staging
            if storage == .fp32 {
                try copy(staging.whole, into: buffers[graph.input], count: input.count)
            } else {
                try dispatch("to_storage", count: input.count, [staging.whole, nil, buffers[graph.input]], [Int32(input.count)])
            }
        }
        for (i, node) in graph.nodes.enumerated() where cropViews[node.output] == nil {
            if VulkanBackend.runsOnDevice(node.op) {
                if queryPool != nil { marks.append((i, try timestamp() ?? -1, [])) }
                try record(node)
            } else {
                try endRecording()
                steps.append(.host(i))
            }
        }
        if buffers[graph.output].mapped == nil {
            // Timed as a transfer of its own, not as the last layer's.
            if queryPool != nil { marks.append((graph.nodes.count, try timestamp() ?? -1, [])) }
            let staging = try VulkanBuffer(context, count: out.count, placement: .staging, storage: .fp32)
            outputStaging = staging
            if storage == .fp32 {
                try copy(buffers[graph.output], into: staging.whole, count: out.count)
            } else {
                try dispatch("from_storage", count: out.count, [buffers[graph.output], nil, staging.whole], [Int32(out.count)])
            }
        }
        try endRecording()
        try uploadConstants()
    }

    /// Each value's slice: the values of each placement planned by lifetime over the node
    /// order (`Graph.valueLifetimes`) into blocks of at most `blockLimit` bytes, offsets aligned
    /// as descriptors need.
    ///
    /// Reuse needs no barrier of its own: every dispatch and copy is followed by a global
    /// barrier from its stage, whose execution dependency also orders the reads before it
    /// against the writes after it (write-after-read on a reused range), and a run's first
    /// writes against the last run's reads (a barrier's scopes reach across submissions).
    private func arena(_ placements: [VulkanBuffer.Placement], blockLimit: Int) throws -> [VulkanSlice] {
        var lifetimes = graph.valueLifetimes()
        // A crop read in place: its source is read as long as the crop's readers run; the crop
        // itself is never written (a slice of one value's bytes, unused).
        for (v, view) in cropViews {
            lifetimes[view.source].last = max(lifetimes[view.source].last, lifetimes[v].last)
        }
        let bytes = { (v: Int) in self.cropViews[v] == nil ? Int(VulkanBuffer.bytes(self.storedCount(v), self.storage)) : self.storage.stride }
        var slices = [VulkanSlice?](repeating: nil, count: shapes.count)
        for placement in [VulkanBuffer.Placement.device, .staging, .shared] {
            let values = shapes.indices.filter { placements[$0] == placement }
            guard !values.isEmpty else { continue }
            let requests = values.map { v in
                BufferPlan.Request(bytes: bytes(v), first: lifetimes[v].first, last: lifetimes[v].last)
            }
            let placed: BufferPlan
            do {
                placed = try BufferPlan(requests, alignment: context.arenaAlignment, blockLimit: blockLimit)
            } catch let e as EngineError {
                throw EngineError(e.kind, "\(graph.source) at \(inputShape): \(e.message)", fallback: e.fallback)
            }
            let blocks = try placed.blocks.map { bytes in
                try VulkanBuffer(context, count: (bytes + storage.stride - 1) / storage.stride, placement: placement, storage: storage)
            }
            for (v, place) in zip(values, placed.places) {
                slices[v] = VulkanSlice(block: blocks[place.block], offset: place.offset, count: cropViews[v] == nil ? storedCount(v) : 1)
            }
            arenas += blocks
            activationBytes.planned += placed.total
            activationBytes.separate += requests.reduce(0) { $0 + $1.bytes }
        }
        return slices.map { $0! }
    }

    /// The values a value `v` takes in memory: its shape's, or with its channels rounded up to
    /// a multiple of 4 where it is packed.
    func storedCount(_ v: Int) -> Int {
        packed.contains(v) ? Self.packedCount(shapes[v]) : shapes[v].count
    }

    /// The values a packed value of shape `s` takes: its channels rounded up to a multiple of 4.
    static func packedCount(_ s: Shape) -> Int { (s.c + 3) / 4 * 4 * s.h * s.w }

    /// Which values are stored packed: of at least 4 channels, written by an operation that
    /// runs by a pack4 shader (`runsPacked`) and read only by such operations; never the
    /// graph's input or output (the host's), a value a host step touches, or a crop's source
    /// or window; nor one whose channels rounded up to 4 would pass what one arena block holds
    /// (the tiler sizes tiles by the plain values' bytes). A value between two plain operations
    /// stays plain, so with no pack4 operation next to another nothing changes but the shaders.
    private func packedValues(onHost: Set<Int>, blockLimit: Int) -> Set<Int> {
        var readers: [Int: [Node]] = [:]
        for node in graph.nodes { for v in Set(node.inputs) { readers[v, default: []].append(node) } }
        var chosen = Set<Int>()
        for node in graph.nodes where runsPacked(node) {
            let v = node.output
            guard v != graph.output, v != graph.input, !onHost.contains(v), shapes[v].c >= 4,
                  Int(VulkanBuffer.bytes(Self.packedCount(shapes[v]), storage)) <= blockLimit,
                  let r = readers[v], r.allSatisfy(runsPacked) else { continue }
            chosen.insert(v)
        }
        return chosen
    }

    /// Whether `node` can read and write the packed layout: with `pack4`, a dense convolution
    /// (Winograd's too) or a depthwise one (`runsPacked(_:)`), an activation, or a binary of
    /// two whole operands of the output's shape.
    func runsPacked(_ node: Node) -> Bool {
        guard pack4 else { return false }
        switch node.op {
        case .convolution(let p): return runsPacked(p)
        case .activation: return true
        case .binary:
            let o = shapes[node.output]
            return node.inputs.count == 2 && node.inputs.allSatisfy { shapes[$0] == o && cropViews[$0] == nil }
        default: return false
        }
    }

    /// Whether `node` runs by its pack4 shader: it can (`runsPacked`) and one of its operands
    /// is packed. One whose operands are all plain (a model's first and last layers, a layer
    /// beside a host step) keeps its plain shader, the faster where both layouts are plain.
    func usesPacked(_ node: Node) -> Bool {
        runsPacked(node) && (packed.contains(node.output) || node.inputs.contains(where: packed.contains))
    }

    deinit {
        let device = context.device
        if let commandPool { vkDestroyCommandPool(device, commandPool, nil) }
        for pool in descriptorPools { vkDestroyDescriptorPool(device, pool, nil) }
        if let fence { vkDestroyFence(device, fence, nil) }
        if let queryPool { vkDestroyQueryPool(device, queryPool, nil) }
    }

    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        precondition(input.count == inputShape.count && output.count == outputShape.count)
        (inputStaging?.whole ?? buffers[graph.input]).write(input)
        if let resetQueries { try context.submitAndWait(resetQueries, fence: fence!) }
        var hostMilliseconds: [Int: Double] = [:]
        for step in steps {
            switch step {
            case .device(let commands):
                try context.submitAndWait(commands, fence: fence!)
            case .host(let i):
                let start = DispatchTime.now().uptimeNanoseconds
                try runOnHost(graph.nodes[i])
                hostMilliseconds[i] = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6
            }
        }
        (outputStaging?.whole ?? buffers[graph.output]).read(into: output)
        if queryPool != nil { try readLayerTimes(host: hostMilliseconds) }
    }

    /// Records a timestamp written once the work recorded before it is done; its query, or
    /// nil when not profiling.
    private func timestamp() throws -> Int? {
        guard let queryPool, queries < queryCapacity else { return nil }
        let cb = try beginRecording()
        vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queryPool, UInt32(queries))
        queries += 1
        return queries - 1
    }

    /// `layerTimes` from the last run's timestamps and the host steps' clock.
    private func readLayerTimes(host: [Int: Double]) throws {
        // A graph with no layer on the device (external layers alone) wrote no timestamp.
        var ticks = [UInt64](repeating: 0, count: max(queries, 1))
        if queries > 0 {
            let flags = VkQueryResultFlags(VK_QUERY_RESULT_64_BIT.rawValue | VK_QUERY_RESULT_WAIT_BIT.rawValue)
            let r = ticks.withUnsafeMutableBytes { raw in
                vkGetQueryPoolResults(context.device, queryPool, 0, UInt32(queries), raw.count, raw.baseAddress, 8, flags)
            }
            try VulkanContext.check(r, "reading the layers' timestamps")
        }
        let bits = context.timestampBits, mask: UInt64 = bits >= 64 ? .max : (1 << UInt64(bits)) - 1
        func ms(_ from: Int, _ to: Int) -> Double { Double((ticks[to] &- ticks[from]) & mask) * context.timestampPeriod / 1e6 }
        var device: [Int: [VulkanLayerTime.Dispatch]] = [:]
        for m in marks where m.start >= 0 {
            var last = m.start
            device[m.node] = m.dispatches.map { d in
                defer { last = d.end }
                return VulkanLayerTime.Dispatch(shader: d.shader, milliseconds: ms(last, d.end))
            }
        }
        layerTimes = graph.nodes.enumerated().map { i, node in
            // A crop read in place has nothing of its own to time.
            var t = device[i].map { VulkanLayerTime(layer: node.name, operation: node.op.kindName, dispatches: $0) }
                ?? (cropViews[node.output] != nil ? VulkanLayerTime(layer: node.name, operation: node.op.kindName, dispatches: [])
                    : VulkanLayerTime(layer: node.name, operation: node.op.kindName, hostMilliseconds: host[i] ?? 0))
            t.output = shapes[node.output]
            return t
        }
        // The staged plan's transfers (and fp16 conversions) of the input and the output.
        if let d = device[-1] {
            var t = VulkanLayerTime(layer: "(input)", operation: "to the device", dispatches: d)
            t.output = inputShape
            layerTimes.insert(t, at: 0)
        }
        if let d = device[graph.nodes.count] {
            var t = VulkanLayerTime(layer: "(output)", operation: "to the host", dispatches: d)
            t.output = outputShape
            layerTimes.append(t)
        }
    }

    /// An external layer on the host: in place on fp32 buffers; through float copies of its
    /// operands on fp16 ones (external layers are rare and small beside the convolutions).
    private func runOnHost(_ node: Node) throws {
        // Only external layers run here, and they take no thread count (only the kernels'
        // convolutions split their rows): one thread is what they are given.
        let inShapes = node.inputs.map { shapes[$0] }, o = shapes[node.output], y = buffers[node.output]
        if storage == .fp32 {
            let ins = node.inputs.map { UnsafeBufferPointer(start: UnsafePointer(buffers[$0].mapped!.assumingMemoryBound(to: Float.self)), count: shapes[$0].count) }
            let out = UnsafeMutableBufferPointer(start: y.mapped!.assumingMemoryBound(to: Float.self), count: o.count)
            try Kernels.execute(node.op, ins, inShapes, out, o, threads: 1)
            return
        }
        let ins = node.inputs.map { v in
            [Float](unsafeUninitializedCapacity: shapes[v].count) { b, n in
                buffers[v].read(into: b)
                n = shapes[v].count
            }
        }
        var out = [Float](repeating: 0, count: o.count)
        try withPointers(ins) { pointers in
            try out.withUnsafeMutableBufferPointer { try Kernels.execute(node.op, pointers, inShapes, $0, o, threads: 1) }
        }
        out.withUnsafeBufferPointer { y.write($0) }
    }

    /// Buffer pointers to every array of `arrays`, valid inside `body`.
    private func withPointers<R>(_ arrays: [[Float]], _ done: [UnsafeBufferPointer<Float>] = [],
                                 _ body: ([UnsafeBufferPointer<Float>]) throws -> R) rethrows -> R {
        guard done.count < arrays.count else { return try body(done) }
        return try arrays[done.count].withUnsafeBufferPointer { try withPointers(arrays, done + [$0], body) }
    }

    // MARK: recording

    private func allocateCommandBuffer() throws -> VkCommandBuffer {
        var info = VkCommandBufferAllocateInfo()
        info.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
        info.commandPool = commandPool
        info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY
        info.commandBufferCount = 1
        var cb: VkCommandBuffer?
        try VulkanContext.check(vkAllocateCommandBuffers(context.device, &info, &cb), "allocating a command buffer")
        var begin = VkCommandBufferBeginInfo()
        begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        try VulkanContext.check(vkBeginCommandBuffer(cb, &begin), "recording commands")
        return cb!
    }

    private func beginRecording() throws -> VkCommandBuffer {
        if let recording { return recording }
        let cb = try allocateCommandBuffer()
        recording = cb
        return cb
    }

    private func endRecording() throws {
        guard let cb = recording else { return }
        try VulkanContext.check(vkEndCommandBuffer(cb), "recording commands")
        steps.append(.device(cb))
        recording = nil
    }

    /// A global memory barrier from `source` stages' `written` accesses to `destination`
    /// stages' `reading` accesses.
    private static func barrier(_ cb: VkCommandBuffer, from source: UInt32, _ written: UInt32, to destination: UInt32, _ reading: UInt32) {
        var barrier = VkMemoryBarrier()
        barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER
        barrier.srcAccessMask = VkAccessFlags(written)
        barrier.dstAccessMask = VkAccessFlags(reading)
        vkCmdPipelineBarrier(cb, VkPipelineStageFlags(source), VkPipelineStageFlags(destination), 0, 1, &barrier, 0, nil, 0, nil)
    }

    /// Records a copy of `count` floats from `source` into `target` after the shaders and
    /// copies recorded before it (this run's, which wrote `source`, and the last run's, which
    /// may still read `target`); later shaders, copies and the host see the result.
    private func copy(_ source: VulkanSlice, into target: VulkanSlice, count: Int) throws {
        let cb = try beginRecording()
        let compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue, transfer = VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue
        let host = VK_PIPELINE_STAGE_HOST_BIT.rawValue
        Self.barrier(cb, from: compute | transfer, VK_ACCESS_SHADER_WRITE_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue,
                     to: transfer, VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue)
        precondition(source.storage == target.storage)
        var region = VkBufferCopy(srcOffset: VkDeviceSize(source.offset), dstOffset: VkDeviceSize(target.offset), size: VulkanBuffer.bytes(count, source.storage))
        vkCmdCopyBuffer(cb, source.buffer, target.buffer, 1, &region)
        Self.barrier(cb, from: transfer, VK_ACCESS_TRANSFER_WRITE_BIT.rawValue,
                     to: compute | transfer | host, VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue
                        | VK_ACCESS_TRANSFER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_WRITE_BIT.rawValue | VK_ACCESS_HOST_READ_BIT.rawValue)
        if let m = marks.last, m.start >= 0, let end = try timestamp() { marks[marks.count - 1].dispatches.append(("copy", end)) }
    }

    /// Copies every pending upload into its device-local buffer (one command buffer, run once
    /// and freed with the staging buffers).
    private func uploadConstants() throws {
        guard !pendingUploads.isEmpty else { return }
        let cb = try allocateCommandBuffer()
        for (from, to) in pendingUploads {
            var region = VkBufferCopy(srcOffset: 0, dstOffset: VkDeviceSize(to.offset), size: VulkanBuffer.bytes(from.count, from.storage))
            vkCmdCopyBuffer(cb, from.buffer, to.buffer, 1, &region)
        }
        // The recorded runs are submitted after this, so the barrier orders them after it.
        Self.barrier(cb, from: VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue, VK_ACCESS_TRANSFER_WRITE_BIT.rawValue,
                     to: VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue | VK_PIPELINE_STAGE_TRANSFER_BIT.rawValue,
                     VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_TRANSFER_READ_BIT.rawValue)
        try VulkanContext.check(vkEndCommandBuffer(cb), "recording commands")
        try context.submitAndWait(cb, fence: fence!)
        var buffers: [VkCommandBuffer?] = [cb]
        vkFreeCommandBuffers(context.device, commandPool, 1, &buffers)
        pendingUploads = []
    }

    /// A descriptor set of the shared layout, from the current pool or a new one.
    private func descriptorSet() throws -> VkDescriptorSet? {
        let device = context.device
        if setsLeft == 0 {
            var sizes = [VkDescriptorPoolSize(type: VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount: UInt32(Self.setsPerPool * (VulkanContext.bindings - 1))),
                         VkDescriptorPoolSize(type: VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, descriptorCount: UInt32(Self.setsPerPool))]
            var pool: VkDescriptorPool?
            try sizes.withUnsafeMutableBufferPointer { sbp in
                let sp = UnsafePointer(sbp.baseAddress!)
                var info = VkDescriptorPoolCreateInfo()
                info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
                info.maxSets = UInt32(Self.setsPerPool)
                info.poolSizeCount = 2
                info.pPoolSizes = sp
                try VulkanContext.check(vkCreateDescriptorPool(device, &info, nil, &pool), "creating a descriptor pool")
            }
            descriptorPools.append(pool)
            setsLeft = Self.setsPerPool
        }
        var set: VkDescriptorSet?
        var layouts: [VkDescriptorSetLayout?] = [context.setLayout]
        try layouts.withUnsafeMutableBufferPointer { lp in
            var info = VkDescriptorSetAllocateInfo()
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
            info.descriptorPool = descriptorPools.last!
            info.descriptorSetCount = 1
            info.pSetLayouts = UnsafePointer(lp.baseAddress)
            try VulkanContext.check(vkAllocateDescriptorSets(device, &info, &set), "allocating descriptors")
        }
        setsLeft -= 1
        return set
    }

    /// Records one dispatch of `shader` over `count` invocations with `bound` buffers at
    /// bindings 0…5 (nil: the dummy) and `parameters` as push constants, then a barrier.
    func dispatch(_ shader: String, count: Int, _ bound: [VulkanSlice?], _ parameters: [Int32]) throws {
        guard count > 0 else { return }
        try dispatch(shader, groups: Self.grid((count + 63) / 64, maxX: Int(context.maxGroupsX)), bound, parameters)
    }

    /// The same with one workgroup (64 lanes) per item, `count` items: the workgroup's index
    /// is `gl_WorkGroupID.y · gl_NumWorkGroups.x + gl_WorkGroupID.x`.
    func dispatchWorkgroups(_ shader: String, count: Int, _ bound: [VulkanSlice?], _ parameters: [Int32]) throws {
        guard count > 0 else { return }
        try dispatch(shader, groups: Self.grid(count, maxX: Int(context.maxGroupsX)), bound, parameters)
    }

    /// `groups` workgroups as x × y, x within the device's limit.
    static func grid(_ groups: Int, maxX: Int) -> (x: Int, y: Int, z: Int) {
        let x = min(groups, maxX)
        return (x, (groups + x - 1) / x, 1)
    }

    /// The same with the workgroup counts given.
    func dispatch(_ shader: String, groups: (x: Int, y: Int, z: Int), _ bound: [VulkanSlice?], _ parameters: [Int32]) throws {
        guard groups.x > 0, groups.y > 0, groups.z > 0 else { return }
        precondition(parameters.count <= 32 && bound.count <= VulkanContext.bindings)
        let cb = try beginRecording()
        shaders.append(shader)
        let pipeline = try context.pipeline(storage == .fp16 ? shader + "_fp16" : shader)
        let device = context.device
        let set = try descriptorSet()
        var infos = (0..<VulkanContext.bindings).map { i -> VkDescriptorBufferInfo in
            // Each value exactly: a whole-size range from an offset in an arena block would
            // reach past the values (and past the most one descriptor may bind).
            let slice = (i < bound.count ? bound[i] : nil) ?? dummy.whole
            var b = VkDescriptorBufferInfo()
            b.buffer = slice.buffer
            b.offset = VkDeviceSize(slice.offset)
            b.range = slice.bytes
            return b
        }
        infos.withUnsafeMutableBufferPointer { ip in
            var writes = (0..<VulkanContext.bindings).map { i -> VkWriteDescriptorSet in
                var w = VkWriteDescriptorSet()
                w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                w.dstSet = set
                w.dstBinding = UInt32(i)
                w.descriptorCount = 1
                w.descriptorType = i == VulkanContext.uniformBinding ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                w.pBufferInfo = UnsafePointer(ip.baseAddress! + i)
                return w
            }
            vkUpdateDescriptorSets(device, UInt32(writes.count), &writes, 0, nil)
        }
        vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
        var sets: [VkDescriptorSet?] = [set]
        vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, context.pipelineLayout, 0, 1, &sets, 0, nil)
        var constants = parameters + [Int32](repeating: 0, count: 32 - parameters.count)
        vkCmdPushConstants(cb, context.pipelineLayout, VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue), 0, 128, &constants)
        vkCmdDispatch(cb, UInt32(groups.x), UInt32(groups.y), UInt32(groups.z))
        let compute = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue
        Self.barrier(cb, from: compute, VK_ACCESS_SHADER_WRITE_BIT.rawValue, to: compute | VK_PIPELINE_STAGE_HOST_BIT.rawValue,
                     VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue | VK_ACCESS_HOST_READ_BIT.rawValue)
        if let m = marks.last, m.start >= 0, let end = try timestamp() { marks[marks.count - 1].dispatches.append((shader, end)) }
    }

    /// A buffer holding `values` (weights, biases, slopes: stored as `storage` says) for
    /// shaders to read: written in place (mapped plan), or device-local and uploaded once
    /// through a staging buffer at the end of prepare.
    func constant(_ values: [Float]) throws -> VulkanSlice {
        try constant(values, storage: storage)
    }

    /// The same in fp32 whatever the storage: tables of indices and tap weights.
    func table(_ values: [Float]) throws -> VulkanSlice {
        try constant(values, storage: .fp32)
    }

    private func constant(_ values: [Float], storage: VulkanStorage) throws -> VulkanSlice {
        let b: VulkanBuffer
        if plan == .mapped {
            b = try VulkanBuffer(context, values: values, placement: .shared, storage: storage)
        } else {
            b = try VulkanBuffer(context, count: values.count, placement: .device, storage: storage)
            try fill(b.whole, with: values)
        }
        constants.append(b)
        return b.whole
    }

    /// The first `count` values of scratch buffer `slot` (0 or 1), fp32; a larger buffer when
    /// the present one is too small (the smaller kept alive for the command buffers that bind it).
    func scratch(_ slot: Int, count: Int) throws -> VulkanSlice {
        if let b = scratchBuffers[slot], b.count >= count { return VulkanSlice(block: b, offset: 0, count: count) }
        if let old = scratchBuffers[slot] { constants.append(old) }
        let b = try VulkanBuffer(context, count: count, placement: plan == .staged ? .device : .shared)
        scratchBuffers[slot] = b
        return VulkanSlice(block: b, offset: 0, count: count)
    }

    /// Writes `values` into `target`: in place when it is mapped, else by an upload.
    func fill(_ target: VulkanSlice, with values: [Float]) throws {
        if target.mapped != nil {
            values.withUnsafeBufferPointer { target.write($0) }
            return
        }
        pendingUploads.append((try VulkanBuffer(context, values: values, placement: .staging, storage: target.storage), target))
    }

    static func bits(_ f: Float) -> Int32 { Int32(bitPattern: f.bitPattern) }

    /// The first input's buffer and shape and the output's, which most operations need.
    /// The crops of `graph` that can be read in place (`cropViews`): on the device, of a
    /// value the device writes, not the output, every reader a binary operation.
    static func cropViews(_ graph: Graph, onHost: Set<Int>) -> [Int: (source: Int, top: Int, left: Int)] {
        var readers: [Int: [Engine.Operation]] = [:]
        for node in graph.nodes {
            for v in Set(node.inputs) { readers[v, default: []].append(node.op) }
        }
        var views: [Int: (source: Int, top: Int, left: Int)] = [:]
        for node in graph.nodes {
            let corner: (Int, Int)
            switch node.op {
            case .crop(let t, let l, _, _), .cropLike(let t, let l): corner = (t, l)
            default: continue
            }
            guard node.output != graph.output, !onHost.contains(node.output), !onHost.contains(node.inputs[0]) else { continue }
            guard let ops = readers[node.output], !ops.isEmpty, ops.allSatisfy({ if case .binary = $0 { return true } else { return false } }) else { continue }
            views[node.output] = (node.inputs[0], corner.0, corner.1)
        }
        return views
    }

    /// Where a binary operation reads the value `v` of shape `shapes[v]`: its own slice, or for
    /// a crop read in place its source's; the first value and the channel, row and column
    /// strides (0 along a side of 1, which broadcasts), and whether it is the whole slice in
    /// order.
    func readLayout(_ v: Int) -> (slice: VulkanSlice, shape: Shape, whole: Bool, strides: [Int32]) {
        let s = shapes[v]
        var stored = s, first = 0, slice = buffers[v]
        if let view = cropViews[v] {
            stored = shapes[view.source]
            first = view.top * stored.w + view.left
            slice = buffers[view.source]
        }
        let strides = [first, s.c == 1 ? 0 : stored.h * stored.w, s.h == 1 ? 0 : stored.w, s.w == 1 ? 0 : 1].map { Int32($0) }
        return (slice, s, cropViews[v] == nil, strides)
    }

    func operands(_ node: Node) -> (x: VulkanSlice, s: Shape, y: VulkanSlice, o: Shape) {
        (buffers[node.inputs[0]], shapes[node.inputs[0]], buffers[node.output], shapes[node.output])
    }

    private func record(_ node: Node) throws {
        switch node.op {
        case .convolution(let p): try convolution(p, node)
        case .deconvolution(let p): try deconvolution(p, node)
        case .activation(let a): try activation(a, node)
        case .binary(let kind, let coefficients): try binary(kind, coefficients, node)
        case .scalar(let kind, let v, let first): try scalar(kind, v, first, node)
        case .channelAffine(let scale, let bias): try channelAffine(scale, bias, node)
        case .pixelShuffle(let r, let order): try pixelShuffle(r, order, node)
        case .crop(let t, let l, _, _), .cropLike(let t, let l): try crop(top: t, left: l, node)
        case .sliceChannels(let start, _): try sliceChannels(start, node)
        case .concatChannels: try concatChannels(node)
        case .pad(let t, let l, _, _, let mode): try pad(top: t, left: l, mode, node)
        case .spaceToDepth(let r): try spaceToDepth(r, node)
        case .reshape: try reshape(node)
        case .transpose(let perm): try transpose(perm, node)
        case .concat(let axis): try concat(axis: axis, node)
        case .constant(_, let values): try fill(buffers[node.output], with: values)
        case .pool(let p): try pool(p, node)
        case .globalAveragePool: try globalAveragePool(node)
        case .resize(let mode, _, _, _, _, let align): try resize(mode, alignCorners: align, node)
        case .resample(let p): try resample(p, node)
        case .upsampleDetail(let mode, let order, let factor): try upsampleDetail(mode, order, factor, node)
        case .instanceNorm(let scale, let bias, let eps): try instanceNorm(scale, bias, eps, node)
        case .softmaxChannels: try softmaxChannels(node)
        case .softmax(let axis): try softmax(axis: axis, node)
        case .fullyConnected(let out, let w, let b, let a): try fullyConnected(out, w, b, a, node)
        case .rowMatMul(let k, let n, let w, let b): try rowMatMul(k, n, w, b, node)
        case .external:
            preconditionFailure("\(node.op.kindName) runs on the host")
        }
    }
}
