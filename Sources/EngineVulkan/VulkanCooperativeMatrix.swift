import CVulkan
import Foundation

/// Cooperative matrices (VK_NV_cooperative_matrix: a subgroup multiplies small matrix
/// fragments together, on NVIDIA's tensor cores) for `convolution_gemm_coop.comp`: what it
/// needs, whether a device has it, and the features to turn on when it does.
///
/// Opt-in (`VIVIFY_VULKAN_COOPMAT=1`): on an H200 (2026-11-30) it ran, within parity, but
/// slower than the kernels it replaces (realcugan-2x's largest sub-pixel layer 2.6 against
/// 1.4 ms as a 1×1 product). Mesa's lavapipe has no such extension, so the tests run the same
/// shader with its products computed lane by lane (`_emulated`). Asked for on a device without it, the backend
/// says why (`VulkanCooperativeMatrix.check`) and runs without.
enum VulkanCooperativeMatrix {
    /// The device extension.
    static let extensionName = "VK_NV_cooperative_matrix"

    /// Whether the environment asks for it.
    static func isRequested(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        environment["VIVIFY_VULKAN_COOPMAT"] == "1"
    }

    /// One shape a device lists: M × N × K, the component types of A, B, C and the result.
    struct Shape: Equatable {
        var m, n, k: UInt32
        var a, b, c, d: VkComponentTypeNV
        var scope: VkScopeNV
    }

    /// The shape the shader uses: fp16 A (16 × 16) and B (16 × 8), fp32 sums, subgroup scope.
    static let wanted = Shape(m: 16, n: 8, k: 16, a: VK_COMPONENT_TYPE_FLOAT16_NV, b: VK_COMPONENT_TYPE_FLOAT16_NV,
                              c: VK_COMPONENT_TYPE_FLOAT32_NV, d: VK_COMPONENT_TYPE_FLOAT32_NV, scope: VK_SCOPE_SUBGROUP_NV)

    /// Why `device` cannot run the shader, or nil when it can: Vulkan 1.2 (shaderFloat16 and
    /// the Vulkan memory model as core features), the extension, its feature, those two
    /// features, 32-lane subgroups (the shader's 64 lanes are two subgroups), and `wanted`
    /// among the shapes it lists.
    static func check(_ instance: VkInstance, _ device: VkPhysicalDevice, apiVersion: UInt32) -> String? {
        guard apiVersion >> 12 >= (1 << 10) | 2 else { return "it is not a Vulkan 1.2 device" }
        var count: UInt32 = 0
        vkEnumerateDeviceExtensionProperties(device, nil, &count, nil)
        var extensions = [VkExtensionProperties](repeating: VkExtensionProperties(), count: Int(count))
        vkEnumerateDeviceExtensionProperties(device, nil, &count, &extensions)
        let names = extensions.prefix(Int(count)).map { e -> String in
            var e = e
            return withUnsafeBytes(of: &e.extensionName) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        }
        guard names.contains(extensionName) else { return "it has no \(extensionName)" }
        let features = Features()
        defer { features.release() }
        features.query(device)
        guard features.cooperative.pointee.cooperativeMatrix == VkBool32(VK_TRUE) else { return "its cooperativeMatrix feature is off" }
        guard features.float16.pointee.shaderFloat16 == VkBool32(VK_TRUE) else { return "it has no shaderFloat16" }
        guard features.memoryModel.pointee.vulkanMemoryModel == VkBool32(VK_TRUE) else { return "it has no vulkanMemoryModel" }
        var subgroup = VkPhysicalDeviceSubgroupProperties()
        subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES
        VulkanDevices.chainedProperties(device, &subgroup)
        guard subgroup.subgroupSize == 32 else { return "its subgroups have \(subgroup.subgroupSize) lanes, not 32" }
        let compute = VkShaderStageFlags(VK_SHADER_STAGE_COMPUTE_BIT.rawValue)
        guard subgroup.supportedStages & compute != 0,
              subgroup.supportedOperations & VkSubgroupFeatureFlags(VK_SUBGROUP_FEATURE_BASIC_BIT.rawValue) != 0 else {
            return "its compute shaders have no basic subgroup operations"
        }
        var stages = VkPhysicalDeviceCooperativeMatrixPropertiesNV()
        stages.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_PROPERTIES_NV
        VulkanDevices.chainedProperties(device, &stages)
        guard stages.cooperativeMatrixSupportedStages & compute != 0 else { return "it has no cooperative matrices in compute shaders" }
        let shapes = self.shapes(instance, device)
        guard shapes.contains(wanted) else {
            return "it lists no 16×8×16 fp16 → fp32 subgroup shape (\(shapes.map { "\($0.m)×\($0.n)×\($0.k)" }.joined(separator: ", ")))"
        }
        return nil
    }

    /// The shapes `device` lists (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV).
    static func shapes(_ instance: VkInstance, _ device: VkPhysicalDevice) -> [Shape] {
        guard let raw = vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV") else { return [] }
        let list = unsafeBitCast(raw, to: PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV.self)
        var count: UInt32 = 0
        guard list(device, &count, nil) == VK_SUCCESS, count > 0 else { return [] }
        var empty = VkCooperativeMatrixPropertiesNV()
        empty.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV
        var properties = [VkCooperativeMatrixPropertiesNV](repeating: empty, count: Int(count))
        guard list(device, &count, &properties) == VK_SUCCESS else { return [] }
        return properties.prefix(Int(count)).map {
            Shape(m: $0.MSize, n: $0.NSize, k: $0.KSize, a: $0.AType, b: $0.BType, c: $0.CType, d: $0.DType, scope: $0.scope)
        }
    }

    /// The three feature structures the shader needs, chained (cooperative → float16 →
    /// memory model), on the heap so that the chain's pointers stay valid: queried, or set on
    /// and put into a device's create info (`chain`).
    final class Features {
        let cooperative = UnsafeMutablePointer<VkPhysicalDeviceCooperativeMatrixFeaturesNV>.allocate(capacity: 1)
        let float16 = UnsafeMutablePointer<VkPhysicalDeviceShaderFloat16Int8Features>.allocate(capacity: 1)
        let memoryModel = UnsafeMutablePointer<VkPhysicalDeviceVulkanMemoryModelFeatures>.allocate(capacity: 1)

        init() {
            cooperative.initialize(to: VkPhysicalDeviceCooperativeMatrixFeaturesNV())
            cooperative.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV
            float16.initialize(to: VkPhysicalDeviceShaderFloat16Int8Features())
            float16.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
            memoryModel.initialize(to: VkPhysicalDeviceVulkanMemoryModelFeatures())
            memoryModel.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES
            cooperative.pointee.pNext = UnsafeMutableRawPointer(float16)
            float16.pointee.pNext = UnsafeMutableRawPointer(memoryModel)
        }

        func query(_ device: VkPhysicalDevice) {
            var all = VkPhysicalDeviceFeatures2()
            all.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2
            all.pNext = UnsafeMutableRawPointer(cooperative)
            vkGetPhysicalDeviceFeatures2(device, &all)
        }

        /// Only what the shader needs turned on, `next` after the chain; its head.
        func chain(after next: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer {
            cooperative.pointee = VkPhysicalDeviceCooperativeMatrixFeaturesNV()
            cooperative.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV
            cooperative.pointee.cooperativeMatrix = VkBool32(VK_TRUE)
            float16.pointee = VkPhysicalDeviceShaderFloat16Int8Features()
            float16.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES
            float16.pointee.shaderFloat16 = VkBool32(VK_TRUE)
            memoryModel.pointee = VkPhysicalDeviceVulkanMemoryModelFeatures()
            memoryModel.pointee.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES
            memoryModel.pointee.vulkanMemoryModel = VkBool32(VK_TRUE)
            cooperative.pointee.pNext = UnsafeMutableRawPointer(float16)
            float16.pointee.pNext = UnsafeMutableRawPointer(memoryModel)
            memoryModel.pointee.pNext = next
            return UnsafeMutableRawPointer(cooperative)
        }

        func release() {
            cooperative.deallocate()
            float16.deallocate()
            memoryModel.deallocate()
        }
    }
}
