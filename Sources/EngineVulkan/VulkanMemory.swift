import CVulkan
import Engine

/// Where a prepared graph keeps its values and weights.
///
///     mapped:  every buffer host-visible and mapped; the host writes the input and reads the
///              output in place (the device and the host share memory: lavapipe, integrated
///              GPUs)
///     staged:  activations and weights in device-local memory; weights uploaded once through
///              staging buffers, the input copied in from a staging buffer at the start of a
///              run and the output copied out to one at its end (discrete GPUs, where the
///              host reaching into device memory, or shaders into host memory, crosses PCIe)
///
/// Values a host step reads or writes (external layers) are host-visible in both.
enum VulkanMemoryPlan: Sendable, Equatable {
    case mapped
    case staged

    /// The plan for `context`'s device: staged on a discrete (or virtual, or unknown) GPU,
    /// mapped on the CPU and on integrated GPUs.
    static func automatic(for context: VulkanContext) -> VulkanMemoryPlan {
        switch context.deviceType {
        case VK_PHYSICAL_DEVICE_TYPE_CPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return .mapped
        default: return .staged
        }
    }
}

/// How a buffer stores its values: 32-bit floats, or IEEE half floats (the fp16 shaders read
/// them into fp32 arithmetic and round only what they store).
enum VulkanStorage: Sendable, Equatable {
    case fp32
    case fp16

    /// Bytes per value.
    var stride: Int { self == .fp32 ? 4 : 2 }
}

/// `count` values at a byte offset of a buffer: an activation's place in an arena block (or a
/// whole buffer), what a descriptor binds and copies read and write.
struct VulkanSlice {
    /// The buffer the values are in.
    let block: VulkanBuffer
    /// Their byte offset in it.
    let offset: Int
    /// How many values.
    let count: Int

    var buffer: VkBuffer { block.buffer }
    var storage: VulkanStorage { block.storage }
    var placement: VulkanBuffer.Placement { block.placement }
    /// The size in bytes (at least 4: a binding is never empty).
    var bytes: VkDeviceSize { VulkanBuffer.bytes(count, storage) }
    /// The mapped address of the first value; nil in a `.device` buffer.
    var mapped: UnsafeMutableRawPointer? { block.mapped.map { $0 + offset } }

    /// Writes `values` (at most `count`) at the start of the slice, converted to the storage.
    func write(_ values: UnsafeBufferPointer<Float>) {
        guard let mapped, let base = values.baseAddress, !values.isEmpty else { return }
        precondition(values.count <= count)
        switch storage {
        case .fp32:
            mapped.bindMemory(to: Float.self, capacity: values.count).update(from: base, count: values.count)
        case .fp16:
            let halves = mapped.bindMemory(to: Float16.self, capacity: values.count)
            for i in 0..<values.count { halves[i] = Float16(base[i]) }
        }
    }

    /// Reads the first `values.count` values of the slice as floats.
    func read(into values: UnsafeMutableBufferPointer<Float>) {
        guard let mapped, let base = values.baseAddress, !values.isEmpty else { return }
        precondition(values.count <= count)
        switch storage {
        case .fp32:
            base.update(from: mapped.bindMemory(to: Float.self, capacity: values.count), count: values.count)
        case .fp16:
            let halves = mapped.bindMemory(to: Float16.self, capacity: values.count)
            for i in 0..<values.count { base[i] = Float(halves[i]) }
        }
    }
}

/// A storage buffer (also a transfer source and destination) of `count` values, stored as
/// `storage` says.
final class VulkanBuffer {
    /// The kind of memory a buffer lives in.
    enum Placement: Sendable {
        /// Host-visible and coherent, mapped, preferably device-local too (memory both sides
        /// reach quickly where there is such memory: the mapped plan's buffers).
        case shared
        /// Host-visible and coherent, mapped, preferably cached and not device-local (the
        /// host reads it at full speed: staging buffers, host steps' values).
        case staging
        /// Device-local, preferably not host-visible (not mapped; reached by copies).
        case device
    }

    let context: VulkanContext
    let buffer: VkBuffer
    let memory: VkDeviceMemory
    let placement: Placement
    let storage: VulkanStorage
    /// The mapped memory; nil for `.device` buffers.
    let mapped: UnsafeMutableRawPointer?
    let count: Int

    /// The size in bytes of `count` values stored as `storage` (at least 4: a buffer is never
    /// empty).
    static func bytes(_ count: Int, _ storage: VulkanStorage = .fp32) -> VkDeviceSize { VkDeviceSize(max(count * storage.stride, 4)) }

    init(_ context: VulkanContext, count: Int, placement: Placement = .shared, storage: VulkanStorage = .fp32) throws {
        self.context = context
        self.count = count
        self.placement = placement
        self.storage = storage
        let device = context.device
        var info = VkBufferCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = Self.bytes(count, storage)
        info.usage = VkBufferUsageFlags(VK_BUFFER_USAGE_STORAGE_BUFFER_BIT.rawValue | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT.rawValue | VK_BUFFER_USAGE_TRANSFER_SRC_BIT.rawValue
            | VK_BUFFER_USAGE_TRANSFER_DST_BIT.rawValue)
        info.sharingMode = VK_SHARING_MODE_EXCLUSIVE
        var b: VkBuffer?
        try VulkanContext.check(vkCreateBuffer(device, &info, nil, &b), "creating a buffer of \(count) values")
        var needs = VkMemoryRequirements()
        vkGetBufferMemoryRequirements(device, b, &needs)
        guard let type = Self.memoryType(context.memoryTypes, allowed: needs.memoryTypeBits, placement) else {
            vkDestroyBuffer(device, b, nil)
            throw EngineError(.unsupported, "The Vulkan device '\(context.deviceName)' has no memory type for \(placement) buffers.", fallback: .cpuBackend)
        }
        var alloc = VkMemoryAllocateInfo()
        alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
        alloc.allocationSize = needs.size
        alloc.memoryTypeIndex = type
        var m: VkDeviceMemory?
        let r = vkAllocateMemory(device, &alloc, nil, &m)
        guard r == VK_SUCCESS else {
            vkDestroyBuffer(device, b, nil)
            throw EngineError(.backendFailure, "Vulkan: cannot allocate \(needs.size) bytes on '\(context.deviceName)' (VkResult \(r.rawValue)). Use smaller tiles (--tile, --max-memory).", fallback: .cpuBackend)
        }
        buffer = b!
        memory = m!
        do {
            try VulkanContext.check(vkBindBufferMemory(device, b, m, 0), "binding memory")
            if placement == .device {
                mapped = nil
            } else {
                var pointer: UnsafeMutableRawPointer?
                try VulkanContext.check(vkMapMemory(device, m, 0, VkDeviceSize(VK_WHOLE_SIZE), 0, &pointer), "mapping memory")
                mapped = pointer!
            }
        } catch {
            vkDestroyBuffer(device, b, nil)
            vkFreeMemory(device, m, nil)
            throw error
        }
    }

    /// A mapped buffer holding `values` (rounded to the nearest half float under `.fp16`).
    convenience init(_ context: VulkanContext, values: [Float], placement: Placement = .shared, storage: VulkanStorage = .fp32) throws {
        precondition(placement != .device, "a device-local buffer is filled by a copy")
        try self.init(context, count: values.count, placement: placement, storage: storage)
        values.withUnsafeBufferPointer { write($0) }
    }

    /// The whole buffer as a slice.
    var whole: VulkanSlice { VulkanSlice(block: self, offset: 0, count: count) }

    /// Writes `values` (at most `count`) at the start of the mapped memory, converted to the
    /// buffer's storage.
    func write(_ values: UnsafeBufferPointer<Float>) { whole.write(values) }

    /// Reads the first `values.count` values of the mapped memory as floats.
    func read(into values: UnsafeMutableBufferPointer<Float>) { whole.read(into: values) }

    deinit {
        if mapped != nil { vkUnmapMemory(context.device, memory) }
        vkDestroyBuffer(context.device, buffer, nil)
        vkFreeMemory(context.device, memory, nil)
    }

    /// The memory type for `placement` among those `allowed` (a bit per type): every flag the
    /// placement needs, then the most it prefers and the fewest it avoids, then the lowest
    /// index (Vulkan lists plainer types first). Device-local falls back to any type, so a
    /// device whose only memory is host-visible still runs.
    static func memoryType(_ types: [VkMemoryType], allowed: UInt32, _ placement: Placement) -> UInt32? {
        let visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT.rawValue, coherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT.rawValue
        let local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue, cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT.rawValue
        let (needs, prefers, avoids): (UInt32, UInt32, UInt32)
        switch placement {
        case .shared: (needs, prefers, avoids) = (visible | coherent, local, 0)
        case .staging: (needs, prefers, avoids) = (visible | coherent, cached, local)
        case .device: (needs, prefers, avoids) = (0, local, visible)
        }
        var best: (index: Int, score: Int)?
        for (i, t) in types.enumerated() where allowed & (1 << UInt32(i)) != 0 && t.propertyFlags & needs == needs {
            // Lazily allocated and protected memory cannot back a storage buffer the host or a
            // shader reads.
            if t.propertyFlags & (VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT.rawValue | VK_MEMORY_PROPERTY_PROTECTED_BIT.rawValue) != 0 { continue }
            let score = (t.propertyFlags & prefers).nonzeroBitCount * 2 - (t.propertyFlags & avoids).nonzeroBitCount
            if best == nil || score > best!.score { best = (i, score) }
        }
        return best.map { UInt32($0.index) }
    }
}
