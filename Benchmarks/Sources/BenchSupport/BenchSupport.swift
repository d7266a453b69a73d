import Foundation

/// The median of `xs` (the mean of the middle two for an even count).
public func median(_ xs: [Double]) -> Double {
    let s = xs.sorted()
    return s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
}

/// Video frames in `path`, decoded and counted by ffprobe (-1 when it cannot tell).
public func countFrames(_ path: String) -> Int {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    p.arguments = ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path]
    let pipe = Pipe()
    p.standardOutput = pipe
    try! p.run()
    let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    p.waitUntilExit()
    return Int(text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").first ?? "") ?? -1
}
