internal import Engine
internal import EngineDNNL
internal import EngineVulkan

/// Which backend runs the models.
public enum BackendChoice: String, Sendable, CaseIterable {
    /// oneDNN, the fast CPU path (default).
    case onednn
    /// The plain Swift reference loops (slow; for checking).
    case reference
    /// Vulkan compute on the GPU (or on the CPU through Mesa's lavapipe); fp32.
    case vulkan

    func make() throws -> InferenceBackend {
        switch self {
        case .onednn: return try DNNLBackend()
        case .reference: return ReferenceBackend()
        case .vulkan: return try VulkanBackend()
        }
    }

    /// The matrix multiplier of the same kind (oneDNN's sgemm, or plain loops).
    func makeMatrixMultiplier() -> MatrixMultiplier {
        switch self {
        case .onednn: return DNNLMatrixMultiplier()
        case .reference: return ReferenceMatrixMultiplier()
        // The colour guide's matching runs on the host: oneDNN's sgemm.
        case .vulkan: return DNNLMatrixMultiplier()
        }
    }
}
