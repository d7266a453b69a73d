import Foundation
import Vivify
@testable import vivify
import XCTest

/// The command line maps its limits onto one value and writes no process-wide state: parsing
/// and validating the options changes nothing in force, and the library puts the value in
/// force when a run starts.
final class LimitOptionsTests: XCTestCase {
    func testParsingWritesNoGlobalUntilTheLibraryAppliesTheLimits() throws {
        let before = RunLimits.inForce
        defer { before.putInForce() }
        let run = try Run.parse(["in.mkv", "out.mkv", "--threads", "3", "--max-pixels", "1234", "--max-memory", "128M",
                                 "--precision", "fp32", "--timeout", "5"])
        XCTAssertEqual(RunLimits.inForce, before, "the options are checked, not put in force")
        var c = run.runConfiguration
        XCTAssertEqual(c.limits, RunLimits(threads: 3, maxPixels: 1234, maxMemory: 128 << 20, precision: .fp32))
        XCTAssertEqual(c.input.networkTimeout, 5, "the timeout travels with the input, to the reader that waits")

        // The other commands' groups map the same way.
        let image = try ImageCommand.parse(["a.png", "b.png", "--threads", "2", "--max-pixels", "99", "--precision", "bf16"])
        XCTAssertEqual(image.modelOptions.limits(pixels: image.limitOptions), RunLimits(threads: 2, maxPixels: 99, precision: .bf16))
        let work = try WorkCommand.parse(["dir", "--threads", "4"])
        XCTAssertEqual(work.threadOptions.limits, RunLimits(threads: 4))
        XCTAssertEqual(RunLimits.inForce, before)

        // A library entry point puts them in force (the memory budget is left out: once
        // given, this process could not take it back).
        c.limits.maxMemory = nil
        _ = try SegmentedJob.loadModels(c)
        XCTAssertEqual(RunLimits.inForce, RunLimits(threads: 3, maxPixels: 1234, maxMemory: before.maxMemory, precision: .fp32))
    }

    func testBadValuesAreStillRefusedWhenParsed() {
        for arguments in [["--threads", "0"], ["--max-pixels", "0"], ["--max-memory", "1M"], ["--timeout", "0"]] {
            XCTAssertThrowsError(try Run.parse(["in.mkv", "out.mkv"] + arguments), "\(arguments)")
        }
    }
}
