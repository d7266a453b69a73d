import CVulkan
import Engine
import Foundation

/// One Vulkan device as its driver describes it (`vivify probe --devices`).
public struct VulkanDeviceInfo: Sendable, Equatable {
    /// What kind of device it is (VkPhysicalDeviceType).
    public enum Kind: String, Sendable {
        case discrete, integrated, virtual, cpu, other

        /// A GPU `--backend auto` may run on: discrete or integrated, never the CPU (lavapipe).
        public var isGPU: Bool { self == .discrete || self == .integrated }
    }

    /// Its position in the driver's list (what `VIVIFY_VULKAN_DEVICE` names).
    public var index: Int
    /// e.g. "llvmpipe (LLVM 15.0.6, 256 bits)".
    public var name: String
    public var kind: Kind
    /// The driver's name and version text, e.g. "llvmpipe, Mesa 22.3.6 (LLVM 15.0.6)".
    public var driver: String
    /// The Vulkan version the device supports, e.g. "1.3.230".
    public var apiVersion: String

    /// A device description (for the choice rules and their tests).
    public init(index: Int, name: String, kind: Kind, driver: String, apiVersion: String) {
        (self.index, self.name, self.kind, self.driver, self.apiVersion) = (index, name, kind, driver, apiVersion)
    }
}

/// The Vulkan devices of this machine and the rules that choose among them: the device the
/// Vulkan backend opens, and whether `--backend auto` runs on it.
public enum VulkanDevices {
    /// The environment variable that picks a device by its index in the driver's list.
    public static let deviceVariable = "VIVIFY_VULKAN_DEVICE"

    /// The devices the driver lists, in its order. Creates and destroys an instance.
    /// - Throws: `EngineError` `.unsupported` when no Vulkan driver answers.
    public static func list() throws -> [VulkanDeviceInfo] {
        let instance = try VulkanInstance.make(validation: false)
        defer { instance.destroy() }
        return try physicalDevices(instance.handle).enumerated().map { describe($1, index: $0) }
    }

    /// The index `VIVIFY_VULKAN_DEVICE` names among `count` devices; nil when it is not set
    /// or empty (as the kernel switches take an empty value).
    /// - Throws: `EngineError` `.invalidSetting` (exit 64) when it is not one of them: digits
    ///   only, as the switches take exactly 1 or 0 (" 0" and "+0" are refused).
    public static func requestedIndex(count: Int, environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Int? {
        guard let text = environment[deviceVariable], !text.isEmpty else { return nil }
        guard text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber), let n = Int(text), n < count else {
            let listed = count == 0 ? "the driver lists none" : count == 1 ? "the driver lists one, index 0" : "the driver lists \(count), index 0 to \(count - 1)"
            throw EngineError(.invalidSetting, "\(deviceVariable)=\(text) names no Vulkan device: \(listed). "
                              + "Set it to an index that `vivify probe --devices` lists, or unset it.")
        }
        return n
    }

    /// The device the Vulkan backend opens among `devices`: the one `VIVIFY_VULKAN_DEVICE`
    /// names, else the first discrete GPU, then integrated, then virtual, then anything
    /// (lavapipe on the CPU). Nil when there is no device.
    public static func backendChoice(_ devices: [VulkanDeviceInfo], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Int? {
        if let n = try requestedIndex(count: devices.count, environment: environment) { return n }
        let rank: (VulkanDeviceInfo.Kind) -> Int = {
            switch $0 {
            case .discrete: return 0
            case .integrated: return 1
            case .virtual: return 2
            case .cpu, .other: return 3
            }
        }
        return devices.min { rank($0.kind) < rank($1.kind) }?.index
    }

    /// The device `--backend auto` runs the models on: the Vulkan backend's device when it is
    /// a discrete or integrated GPU; nil (oneDNN on the CPU) otherwise, so never lavapipe.
    public static func autoChoice(_ devices: [VulkanDeviceInfo], environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Int? {
        guard let i = try backendChoice(devices, environment: environment), devices[i].kind.isGPU else { return nil }
        return i
    }

    /// Whether the kernel shows a GPU a Vulkan driver could drive: a DRM render node
    /// (/dev/dri/renderD*: AMD, Intel, NVIDIA's open and nouveau drivers), NVIDIA's own nodes
    /// (/dev/nvidia0…) or WSL's /dev/dxg. Without one, `auto` does not load the Vulkan
    /// drivers at all: Mesa's drivers cost about 0.2 s and 58 MB to load and list only
    /// lavapipe on such a machine, which `auto` never picks.
    public static var gpuNodePresent: Bool {
        let fm = FileManager.default
        if fm.fileExists(atPath: "/dev/dxg") { return true }
        if let dri = try? fm.contentsOfDirectory(atPath: "/dev/dri"), dri.contains(where: { $0.hasPrefix("renderD") }) { return true }
        if let dev = try? fm.contentsOfDirectory(atPath: "/dev") {
            return dev.contains { $0.hasPrefix("nvidia") && $0.dropFirst(6).allSatisfy(\.isNumber) && $0.count > 6 }
        }
        return false
    }

    /// The device `--backend auto` runs on, or nil for oneDNN: `autoChoice` over the devices
    /// the driver lists, looked at only when there is a GPU node or `VIVIFY_VULKAN_DEVICE` is
    /// set; a machine whose Vulkan driver fails to answer runs oneDNN. Discrete GPUs are
    /// chosen like integrated ones now that every operation but external layers has a shader
    /// and buffers live in device memory there (`VulkanMemoryPlan.staged`); before that, an
    /// H100 took over 60 s for a 640x360 frame of realcugan-2x and auto left it out.
    /// - Throws: `EngineError` `.invalidSetting` for a `VIVIFY_VULKAN_DEVICE` that names no device.
    public static func autoDevice(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> VulkanDeviceInfo? {
        try autoDevice(gpuNode: gpuNodePresent, listing: list, environment: environment)
    }

    /// `autoDevice` with the machine's answers given: whether the kernel shows a GPU node, and
    /// the driver's list (called only when needed), so the rule is tested on made-up machines.
    static func autoDevice(gpuNode: Bool, listing: () throws -> [VulkanDeviceInfo], environment: [String: String]) throws -> VulkanDeviceInfo? {
        guard !(environment[deviceVariable] ?? "").isEmpty || gpuNode else { return nil }
        let devices: [VulkanDeviceInfo]
        do { devices = try listing() } catch let e as EngineError where e.kind == .unsupported {
            // No driver: a bad VIVIFY_VULKAN_DEVICE is still said.
            _ = try requestedIndex(count: 0, environment: environment)
            return nil
        }
        return try autoChoice(devices, environment: environment).map { devices[$0] }
    }

    // MARK: the driver's answers

    static func physicalDevices(_ instance: VkInstance) throws -> [VkPhysicalDevice] {
        var count: UInt32 = 0
        try VulkanContext.check(vkEnumeratePhysicalDevices(instance, &count, nil), "listing devices")
        var devices = [VkPhysicalDevice?](repeating: nil, count: Int(count))
        try VulkanContext.check(vkEnumeratePhysicalDevices(instance, &count, &devices), "listing devices")
        return devices.prefix(Int(count)).compactMap { $0 }
    }

    static func describe(_ device: VkPhysicalDevice, index: Int) -> VulkanDeviceInfo {
        var p = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(device, &p)
        let name = withUnsafeBytes(of: &p.deviceName) { text($0) }
        let kind: VulkanDeviceInfo.Kind
        switch p.deviceType {
        case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: kind = .discrete
        case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: kind = .integrated
        case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: kind = .virtual
        case VK_PHYSICAL_DEVICE_TYPE_CPU: kind = .cpu
        default: kind = .other
        }
        let v = p.apiVersion
        let api = "\(v >> 22 & 0x7F).\(v >> 12 & 0x3FF).\(v & 0xFFF)"
        // The driver's own name and version text (Vulkan 1.2); older devices give a number.
        var driver = "driver version \(p.driverVersion)"
        if v >> 12 >= (1 << 10) | 2 {
            var d = VkPhysicalDeviceDriverProperties()
            d.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
            chainedProperties(device, &d)
            let driverName = withUnsafeBytes(of: &d.driverName) { text($0) }
            let driverInfo = withUnsafeBytes(of: &d.driverInfo) { text($0) }
            if !driverName.isEmpty { driver = driverInfo.isEmpty ? driverName : "\(driverName), \(driverInfo)" }
        }
        return VulkanDeviceInfo(index: index, name: name, kind: kind, driver: driver, apiVersion: api)
    }

    /// Fills `extended` (a properties structure of Vulkan 1.1 or later, its `sType` set) by
    /// chaining it behind a `VkPhysicalDeviceProperties2` query.
    static func chainedProperties<T>(_ device: VkPhysicalDevice, _ extended: inout T) {
        withUnsafeMutablePointer(to: &extended) { ep in
            var all = VkPhysicalDeviceProperties2()
            all.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
            all.pNext = UnsafeMutableRawPointer(ep)
            vkGetPhysicalDeviceProperties2(device, &all)
        }
    }

    /// A NUL-terminated C string held in a fixed array.
    private static func text(_ raw: UnsafeRawBufferPointer) -> String {
        let bytes = raw.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self)
    }
}
