internal import Engine
internal import EngineDNNL

/// `--precision`: the number format the oneDNN backend's convolutions compute in.
public enum PrecisionChoice: String, Sendable, CaseIterable {
    /// 32-bit floats (the default).
    case fp32
    /// bfloat16 inputs and weights with fp32 accumulation, on CPUs with AVX-512 BF16 or AMX.
    case bf16
    /// Post-training int8 on CPUs with AVX-512 VNNI or AMX: s8 inputs and weights with
    /// calibrated scales, the first layer in fp32. A model is calibrated once, on the first
    /// picture it upscales (or `vivify models calibrate`), and the ranges kept in the model store.
    case int8
    /// The fastest precision that keeps the quality bars on this CPU: int8 where AVX-512 VNNI
    /// or AMX runs it (every catalog upscaler keeps issue 16's int8 bars, and int8 measured
    /// fastest), else bf16 where AMX runs it, else fp32. On AVX-512 BF16 without AMX (AMD Zen 4
    /// measured) bf16 convolutions run no faster than fp32 direct ones and lose fp32's Winograd
    /// kernels, so fp32 is faster there.
    case auto

    /// What this choice runs as on this CPU, and a one-line note when it had to fall back.
    public func resolved() -> (precision: String, note: String?) {
        switch self {
        case .fp32:
            return ("fp32", nil)
        case .bf16:
            if DNNLBackend.cpuHasBF16 { return ("bf16", nil) }
            return ("fp32", "this CPU has neither AVX-512 BF16 nor AMX: --precision bf16 runs in fp32.")
        case .auto:
            return (DNNLBackend.cpuHasVNNI ? "int8" : DNNLBackend.cpuHasAMX ? "bf16" : "fp32", nil)
        case .int8:
            if DNNLBackend.cpuHasVNNI { return ("int8", nil) }
            return ("fp32", "this CPU has neither AVX-512 VNNI nor AMX: --precision int8 runs in fp32.")
        }
    }

    /// Puts the resolved precision in force for every model loaded from now on; returns the
    /// fallback note, if any.
    @discardableResult
    public func apply() -> String? {
        let (p, note) = resolved()
        DNNLBackend.defaultPrecision = ComputePrecision(rawValue: p) ?? .fp32
        return note
    }

    /// The precision in force ("fp32", "bf16" or "int8").
    public static var current: String { DNNLBackend.defaultPrecision.rawValue }

    /// Puts a recorded precision ("fp32", "bf16", "int8": a segment manifest's) in force; nil or an
    /// unknown name leaves fp32.
    public static func force(_ name: String?) {
        DNNLBackend.defaultPrecision = name.flatMap(ComputePrecision.init(rawValue:)) ?? .fp32
    }
}
