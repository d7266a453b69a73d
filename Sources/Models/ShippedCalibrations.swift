package import EngineDNNL
import Foundation

/// The int8 calibrations that come with Vivify: one per catalog upscaler, measured on twelve
/// BSD200 training photos (`Models/make-int8-calibrations.sh`, which runs `vivify models
/// calibrate`), and the reason `--precision auto` may run those models in int8: with exactly
/// these ranges every family keeps issue 16's int8 quality bars on Set5 and Set14
/// (`PrecisionTests`). Keyed by the SHA-256 of the model's files (`ModelDigest`), so a
/// catalog model given by path gets its calibration too, and changed weights get none.
package enum ShippedCalibrations {
    /// The shipped calibration of the model whose files have `digest` (hex).
    package static func calibration(digest: String) -> Int8Calibration? {
        guard let entry = table[digest] else { return nil }
        return try? JSONDecoder().decode(Int8Calibration.self, from: Data(entry.json.utf8))
    }

    /// Whether the model whose files have `digest` (hex) is a catalog upscaler with a shipped
    /// calibration (whose fp16 quality is measured too: `VulkanFP16QualityTests`).
    package static func covers(digest: String) -> Bool { table[digest] != nil }

    /// The catalog names that have a shipped calibration.
    package static var models: [String] { table.values.map(\.model).sorted() }
}
