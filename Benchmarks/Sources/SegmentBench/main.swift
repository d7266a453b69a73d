// Resumable segments: (1) the overhead of a segmented `vivify run` against the same job in one
// piece (--segment-seconds 0), one process each, alternating, median of N; (2) the throughput
// of `vivify work` as P processes at once against one process working the segments in turn.
// Usage: SegmentBench [--vivify PATH] [--input FILE] [--runs N] [--segment-seconds S]
//                     [--workers P] [--job upscale|colorize-upscale] [--loop N]
// --loop N plays the input N times (stream copy) to make segments of realistic length;
// --workers 0 skips the scale-out part.
import BenchSupport
import Foundation

let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
var vivifyPath = root.appendingPathComponent(".build/release/vivify").path
var input = root.deletingLastPathComponent().appendingPathComponent("shared/media/videos/cartoon_big_buck_bunny_10s_360p.mp4").path
var runs = 5
var segmentSeconds = "2.5"
var workers = 2
var jobs = ["upscale", "colorize-upscale"]
var loops = 1
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--vivify": vivifyPath = args.next()!
    case "--input": input = args.next()!
    case "--runs": runs = Int(args.next()!)!
    case "--segment-seconds": segmentSeconds = args.next()!
    case "--workers": workers = Int(args.next()!)!
    case "--job": jobs = [args.next()!]
    case "--loop": loops = Int(args.next()!)!
    default: fatalError("unknown argument \(a)")
    }
}

@MainActor func start(_ argv: [String], environment: [String: String]? = nil) -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: vivifyPath)
    p.arguments = argv
    p.standardError = FileHandle.nullDevice
    p.standardOutput = FileHandle.nullDevice
    if let environment { p.environment = environment }
    try! p.run()
    return p
}

func finish(_ p: Process) {
    p.waitUntilExit()
    precondition(p.terminationStatus == 0, "vivify \(p.arguments!.joined(separator: " ")) failed with \(p.terminationStatus)")
}

func seconds(_ body: () -> Void) -> Double {
    let t0 = DispatchTime.now().uptimeNanoseconds
    body()
    return Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e9
}



let dir = NSTemporaryDirectory() + "vivify-segment-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: dir) }
if loops > 1 {
    let looped = dir + "/looped.mp4"
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
    p.arguments = ["-nostdin", "-v", "error", "-y", "-stream_loop", String(loops - 1), "-i", input, "-c", "copy", looped]
    try! p.run()
    p.waitUntilExit()
    precondition(p.terminationStatus == 0, "ffmpeg could not loop \(input)")
    input = looped
}
print("input: \(input) (\(loops)x)")
print("segments of \(segmentSeconds) s; \(runs) runs each, alternating; \(ProcessInfo.processInfo.activeProcessorCount) cores")
var worst = 0.0
for job in jobs {
    let stages = job == "upscale" ? ["--upscale"] : ["--colorize", "--upscale"]
    let whole = dir + "/whole.mp4", cut = dir + "/segmented.mp4"
    let wholeArgs = ["run", input, whole, "-y", "--quiet", "--segment-seconds", "0"] + stages
    let cutArgs = ["run", input, cut, "-y", "--quiet", "--no-resume", "--segment-seconds", segmentSeconds] + stages
    finish(start(wholeArgs))  // warm-up: page cache, loader
    var a: [Double] = [], b: [Double] = []
    for i in 0..<runs {
        if i % 2 == 0 {
            a.append(seconds { finish(start(wholeArgs)) }); b.append(seconds { finish(start(cutArgs)) })
        } else {
            b.append(seconds { finish(start(cutArgs)) }); a.append(seconds { finish(start(wholeArgs)) })
        }
    }
    let frames = countFrames(whole)
    precondition(frames == countFrames(cut), "frame counts differ")
    let overhead = median(b) / median(a) - 1
    worst = max(worst, overhead)
    print("\(job): \(frames) frames")
    print(String(format: "  one piece:  median %.2f s  (runs: %@)", median(a), a.map { String(format: "%.2f", $0) }.joined(separator: " ")))
    print(String(format: "  segmented:  median %.2f s  (runs: %@)", median(b), b.map { String(format: "%.2f", $0) }.joined(separator: " ")))
    print(String(format: "  overhead: %+.1f%% (target <= 5%%)", overhead * 100))

    if workers < 1 { continue }
    // Scale-out on this machine: plan once, then the segments by one process in turn or by P at once.
    let work = dir + "/work", out = dir + "/scaled.mp4"
    let planned = Process()
    planned.executableURL = URL(fileURLWithPath: vivifyPath)
    planned.arguments = ["plan", input, out, "-y", "--work", work, "--segment-seconds", segmentSeconds] + stages
    let pipe = Pipe()
    planned.standardOutput = pipe
    planned.standardError = FileHandle.nullDevice
    try! planned.run()
    let count = Int(String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))!
    finish(planned)
    func redo() {
        // Fresh segments each time: remove the finished ones so every index is worked again.
        let segs = (try? FileManager.default.contentsOfDirectory(atPath: work)) ?? []
        for f in segs where f != "manifest.json" { try? FileManager.default.removeItem(atPath: work + "/" + f) }
    }
    var serial: [Double] = [], parallel: [Double] = []
    for _ in 0..<max(1, runs / 2) {
        redo()
        serial.append(seconds { for i in 0..<count { finish(start(["work", work, "--index", String(i), "--quiet"])) } })
        redo()
        parallel.append(seconds {
            var next = 0
            var running: [Process] = []
            while next < count || !running.isEmpty {
                while running.count < workers && next < count {
                    running.append(start(["work", work, "--index", String(next), "--quiet"]))
                    next += 1
                }
                finish(running.removeFirst())
            }
        })
    }
    print(String(format: "  vivify work, %d segments: one process %.2f s, %d at once %.2f s: throughput x%.2f (medians)",
                 count, median(serial), workers, median(parallel), median(serial) / median(parallel)))
    finish(start(["join", work]))
    precondition(countFrames(out) == frames, "the scaled-out join lost frames")
}
exit(worst <= 0.05 ? 0 : 1)
