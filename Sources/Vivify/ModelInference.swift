internal import Engine
import Foundation
internal import MediaIO
internal import ModelFormats
internal import SafeFiles
import Models

/// A NumPy `.npy` array (format versions 1–3): little- or big-endian float32, float16 or
/// float64, C order. Read to float32; written as little-endian float32 (version 1).
package struct NPYArray: Sendable, Equatable {
    /// Dimensions, outermost first.
    package var shape: [Int]
    /// The values in C order.
    package var values: [Float]

    /// Makes an array (`values.count` must be the product of `shape`).
    package init(shape: [Int], values: [Float]) {
        self.shape = shape
        self.values = values
    }

    /// Reads `path`; errors name the file and say what it holds instead.
    package static func read(_ path: String) throws -> NPYArray {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MediaError(.inputUnreadable, "Cannot read '\(path)'. Check the path and its permissions.")
        }
        // The file's bytes are read in place (no copy) and the values written once into their
        // final array: a tensor costs its file plus its float32 values, never more.
        return try data.withUnsafeBytes { try parse(UnsafeRawBufferPointer($0), path: path) }
    }

    /// Parses a whole `.npy` file held in `bytes`; `path` names it in errors.
    static func parse(_ bytes: UnsafeRawBufferPointer, path: String) throws -> NPYArray {
        func bad(_ why: String) -> MediaError {
            MediaError(.corruptInput, "'\(path)' is not an array Vivify reads: \(why). Save it with numpy.save as float32 (or float16), C order.")
        }
        guard bytes.count >= 10, bytes[0] == 0x93, Array(bytes[1...5]) == Array("NUMPY".utf8) else { throw bad("no .npy header") }
        let major = bytes[6]
        let headerLength: Int
        let start: Int
        switch major {
        case 1: headerLength = Int(bytes[8]) | Int(bytes[9]) << 8; start = 10
        case 2, 3:
            guard bytes.count >= 12 else { throw bad("a truncated header") }
            headerLength = Int(bytes[8]) | Int(bytes[9]) << 8 | Int(bytes[10]) << 16 | Int(bytes[11]) << 24; start = 12
        default: throw bad("format version \(major)")
        }
        guard headerLength <= 65_536, start + headerLength <= bytes.count else { throw bad("a header longer than the file") }
        let header = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<start + headerLength]), as: UTF8.self)
        func value(_ key: String) -> String? {
            guard let r = header.range(of: "'\(key)':") else { return nil }
            return String(header[r.upperBound...]).trimmingCharacters(in: .whitespaces)
        }
        // The dtype is quoted: 'descr': '<f4' (a value without its opening quote has no dtype).
        guard let descrText = value("descr"), descrText.first == "'", let q = descrText.dropFirst().firstIndex(of: "'") else { throw bad("no dtype") }
        let descr = String(descrText[descrText.index(after: descrText.startIndex)..<q])
        guard let fortran = value("fortran_order"), fortran.hasPrefix("False") else { throw bad("Fortran order") }
        // The closing parenthesis after the opening one (a ')' before the '(' trapped).
        guard let shapeText = value("shape"), let open = shapeText.firstIndex(of: "("),
              let close = shapeText[shapeText.index(after: open)...].firstIndex(of: ")") else { throw bad("no shape") }
        let dims = shapeText[shapeText.index(after: open)..<close].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        let shape = dims.compactMap { Int($0) }
        guard shape.count == dims.count, shape.allSatisfy({ $0 >= 0 }), let count = ModelLimits.elementCount(shape) else { throw bad("shape \(shapeText.prefix(60))") }
        let width: Int
        switch descr.dropFirst() {
        case "f4": width = 4
        case "f2": width = 2
        case "f8": width = 8
        default: throw bad("dtype '\(descr)'")
        }
        let bigEndian = descr.hasPrefix(">")
        let body = start + headerLength
        guard bytes.count - body >= count * width else { throw bad("\(bytes.count - body) bytes of data for \(count) values") }
        let values = [Float](unsafeUninitializedCapacity: count) { out, initialized in
            for i in 0..<count {
                let at = body + i * width
                switch width {
                case 2:
                    let v = bytes.loadUnaligned(fromByteOffset: at, as: UInt16.self)
                    out[i] = Float(Float16(bitPattern: bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)))
                case 8:
                    let v = bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self)
                    out[i] = Float(Double(bitPattern: bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)))
                default:
                    let v = bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self)
                    out[i] = Float(bitPattern: bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v))
                }
            }
            initialized = count
        }
        return NPYArray(shape: shape, values: values)
    }

    /// The file's bytes: version 1, little-endian float32, C order.
    package var fileData: Data {
        let dims = shape.map(String.init).joined(separator: ", ") + (shape.count == 1 ? "," : "")
        var header = "{'descr': '<f4', 'fortran_order': False, 'shape': (\(dims)), }"
        // Magic (6) + version (2) + length (2) + header + newline, padded to a multiple of 64.
        let unpadded = 10 + header.utf8.count + 1
        header += String(repeating: " ", count: (64 - unpadded % 64) % 64) + "\n"
        var data = Data([0x93] + Array("NUMPY".utf8) + [1, 0, UInt8(header.utf8.count & 0xFF), UInt8(header.utf8.count >> 8)])
        data.append(contentsOf: Array(header.utf8))
        values.withUnsafeBufferPointer { p in
            for v in p { withUnsafeBytes(of: v.bitPattern.littleEndian) { data.append(contentsOf: $0) } }
        }
        return data
    }
}

/// `vivify infer`: runs a model file's own graph (no pixel normalisation, no tiling) on a
/// tensor, so a model author can compare Vivify's result with PyTorch, coremltools or ONNX
/// Runtime on the same input.
package enum ModelInference {
    /// What ran.
    package struct Result: Sendable {
        /// The graph's input name and the output name it was read from.
        package var inputName: String, outputName: String
        /// The output, shaped 1×C×H×W.
        package var output: NPYArray
    }

    /// The model file's graph as its importer reads it (`library`: `--custom-layers`).
    /// `.wifm` bundles give their main model.
    static func graph(_ path: String, library: String? = nil) throws -> Graph {
        guard FileManager.default.fileExists(atPath: path) else {
            throw MediaError(.inputUnreadable, "Cannot open the model '\(path)': no such file. `vivify infer` takes a model file (\(ModelFileFormat.extensionList)).")
        }
        guard let format = ModelFileFormat.forPath(path) else {
            throw MediaError(.unsupported, "'\(path)' is not a model file Vivify reads. Use \(ModelFileFormat.extensionList).")
        }
        if let importer = format.importer {
            return try importer(path, ModelFileFormat.weightsFile(beside: path), nil, library).graph
        }
        let bundle = try ModelBundle.open(path: path)
        let main = bundle.manifest.main
        let file = bundle.url(for: main).path
        guard let importer = ModelFileFormat.forPath(file)?.importer else {
            throw MediaError(.unsupported, "The bundle '\(path)' holds '\((file as NSString).lastPathComponent)', which is not a model format Vivify reads.")
        }
        return try importer(file, bundle.weightsURL(for: main)?.path, bundle.manifest.customLayers, library).graph
    }

    /// Runs `model` on `input` (shape C×H×W or 1×C×H×W; `inputName`, when given, must be the
    /// graph's input).
    package static func run(model: String, input: NPYArray, inputName: String? = nil, backend: BackendChoice = .onednn,
                           memoryBudget: Int = ModelInference.standardMemoryBudget, limits: RunLimits = RunLimits()) throws -> Result {
        try run(model: model, inputs: [(inputName, input)], backend: backend, memoryBudget: memoryBudget, limits: limits)
    }

    /// The memory a whole-graph run's values may take unless `--max-memory` says otherwise.
    package static let standardMemoryBudget = 4 << 30

    /// Refuses, before anything is allocated, a run whose values would need more than `budget`
    /// bytes at once (no tiling here: a large tensor through a wide model needs gigabytes).
    static func checkMemory(_ g: Graph, input shape: Shape, model: String, budget: Int) throws {
        let peak = try g.peakActivationBytes(input: shape)
        guard peak > budget else { return }
        func gb(_ n: Int) -> String { n >= 1 << 30 ? String(format: "%.1f GiB", Double(n) / Double(1 << 30)) : "\((n + (1 << 20) - 1) >> 20) MiB" }
        let need = (peak + (1 << 30) - 1) >> 30
        throw MediaError(.invalidOptions, "Running '\(model)' on a \(shape.c)x\(shape.h)x\(shape.w) tensor needs about \(gb(peak)) for its layers' values at once, over the \(gb(budget)) allowed (--max-memory). Pass a smaller tensor, or --max-memory \(need)G if the machine has that memory.")
    }

    /// Runs `model` on named tensors. One is the image the engine runs (the one named as the
    /// graph's runtime input, or the unnamed one); an ONNX model's other graph inputs may be
    /// given values too (weights, scales, a second operand), bound as constants. An ONNX
    /// model takes tensors of rank 1–4 (batch 1) and gives its output at its own rank.
    /// The model runs under `limits` (its threads and precision).
    package static func run(model: String, inputs: [(name: String?, array: NPYArray)], backend: BackendChoice = .onednn,
                           memoryBudget: Int = ModelInference.standardMemoryBudget, limits: RunLimits = RunLimits()) throws -> Result {
        guard !inputs.isEmpty else { throw MediaError(.invalidOptions, "Pass an input tensor: --input FILE.npy.") }
        if (model as NSString).pathExtension.lowercased() == "onnx" {
            return try runONNX(model: model, inputs: inputs, backend: backend, memoryBudget: memoryBudget, precision: limits.precisionChoice,
                               threads: limits.threadCount)
        }
        guard inputs.count == 1 else {
            throw MediaError(.invalidOptions, "'\(model)' takes one input tensor (\(inputs.count) given); only ONNX models take values for other graph inputs.")
        }
        let (inputName, input) = inputs[0]
        let g = try graph(model, library: limits.customLayers)
        let name = g.valueNames[g.input]
        if let inputName, inputName != name {
            throw MediaError(.invalidOptions, "'\(model)' has one input, '\(name)', not '\(inputName)'. Pass --input \(name)=FILE or just --input FILE.")
        }
        var dims = input.shape
        if dims.count == 4 && dims[0] == 1 { dims.removeFirst() }
        guard dims.count == 3, dims.allSatisfy({ $0 > 0 }) else {
            throw MediaError(.invalidOptions, "The input array has shape \(input.shape); the engine runs one image tensor, C×H×W or 1×C×H×W.")
        }
        let shape = Shape(c: dims[0], h: dims[1], w: dims[2])
        // A tensor of other channels than the model takes is the input's fault (64), not a
        // damaged model's (its first layer would say its scales do not fit).
        if let c = g.inputChannels, c != shape.c {
            throw MediaError(.invalidOptions, "'\(model)' takes \(c) channels, but the input array has \(shape.c) (shape \(input.shape)). Give a \(c)×H×W (or 1×\(c)×H×W) tensor.")
        }
        try checkMemory(g, input: shape, model: model, budget: memoryBudget)
        let out = try backend.make(precision: limits.precisionChoice, threads: limits.threadCount).prepare(g, input: shape).run(Tensor(shape: shape, data: input.values))
        return Result(inputName: name, outputName: g.valueNames[g.output],
                      output: NPYArray(shape: [1, out.shape.c, out.shape.h, out.shape.w], values: out.data))
    }

    /// `vivify infer`'s whole job, from files to a file: the output checked before the work
    /// (never a tensor or the model it reads, an existing file only under `.replace`), the
    /// tensors read, `backend` resolved, the model run, the output written beside its target
    /// and renamed into place. nil when the output exists and is left alone (`.skip`).
    package static func run(model: String, inputFiles: [(name: String?, file: String)], output: String, existing: ExistingOutput,
                            backend: BackendChoice, memoryBudget: Int, limits: RunLimits) throws -> Result? {
        // The output is a .npy tensor, whatever it is called: a picture's name would be a lie.
        guard (output as NSString).pathExtension.lowercased() == "npy" else {
            throw MediaError(.invalidOptions, "'--output \(output)': infer writes a .npy tensor. Name the output NAME.npy.")
        }
        if case .skip = try OutputGuard.check(output: output, inputs: inputFiles.map(\.file) + [model], existing: existing) { return nil }
        let r = try run(model: model, inputs: try inputFiles.map { ($0.name, try NPYArray.read($0.file)) }, backend: try backend.resolved(),
                        memoryBudget: memoryBudget, limits: limits)
        let partial = PartialFile(target: URL(fileURLWithPath: output))
        do {
            try partial.write { try r.output.fileData.write(to: $0) }
        } catch {
            throw MediaError(.outputUnwritable, "Cannot write '\(output)': \(failureReason(error)).")
        }
        return r
    }

    static func runONNX(model: String, inputs: [(name: String?, array: NPYArray)], backend: BackendChoice, memoryBudget: Int,
                        precision: PrecisionChoice, threads: Int) throws -> Result {
        guard FileManager.default.fileExists(atPath: model) else {
            throw MediaError(.inputUnreadable, "Cannot open the model '\(model)': no such file.")
        }
        let runtime = try ONNXImporter.inspect(path: model).inputs
        let known = Set(runtime)
        for case let (name?, _) in inputs where !known.contains(name) {
            throw MediaError(.invalidOptions, "'\(model)' has no input '\(name)'; its inputs are \(runtime.map { "'\($0)'" }.joined(separator: ", ")).")
        }
        let unnamed = inputs.filter { $0.name == nil }
        guard unnamed.count <= 1 else { throw MediaError(.invalidOptions, "Name every input but one: --input NAME=FILE (\(unnamed.count) unnamed).") }
        // The image: the unnamed tensor (for the first input not given by name), or the model's first input.
        let givenNames = Set(inputs.compactMap(\.name))
        let imageName = (unnamed.isEmpty ? runtime.first : runtime.first { !givenNames.contains($0) }) ?? ""
        guard let image = (unnamed.first ?? inputs.first { $0.name == imageName })?.array else {
            throw MediaError(.invalidOptions, "No tensor for the model's input '\(imageName)': pass --input \(imageName)=FILE.")
        }
        var bindings: [String: ONNXTensor] = [:]
        for case let (name?, array) in inputs where name != imageName {
            bindings[name] = ONNXTensor(dims: array.shape, values: array.values)
        }
        var dims = image.shape
        guard (1...4).contains(dims.count), dims.allSatisfy({ $0 > 0 }), dims.count < 4 || dims[0] == 1 else {
            throw MediaError(.invalidOptions, "The input array has shape \(image.shape); the engine runs tensors of rank 1 to 4 with a batch of 1.")
        }
        dims = [Int](repeating: 1, count: 4 - dims.count) + dims
        let shape = Shape(c: dims[1], h: dims[2], w: dims[3])
        let onnx = try ONNXImporter.load(path: model, options: ONNXImportOptions(bindings: bindings, inputShape: shape))
        try checkMemory(onnx.graph.specialized(for: shape), input: shape, model: model, budget: memoryBudget)
        let out = try backend.make(precision: precision, threads: threads).prepare(onnx.graph, input: shape).run(Tensor(shape: shape, data: image.values))
        let full = [1, out.shape.c, out.shape.h, out.shape.w]
        return Result(inputName: onnx.inputName, outputName: onnx.outputName,
                      output: NPYArray(shape: Array(full.suffix(max(1, onnx.outputRank))), values: out.data))
    }
}
