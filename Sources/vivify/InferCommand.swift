import ArgumentParser
import Foundation
import Vivify

/// `vivify infer`: a model's own graph on a NumPy tensor, for checking a conversion.
struct InferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "infer",
        abstract: "Run a model file on a tensor from a .npy file and write its output as .npy (to compare with PyTorch, coremltools or ONNX Runtime).",
        discussion: "MODEL is a model file (.param with its .bin, .mlmodel, .mlpackage, .onnx, or .wifm: its main model). The graph runs as the file defines it: no pixel normalisation and no tiling. The input is float32, float16 or float64, shaped C×H×W or 1×C×H×W; the output is float32, 1×C×H×W. An ONNX model takes tensors of rank 1 to 4 and writes its output at its own rank; its other graph inputs (weights, scales, a second operand) may be given as --input NAME=FILE, fixed to those values.")

    @Argument(help: "The model file.")
    var model: String

    @Option(name: .customLong("input"), help: ArgumentHelp("The input tensor: FILE.npy, or NAME=FILE.npy naming the model's input; ONNX models take more, one per graph input.", valueName: "[NAME=]FILE"))
    var inputs: [String]

    @Option(help: ArgumentHelp("Where the output goes (.npy).", valueName: "FILE"))
    var output: String

    @Option(help: "Backend: auto (default: Vulkan on a GPU when there is one, else onednn), onednn, vulkan or reference.")
    var backend: BackendChoice = .auto

    @OptionGroup var threadOptions: ThreadOptions

    @Option(name: .customLong("max-memory"), help: ArgumentHelp("Memory the graph's values may take at once, e.g. 2G or 16G (default: \(ByteSize.text(ModelInference.standardMemoryBudget))); a larger run is refused before it starts.", valueName: "SIZE"))
    var maxMemory: String?

    @Option(name: .customLong("custom-layers"), help: ArgumentHelp("Run Core ML custom layers that no declaration covers in this shared library (see `vivify run --help`).", valueName: "LIB.so"))
    var customLayers: String?

    @OptionGroup var overwriteOptions: OverwriteOptions

    /// `--max-memory` in bytes.
    var memoryBudget: Int { maxMemory.flatMap(ByteSize.parse) ?? ModelInference.standardMemoryBudget }

    func validate() throws {
        guard !inputs.isEmpty else { throw ValidationError("Pass an --input tensor.") }
        if let maxMemory { _ = try MemoryOptions.bytes(maxMemory) }
    }

    /// Threads and the custom layer library.
    var limits: RunLimits {
        var limits = threadOptions.limits
        limits.customLayers = customLayers
        return limits
    }

    func run() throws {
        MediaLog.configure(verbose: false)
        let named = inputs.map { argument -> (name: String?, file: String) in
            if let eq = argument.firstIndex(of: "="), !FileManager.default.fileExists(atPath: argument) {
                return (String(argument[..<eq]), String(argument[argument.index(after: eq)...]))
            }
            return (nil, argument)
        }
        guard let r = try ModelInference.run(model: model, inputFiles: named, output: output, existing: overwriteOptions.existing,
                                             backend: backend, memoryBudget: memoryBudget, limits: limits) else {
            ProgressReporter.writeStderr("vivify: '\(output)' exists; skipped (-n).\n")
            return
        }
        ProgressReporter.writeStderr("vivify: \(r.inputName) → \(r.outputName): \(r.output.shape.map(String.init).joined(separator: "x")) float32 written to \(output).\n")
    }
}
