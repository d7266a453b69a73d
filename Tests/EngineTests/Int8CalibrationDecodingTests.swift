import EngineDNNL
import Foundation
import XCTest

/// Calibration files are untrusted (the model store, segment manifests; issue 33): a range
/// whose `hi` is shorter than its `lo` (or longer, or not finite) is refused when decoded, so
/// the -Ounchecked quantiser never reads past an array.
final class Int8CalibrationDecodingTests: XCTestCase {
    func testMalformedRangesAreRefusedWhenDecoded() throws {
        let good = #"{"inputRanges":{"conv1":{"lo":[-1,0,-2],"hi":[1,2,3]}}}"#
        let decoded = try JSONDecoder().decode(Int8Calibration.self, from: Data(good.utf8))
        XCTAssertEqual(decoded.inputRanges["conv1"], InputRange(lo: [-1, 0, -2], hi: [1, 2, 3]))
        for bad in [#"{"inputRanges":{"conv1":{"lo":[-1,0,-2],"hi":[1]}}}"#,
                    #"{"inputRanges":{"conv1":{"lo":[-1],"hi":[1,2,3]}}}"#,
                    #"{"inputRanges":{"conv1":{"lo":[-1,"nan"],"hi":[1,2]}}}"#] {
            XCTAssertThrowsError(try JSONDecoder().decode(Int8Calibration.self, from: Data(bad.utf8)), bad)
        }
        var big = InputRange(lo: [Float](repeating: 0, count: InputRange.maxChannels + 1), hi: [Float](repeating: 1, count: InputRange.maxChannels + 1))
        XCTAssertFalse(big.isWellFormed)
        big.lo.removeLast(2)
        big.hi.removeLast(1)
        XCTAssertFalse(big.isWellFormed, "unequal lengths")
    }
}
