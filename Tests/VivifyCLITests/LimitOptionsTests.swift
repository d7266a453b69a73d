import Compute
import Foundation
import Models
import Vivify
@testable import vivify
import XCTest

/// The command line maps its limits onto one value and writes no process-wide state (there is
/// none to write: no thread count either, `ComputeThreads` only says what all cores are), and
/// the library reads the limits from the value.
final class LimitOptionsTests: XCTestCase {
    func testParsingWritesNoGlobalAndTheLibraryReadsTheLimitsFromTheValue() throws {
        let run = try Run.parse(["in.mkv", "out.mkv", "--threads", "3", "--max-pixels", "1234", "--max-memory", "128M",
                                 "--precision", "fp32", "--timeout", "5"])
        let c = run.runConfiguration
        XCTAssertEqual(c.limits, RunLimits(threads: 3, maxPixels: 1234, maxMemory: 128 << 20, precision: .fp32))
        XCTAssertEqual(c.input.networkTimeout, 5, "the timeout travels with the input, to the reader that waits")

        // The other commands' groups map the same way.
        let image = try ImageCommand.parse(["a.png", "b.png", "--threads", "2", "--max-pixels", "99", "--precision", "bf16"])
        XCTAssertEqual(image.modelOptions.limits(pixels: image.limitOptions), RunLimits(threads: 2, maxPixels: 99, precision: .bf16))
        let work = try WorkCommand.parse(["dir", "--threads", "4"])
        XCTAssertEqual(work.threadOptions.limits, RunLimits(threads: 4))

        // The models are loaded under the value's precision, memory budget, pixel limit and
        // thread count.
        XCTAssertEqual(c.limits.compute, ComputeSettings(precision: .fp32, memoryBudget: 128 << 20, maxPixels: 1234, threads: 3))
        XCTAssertEqual(RunLimits(maxMemory: nil).compute, ComputeSettings(precision: .fp32, memoryBudget: nil, maxPixels: RunLimits.defaultMaxPixels,
                                                                          threads: ComputeThreads.allCores),
                       "limits left out are the library's defaults")
        XCTAssertEqual(RunLimits(maxMemory: nil).compute, ComputeSettings(), "the settings' own defaults are the same")
        _ = try SegmentedJob.loadModels(c)
    }

    func testBadValuesAreStillRefusedWhenParsed() {
        for arguments in [["--threads", "0"], ["--max-pixels", "0"], ["--max-memory", "1M"], ["--timeout", "0"]] {
            XCTAssertThrowsError(try Run.parse(["in.mkv", "out.mkv"] + arguments), "\(arguments)")
        }
    }
}
