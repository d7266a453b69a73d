// Pipeline benchmarks, each measured in one run:
//  1. Overhead: an offline `vivify run` with no model stage (threaded pipeline) against the
//     same job run as a plain single-threaded decode→encode loop (`--sequential`), median of N.
//  2. Live: Big Buck Bunny paced at 30 fps through the slowest catalog upscaler in live mode:
//     the dropped share against 1 − (model rate / 30), and end-to-end p95 against
//     model time + 2 frame intervals.
//     The slowest catalog model processes only a couple of frames in the 7.8 s clip, and the
//     last one waits for the model at end of stream, so a faster model is measured too.
// Usage: PipelineBench [--vivify PATH] [--runs N] [--skip-live] [--model NAME]
import BenchSupport
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
var vivify = root.appendingPathComponent(".build/release/vivify").path
var runs = 5
var live = true
var models = ["realcugan-4x", "waifu2x-photo-2x"]
let videos = root.deletingLastPathComponent().appendingPathComponent("shared/media/videos").path
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--vivify": vivify = args.next()!
    case "--runs": runs = Int(args.next()!)!
    case "--skip-live": live = false
    case "--model": models = [args.next()!]
    default: fatalError("unknown argument \(a)")
    }
}

@MainActor func run(_ argv: [String], env: [String: String] = [:]) -> Double { timedRun(vivify, argv, env: env) }

let dir = NSTemporaryDirectory() + "vivify-pipeline-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
let input = "\(videos)/color_pexels_plane_clouds.mp4"
// -y: every run after the first replaces the output (vivify refuses an existing one otherwise).
let job = ["run", input, "\(dir)/o.mp4", "--preset", "ultrafast", "--quiet", "-y"]
_ = run(job)
var threaded: [Double] = [], plain: [Double] = []
for i in 0..<runs {
    if i % 2 == 0 { threaded.append(run(job)); plain.append(run(job + ["--sequential"])) }
    else { plain.append(run(job + ["--sequential"])); threaded.append(run(job)) }
}
print("pipeline overhead (\(input.split(separator: "/").last!), libx264 ultrafast, no model, \(runs) runs each):")
print(String(format: "  threaded pipeline: median %.3f s   plain loop: median %.3f s   extra wall time %+.1f%% (target <= +5%%)",
             median(threaded), median(plain), 100 * (median(threaded) / median(plain) - 1)))

for model in models where live {
    let stats = "\(dir)/live.json", trace = "\(dir)/live-trace.json"
    let models = ProcessInfo.processInfo.environment["VIVIFY_MODELS"] ?? "\(dir)/models"
    var env = ["VIVIFY_MODELS": models]
    if ProcessInfo.processInfo.environment["VIVIFY_MODEL_MIRROR"] == nil {
        env["VIVIFY_MODEL_MIRROR"] = root.deletingLastPathComponent().appendingPathComponent("shared/models").path
    }
    _ = run(["run", "\(videos)/cartoon_big_buck_bunny_10s_360p.mp4", "\(dir)/live.mkv", "--upscale", model, "--mode", "live",
             "--realtime", "--stats", stats, "--trace", trace, "--preset", "ultrafast", "--quiet", "-y"], env: env)
    let j = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: stats))) as! [String: Any]
    let framesIn = Double(j["frames_in"] as! Int), dropped = Double(j["frames_dropped"] as! Int)
    let stage = (j["stages"] as! [[String: Any]]).first { $0["name"] as? String == "upscale" }!
    let modelSeconds = (stage["mean_ms"] as! Double) / 1000
    let expected = max(0, 1 - (1 / modelSeconds) / 30)
    let p95 = (j["end_to_end"] as! [String: Any])["p95_ms"] as! Double
    let bound = modelSeconds * 1000 + 2 * 1000 / 30
    print("live (Big Buck Bunny 640x360 paced at 30 fps, \(model)):")
    print(String(format: "  frames in %.0f, processed %d, dropped %.0f: dropped share %.3f vs 1 - model rate/30 = %.3f (model %.0f ms/frame)",
                 framesIn, j["frames_processed"] as! Int, dropped, dropped / framesIn, expected, modelSeconds * 1000))
    print(String(format: "  end-to-end p95 %.0f ms vs model time + 2 frame intervals = %.0f ms: %@", p95, bound, p95 <= bound ? "holds" : "exceeded"))
    // The last processed frame arrived at end of stream and waited for the model to finish
    // the one before; every other frame shows the steady state.
    let t = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: trace))) as! [String: Any]
    let events = t["traceEvents"] as! [[String: Any]]
    var arrival: [Int: Double] = [:], done: [Int: Double] = [:], modelSpan: [Int: Double] = [:]
    let modelTrack = events.first { $0["ph"] as? String == "M" && ($0["args"] as? [String: Any])?["name"] as? String == "upscale" }!["tid"] as! Int
    let lastTrack = events.filter { $0["ph"] as? String == "M" && $0["name"] as? String == "thread_name" }.compactMap { $0["tid"] as? Int }.max()!
    for e in events where e["ph"] as? String == "X" {
        let f = (e["args"] as! [String: Any])["frame"] as! Int
        let ts = e["ts"] as! Double, dur = e["dur"] as! Double
        if e["tid"] as? Int == 0 { arrival[f] = ts }
        if e["tid"] as? Int == lastTrack { done[f] = ts + dur }
        if e["tid"] as? Int == modelTrack { modelSpan[f] = dur }
    }
    let steady = done.keys.sorted().dropLast()
    let latencies = steady.map { (done[$0]! - arrival[$0]!) / 1000 }
    let overheads = steady.map { (done[$0]! - arrival[$0]! - modelSpan[$0]!) / 1000 }
    if let worst = latencies.max(), let worstOverhead = overheads.max() {
        print(String(format: "  without the end-of-stream frame (%d frames): worst end-to-end %.0f ms; worst time outside the model (queue waits + other stages) %.0f ms vs 2 frame intervals %.0f ms: %@",
                     latencies.count, worst, worstOverhead, 2000.0 / 30, worstOverhead <= 2000.0 / 30 ? "no backlog" : "backlog"))
    }
}
try? FileManager.default.removeItem(atPath: dir)
