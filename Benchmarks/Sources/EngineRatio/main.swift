// Engine throughput against ncnn's CPU path (PyPI `ncnn`), same model files, same padded
// input (640×360; 256×256 for the colorizer), 2 threads each, measured in one run: median of
// N timed runs per tool. The built-in models (Models/) are also checked against their budgets
// (vivify-fast-2x: 640×360 → 1280×720 in ≤ 12 ms; vivify-color: 224×224 in ≤ 12 ms).
// Also reports achieved GFLOP/s against oneDNN sgemm's measured peak on the same 2 threads,
// and `--precision bf16` and `int8` against fp32 where the CPU has them (issue 16's targets:
// ≥ 1.6× and ≥ 2.5×). int8 is calibrated first on a real photo (BSD200 122048, a training
// photo) through `vivify image`, in a model store of the benchmark's own.
// Usage: EngineRatio [--vivify PATH] [--runs N] [--models DIR]
import BenchSupport
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
var vivify = root.appendingPathComponent(".build/release/vivify").path
var models = root.deletingLastPathComponent().appendingPathComponent("shared/models/ncnn").path
var runs = 5
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--vivify": vivify = args.next()!
    case "--runs": runs = Int(args.next()!)!
    case "--models": models = args.next()!
    default: fatalError("unknown argument \(a)")
    }
}

struct Case {
    var name: String; var file: String; var input: String; var output: String; var pad: String; var padMode: String
    var size = "640x360"
    var channels = 3
    /// Budget for our median, in seconds (built-in models).
    var budget: Double? = nil
}
let builtin = root.appendingPathComponent("Models").path
let cases = [
    Case(name: "waifu2x-photo-2x", file: "\(models)/waifu2x-upconv7-photo/scale2.0x_model", input: "Input1", output: "Eltwise4", pad: "7,7,7,7", padMode: "replicate"),
    Case(name: "realesr-animevideov3-4x", file: "\(models)/realesr-animevideov3/realesr-animevideov3-x4", input: "data", output: "output", pad: "0,0,0,0", padMode: "replicate"),
    Case(name: "vivify-fast-2x (built in)", file: "\(builtin)/vivify-fast-2x", input: "in0", output: "out0", pad: "0,0,0,0", padMode: "replicate", budget: 0.012),
    Case(name: "vivify-color (built in)", file: "\(builtin)/vivify-color", input: "in0", output: "out0", pad: "0,0,0,0", padMode: "replicate", size: "224x224", channels: 1, budget: 0.012),
]

let threads = ["OMP_NUM_THREADS": "2"]
var peak = 0.0
for (k, c) in cases.enumerated() {
    let ours = runJSON(vivify, ["bench-model", "--model", "\(c.file).param", "--size", c.size, "--pad", c.pad,
                                "--runs", String(runs)] + (k == 0 ? ["--gemm-peak"] : []), env: threads)
    let theirs = runJSON("/usr/bin/env", ["python3", root.appendingPathComponent("Benchmarks/ncnn_bench.py").path,
                                         "--param", "\(c.file).param", "--bin", "\(c.file).bin",
                                         "--input-blob", c.input, "--output-blob", c.output, "--size", c.size, "--pad", c.pad, "--channels", String(c.channels),
                                         "--pad-mode", c.padMode, "--threads", "2", "--runs", String(runs), "--fast"])
    if let p = ours["sgemm_peak_gflops"] as? Double { peak = p }
    let a = ours["median_s"] as! Double, b = theirs["median_s"] as! Double
    let gflops = ours["achieved_gflops"] as! Double
    print(c.name)
    print(String(format: "  vivify (oneDNN): median %.3f s  %.0f GFLOP/s (%.0f%% of sgemm peak %.0f GFLOP/s)", a, gflops, 100 * gflops / max(peak, 1), peak))
    print(String(format: "  ncnn CPU:        median %.3f s", b))
    print(String(format: "  throughput ratio vivify/ncnn: %.2fx (target >= 1.0, stretch 1.3)", b / a))
    if c.budget == nil {
        let store = threads.merging(["VIVIFY_MODELS": NSTemporaryDirectory() + "vivify-engine-ratio-models"]) { $1 }
        let photo = root.deletingLastPathComponent().appendingPathComponent("shared/datasets/train/BSD200/122048.jpg").path
        let calibrated = NSTemporaryDirectory() + "vivify-engine-ratio-calibration.png"
        _ = timedRun(vivify, ["image", photo, calibrated, "-y", "--quiet", "--upscale", "\(c.file).param", "--precision", "int8"], env: store)
        for (precision, target, hardware) in [("bf16", 1.6, "AVX-512 BF16 or AMX"), ("int8", 2.5, "AVX-512 VNNI or AMX")] {
            let r = runJSON(vivify, ["bench-model", "--model", "\(c.file).param", "--size", c.size, "--pad", c.pad,
                                     "--runs", String(runs), "--precision", precision], env: store)
            if r["precision"] as? String == precision {
                let t = r["median_s"] as! Double
                print("  vivify \(precision):     " + String(format: "median %.3f s, fp32/", t) + precision
                      + String(format: " %.2fx (target >= %.1f), ncnn/", a / t, target) + precision + String(format: " %.2fx", b / t))
            } else {
                print("  vivify \(precision):     not run (this CPU has no \(hardware))")
            }
        }
    }
    if let budget = c.budget {
        print(String(format: "  budget: median %.1f ms against %.0f ms at %@: %@", a * 1000, budget * 1000, c.size, a <= budget ? "met" : "NOT met"))
    }
}
