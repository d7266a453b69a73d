import Foundation
import Vivify
import XCTest

/// An endless stream at flat memory: 200,000 small frames through a live pipeline (no model),
/// resident memory sampled as it runs.
final class SoakTests: XCTestCase {
    /// Resident set size of this process in bytes (/proc/self/statm).
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return (fields.count > 1 ? Int(fields[1]) ?? 0 : 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    func testTwoHundredThousandFramesAtFlatMemory() throws {
        var c = RunConfiguration(input: "generated", output: "-")
        c.input.synthetic = SyntheticInput(size: FrameSize(width: 16, height: 16), frames: 200_000)
        c.output.discard = true
        c.run.mode = .live
        let job = Job(configuration: c)
        var samples: [(frames: Int, bytes: Int)] = []
        job.events.progress = { done in
            if done % 20_000 == 0 { samples.append((done, Self.residentBytes())) }
        }
        let result = try job.run()
        XCTAssertEqual(result.framesIn, 200_000)
        XCTAssertEqual(result.report.framesIn, 200_000, "every frame counted though only a window is kept")
        XCTAssertEqual(result.report.framesProcessed + result.report.framesDropped, 200_000)
        let held = try XCTUnwrap(job.lastTracer).heldRecordCount
        XCTAssertLessThanOrEqual(held, 20_000 + 16, "the tracer keeps a bounded window")
        XCTAssertEqual(samples.count, 10)
        // From 40k frames on (the window is full at 20k), memory stays flat: the old tracer
        // grew by about 256 bytes a frame (41 MB over these 160,000 frames).
        let settled = samples.filter { $0.frames >= 40_000 }
        let growth = (settled.map(\.bytes).max() ?? 0) - (settled.first?.bytes ?? 0)
        print("soak RSS (MB) by frames: " + samples.map { "\($0.frames): \(String(format: "%.1f", Double($0.bytes) / 1_048_576))" }.joined(separator: ", "))
        XCTAssertLessThan(growth, 2 << 20, "resident memory grew by \(growth) bytes over 160,000 frames")
    }
}
