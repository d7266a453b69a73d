import Engine
import EngineDNNL
import Foundation
import ModelFormats
import XCTest

/// ONNX's own backend test suite (node tests: a model of one op, its inputs and the expected
/// outputs as TensorProto files), from Debian's `libonnx-testdata` (ONNX 1.12, opsets ≤ 17),
/// run through our importer on both backends for every op the importer claims.
///
/// How a test maps onto the engine, which runs one image tensor:
/// - the first graph input is the image; the others (weights, slopes, scales, pads, exponents,
///   a second operand) are bound as constants (`ONNXImportOptions.bindings`, as
///   `vivify infer --input NAME=FILE` does);
/// - a rank-1…3 input is lifted to 1×C×H×W with leading ones; a batch of N runs as N images;
/// - each graph output is read by its own import (`ONNXImportOptions.output`).
/// A test passes when both backends match every output within the suite's tolerance
/// (|ours − expected| ≤ 1e-7 + 1e-3·|expected|, NaN equal to NaN). A test the engine cannot
/// run is a skip with the importer's or backend's reason (listed); a wrong number is a failure.
final class ONNXBackendNodeTests: XCTestCase {
    /// The ops the importer claims (issue 15), whose node tests are all run.
    static let claimed: Set<String> = [
        "Conv", "ConvTranspose", "Relu", "LeakyRelu", "PRelu", "Sigmoid", "Tanh", "Clip", "HardSigmoid", "Elu", "Add", "Sub",
        "Mul", "Div", "Max", "Min", "Pow", "Sqrt", "BatchNormalization", "InstanceNormalization", "Softmax", "DepthToSpace",
        "SpaceToDepth", "Resize", "Upsample", "Pad", "Slice", "Concat", "Split", "GlobalAveragePool", "AveragePool", "MaxPool",
        "Gemm", "MatMul", "Identity", "Constant", "Cast", "Dropout", "Shape", "Gather", "Unsqueeze", "Squeeze", "Reshape",
        "Flatten", "Transpose", "ConstantOfShape", "Expand",
    ]

    /// Passes per op measured when this test was written: fewer is a regression.
    static let expectedPasses: [String: Int] = [
        "Add": 2, "AveragePool": 11, "BatchNormalization": 2, "Cast": 12, "Clip": 8, "Concat": 12, "Conv": 6, "ConvTranspose": 8,
        "DepthToSpace": 4, "Div": 3, "Dropout": 5, "Elu": 3, "Expand": 2, "Flatten": 9, "Gemm": 9, "GlobalAveragePool": 2,
        "HardSigmoid": 3, "Identity": 1, "InstanceNormalization": 2, "LeakyRelu": 3, "MatMul": 1, "Max": 6, "MaxPool": 10, "Min": 6,
        "Mul": 3, "PRelu": 2, "Pad": 1, "Pow": 9, "Relu": 1, "Reshape": 6, "Resize": 22, "Sigmoid": 2, "Slice": 6, "Softmax": 7,
        "SpaceToDepth": 2, "Split": 6, "Sqrt": 2, "Squeeze": 2, "Sub": 3, "Tanh": 2, "Transpose": 7, "Unsqueeze": 1, "Upsample": 1,
        "(graphs of several claimed ops)": 3,
    ]

    enum Outcome {
        case pass
        case skip(String)
        case fail(String)
    }

    static var dataRoot: String {
        ProcessInfo.processInfo.environment["VIVIFY_ONNX_TESTDATA"] ?? "/usr/share/libonnx-testdata/data/node"
    }

    func testNodeTestsOfEveryClaimedOp() throws {
        let root = Self.dataRoot
        guard FileManager.default.fileExists(atPath: root) else {
            let why = "ONNX's backend test data is not at \(root): apt-get install libonnx-testdata (scripts/install-deps does)"
            if ProcessInfo.processInfo.environment["CI"] == "true" { XCTFail(why) }
            throw XCTSkip(why)
        }
        var results: [String: [(test: String, outcome: Outcome)]] = [:]
        for test in try FileManager.default.contentsOfDirectory(atPath: root).sorted() {
            let dir = (root as NSString).appendingPathComponent(test)
            guard let info = try? ONNXImporter.inspect(path: dir + "/model.onnx") else { continue }
            // A test of one claimed op; a multi-node test only when every op in it is claimed.
            guard !info.ops.isEmpty, info.ops.allSatisfy(Self.claimed.contains) else { continue }
            let key = info.ops.count == 1 ? info.ops[0] : "(graphs of several claimed ops)"
            let outcome: Outcome = info.nonTensor.isEmpty ? Self.run(dir: dir, inputs: info.inputs, outputs: info.outputs)
                : .skip("passes \(info.nonTensor.joined(separator: ", ")) as a sequence or optional, not a tensor; the engine runs tensors")
            results[key, default: []].append((test, outcome))
        }
        var report = "ONNX backend node tests (\(root)), both backends, tolerance 1e-7 + 1e-3·|expected|:\n"
        var failures: [String] = []
        var totalPass = 0, totalSkip = 0, totalTests = 0
        for op in results.keys.sorted() {
            let list = results[op]!
            let passed = list.filter { if case .pass = $0.outcome { return true } else { return false } }.count
            totalPass += passed
            totalTests += list.count
            report += "  \(op): \(passed)/\(list.count) pass\n"
            for (test, outcome) in list {
                switch outcome {
                case .pass: break
                case .skip(let why):
                    totalSkip += 1
                    report += "      skip \(test): \(why)\n"
                case .fail(let why):
                    failures.append("\(test): \(why)")
                    report += "      FAIL \(test): \(why)\n"
                }
            }
            if let floor = Self.expectedPasses[op] {
                XCTAssertGreaterThanOrEqual(passed, floor, "\(op): \(passed) node tests pass, \(floor) did when this test was written")
            }
        }
        report += "  total: \(totalPass) pass, \(totalSkip) skipped (reasons above), \(failures.count) fail, of \(totalTests) tests of \(results.count) ops\n"
        print(report)
        XCTAssertEqual(failures, [], "node tests with wrong results")
        XCTAssertFalse(results.isEmpty, "no node tests found under \(root)")
        XCTAssertGreaterThanOrEqual(totalPass, 218, "node tests passing on both backends")
        for op in Self.claimed where results[op] == nil && !["Constant", "Dropout", "Cast", "Identity"].contains(op) {
            // Every claimed op has node tests in ONNX 1.12's suite except those whose tests use other ops too.
            print("  (no single-op node test of \(op) in this suite)")
        }
    }

    /// One node test: every output, both backends, every batch item.
    static func run(dir: String, inputs: [String], outputs: [String]) -> Outcome {
        let set = dir + "/test_data_set_0"
        do {
            guard let first = inputs.first else { return .skip("has no runtime input") }
            var bindings: [String: ONNXTensor] = [:]
            var image: ONNXTensor?
            for (i, name) in inputs.enumerated() {
                let path = set + "/input_\(i).pb"
                guard FileManager.default.fileExists(atPath: path) else { continue }  // an omitted optional input
                let t = try ONNXImporter.readTensor(path: path).tensor
                if name == first { image = t } else { bindings[name] = t }
            }
            guard let x = image else { return .skip("has no data for its input") }
            if x.ints != nil { return .skip("takes an integer or boolean tensor; the engine computes in float32") }
            guard (1...4).contains(x.dims.count), x.values.count > 0 else { return .skip("takes a rank-\(x.dims.count) tensor; the engine's images are 1×C×H×W") }
            let lifted = [Int](repeating: 1, count: 4 - x.dims.count) + x.dims
            let item = Shape(c: lifted[1], h: lifted[2], w: lifted[3])
            let batch = lifted[0]
            for (k, output) in outputs.enumerated() {
                let expected = try ONNXImporter.readTensor(path: set + "/output_\(k).pb").tensor
                if expected.ints != nil { return .skip("returns an integer tensor ('\(output)')") }
                let model: ONNXModel
                do {
                    model = try ONNXImporter.parse(try Data(contentsOf: URL(fileURLWithPath: dir + "/model.onnx")), source: "\((dir as NSString).lastPathComponent)/model.onnx",
                                                   directory: dir, options: ONNXImportOptions(bindings: bindings, inputShape: item, output: output))
                } catch let e as ModelFormatError where e.kind == .unsupported {
                    return .skip(e.message.replacingOccurrences(of: " Vivify cannot run this model; see the README's ONNX section for what the importer takes.", with: ""))
                }
                guard expected.values.count % batch == 0 else { return .fail("expects \(expected.dims) for a batch of \(batch)") }
                let per = expected.values.count / batch
                for backend in [try DNNLBackend(), ReferenceBackend()] as [InferenceBackend] {
                    let prepared: PreparedGraph
                    do {
                        prepared = try backend.prepare(model.graph, input: item)
                    } catch let e as EngineError where e.kind == .unsupported || e.kind == .invalidGraph {
                        return e.kind == .unsupported ? .skip(e.message) : .fail("\(backend.name): \(e.message)")
                    }
                    guard prepared.outputShape.count == per else {
                        return .fail("\(backend.name) gives \(prepared.outputShape) for '\(output)', expected \(expected.dims)")
                    }
                    for n in 0..<batch {
                        let input = Tensor(shape: item, data: Array(x.values[(n * item.count)..<((n + 1) * item.count)]))
                        let y = try prepared.run(input).data
                        let want = expected.values[(n * per)..<((n + 1) * per)]
                        for (i, (a, b)) in zip(y, want).enumerated() {
                            let ok = (a.isNaN && b.isNaN) || a == b || abs(a - b) <= 1e-7 + 1e-3 * abs(b)
                            if !ok {
                                return .fail("\(backend.name), '\(output)' item \(n), element \(i): \(a), expected \(b)")
                            }
                        }
                    }
                }
            }
            return .pass
        } catch let e as ModelFormatError where e.kind == .unsupported {
            // A tensor of a type Vivify does not read (strings).
            return .skip(e.message)
        } catch {
            return .fail("\(error)")
        }
    }
}
