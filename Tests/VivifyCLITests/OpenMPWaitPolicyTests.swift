import Foundation
import XCTest

/// vivify runs oneDNN's OpenMP threads with passive waits unless the user chose a policy
/// (issue 33: segmented runs on a loaded machine took 2.6 times as long as unsegmented ones,
/// idle teams spinning; `OpenMPWaitPolicy`). libgomp reads the variable when it is loaded, so
/// the process starts itself again with it: what counts is the running process's environment.
final class OpenMPWaitPolicyTests: XCTestCase {
    /// The `OMP_WAIT_POLICY` a `vivify run` waiting on a FIFO has, given `environment`.
    func policy(_ environment: [String: String]) throws -> String? {
        let dir = try CLI.tempDir()
        let fifo = dir + "/in.y4m"
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: CLI.binary)
        p.arguments = ["run", fifo, dir + "/out.mp4", "--quiet"]
        var env = ProcessInfo.processInfo.environment
        env.removeValue(forKey: "OMP_WAIT_POLICY")
        p.environment = env.merging(environment) { $1 }
        p.standardError = FileHandle.nullDevice
        try p.run()
        defer {
            kill(p.processIdentifier, SIGINT)
            p.waitUntilExit()
            XCTAssertEqual(p.terminationStatus, 130, "the same process, still signalled as before")
        }
        // Waiting for a writer: read its environment as it runs (after any restart).
        var found: String?
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            Thread.sleep(forTimeInterval: 0.3)
            guard let data = FileManager.default.contents(atPath: "/proc/\(p.processIdentifier)/environ") else { continue }
            let vars = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            found = vars.first { $0.hasPrefix("OMP_WAIT_POLICY=") }.map { String($0.dropFirst("OMP_WAIT_POLICY=".count)) }
            if found != nil { break }
        }
        return found
    }

    func testPassiveUnlessTheUserChose() throws {
        XCTAssertEqual(try policy([:]), "passive")
        XCTAssertEqual(try policy(["OMP_WAIT_POLICY": "active"]), "active")
    }
}
