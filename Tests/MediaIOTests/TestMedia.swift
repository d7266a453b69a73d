import Foundation
import XCTest

/// Paths to the project's own clips (Media/) and the shared real footage (../shared/media).
enum TestMedia {
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static func clip(_ name: String) -> String { packageRoot.appendingPathComponent("Media").appendingPathComponent(name).path }

    /// Runs ffprobe and returns its stdout (an independent check on what we read and write).
    static func ffprobe(_ args: [String]) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        p.arguments = ["-v", "error"] + args
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    /// Presentation timestamps of every decoded video frame, in stream time-base ticks.
    static func framePTS(_ path: String) throws -> [Int64] {
        try ffprobe(["-select_streams", "v:0", "-show_entries", "frame=pts", "-of", "csv=p=0", path])
            .split(separator: "\n")
            .compactMap { Int64($0.split(separator: ",").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? "") }
    }
}
