import Vivify
import XCTest

final class ByteSizeTests: XCTestCase {
    func testSizesAsPeopleWriteThem() {
        XCTAssertEqual(ByteSize.parse("512M"), 512 << 20)
        XCTAssertEqual(ByteSize.parse("1.5G"), 3 << 29)
        XCTAssertEqual(ByteSize.parse("800MiB"), 800 << 20)
        XCTAssertEqual(ByteSize.parse("2gb"), 2 << 30)
        XCTAssertEqual(ByteSize.parse("1048576"), 1 << 20)
        XCTAssertEqual(ByteSize.parse("64 K"), 64 << 10)
        for bad in ["", "G", "-1G", "1X", "1.2.3M", "0", "1e9999G"] {
            XCTAssertNil(ByteSize.parse(bad), bad)
        }
        XCTAssertEqual(ByteSize.text(3 << 30), "3 GiB")
        XCTAssertEqual(ByteSize.text(1536 << 20), "1.5 GiB")
    }
}
