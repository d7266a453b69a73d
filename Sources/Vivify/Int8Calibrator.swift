internal import Engine
internal import EngineDNNL
import Foundation
internal import MediaIO
package import ModelCatalog
internal import SafeFiles
import Models

/// `vivify models calibrate`: a model's int8 calibration measured on chosen pictures.
package enum Int8Calibrator {
    /// What a calibration measured, and where it went.
    package struct Report: Sendable {
        /// The model's name.
        package var model: String
        /// SHA-256 (hex) of the model's files: the key of a shipped calibration.
        package var digest: String
        /// How many layers' input ranges were measured.
        package var layers: Int
        /// The model store file the calibration was kept in (used by `--precision int8`/`auto`
        /// from now on).
        package var storeFile: String
        /// The calibration as key-sorted JSON, with `model` and `digest` beside the ranges.
        package var json: String
    }

    /// The models that come with an int8 calibration (and that `--precision auto` runs in int8
    /// where the CPU has VNNI or AMX).
    package static var shippedModels: [String] { ShippedCalibrations.models }

    /// `vivify models calibrate`: `calibrate`, with the calibration also written to `output`
    /// when one is given. The output is checked before the work, as every command's: never a
    /// picture or model file it reads, an existing file only under `.replace`; nil when it
    /// exists and is left alone (`.skip`), nothing calibrated.
    package static func calibrate(model: String, pictures: [String], tile: Int?, limits: RunLimits, output: String?,
                                  existing: ExistingOutput, log: (String) -> Void) throws -> Report? {
        if let output {
            var reads = pictures + [model]
            if let weights = ModelTools.weightsFile(beside: model) { reads.append(weights) }
            if case .skip = try OutputGuard.check(output: output, inputs: reads, existing: existing) { return nil }
        }
        let r = try calibrate(model: model, pictures: pictures, tile: tile, limits: limits, log: log)
        if let output {
            try PartialFile(target: URL(fileURLWithPath: output)).write { try Data((r.json + "\n").utf8).write(to: $0) }
        }
        return r
    }

    /// The smallest side of a picture calibrated on.
    package static let minimumSide = 32

    /// Measures `model`'s int8 input ranges on `pictures` (PNG or JPEG paths) in fp32 and keeps
    /// them in `store`, where `--precision int8` and `auto` find them before a shipped one.
    /// The pictures are read and the model loaded under `limits`.
    package static func calibrate(model: String, pictures: [String], tile: Int? = nil, store: ModelStore = ModelStore(),
                                 limits: RunLimits = RunLimits(), log: (String) -> Void = { _ in }) throws -> Report {
        guard !pictures.isEmpty else {
            throw MediaError(.invalidOptions, "Give the pictures to calibrate \(model) on: PNG or JPEG files like the ones it will upscale.")
        }
        let images = try pictures.map { path -> FloatPlanarImage in
            let image = try ImageIO.read(path: path, maxPixels: limits.pixelLimit).color.expandedToRGB()
            // A few pixels (a 1x1 picture passed the blankness test on its channels alone)
            // hold no texture for the layers to see.
            guard image.width >= minimumSide && image.height >= minimumSide else {
                throw MediaError(.invalidOptions, "The picture '\(path)' is \(image.width)x\(image.height): too small to calibrate on (its ranges would not hold for real pictures). Calibrate on pictures at least \(minimumSide)x\(minimumSide) pixels, with detail, like the ones the model will upscale.")
            }
            guard Upscaler.canCalibrate(image) else {
                throw MediaError(.invalidOptions, "The picture '\(path)' is nearly blank (standard deviation under 0.05): its ranges would be far too narrow for real pictures. Calibrate on pictures with detail.")
            }
            return image
        }
        let upscaler = try Upscaler(model: model, tile: tile, backend: .onednn, settings: limits.compute, store: store, log: log)
        let calibration = try upscaler.measureInt8Ranges(on: images)
        let cache = try upscaler.int8Cache()
        try cache.save(calibration)
        let digest = try upscaler.filesDigest().hex
        struct Shipped: Encodable {
            var model: String
            var digest: String
            var inputRanges: [String: InputRange]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let json = try encoder.encode(Shipped(model: upscaler.name, digest: digest, inputRanges: calibration.inputRanges))
        return Report(model: upscaler.name, digest: digest, layers: calibration.inputRanges.count, storeFile: cache.url.path,
                      json: String(decoding: json, as: UTF8.self))
    }
}
