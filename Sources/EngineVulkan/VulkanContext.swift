import CVulkan
import Engine
import Foundation

/// The compiled shaders (SPIR-V from `scripts/build-shaders`, in VulkanShaders+SPIRV.swift).
enum VulkanShaders {
    /// The SPIR-V words of `name`.
    static func words(_ name: String) -> [UInt32]? {
        guard let text = spirv[name], let data = Data(base64Encoded: text), data.count % 4 == 0 else { return nil }
        return data.withUnsafeBytes { raw in (0..<(data.count / 4)).map { raw.loadUnaligned(fromByteOffset: $0 * 4, as: UInt32.self) } }
    }
}

/// One Vulkan device opened for compute: instance, device, queue, the shared descriptor and
/// pipeline layouts (five storage buffers, 128 bytes of push constants) and the pipelines,
/// built once per shader. One per process (`shared`); every prepared graph uses it.
final class VulkanContext: @unchecked Sendable {
    let instance: VkInstance
    let physical: VkPhysicalDevice
    let device: VkDevice
    let queue: VkQueue
    let queueFamily: UInt32
    /// A memory type both host-visible and coherent.
    let hostMemoryType: UInt32
    /// The device's memory types (VulkanMemory.swift picks among them per buffer).
    let memoryTypes: [VkMemoryType]
    /// The device's kind: discrete GPUs get device-local buffers and staging
    /// (`VulkanMemoryPlan.automatic`).
    let deviceType: VkPhysicalDeviceType
    /// Device name and driver, for messages and `--stats`.
    let deviceName: String
    let isCPU: Bool
    /// The size of the largest device-local memory heap, in bytes.
    let deviceLocalBytes: Int
    /// Whether the Khronos validation layer watches this device (VIVIFY_VULKAN_VALIDATION=1).
    let validating: Bool
    let maxGroupsX: UInt32
    /// Nanoseconds per timestamp tick (`timestampPeriod`), and the valid bits of the compute
    /// queue's timestamps (0: the queue writes none, so layers cannot be timed on the device).
    let timestampPeriod: Double
    let timestampBits: UInt32
    /// The alignment of every activation's offset in an arena block: the device's
    /// `minStorageBufferOffsetAlignment` (a descriptor's offset must be a multiple of it), and
    /// at least 64 bytes (a cache line; vec4 loads of either storage).
    let arenaAlignment: Int
    /// The most bytes one arena block holds: the device's `maxStorageBufferRange` (the most one
    /// descriptor binds: 128 MiB on lavapipe), and its `maxMemoryAllocationSize` where it says.
    let arenaBlockLimit: Int
    /// Whether shaders may keep float16 values in storage buffers (`storageBuffer16BitAccess`,
    /// enabled on the device when it has it): what fp16 storage needs.
    let hasFP16Storage: Bool
    /// Whether cooperative matrices are turned on (`VulkanCooperativeMatrix`: asked for by
    /// VIVIFY_VULKAN_COOPMAT=1, and the device has what the shader needs).
    let hasCooperativeMatrix: Bool
    /// Why they are not, when asked for; nil otherwise.
    let cooperativeMatrixNote: String?
    let setLayout: VkDescriptorSetLayout
    let pipelineLayout: VkPipelineLayout
    /// Queue submissions and the pipeline table are shared between threads.
    private let lock = NSLock()
    private var pipelines: [String: VkPipeline] = [:]
    /// The pipelines compiled in earlier runs, on disk (nil where the driver would not make
    /// one: every pipeline is then compiled afresh).
    let pipelineCache: VulkanPipelineCache?
    /// Whether a pipeline was built since the cache was last saved.
    private var pipelinesBuilt = false

    /// Buffers every shader's descriptor set has (unused ones bound to a dummy): storage
    /// buffers but for `uniformBinding`.
    static let bindings = 6
    /// The binding that is a uniform buffer (the rest are storage buffers).
    static let uniformBinding = 5
    /// The device's maxUniformBufferRange.
    let maxUniformRange: Int

    /// The device opened once per process, or why there is none.
    static let shared: Result<VulkanContext, EngineError> = Result { try VulkanContext() }.mapError {
        $0 as? EngineError ?? EngineError(.backendFailure, "Vulkan: \($0)")
    }

    static func check(_ r: VkResult, _ what: String) throws {
        guard r == VK_SUCCESS else {
            throw EngineError(.backendFailure, "Vulkan: \(what) failed (VkResult \(r.rawValue)). Check the GPU driver (`vulkaninfo --summary`).", fallback: .cpuBackend)
        }
    }

    private init() throws {
        let made = try VulkanInstance.make(validation: try VulkanValidation.requested())
        instance = made.handle
        validating = made.messenger != nil
        // Physical device: VIVIFY_VULKAN_DEVICE=N picks one; otherwise a discrete GPU, an
        // integrated one, then anything (lavapipe, on the CPU): VulkanDevices.backendChoice.
        let candidates: [VkPhysicalDevice]
        let chosenIndex: Int?
        do {
            candidates = try VulkanDevices.physicalDevices(instance)
            chosenIndex = try VulkanDevices.backendChoice(candidates.enumerated().map { VulkanDevices.describe($1, index: $0) })
        } catch {
            made.destroy()
            throw error
        }
        guard let chosenIndex else {
            made.destroy()
            throw EngineError(.unsupported, "The Vulkan driver lists no device. Install your GPU's Vulkan driver (on Debian: mesa-vulkan-drivers runs Vulkan on the CPU).", fallback: .cpuBackend)
        }
        let chosen = candidates[chosenIndex]
        physical = chosen
        var props = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(chosen, &props)
        deviceName = withUnsafeBytes(of: &props.deviceName) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
        isCPU = props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
        deviceType = props.deviceType
        maxGroupsX = props.limits.maxComputeWorkGroupCount.0
        arenaAlignment = max(Int(props.limits.minStorageBufferOffsetAlignment), Int(props.limits.minUniformBufferOffsetAlignment), BufferPlan.alignment)
        maxUniformRange = Int(props.limits.maxUniformBufferRange)
        var blockLimit = Int(props.limits.maxStorageBufferRange)
        if props.apiVersion >> 12 >= (1 << 10) | 1 {
            var maintenance3 = VkPhysicalDeviceMaintenance3Properties()
            maintenance3.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES
            VulkanDevices.chainedProperties(chosen, &maintenance3)
            if maintenance3.maxMemoryAllocationSize > 0 { blockLimit = min(blockLimit, Int(clamping: maintenance3.maxMemoryAllocationSize)) }
        }
        arenaBlockLimit = blockLimit
        // A queue family with compute.
        var familyCount: UInt32 = 0
        vkGetPhysicalDeviceQueueFamilyProperties(chosen, &familyCount, nil)
        var families = [VkQueueFamilyProperties](repeating: VkQueueFamilyProperties(), count: Int(familyCount))
        vkGetPhysicalDeviceQueueFamilyProperties(chosen, &familyCount, &families)
        guard let family = families.firstIndex(where: { $0.queueFlags & VkQueueFlags(VK_QUEUE_COMPUTE_BIT.rawValue) != 0 }) else {
            made.destroy()
            throw EngineError(.unsupported, "The Vulkan device '\(deviceName)' has no compute queue.", fallback: .cpuBackend)
        }
        queueFamily = UInt32(family)
        timestampPeriod = Double(props.limits.timestampPeriod)
        timestampBits = families[family].timestampValidBits
        // 16-bit storage (core in Vulkan 1.1): asked for, and turned on, only where the device
        // has it; without it fp16 storage falls back to fp32 (VulkanBackend.init).
        var storage16 = VkPhysicalDevice16BitStorageFeatures()
        storage16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
        if props.apiVersion >> 12 >= (1 << 10) | 1 {
            withUnsafeMutablePointer(to: &storage16) { sp in
                var features = VkPhysicalDeviceFeatures2()
                features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
                features.pNext = UnsafeMutableRawPointer(sp)
                vkGetPhysicalDeviceFeatures2(chosen, &features)
            }
        }
        hasFP16Storage = storage16.storageBuffer16BitAccess == VkBool32(VK_TRUE)
        var enabled16 = VkPhysicalDevice16BitStorageFeatures()
        enabled16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES
        enabled16.storageBuffer16BitAccess = VkBool32(hasFP16Storage ? VK_TRUE : VK_FALSE)
        let wants16 = hasFP16Storage
        // Cooperative matrices, where asked for (VIVIFY_VULKAN_COOPMAT=1) and the device has
        // what convolution_gemm_coop.comp needs; with fp16 storage, the only precision it runs in.
        let name = deviceName
        var coopNote: String?
        var cooperate = false
        if VulkanCooperativeMatrix.isRequested() {
            let why = hasFP16Storage ? VulkanCooperativeMatrix.check(instance, chosen, apiVersion: props.apiVersion)
                : "it has no 16-bit storage buffers"
            cooperate = why == nil
            coopNote = why.map { "VIVIFY_VULKAN_COOPMAT=1: the Vulkan device '\(name)' cannot run cooperative matrices (\($0)); the layers keep their usual shaders." }
        }
        var priority: Float = 1
        /// The logical device, with the cooperative-matrix extension and features or without.
        func open(cooperative: Bool) -> (VkResult, VkDevice?) {
            let features = cooperative ? VulkanCooperativeMatrix.Features() : nil
            defer { features?.release() }
            let names: [String] = cooperative ? [VulkanCooperativeMatrix.extensionName] : []
            let extensionStrings = names.map { strdup($0) }
            defer { extensionStrings.forEach { free($0) } }
            var extensionPointers = extensionStrings.map { UnsafePointer<CChar>($0) }
            var madeDevice: VkDevice?
            let r: VkResult = withUnsafePointer(to: &priority) { pp in
                var q = VkDeviceQueueCreateInfo()
                q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
                q.queueFamilyIndex = UInt32(family)
                q.queueCount = 1
                q.pQueuePriorities = pp
                return withUnsafePointer(to: &q) { qp in
                    withUnsafeMutablePointer(to: &enabled16) { ep in
                        extensionPointers.withUnsafeMutableBufferPointer { xp in
                            var info = VkDeviceCreateInfo()
                            info.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO
                            let storage: UnsafeMutableRawPointer? = wants16 ? UnsafeMutableRawPointer(ep) : nil
                            info.pNext = UnsafeRawPointer(features.map { $0.chain(after: storage) } ?? storage)
                            info.queueCreateInfoCount = 1
                            info.pQueueCreateInfos = qp
                            info.enabledExtensionCount = UInt32(xp.count)
                            info.ppEnabledExtensionNames = xp.isEmpty ? nil : UnsafePointer(xp.baseAddress)
                            return vkCreateDevice(chosen, &info, nil, &madeDevice)
                        }
                    }
                }
            }
            return (r, madeDevice)
        }
        var (dr, madeDevice) = open(cooperative: cooperate)
        if cooperate && dr != VK_SUCCESS {
            // Never tried on a GPU yet: a device that lists all it needs but will not open with
            // it still runs everything else.
            coopNote = "VIVIFY_VULKAN_COOPMAT=1: the Vulkan device '\(name)' would not open with cooperative matrices (VkResult \(dr.rawValue)); the layers keep their usual shaders."
            cooperate = false
            (dr, madeDevice) = open(cooperative: false)
        }
        hasCooperativeMatrix = cooperate
        cooperativeMatrixNote = coopNote
        guard dr == VK_SUCCESS, let device = madeDevice else {
            made.destroy()
            throw EngineError(.backendFailure, "Vulkan: cannot open the device '\(deviceName)' (VkResult \(dr.rawValue)). Check its driver.", fallback: .cpuBackend)
        }
        self.device = device
        var q: VkQueue?
        vkGetDeviceQueue(device, UInt32(family), 0, &q)
        queue = q!
        // Host-visible, coherent memory.
        var memory = VkPhysicalDeviceMemoryProperties()
        vkGetPhysicalDeviceMemoryProperties(chosen, &memory)
        let wanted = VkMemoryPropertyFlags(VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT.rawValue | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT.rawValue)
        let types = withUnsafeBytes(of: &memory.memoryTypes) { Array($0.bindMemory(to: VkMemoryType.self).prefix(Int(memory.memoryTypeCount))) }
        memoryTypes = types
        let heaps = withUnsafeBytes(of: &memory.memoryHeaps) { Array($0.bindMemory(to: VkMemoryHeap.self).prefix(Int(memory.memoryHeapCount))) }
        deviceLocalBytes = heaps.filter { $0.flags & VkMemoryHeapFlags(VK_MEMORY_HEAP_DEVICE_LOCAL_BIT.rawValue) != 0 }
            .map { Int(clamping: $0.size) }.max() ?? 0
        guard let type = (0..<Int(memory.memoryTypeCount)).first(where: { types[$0].propertyFlags & wanted == wanted }) else {
            vkDestroyDevice(device, nil)
            made.destroy()
            throw EngineError(.unsupported, "The Vulkan device '\(deviceName)' has no host-visible memory.", fallback: .cpuBackend)
        }
        hostMemoryType = UInt32(type)
        pipelineCache = try? VulkanPipelineCache(device: device, key: VulkanPipelineCache.Key(props), directory: VulkanPipelineCache.directory())
        // Layouts shared by every pipeline.
        var layoutBindings = (0..<Self.bindings).map { i -> VkDescriptorSetLayoutBinding in
            var b = VkDescriptorSetLayoutBinding()
            b.binding = UInt32(i)
            b.descriptorType = i == Self.uniformBinding ? VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
            b.descriptorCount = 1
            b.stageFlags = VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue)
            return b
        }
        var setLayout: VkDescriptorSetLayout?
        try layoutBindings.withUnsafeMutableBufferPointer { bp in
            var info = VkDescriptorSetLayoutCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO
            info.bindingCount = UInt32(bp.count)
            info.pBindings = UnsafePointer(bp.baseAddress)
            try Self.check(vkCreateDescriptorSetLayout(device, &info, nil, &setLayout), "creating the descriptor layout")
        }
        self.setLayout = setLayout!
        var range = VkPushConstantRange()
        range.stageFlags = VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue)
        range.size = 128
        var pipelineLayout: VkPipelineLayout?
        var layouts: [VkDescriptorSetLayout?] = [setLayout]
        try layouts.withUnsafeMutableBufferPointer { lp in
            try withUnsafePointer(to: &range) { rp in
                var info = VkPipelineLayoutCreateInfo()
                info.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO
                info.setLayoutCount = 1
                info.pSetLayouts = UnsafePointer(lp.baseAddress)
                info.pushConstantRangeCount = 1
                info.pPushConstantRanges = rp
                try Self.check(vkCreatePipelineLayout(device, &info, nil, &pipelineLayout), "creating the pipeline layout")
            }
        }
        self.pipelineLayout = pipelineLayout!
    }

    /// The compute pipeline of shader `name`, built on first use (through the pipeline cache).
    func pipeline(_ name: String) throws -> VkPipeline {
        lock.lock()
        defer { lock.unlock() }
        if let p = pipelines[name] { return p }
        let pipeline = try makePipeline(name, cache: pipelineCache?.handle)
        pipelines[name] = pipeline
        pipelinesBuilt = true
        return pipeline
    }

    /// Saves the pipeline cache when pipelines were built since the last save (after a graph
    /// is prepared: one write for all its shaders).
    func savePipelineCache() {
        lock.lock()
        defer { lock.unlock() }
        guard pipelinesBuilt, let pipelineCache else { return }
        pipelineCache.save()
        pipelinesBuilt = false
    }

    /// A new compute pipeline of shader `name` through `cache` (the caller owns it).
    func makePipeline(_ name: String, cache: VkPipelineCache?) throws -> VkPipeline {
        guard var words = VulkanShaders.words(name) else {
            throw EngineError(.backendFailure, "Vulkan: the shader '\(name)' is missing from this build (run scripts/build-shaders).")
        }
        var module: VkShaderModule?
        try words.withUnsafeMutableBufferPointer { wp in
            var info = VkShaderModuleCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO
            info.codeSize = wp.count * 4
            info.pCode = UnsafePointer(wp.baseAddress)
            try Self.check(vkCreateShaderModule(device, &info, nil, &module), "loading the shader '\(name)'")
        }
        defer { vkDestroyShaderModule(device, module, nil) }
        var pipeline: VkPipeline?
        try "main".withCString { entry in
            var stage = VkPipelineShaderStageCreateInfo()
            stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO
            stage.stage = VK_SHADER_STAGE_COMPUTE_BIT
            stage.module = module
            stage.pName = entry
            var info = VkComputePipelineCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO
            info.stage = stage
            info.layout = pipelineLayout
            try Self.check(vkCreateComputePipelines(device, cache, 1, &info, nil, &pipeline), "building the shader '\(name)'")
        }
        return pipeline!
    }

    /// Submits `commands` and waits for them to finish.
    func submitAndWait(_ commands: VkCommandBuffer, fence: VkFence) throws {
        var buffers: [VkCommandBuffer?] = [commands]
        try buffers.withUnsafeMutableBufferPointer { bp in
            var info = VkSubmitInfo()
            info.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO
            info.commandBufferCount = 1
            info.pCommandBuffers = UnsafePointer(bp.baseAddress)
            lock.lock()
            let r = vkQueueSubmit(queue, 1, &info, fence)
            lock.unlock()
            try Self.check(r, "submitting work")
        }
        var f: VkFence? = fence
        try Self.check(vkWaitForFences(device, 1, &f, VkBool32(VK_TRUE), UInt64.max), "waiting for the device")
        try Self.check(vkResetFences(device, 1, &f), "resetting a fence")
    }
}
