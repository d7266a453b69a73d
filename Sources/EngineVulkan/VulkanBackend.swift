import CVulkan
import Engine
import Foundation

/// The GPU backend on Vulkan compute (issue 31, first step). The same code runs on any Vulkan
/// device: a real GPU, or Mesa's lavapipe on the CPU (how the tests run it everywhere).
///
///     prepare: shapes inferred ─▶ one storage buffer per value, weights uploaded once
///              ─▶ nodes in order: a shader dispatch each (recorded into a command buffer,
///                 barriers between) or, for operations without a shader yet, a host step
///                 on the mapped buffers (the reference kernels), which ends the command buffer
///     run:     input copied in ─▶ each command buffer submitted (recorded once, reused)
///              and each host step run, in order ─▶ output copied out
///
/// Shaders so far (GLSL in Shaders/, fp32): direct convolution (any kernel, stride, dilation,
/// padding, groups; bias and every activation fused, PReLU included), activations, binary
/// operations with broadcasting, scalar operations, channel affine, pixel shuffle, and window
/// copies (crop, channel slice, concatenation). Buffers live in host-visible memory.
public final class VulkanBackend: InferenceBackend, @unchecked Sendable {
    public var name: String { "vulkan" }
    let context: VulkanContext

    /// Opens the Vulkan device (once per process).
    /// - Throws: `EngineError` `.unsupported` when there is no Vulkan driver or device.
    public init() throws {
        context = try VulkanContext.shared.get()
    }

    /// The device's name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    public var deviceName: String { context.deviceName }
    /// Whether the device is the CPU (lavapipe).
    public var isCPU: Bool { context.isCPU }
    /// Whether the Khronos validation layer watches the device (`VIVIFY_VULKAN_VALIDATION=1`;
    /// its messages are in `VulkanValidation.messages`).
    public var isValidated: Bool { context.validating }

    /// The largest automatic tile: on a GPU 400 pixels (fewer, larger dispatches; the
    /// ncnn-Vulkan upscalers pick 200–400 on GPUs with 2 GB or more, and `--max-memory` still
    /// bounds it), not yet measured on one; on the CPU (lavapipe) the CPU backends' 192.
    public var preferredTile: Int { context.isCPU ? TiledRunner.preferredTile : Self.gpuPreferredTile }
    /// The automatic tile cap on a GPU.
    public static let gpuPreferredTile = 400

    /// Every operation: those without a shader run on the host on the mapped buffers.
    public func supports(_ op: Engine.Operation) -> Bool { true }

    /// Whether `op` runs as a shader (the rest run on the host).
    public static func runsOnDevice(_ op: Engine.Operation) -> Bool {
        switch op {
        case .convolution, .activation, .binary, .scalar, .channelAffine, .pixelShuffle, .crop, .cropLike, .sliceChannels,
             .concatChannels:
            return true
        case .deconvolution, .softmaxChannels, .resize, .pad, .globalAveragePool, .fullyConnected, .upsampleDetail, .instanceNorm,
             .pool, .spaceToDepth, .resample, .constant, .reshape, .softmax, .concat, .transpose, .rowMatMul, .external:
            return false
        }
    }

    public func prepare(_ graph: Graph, input inputShape: Shape) throws -> PreparedGraph {
        let specialized = try graph.specialized(for: inputShape)
        try checkSupport(specialized)
        return try VulkanPrepared(context: context, graph: specialized, input: inputShape)
    }
}

/// Activation codes of the shaders (Shaders/common.glsl).
enum VulkanActivation {
    /// (code, a, b, slopes) for `a`.
    static func encode(_ a: Activation) -> (code: Int32, a: Float, b: Float, slopes: [Float]) {
        switch a {
        case .identity: return (0, 0, 0, [])
        case .relu: return (1, 0, 0, [])
        case .leakyRelu(let s): return (2, s, 0, [])
        case .prelu(let slopes): return (3, 0, 0, slopes)
        case .silu: return (4, 0, 0, [])
        case .sigmoid: return (5, 0, 0, [])
        case .tanh: return (6, 0, 0, [])
        case .clip(let lo, let hi): return (7, lo, hi, [])
        case .elu(let alpha): return (8, alpha, 0, [])
        case .sqrt: return (9, 0, 0, [])
        case .pow(let e): return (10, e, 0, [])
        }
    }
}

extension BinaryKind {
    /// The shaders' code (binary.comp, scalar.comp).
    var vulkanCode: Int32 {
        switch self {
        case .add: return 0
        case .sub: return 1
        case .mul: return 2
        case .div: return 3
        case .max: return 4
        case .min: return 5
        case .pow: return 6
        }
    }
}

final class VulkanPrepared: PreparedGraph {
    let inputShape: Shape
    let outputShape: Shape
    private let context: VulkanContext
    private let graph: Graph
    private let shapes: [Shape]
    private var buffers: [VulkanBuffer] = []
    /// Weights, biases, slopes: kept alive as long as the command buffers that read them.
    private var constants: [VulkanBuffer] = []
    private let dummy: VulkanBuffer
    private var commandPool: VkCommandPool?
    private var descriptorPool: VkDescriptorPool?
    private var fence: VkFence?
    /// What a run does, in order.
    private enum Step {
        case device(VkCommandBuffer)
        case host(Node)
    }
    private var steps: [Step] = []
    /// The command buffer being recorded.
    private var recording: VkCommandBuffer?

    init(context: VulkanContext, graph: Graph, input: Shape) throws {
        self.context = context
        self.graph = graph
        let inferred = try graph.inferShapes(input: input)
        guard let out = inferred[graph.output] else {
            throw EngineError(.invalidGraph, "\(graph.source): the output '\(graph.valueNames[graph.output])' is never produced.")
        }
        shapes = inferred.map { $0 ?? Shape(c: 0, h: 0, w: 0) }
        inputShape = input
        outputShape = out
        dummy = try VulkanBuffer(context, count: 4)
        let device = context.device
        var poolInfo = VkCommandPoolCreateInfo()
        poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        poolInfo.queueFamilyIndex = context.queueFamily
        try VulkanContext.check(vkCreateCommandPool(device, &poolInfo, nil, &commandPool), "creating a command pool")
        var size = VkDescriptorPoolSize()
        size.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        // One descriptor set per dispatch: one per node, one per input of a concatenation.
        let sets = max(1, graph.nodes.reduce(0) { n, node in
            guard VulkanBackend.runsOnDevice(node.op) else { return n }
            if case .concatChannels = node.op { return n + node.inputs.count }
            return n + 1
        })
        size.descriptorCount = UInt32(sets * VulkanContext.bindings)
        try withUnsafePointer(to: &size) { sp in
            var info = VkDescriptorPoolCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO
            info.maxSets = UInt32(sets)
            info.poolSizeCount = 1
            info.pPoolSizes = sp
            try VulkanContext.check(vkCreateDescriptorPool(device, &info, nil, &descriptorPool), "creating a descriptor pool")
        }
        var fenceInfo = VkFenceCreateInfo()
        fenceInfo.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO
        try VulkanContext.check(vkCreateFence(device, &fenceInfo, nil, &fence), "creating a fence")
        buffers = try shapes.map { try VulkanBuffer(context, count: $0.count) }
        for node in graph.nodes {
            if VulkanBackend.runsOnDevice(node.op) {
                try record(node)
            } else {
                try endRecording()
                steps.append(.host(node))
            }
        }
        try endRecording()
    }

    deinit {
        let device = context.device
        if let commandPool { vkDestroyCommandPool(device, commandPool, nil) }
        if let descriptorPool { vkDestroyDescriptorPool(device, descriptorPool, nil) }
        if let fence { vkDestroyFence(device, fence, nil) }
    }

    func run(input: UnsafeBufferPointer<Float>, output: UnsafeMutableBufferPointer<Float>) throws {
        precondition(input.count == inputShape.count && output.count == outputShape.count)
        if let base = input.baseAddress, input.count > 0 { buffers[graph.input].floats.update(from: base, count: input.count) }
        for step in steps {
            switch step {
            case .device(let commands):
                try context.submitAndWait(commands, fence: fence!)
            case .host(let node):
                let ins = node.inputs.map { UnsafeBufferPointer(start: UnsafePointer(buffers[$0].floats), count: shapes[$0].count) }
                let out = UnsafeMutableBufferPointer(start: buffers[node.output].floats, count: shapes[node.output].count)
                try Kernels.execute(node.op, ins, node.inputs.map { shapes[$0] }, out, shapes[node.output])
            }
        }
        if let base = output.baseAddress, output.count > 0 { base.update(from: buffers[graph.output].floats, count: output.count) }
    }

    // MARK: recording

    private func beginRecording() throws -> VkCommandBuffer {
        if let recording { return recording }
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
        recording = cb
        return cb!
    }

    private func endRecording() throws {
        guard let cb = recording else { return }
        try VulkanContext.check(vkEndCommandBuffer(cb), "recording commands")
        steps.append(.device(cb))
        recording = nil
    }

    /// Records one dispatch of `shader` over `count` invocations with `bound` buffers at
    /// bindings 0…4 (nil: the dummy) and `parameters` as push constants, then a barrier.
    private func dispatch(_ shader: String, count: Int, _ bound: [VulkanBuffer?], _ parameters: [Int32]) throws {
        guard count > 0 else { return }
        let groups = (count + 63) / 64
        let x = min(groups, Int(context.maxGroupsX))
        try dispatch(shader, groups: (x, (groups + x - 1) / x, 1), bound, parameters)
    }

    /// The same with the workgroup counts given.
    private func dispatch(_ shader: String, groups: (x: Int, y: Int, z: Int), _ bound: [VulkanBuffer?], _ parameters: [Int32]) throws {
        guard groups.x > 0, groups.y > 0, groups.z > 0 else { return }
        precondition(parameters.count <= 32 && bound.count <= VulkanContext.bindings)
        let cb = try beginRecording()
        let pipeline = try context.pipeline(shader)
        let device = context.device
        var set: VkDescriptorSet?
        var layouts: [VkDescriptorSetLayout?] = [context.setLayout]
        try layouts.withUnsafeMutableBufferPointer { lp in
            var info = VkDescriptorSetAllocateInfo()
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO
            info.descriptorPool = descriptorPool
            info.descriptorSetCount = 1
            info.pSetLayouts = UnsafePointer(lp.baseAddress)
            try VulkanContext.check(vkAllocateDescriptorSets(device, &info, &set), "allocating descriptors")
        }
        var infos = (0..<VulkanContext.bindings).map { i -> VkDescriptorBufferInfo in
            var b = VkDescriptorBufferInfo()
            b.buffer = (i < bound.count ? bound[i] : nil)?.buffer ?? dummy.buffer
            b.offset = 0
            b.range = VkDeviceSize(VK_WHOLE_SIZE)
            return b
        }
        infos.withUnsafeMutableBufferPointer { ip in
            var writes = (0..<VulkanContext.bindings).map { i -> VkWriteDescriptorSet in
                var w = VkWriteDescriptorSet()
                w.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET
                w.dstSet = set
                w.dstBinding = UInt32(i)
                w.descriptorCount = 1
                w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
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
        var barrier = VkMemoryBarrier()
        barrier.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER
        barrier.srcAccessMask = VkAccessFlags(VK_ACCESS_SHADER_WRITE_BIT.rawValue)
        barrier.dstAccessMask = VkAccessFlags(VK_ACCESS_SHADER_READ_BIT.rawValue | VK_ACCESS_SHADER_WRITE_BIT.rawValue | VK_ACCESS_HOST_READ_BIT.rawValue)
        let compute = VkPipelineStageFlags(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT.rawValue)
        vkCmdPipelineBarrier(cb, compute, compute | VkPipelineStageFlags(VK_PIPELINE_STAGE_HOST_BIT.rawValue), 0, 1, &barrier, 0, nil, 0, nil)
    }

    private func constant(_ values: [Float]) throws -> VulkanBuffer {
        let b = try VulkanBuffer(context, values: values)
        constants.append(b)
        return b
    }

    private static func bits(_ f: Float) -> Int32 { Int32(bitPattern: f.bitPattern) }

    private func record(_ node: Node) throws {
        let o = shapes[node.output], y = buffers[node.output]
        let x = buffers[node.inputs[0]], s = shapes[node.inputs[0]]
        switch node.op {
        case .convolution(let p):
            let act = VulkanActivation.encode(p.activation)
            let bias = p.bias.isEmpty ? nil : try constant(p.bias)
            let slopes = act.slopes.isEmpty ? nil : try constant(act.slopes)
            let parameters: [Int32] = [
                Int32(s.c), Int32(s.h), Int32(s.w), Int32(o.c), Int32(o.h), Int32(o.w), Int32(p.kernelH), Int32(p.kernelW),
                Int32(p.strideH), Int32(p.strideW), Int32(p.dilationH), Int32(p.dilationW), Int32(p.padTop), Int32(p.padLeft),
                Int32(p.groups), p.bias.isEmpty ? 0 : 1, act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
            ]
            let k = p.kernelH * p.kernelW
            if p.groups == 1 {
                // Lanes across pixels, 16 output channels per invocation (the weights in blocks
                // of 16 channels: [OC/16][C][KH][KW][16], zero past the last channel).
                let blocks = (p.outChannels + 15) / 16
                var t = [Float](repeating: 0, count: blocks * p.inChannels * k * 16)
                for oc in 0..<p.outChannels {
                    for i in 0..<(p.inChannels * k) { t[((oc / 16) * p.inChannels * k + i) * 16 + oc % 16] = p.weights[oc * p.inChannels * k + i] }
                }
                let groups = (o.h * o.w + 63) / 64, gx = min(groups, Int(context.maxGroupsX))
                try dispatch("convolution_pixels", groups: (gx, blocks, (groups + gx - 1) / gx), [x, try constant(t), y, bias, slopes], parameters)
            } else {
                // Four output channels per invocation where the groups allow.
                let four = (p.outChannels / p.groups) % 4 == 0
                try dispatch(four ? "convolution4" : "convolution", count: four ? o.count / 4 : o.count, [x, try constant(p.weights), y, bias, slopes], parameters)
            }
        case .activation(let a):
            let act = VulkanActivation.encode(a)
            let slopes = act.slopes.isEmpty ? nil : try constant(act.slopes)
            try dispatch("activation", count: o.count, [x, nil, y, nil, slopes], [
                Int32(o.count), Int32(max(o.h * o.w, 1)), act.code, Self.bits(act.a), Self.bits(act.b), Int32(act.slopes.count),
            ])
        case .binary(let kind, let coefficients):
            let b = buffers[node.inputs[1]], sb = shapes[node.inputs[1]]
            try dispatch("binary", count: o.count, [x, b, y], [
                kind.vulkanCode, Self.bits(coefficients?[0] ?? 1), Self.bits(coefficients?[1] ?? 1), Int32(o.c), Int32(o.h), Int32(o.w),
                Int32(s.c), Int32(s.h), Int32(s.w), Int32(sb.c), Int32(sb.h), Int32(sb.w),
            ])
        case .scalar(let kind, let v, let first):
            try dispatch("scalar", count: o.count, [x, nil, y], [Int32(o.count), kind.vulkanCode, Self.bits(v), first ? 1 : 0])
        case .channelAffine(let scale, let bias):
            try dispatch("affine", count: o.count, [x, nil, y, try constant(scale), try constant(bias)], [Int32(o.count), Int32(max(o.h * o.w, 1))])
        case .pixelShuffle(let r, let order):
            try dispatch("shuffle", count: o.count, [x, nil, y], [Int32(r), order == .crd ? 0 : 1, Int32(o.c), Int32(o.h), Int32(o.w), Int32(s.h), Int32(s.w)])
        case .crop(let t, let l, _, _), .cropLike(let t, let l):
            try window(x, s, into: y, o, channels: o.c, from: 0, top: t, left: l, at: 0)
        case .sliceChannels(let start, _):
            try window(x, s, into: y, o, channels: o.c, from: start, top: 0, left: 0, at: 0)
        case .concatChannels:
            var at = 0
            for v in node.inputs {
                try window(buffers[v], shapes[v], into: y, o, channels: shapes[v].c, from: 0, top: 0, left: 0, at: at)
                at += shapes[v].c
            }
        default:
            preconditionFailure("\(node.op.kindName) has no shader")
        }
    }

    private func window(_ x: VulkanBuffer, _ s: Shape, into y: VulkanBuffer, _ o: Shape, channels: Int, from c0: Int, top: Int, left: Int, at: Int) throws {
        try dispatch("window", count: channels * o.h * o.w, [x, nil, y], [
            Int32(channels), Int32(o.h), Int32(o.w), Int32(s.c), Int32(s.h), Int32(s.w), Int32(c0), Int32(top), Int32(left), Int32(at),
        ])
    }
}
