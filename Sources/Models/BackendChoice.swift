internal import Compute
package import Engine
internal import EngineDNNL
internal import EngineVulkan

/// Which backend runs the models.
public enum BackendChoice: String, Sendable, CaseIterable {
    /// The default: Vulkan on a discrete or integrated GPU when the machine has one, else
    /// oneDNN. Never lavapipe (Vulkan on the CPU): oneDNN is faster there. `resolved()` says which.
    case auto
    /// oneDNN, the fast CPU path.
    case onednn
    /// The plain Swift reference loops (slow; for checking).
    case reference
    /// Vulkan compute on the GPU (or on the CPU through Mesa's lavapipe); fp32, or fp16
    /// storage under `--precision fp16` (and under `auto` for catalog upscalers on a GPU).
    case vulkan

    /// The backend that runs: itself, or for `auto` `vulkan` or `onednn` (decided once per
    /// process; `VulkanDevices.autoDevice`).
    /// - Throws: `EngineError` `.invalidSetting` (exit 64) for a `VIVIFY_VULKAN_DEVICE` that
    ///   names no device.
    public func resolved() throws -> BackendChoice {
        guard self == .auto else { return self }
        return try Self.autoResolution.get()
    }

    /// The device `auto` chose, described (name and type), or nil when it chose oneDNN.
    public static func autoDeviceDescription() throws -> String? {
        try autoDevice.get().map { "\($0.name) (\($0.kind.rawValue))" }
    }

    private static let autoDevice: Result<VulkanDeviceInfo?, Error> = Result { try VulkanDevices.autoDevice() }
    private static let autoResolution: Result<BackendChoice, Error> = autoDevice.map { $0 == nil ? .onednn : .vulkan }

    /// The backend, running a model that decides nothing for itself under `precision`
    /// (`PrecisionChoice.precision(measured: false)` on oneDNN, its storage on Vulkan), its
    /// CPU work on `threads` threads (default: all cores; the GPU's shaders take none).
    /// On Vulkan, `modelFiles` are the files of an upscaler, which under `auto` stores fp16
    /// where the device prefers it and its fp16 quality is measured (a catalog upscaler, known
    /// by the digest of its files as its shipped int8 calibration is:
    /// `PrecisionChoice.vulkanPrecision(measured:automatic:)`); their digest is taken only then.
    /// `pinnedAuto` ("fp16", "fp32"): what `auto` stores such an upscaler in, as a segmented
    /// job's plan decided, instead of this device's choice.
    package func make(precision: PrecisionChoice = .fp32, threads: Int = ComputeThreads.allCores, modelFiles: [String]? = nil,
                      pinnedAuto: String? = nil) throws -> InferenceBackend {
        switch try resolved() {
        case .onednn, .auto: return try DNNLBackend(precision: precision.precision(measured: false), threads: threads)
        case .reference: return ReferenceBackend(threads: threads)
        case .vulkan:
            let device = try VulkanBackend(precision: .fp32)
            let automatic = pinnedAuto.flatMap(VulkanPrecision.init(rawValue:)) ?? device.automaticPrecision
            var measured = false
            if precision == .auto, automatic == .fp16, let files = modelFiles, !files.isEmpty {
                measured = ShippedCalibrations.covers(digest: try ModelDigest.of(files: files).hex)
            }
            let storage = precision.vulkanPrecision(measured: measured, automatic: automatic)
            return storage == device.precision ? device : try VulkanBackend(precision: storage)
        }
    }

    /// What `auto` stores a catalog upscaler in on this machine's Vulkan device ("fp16",
    /// "fp32"), for a plan to pin (`RunLimits.vulkanAutoStorage`); nil when no device opens.
    package static func vulkanAutomaticStorage() -> String? {
        (try? VulkanBackend(precision: .fp32))?.automaticPrecision.rawValue
    }

    /// What `backend` computes in ("fp32", "bf16", "int8" on oneDNN) or stores its values in
    /// ("fp32", "fp16" on Vulkan, after the device's fallbacks): what `--stats` records for a
    /// model stage.
    package static func precision(of backend: InferenceBackend) -> String {
        switch backend {
        case let vulkan as VulkanBackend: return vulkan.precision.rawValue
        case let dnnl as DNNLBackend: return dnnl.precision.rawValue
        default: return "fp32"
        }
    }

    /// What the Vulkan backend stores an unmeasured model's values in under `precision` (the
    /// colorizer's): "fp16" where fp16 is asked for by name and the device has 16-bit storage
    /// buffers, else "fp32".
    package static func vulkanStorage(under precision: PrecisionChoice) -> String {
        guard precision == .fp16 else { return "fp32" }
        return (try? VulkanBackend(precision: .fp16))?.precision.rawValue ?? "fp32"
    }

    /// The memory automatic tiles may take when `--max-memory` is not given, on the backend
    /// that runs: the backend's `tileMemoryBudget` (a quarter of a GPU's memory on Vulkan, 1 GiB
    /// on the CPU backends and lavapipe). What `--stats` records.
    package func standardTileMemoryBudget() -> Int {
        guard (try? resolved()) == .vulkan, let vulkan = try? VulkanBackend(precision: .fp32) else { return TiledRunner.standardMemoryBudget }
        return vulkan.tileMemoryBudget
    }

    /// A note when `precision` does not run as asked on this backend: fp16 on a CPU backend
    /// (they compute fp32), or on a Vulkan device without 16-bit storage buffers; int8 and
    /// bf16 on Vulkan, and on oneDNN when the CPU lacks their instructions (only then: a CPU's
    /// instructions are no news to a run on Vulkan); anything but fp32 on the reference backend. Opens the
    /// Vulkan device to ask it; nil when it runs as asked or the device cannot be opened (the
    /// run says why).
    public func precisionNote(_ precision: PrecisionChoice) throws -> String? {
        switch (try resolved(), precision) {
        case (_, .auto), (_, .fp32):
            return nil
        case (.vulkan, .fp16):
            return (try? VulkanBackend(precision: .fp16))?.precisionNote
        case (.vulkan, .int8), (.vulkan, .bf16):
            return "--precision \(precision.rawValue) is oneDNN's (--backend onednn): the Vulkan backend runs fp32 (or fp16 storage with --precision fp16)."
        case (.reference, _):
            return "--precision \(precision.rawValue): the reference backend runs fp32."
        case (.onednn, .fp16), (.auto, .fp16):
            return "--precision fp16 is the Vulkan backend's (--backend vulkan): \(try resolved().rawValue) runs in fp32."
        case (.onednn, _), (.auto, _):
            return precision.resolved(measured: false).note
        }
    }

    /// The matrix multiplier of the same kind (oneDNN's sgemm on `threads` threads, or plain
    /// loops).
    func makeMatrixMultiplier(threads: Int) -> MatrixMultiplier {
        switch self {
        case .onednn: return DNNLMatrixMultiplier(threads: threads)
        case .reference: return ReferenceMatrixMultiplier()
        // The colour guide's matching runs on the host: oneDNN's sgemm.
        case .vulkan, .auto: return DNNLMatrixMultiplier(threads: threads)
        }
    }
}
