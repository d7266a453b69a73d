import CVulkan
import Engine
import Foundation
import Synchronization

/// What the Khronos validation layer said (`VIVIFY_VULKAN_VALIDATION=1`): every warning and
/// error, with synchronization validation on. Each message is also written to standard error
/// as it comes ("vivify: Vulkan validation: …"), so runs of the binary show them too; the
/// tests fail on any.
public enum VulkanValidation {
    /// The environment variable that turns the layer on (value 1).
    public static let variable = "VIVIFY_VULKAN_VALIDATION"
    /// The prefix of each message on standard error.
    public static let prefix = "vivify: Vulkan validation: "

    /// Whether the layer is asked for: "1" yes; unset, empty or "0" no; anything else is
    /// refused (exit 64), since a user who wrote `true` believes the layer is watching.
    static func requested(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> Bool {
        switch environment[variable] {
        case nil, "", "0": return false
        case "1": return true
        case let other?:
            throw EngineError(.invalidSetting, "\(variable)=\(other) is neither 1 nor 0. Set \(variable)=1 to run under the Khronos validation layer, or unset it.")
        }
    }

    /// Every message since the process started (or the last `clear()`).
    public static var messages: [String] { store.withLock { $0 } }

    /// Forgets the messages so far.
    public static func clear() { store.withLock { $0.removeAll() } }

    private static let store = Mutex<[String]>([])

    static func record(_ message: String) {
        store.withLock { $0.append(message) }
        FileHandle.standardError.write(Data((prefix + message.replacingOccurrences(of: "\n", with: " ") + "\n").utf8))
    }
}

/// The layer's messages: recorded, never aborting the call (VK_FALSE).
private let validationCallback: PFN_vkDebugUtilsMessengerCallbackEXT = { _, _, data, _ in
    let text = data?.pointee.pMessage.map { String(cString: $0) } ?? "(a message without text)"
    VulkanValidation.record(text)
    return VkBool32(VK_FALSE)
}

/// A Vulkan instance (API 1.2), with the validation layer and its messenger when asked for.
struct VulkanInstance {
    /// Whether instance creation was already retried with NVIDIA's headless driver.
    nonisolated(unsafe) private static var headlessRetried = false

    let handle: VkInstance
    let messenger: VkDebugUtilsMessengerEXT?

    static let layer = "VK_LAYER_KHRONOS_validation"

    /// Creates the instance. With `validation`, VK_LAYER_KHRONOS_validation with
    /// synchronization validation and a messenger for warnings and errors of every type.
    /// - Throws: `EngineError` `.unsupported` when no driver answers, or when validation is
    ///   asked for and the layer is not installed (a run must not pass unvalidated).
    static func make(validation: Bool) throws -> VulkanInstance {
        if validation {
            var count: UInt32 = 0
            vkEnumerateInstanceLayerProperties(&count, nil)
            var layers = [VkLayerProperties](repeating: VkLayerProperties(), count: Int(count))
            vkEnumerateInstanceLayerProperties(&count, &layers)
            let names = layers.prefix(Int(count)).map { l in withUnsafeBytes(of: l.layerName) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) } }
            guard names.contains(layer) else {
                throw EngineError(.unsupported, "\(VulkanValidation.variable)=1 asks for the Khronos validation layer, which the Vulkan loader does not offer here. "
                                  + "Install it (Debian: vulkan-validationlayers; scripts/install-deps does), or unset \(VulkanValidation.variable).")
            }
        }
        let severities = VkDebugUtilsMessageSeverityFlagsEXT(VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT.rawValue | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT.rawValue)
        let types = VkDebugUtilsMessageTypeFlagsEXT(VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT.rawValue | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT.rawValue
            | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT.rawValue)
        var messengerInfo = VkDebugUtilsMessengerCreateInfoEXT()
        messengerInfo.sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT
        messengerInfo.messageSeverity = severities
        messengerInfo.messageType = types
        messengerInfo.pfnUserCallback = validationCallback
        var enabled: [VkValidationFeatureEnableEXT] = [VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT]
        let layerNames = validation ? [layer] : []
        let extensionNames = validation ? ["VK_EXT_debug_utils", "VK_EXT_validation_features"] : []
        var created: VkInstance?
        let r: VkResult = withCStrings(layerNames) { layerPointers in
            withCStrings(extensionNames) { extensionPointers in
                "vivify".withCString { name in
                    var app = VkApplicationInfo()
                    app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO
                    app.pApplicationName = name
                    app.pEngineName = name
                    app.apiVersion = (1 << 22) | (2 << 12)
                    return withUnsafePointer(to: &app) { appPointer in
                        enabled.withUnsafeMutableBufferPointer { ep in
                            withUnsafeMutablePointer(to: &messengerInfo) { mp in
                                var features = VkValidationFeaturesEXT()
                                features.sType = VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT
                                features.enabledValidationFeatureCount = UInt32(ep.count)
                                features.pEnabledValidationFeatures = UnsafePointer(ep.baseAddress)
                                // The messenger's info in the chain also catches what instance
                                // creation itself says.
                                features.pNext = UnsafeRawPointer(mp)
                                return withUnsafePointer(to: &features) { fp in
                                    var info = VkInstanceCreateInfo()
                                    info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO
                                    info.pApplicationInfo = appPointer
                                    info.enabledLayerCount = UInt32(layerNames.count)
                                    info.ppEnabledLayerNames = layerPointers
                                    info.enabledExtensionCount = UInt32(extensionNames.count)
                                    info.ppEnabledExtensionNames = extensionPointers
                                    if validation { info.pNext = UnsafeRawPointer(fp) }
                                    return vkCreateInstance(&info, nil, &created)
                                }
                            }
                        }
                    }
                }
            }
        }
        if r == VK_ERROR_INCOMPATIBLE_DRIVER, !headlessRetried, HeadlessNVIDIA.offerEGLDriver() {
            // NVIDIA's GLX library refuses to start without a display (seen on an H100 in a
            // container: vk_icdNegotiateLoaderICDInterfaceVersion gives
            // VK_ERROR_INITIALIZATION_FAILED); its EGL library is the same driver, headless.
            headlessRetried = true
            return try make(validation: validation)
        }
        guard r == VK_SUCCESS, let instance = created else {
            throw EngineError(.unsupported, "No Vulkan driver answered (vkCreateInstance: VkResult \(r.rawValue)). Install your GPU's Vulkan driver (on Debian: mesa-vulkan-drivers runs Vulkan on the CPU).", fallback: .cpuBackend)
        }
        guard validation else { return VulkanInstance(handle: instance, messenger: nil) }
        guard let address = vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT") else {
            vkDestroyInstance(instance, nil)
            throw EngineError(.unsupported, "\(VulkanValidation.variable)=1: the Vulkan loader has no vkCreateDebugUtilsMessengerEXT. Install the Khronos validation layer (Debian: vulkan-validationlayers).")
        }
        let create = unsafeBitCast(address, to: PFN_vkCreateDebugUtilsMessengerEXT.self)
        var messenger: VkDebugUtilsMessengerEXT?
        let mr = create(instance, &messengerInfo, nil, &messenger)
        guard mr == VK_SUCCESS, let messenger else {
            vkDestroyInstance(instance, nil)
            throw EngineError(.backendFailure, "Vulkan: creating the validation messenger failed (VkResult \(mr.rawValue)).")
        }
        return VulkanInstance(handle: instance, messenger: messenger)
    }

    /// Destroys the messenger and the instance (nothing made from it may be left).
    func destroy() {
        if let messenger, let address = vkGetInstanceProcAddr(handle, "vkDestroyDebugUtilsMessengerEXT") {
            unsafeBitCast(address, to: PFN_vkDestroyDebugUtilsMessengerEXT.self)(handle, messenger, nil)
        }
        vkDestroyInstance(handle, nil)
    }
}

/// Calls `body` with `strings` as an array of C strings (nil when empty).
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafePointer<CChar>?>?) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    let pointers = copies.map { UnsafePointer($0) }
    if pointers.isEmpty { return body(nil) }
    return pointers.withUnsafeBufferPointer { body($0.baseAddress) }
}

/// NVIDIA's driver installs its Vulkan manifest pointing at `libGLX_nvidia.so.0`, which fails to
/// start where there is no X display (cloud and container GPUs); `libEGL_nvidia.so.0` holds the
/// same Vulkan driver and needs no display. When no driver answered, the user chose no driver
/// files, and the EGL library is present, a manifest for it is written to the temporary folder
/// and added to the loader's search (`VK_ADD_DRIVER_FILES`, read at each instance creation).
enum HeadlessNVIDIA {
    static let library = "libEGL_nvidia.so.0"

    /// Adds the manifest and returns true when the retry is worth making.
    static func offerEGLDriver() -> Bool {
        let environment = ProcessInfo.processInfo.environment
        for chosen in ["VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES"] where environment[chosen] != nil { return false }
        guard let handle = dlopen(library, RTLD_LAZY | RTLD_LOCAL) else { return false }
        let exports = dlsym(handle, "vk_icdGetInstanceProcAddr") != nil
        dlclose(handle)
        guard exports else { return false }
        let manifest = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-nvidia-egl-icd-\(getpid()).json")
        let json = #"{"file_format_version": "1.0.0", "ICD": {"library_path": "\#(library)", "api_version": "1.3.0"}}"#
        guard (try? Data(json.utf8).write(to: manifest)) != nil else { return false }
        setenv("VK_ADD_DRIVER_FILES", manifest.path, 1)
        return true
    }
}
