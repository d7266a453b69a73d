package import Engine
internal import EngineDNNL
internal import EngineVulkan

/// `--precision`: the number format the oneDNN backend's convolutions compute in, or the
/// Vulkan backend's buffers store (fp16).
public enum PrecisionChoice: String, Sendable, CaseIterable, Codable {
    /// 32-bit floats (the library's default).
    case fp32
    /// bfloat16 inputs and weights with fp32 accumulation, on CPUs with AVX-512 BF16 or AMX.
    case bf16
    /// Post-training int8 on CPUs with AVX-512 VNNI or AMX: u8 inputs and s8 weights with
    /// calibrated scales, the first and last layers in fp32. A catalog upscaler comes with its
    /// calibration (`ShippedCalibrations`); any other model is calibrated once, on the first
    /// picture it upscales (or with `vivify models calibrate`), and the ranges kept in the
    /// model store.
    case int8
    /// The Vulkan backend's fp16 storage: values and weights kept as half floats, arithmetic
    /// in fp32 (devices without 16-bit storage buffers run fp32, with a note). The CPU
    /// backends run it in fp32.
    case fp16
    /// The fastest precision whose quality is measured for the model on this CPU: int8 for the
    /// upscalers that ship an int8 calibration (each keeps issue 16's int8 bars on Set5 and
    /// Set14 with it, and int8 measured fastest) where AVX-512 VNNI or AMX runs it; else bf16
    /// for them where AMX runs it; fp32 for everything else — models whose quality in reduced
    /// precision nobody measured, the colorizer among them. On AVX-512 BF16 without AMX (AMD
    /// Zen 4 measured) bf16 convolutions run no faster than fp32 direct ones and lose fp32's
    /// Winograd kernels, so bf16 is never chosen there. The `vivify` command's default:
    /// int8 runs whose activations clip (pictures far from the calibration photos, such as
    /// saturated synthetic patterns) are done again in fp32.
    case auto

    /// What this choice runs as on this CPU for a model whose reduced-precision quality is
    /// measured (`measured`, a catalog upscaler) or not, and a one-line note when an explicit
    /// choice had to fall back.
    package func resolved(measured: Bool = true) -> (precision: String, note: String?) {
        switch self {
        case .fp32:
            return ("fp32", nil)
        case .bf16:
            if DNNLBackend.cpuHasBF16 { return ("bf16", nil) }
            return ("fp32", "this CPU has neither AVX-512 BF16 nor AMX: --precision bf16 runs in fp32.")
        case .auto:
            guard measured else { return ("fp32", nil) }
            return (DNNLBackend.cpuHasVNNI ? "int8" : DNNLBackend.cpuHasAMX ? "bf16" : "fp32", nil)
        case .int8:
            if DNNLBackend.cpuHasVNNI { return ("int8", nil) }
            return ("fp32", "this CPU has neither AVX-512 VNNI nor AMX: --precision int8 runs in fp32.")
        case .fp16:
            // A Vulkan storage format: oneDNN computes in fp32 (`BackendChoice.precisionNote`
            // says so where the backend is known).
            return ("fp32", nil)
        }
    }

    /// What the Vulkan backend stores values and weights as under this choice, for a model
    /// whose fp16 quality is measured (`measured`: a catalog upscaler) or not: fp16 when asked
    /// for by name; under `auto`, `automatic` for a measured model (the device's choice,
    /// `VulkanBackend.automaticPrecision`, or what a plan pinned) and fp32 for any other (the
    /// colorizer, a model of the user's: nobody measured them in fp16, and values past ±65504
    /// would become infinite); fp32 under the CPU backends' int8 and bf16.
    func vulkanPrecision(measured: Bool, automatic: VulkanPrecision) -> VulkanPrecision {
        switch self {
        case .fp16: return .fp16
        case .auto: return measured ? automatic : .fp32
        case .fp32, .bf16, .int8: return .fp32
        }
    }

    /// The compute precision a model runs in under this choice (see `resolved(measured:)`).
    package func precision(measured: Bool) -> ComputePrecision {
        ComputePrecision(rawValue: resolved(measured: measured).precision) ?? .fp32
    }

    /// What models that decide nothing for themselves (the colorizer) compute in under this
    /// choice: what an unmeasured model gets ("fp32", "bf16"; int8 asked is fp32 run, since
    /// nothing calibrates them).
    package var unmeasured: String { precision(measured: false) == .int8 ? "fp32" : precision(measured: false).rawValue }
}
