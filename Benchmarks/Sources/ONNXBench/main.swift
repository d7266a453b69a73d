// The ONNX importer's speed: Real-ESRGAN animevideov3 x2 (SRVGGNetCompact) as ONNX, run by
// vivify against ONNX Runtime's CPU provider (PyPI `onnxruntime`) on the same file, and against
// vivify on the model's ncnn twin (.param/.bin), and vivify on the ONNX file in bf16 and int8
// (`--precision`; int8 calibrated first on a real photo, BSD200 122048, in a model store of
// the benchmark's own). Same 640×360 input, 2 threads each (vivify: OMP_NUM_THREADS=2; ONNX
// Runtime: intra-op 2, inter-op 1, graph optimisation ALL).
// One run, alternating: each round starts the three tools once each, in a rotating order; each
// start does one untimed warm-up and K timed runs, and the round's sample is their median. The
// table gives the median over the rounds. The ONNX file is written by scripts/onnx_fixtures.py
// (symbolic height/width) into a temporary folder, removed afterwards, unless --onnx names one.
// Usage: ONNXBench [--vivify PATH] [--runs N] [--size WxH] [--inner K] [--models DIR] [--onnx FILE]
import BenchSupport
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
var vivify = root.appendingPathComponent(".build/release/vivify").path
var models = root.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn").path
var runs = 7
var inner = 3
var size = "640x360"
var onnx: String? = nil
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--vivify": vivify = args.next()!
    case "--runs": runs = Int(args.next()!)!
    case "--inner": inner = Int(args.next()!)!
    case "--size": size = args.next()!
    case "--models": models = args.next()!
    case "--onnx": onnx = args.next()!
    default: fatalError("unknown argument \(a)")
    }
}
precondition(runs >= 1 && inner >= 1, "--runs and --inner must be at least 1")
precondition(size.split(separator: "x").compactMap { Int($0) }.count == 2, "--size must be WxH")

func shell(_ argv: [String]) -> String {
    argv.map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
}

// The ONNX file: made from the ncnn weights by the fixture script unless given.
let twin = "\(models)/realesr-animevideov3/realesr-animevideov3-x2.param"
var fixtureCommand: String? = nil
var fixtureDir: String? = nil
if onnx == nil {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("onnxbench-\(getpid())").path
    fixtureDir = dir
    let argv = ["python3", root.appendingPathComponent("scripts/onnx_fixtures.py").path, "--models-dir", models, "--out", dir]
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    p.arguments = argv
    p.standardOutput = FileHandle.nullDevice
    try! p.run()
    p.waitUntilExit()
    precondition(p.terminationStatus == 0, "\(shell(argv)) failed")
    onnx = "\(dir)/animevideov3-x2.onnx"
    fixtureCommand = shell(argv)
}
let onnxFile = onnx!

struct Tool {
    var name: String
    var argv: [String]
    var samples: [Double] = []
    var all: [Double] = []
    var outputShape: [Int] = []
    var version = ""
}
let env = ["OMP_NUM_THREADS": "2", "VIVIFY_MODELS": NSTemporaryDirectory() + "vivify-onnxbench-models-\(getpid())"]
let photo = root.deletingLastPathComponent().appendingPathComponent("shared/datasets/train/BSD200/122048.jpg").path
let calibrated = NSTemporaryDirectory() + "vivify-onnxbench-calibration-\(getpid()).png"
_ = timedRun(vivify, ["image", photo, calibrated, "-y", "--quiet", "--upscale", onnxFile, "--precision", "int8"], env: env)
try? FileManager.default.removeItem(atPath: calibrated)
var tools = [
    Tool(name: "vivify (oneDNN), ONNX import", argv: [vivify, "bench-model", "--model", onnxFile, "--size", size, "--runs", String(inner)]),
    Tool(name: "ONNX Runtime CPU", argv: ["python3", root.appendingPathComponent("Benchmarks/ort_bench.py").path, "--model", onnxFile,
                                          "--size", size, "--threads", "2", "--warmup", "1", "--runs", String(inner)]),
    Tool(name: "vivify (oneDNN), ncnn import", argv: [vivify, "bench-model", "--model", twin, "--size", size, "--runs", String(inner)]),
    Tool(name: "vivify ONNX import, bf16", argv: [vivify, "bench-model", "--model", onnxFile, "--size", size, "--runs", String(inner), "--precision", "bf16"]),
    Tool(name: "vivify ONNX import, int8", argv: [vivify, "bench-model", "--model", onnxFile, "--size", size, "--runs", String(inner), "--precision", "int8"]),
]
for round in 0..<runs {
    for k in 0..<tools.count {
        let i = (k + round) % tools.count
        let r = runJSON("/usr/bin/env", tools[i].argv, env: env)
        let times = r["runs"] as! [Double]
        tools[i].samples.append(median(times))
        tools[i].all += times
        tools[i].outputShape = (r["output_shape"] as! [Int]).suffix(3).map { $0 }
        if let v = r["onnxruntime_version"] as? String { tools[i].version = v }
    }
}
if let d = fixtureDir { try? FileManager.default.removeItem(atPath: d) }
try? FileManager.default.removeItem(atPath: env["VIVIFY_MODELS"]!)
precondition(Set(tools.map(\.outputShape)).count == 1, "output shapes differ: \(tools.map(\.outputShape))")

let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?.split(separator: "\n")
    .first { $0.hasPrefix("model name") }.map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
let o = tools[0].outputShape
print("Real-ESRGAN animevideov3 x2 (SRVGGNetCompact), \(size) -> \(o[2])x\(o[1]), 2 threads; \(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores")
print("\(runs) alternating rounds x (1 warm-up + \(inner) timed runs) per tool; median over rounds of each round's median")
print("  tool                                 median ms   min ms   round medians (ms)")
for t in tools {
    let name = t.version.isEmpty ? t.name : "\(t.name) \(t.version)"
    print("  " + name.padding(toLength: 36, withPad: " ", startingAt: 0)
        + String(format: " %9.1f %8.1f   ", median(t.samples) * 1000, t.all.min()! * 1000)
        + t.samples.map { String(format: "%.0f", $0 * 1000) }.joined(separator: " "))
}
let ours = median(tools[0].samples), ort = median(tools[1].samples), ncnn = median(tools[2].samples)
print(String(format: "  throughput ratio ORT/vivify (ONNX): %.2fx (target >= 1.0, stretch 1.3)", ort / ours))
print(String(format: "  ONNX import vs ncnn import: %.3fx time (%+.1f%%; expected within 5%%)", ours / ncnn, (ours / ncnn - 1) * 100))
let bf16 = median(tools[3].samples), int8 = median(tools[4].samples)
print(String(format: "  reduced precision (if the CPU lacks one, bench-model ran fp32): fp32/bf16 %.2fx, fp32/int8 %.2fx; ORT/int8 %.2fx",
             ours / bf16, ours / int8, ort / int8))
// Minima: the least disturbed run of each tool, a cross-check when the machine is shared.
let oursMin = tools[0].all.min()!, ortMin = tools[1].all.min()!, ncnnMin = tools[2].all.min()!
print(String(format: "  from minima: ORT/vivify %.2fx; ONNX vs ncnn import %+.1f%%", ortMin / oursMin, (oursMin / ncnnMin - 1) * 100))
print("commands (each run once per round, env OMP_NUM_THREADS=2):")
if let f = fixtureCommand { print("  \(f)") }
for t in tools { print("  \(shell(t.argv))") }
