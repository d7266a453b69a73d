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

/// Runs `exe argv` (environment plus `env`) and parses the last line it prints as a JSON
/// object; stops the benchmark when the tool fails.
public func runJSON(_ exe: String, _ argv: [String], env: [String: String] = [:]) -> [String: Any] {
    let p = process(exe, argv, env: env)
    let out = Pipe()
    p.standardOutput = out
    try! p.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    p.waitUntilExit()
    precondition(p.terminationStatus == 0, "\(exe) \(argv.joined(separator: " ")) failed")
    let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? "{}"
    return try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
}

/// Runs `exe argv` (environment plus `env`) with its output discarded and returns its wall
/// time in seconds; stops the benchmark when the tool fails.
public func timedRun(_ exe: String, _ argv: [String], env: [String: String] = [:]) -> Double {
    let p = process(exe, argv, env: env)
    p.standardOutput = FileHandle.nullDevice
    p.standardError = FileHandle.nullDevice
    let start = DispatchTime.now().uptimeNanoseconds
    try! p.run()
    p.waitUntilExit()
    precondition(p.terminationStatus == 0, "\(exe) \(argv.joined(separator: " ")) failed with \(p.terminationStatus)")
    return Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
}

/// A process for `exe argv` with this process's environment plus `env`.
func process(_ exe: String, _ argv: [String], env: [String: String]) -> Process {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: exe)
    p.arguments = argv
    p.environment = ProcessInfo.processInfo.environment.merging(env) { _, new in new }
    return p
}
