import Foundation
import XCTest

/// Segmented jobs run oneDNN's OpenMP threads with passive waits unless the user chose a
/// policy (issue 33: segmented runs on a loaded machine took 2.6 times as long as unsegmented
/// ones, idle teams spinning; `OpenMPWaitPolicy`). libgomp reads the variable when it is
/// loaded, so the process starts itself again with it: what counts is the running process's
/// environment. Other runs keep their startup time and libgomp's default.
final class OpenMPWaitPolicyTests: XCTestCase {
    /// The `OMP_WAIT_POLICY` the running `vivify args` has, given `environment`; nil when it
    /// has none (read until it exits).
    func policy(_ args: [String], _ environment: [String: String] = [:]) throws -> String? {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = args
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "OMP_WAIT_POLICY")
        p.environment = env.merging(environment) { $1 }
        p.standardError = FileHandle.nullDevice
        try p.run()
        var found: String?
        var sawRunning = false
        while p.isRunning {
            // The models run after the restart: read the environment once they do.
            if let data = FileManager.default.contents(atPath: "/proc/\(p.processIdentifier)/environ"),
               let stat = try? String(contentsOfFile: "/proc/\(p.processIdentifier)/stat", encoding: .utf8),
               stat.contains(" R ") || stat.contains(" S ") {
                let vars = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                if let v = vars.first(where: { $0.hasPrefix("OMP_WAIT_POLICY=") }) { found = String(v.dropFirst("OMP_WAIT_POLICY=".count)) }
                sawRunning = true
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        p.waitUntilExit()
        XCTAssertEqual(p.terminationStatus, 0)
        XCTAssertTrue(sawRunning)
        return found
    }

    func testSegmentedJobsWaitPassivelyUnlessTheUserChose() throws {
        let dir = try CLI.tempDir()
        let clip = CLI.clip("testsrc-320x180-30fps-audio.mp4")
        let segmented = ["run", clip, dir + "/out.mkv", "--upscale", "--codec", "ffv1", "--segment-seconds", "0.5", "-y", "--quiet"]
        XCTAssertEqual(try policy(segmented), "passive")
        XCTAssertEqual(try policy(segmented, ["OMP_WAIT_POLICY": "active"]), "active")
        // In one piece: started once, with libgomp's default.
        var single = segmented
        single[single.firstIndex(of: "0.5")!] = "0"
        XCTAssertNil(try policy(single))
    }
}
