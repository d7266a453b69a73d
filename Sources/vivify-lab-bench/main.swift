// vivify-lab-bench: times ColorScience's Lab round trip on one frame against its peers in the
// same run, and prints the ratios (STYLE habit 10: ratios against a peer, no hard-coded time).
//
//   LabConverter (threads)      rgbToLab + labToRGB, warm-up then median of --runs
//   LabReference (1 thread)     the same round trip in Double, one pixel at a time, median of 3
//   scikit-image                python3 Benchmarks/lab_bench.py (rgb2lab + lab2rgb), median of 5
//
// Usage: swift build -c release --product vivify-lab-bench
//        .build/release/vivify-lab-bench [--size 1920x1080] [--threads 2] [--runs 11]
//                                            [--python python3] [--no-peer]
// Run from the repository root (the peer script is found as Benchmarks/lab_bench.py).
// Prints one JSON object; exits 1 if the fast round trip is not exact on the frame.

import ColorScience
import Dispatch
import Foundation

struct Options {
    var width = 1920, height = 1080, threads = 2, runs = 11, referenceRuns = 3
    var python = "python3", peer = true
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("vivify-lab-bench: \(message)\n".utf8))
    exit(2)
}

func parseOptions() -> Options {
    var o = Options()
    var args = CommandLine.arguments.dropFirst()
    func value(_ flag: String) -> String {
        guard let v = args.popFirst() else { fail("\(flag) needs a value.") }
        return v
    }
    func positive(_ flag: String, _ text: String) -> Int {
        guard let n = Int(text), n >= 1 else { fail("\(flag) '\(text)': please specify a whole number of at least 1.") }
        return n
    }
    while let arg = args.popFirst() {
        switch arg {
        case "--size":
            let text = value(arg)
            let parts = text.lowercased().split(separator: "x").compactMap { Int($0) }
            guard parts.count == 2, parts[0] >= 1, parts[1] >= 1 else { fail("--size '\(text)' is not WxH. Pass e.g. --size 1920x1080.") }
            (o.width, o.height) = (parts[0], parts[1])
        case "--threads": o.threads = positive(arg, value(arg))
        case "--runs": o.runs = positive(arg, value(arg))
        case "--python": o.python = value(arg)
        case "--no-peer": o.peer = false
        case "-h", "--help":
            print("usage: vivify-lab-bench [--size WxH] [--threads N] [--runs N] [--python PATH] [--no-peer]")
            exit(0)
        default: fail("unknown argument '\(arg)'. Run with --help for the options.")
        }
    }
    return o
}

func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }

func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

@MainActor func timed(_ runs: Int, warmup: Int, _ body: () -> Void) -> [Double] {
    for _ in 0..<warmup { body() }
    return (0..<runs).map { _ in
        let t0 = now()
        body()
        return now() - t0
    }
}

/// Runs the scikit-image peer and returns its JSON object.
func runPeer(_ o: Options) -> [String: Any] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [o.python, "Benchmarks/lab_bench.py", "--size", "\(o.width)x\(o.height)", "--runs", "5"]
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { fail("cannot start '\(o.python) Benchmarks/lab_bench.py': \(error). Run from the repository root, or pass --no-peer.") }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0,
          let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last,
          let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
    else { fail("Benchmarks/lab_bench.py failed (status \(process.terminationStatus)). Install its peer with `pip install scikit-image`, or pass --no-peer.") }
    return json
}

let o = parseOptions()
let count = o.width * o.height

// A seeded uniform random frame (setup, outside every measurement).
var rgb = [UInt8](repeating: 0, count: 3 * count)
var state: UInt64 = 0x9E37_79B9_7F4A_7C15
for i in rgb.indices {
    state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    rgb[i] = UInt8(truncatingIfNeeded: state >> 56)
}
var l = [Float](repeating: 0, count: count), a = l, b = l
var back = [UInt8](repeating: 0, count: 3 * count)
let converter = LabConverter(threads: o.threads)

@MainActor func forward() {
    rgb.withUnsafeBufferPointer { src in
        l.withUnsafeMutableBufferPointer { lp in a.withUnsafeMutableBufferPointer { ap in b.withUnsafeMutableBufferPointer { bp in
            converter.rgbToLab(rgb: src, width: o.width, height: o.height, l: lp, a: ap, b: bp)
        } } }
    }
}
@MainActor func backward() {
    l.withUnsafeBufferPointer { lp in a.withUnsafeBufferPointer { ap in b.withUnsafeBufferPointer { bp in
        back.withUnsafeMutableBufferPointer { dst in
            converter.labToRGB(l: lp, a: ap, b: bp, width: o.width, height: o.height, rgb: dst)
        }
    } } }
}
@MainActor func lightnessOnly() {
    rgb.withUnsafeBufferPointer { src in
        l.withUnsafeMutableBufferPointer { lp in converter.lightness(rgb: src, width: o.width, height: o.height, l: lp) }
    }
}

let roundTrip = timed(o.runs, warmup: 3) { forward(); backward() }
let forwardRuns = timed(o.runs, warmup: 1) { forward() }
let backwardRuns = timed(o.runs, warmup: 1) { backward() }
let lightnessRuns = timed(o.runs, warmup: 1) { lightnessOnly() }
forward(); backward()
var notExact = 0, maxError = 0
for i in rgb.indices where rgb[i] != back[i] {
    notExact += 1
    maxError = max(maxError, abs(Int(rgb[i]) - Int(back[i])))
}

var referenceOut = [UInt8](repeating: 0, count: 3 * count)
let referenceRuns = timed(o.referenceRuns, warmup: 0) {
    for p in 0..<count {
        let lab = LabReference.rgbToLab(Double(rgb[3 * p]) / 255, Double(rgb[3 * p + 1]) / 255, Double(rgb[3 * p + 2]) / 255)
        let c = LabReference.labToRGB(lab.l, lab.a, lab.b)
        referenceOut[3 * p] = UInt8((c.r * 255).rounded())
        referenceOut[3 * p + 1] = UInt8((c.g * 255).rounded())
        referenceOut[3 * p + 2] = UInt8((c.b * 255).rounded())
    }
}

let fast = median(roundTrip), reference = median(referenceRuns)
var report: [String: Any] = [
    "size": [o.width, o.height],
    "threads": o.threads,
    "fast_round_trip_median_ms": fast * 1e3,
    "fast_round_trip_min_ms": roundTrip.min()! * 1e3,
    "fast_round_trip_runs_ms": roundTrip.map { $0 * 1e3 },
    "fast_rgbToLab_median_ms": median(forwardRuns) * 1e3,
    "fast_labToRGB_median_ms": median(backwardRuns) * 1e3,
    "fast_lightness_median_ms": median(lightnessRuns) * 1e3,
    "fast_round_trip_bytes_not_exact": notExact,
    "fast_round_trip_max_error_levels": maxError,
    "reference_round_trip_median_ms": reference * 1e3,
    "reference_threads": 1,
    "ratio_reference_over_fast": reference / fast,
]
if o.peer {
    let peer = runPeer(o)
    if let s = peer["round_trip_median_s"] as? Double {
        report["skimage_round_trip_median_ms"] = s * 1e3
        report["ratio_skimage_over_fast"] = s / fast
    }
    report["skimage"] = peer
}
let json = try JSONSerialization.data(withJSONObject: report, options: [.sortedKeys, .prettyPrinted])
print(String(decoding: json, as: UTF8.self))
exit(notExact == 0 ? 0 : 1)
