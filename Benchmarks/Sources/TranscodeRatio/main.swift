// Passthrough transcode: `vivify run` against the `ffmpeg` CLI with the same encoder settings
// (libx264, same preset and crf, audio copied), measured in one run, alternating, median of N.
// Usage: TranscodeRatio [--vivify PATH] [--input FILE] [--runs N] [--preset P] [--crf C]
import BenchSupport
import Foundation

var vivifyPath = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent(".build/release/vivify").path
var input = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("shared/media/videos/color_pexels_plane_clouds.mp4").path
var runs = 5
var preset = "medium"
var crf = "23"
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--vivify": vivifyPath = args.next()!
    case "--input": input = args.next()!
    case "--runs": runs = Int(args.next()!)!
    case "--preset": preset = args.next()!
    case "--crf": crf = args.next()!
    default: fatalError("unknown argument \(a)")
    }
}

func time(_ exe: String, _ argv: [String]) -> Double { timedRun(exe, argv) }


let dir = NSTemporaryDirectory() + "vivify-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
let ours = dir + "/vivify.mp4", theirs = dir + "/ffmpeg.mp4"
let vivifyArgs = ["run", input, ours, "--codec", "libx264", "--preset", preset, "--crf", crf, "--quiet"]
let ffmpegArgs = ["-nostdin", "-y", "-loglevel", "error", "-i", input, "-map", "0:v:0", "-map", "0:a?", "-c:v", "libx264",
                  "-preset", preset, "-crf", crf, "-pix_fmt", "yuv420p", "-c:a", "copy", theirs]

// Warm-up (page cache, dynamic loader), not measured.
_ = time(vivifyPath, vivifyArgs)
_ = time("/usr/bin/ffmpeg", ffmpegArgs)
var a: [Double] = [], b: [Double] = []
for i in 0..<runs {
    // Alternate the order so drift on a shared machine hits both alike.
    if i % 2 == 0 {
        a.append(time(vivifyPath, vivifyArgs)); b.append(time("/usr/bin/ffmpeg", ffmpegArgs))
    } else {
        b.append(time("/usr/bin/ffmpeg", ffmpegArgs)); a.append(time(vivifyPath, vivifyArgs))
    }
}
// Both outputs must hold the same frames, or the comparison means nothing.
let oursFrames = countFrames(ours)
let theirFrames = countFrames(theirs)
precondition(oursFrames == theirFrames, "frame counts differ: vivify \(oursFrames), ffmpeg \(theirFrames)")

let ratio = median(a) / median(b)
print("input: \(input)")
print("settings: libx264 preset=\(preset) crf=\(crf), audio copied; \(runs) runs each, alternating")
print(String(format: "vivify run: median %.3f s  (runs: %@)", median(a), a.map { String(format: "%.3f", $0) }.joined(separator: " ")))
print(String(format: "ffmpeg CLI: median %.3f s  (runs: %@)", median(b), b.map { String(format: "%.3f", $0) }.joined(separator: " ")))
print(String(format: "ratio vivify/ffmpeg: %.3f (target <= 1.10)  frames: %d", ratio, oursFrames))
try? FileManager.default.removeItem(atPath: dir)
exit(ratio <= 1.10 ? 0 : 1)
