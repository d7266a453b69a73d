import Foundation
import ModelFormats

extension FuzzTarget {
    /// The fixtures' ML Program protobufs, decoded once.
    static let mlprogramModelBytes: [Data] = mlprogramModels.compactMap { Data(base64Encoded: $0.base64) }

    /// An ML Program's weight file (`weights/weight.bin`, the MILBlob storage) under a real
    /// program that points into it: byte 0 picks the program (fp32, fp16, affine-quantised,
    /// blockwise int4, palettised, …), the rest is the weight file. Loaded as `vivify` loads a
    /// `.mlpackage` (`CoreMLProgramImporter.load`), then shapes and costs as every caller does.
    static func mlprogramWeights(_ data: Data) {
        guard let selector = data.first, !mlprogramModelBytes.isEmpty else { return }
        let model = mlprogramModelBytes[Int(selector) % mlprogramModelBytes.count]
        let modelPath = write(model, "weights-program/model.mlmodel")
        _ = write(Data(data.dropFirst()), "weights-program/weights/weight.bin")
        guard let imported = try? CoreMLProgramImporter.load(path: modelPath) else { return }
        exercise(imported.graph)
    }
}
