package import Engine
package import EngineDNNL
import Foundation
package import ModelCatalog

/// What a model computes in under a `--precision`, and with which int8 calibration:
/// one kept in the model store (`vivify models calibrate`) before a shipped one; nil under
/// int8 when there is neither (the model calibrates on its first picture).
package struct PrecisionPlan {
    package var precision: ComputePrecision
    package var calibration: Int8Calibration?
    /// "model store" or "shipped" (`Upscaler.int8CalibrationOrigin`).
    package var origin: String?
    /// The SHA-256 of the model's files, where the plan needed it (int8, or auto on a CPU that
    /// runs int8).
    package var digest: SHA256.Digest?

    /// The plan for the model `name` read from `files` under `choice`.
    package init(model name: String, files: [String], store: ModelStore, choice: PrecisionChoice) throws {
        // Only int8, and auto where the CPU could run int8, need to know of a shipped
        // calibration: only they hash the model's files.
        guard choice == .int8 || choice == .auto && choice.resolved().precision != "fp32" else {
            precision = choice.precision(measured: false)
            return
        }
        // One hash of the files serves both the shipped table and the model store's key.
        let digest = try ModelDigest.of(files: files)
        self.digest = digest
        let shipped = files.isEmpty ? nil : ShippedCalibrations.calibration(digest: digest.hex)
        precision = choice.precision(measured: shipped != nil)
        guard precision == .int8 else { return }
        if let kept = Int8CalibrationCache(store: store, name: name, digest: digest).load() {
            (calibration, origin) = (kept, "model store")
        } else if let shipped {
            (calibration, origin) = (shipped, "shipped")
        }
    }

    /// The oneDNN backend that runs the plan: int8 with its calibration, else the plan's
    /// precision (int8 without a calibration yet runs fp32: `DNNLBackend` has no ranges to
    /// quantise with), on `threads` threads. The one place a plan becomes a backend
    /// (upscalers, `bench-model`).
    package func makeBackend(threads: Int) throws -> DNNLBackend {
        try DNNLBackend(precision: precision, calibration: calibration, threads: threads)
    }
}
