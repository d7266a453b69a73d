import CDNNL
import CFFmpeg
import CZip
import XCTest

/// The C modules link against the Debian libraries the brief names, at the versions we build on.
final class SystemLibrariesTests: XCTestCase {
    func testFFmpegIsVersion5() {
        XCTAssertEqual(avformat_version() >> 16, 59, "libavformat 59 is FFmpeg 5.x")
        XCTAssertEqual(avcodec_version() >> 16, 59, "libavcodec 59 is FFmpeg 5.x")
        XCTAssertEqual(vivify_averror_eagain(), -11, "AVERROR(EAGAIN) is -EAGAIN on Linux")
    }

    func testEncodersWeOfferExist() {
        for name in ["libx264", "libx265", "libvpx-vp9", "libsvtav1", "ffv1", "mpeg4"] {
            XCTAssertNotNil(avcodec_find_encoder_by_name(name), "encoder \(name) missing from FFmpeg")
        }
    }

    func testOneDNNIsVersion2() {
        let version = dnnl_version()!.pointee
        XCTAssertEqual(version.major, 2)
        XCTAssertGreaterThanOrEqual(version.minor, 6)
    }

    func testLibzipOpensAnArchiveItWrote() throws {
        let path = NSTemporaryDirectory() + "vivify-zip-\(getpid()).zip"
        defer { unlink(path) }
        var error: Int32 = 0
        let archive = zip_open(path, ZIP_CREATE | ZIP_TRUNCATE, &error)
        XCTAssertNotNil(archive)
        let text = Array("{\"name\":\"test\"}".utf8)
        // libzip reads the buffer at zip_close, so everything happens while it is pinned.
        text.withUnsafeBytes { bytes in
            let source = zip_source_buffer(archive, bytes.baseAddress, zip_uint64_t(bytes.count), 0)
            XCTAssertGreaterThanOrEqual(zip_file_add(archive, "manifest.json", source, zip_flags_t(ZIP_FL_ENC_UTF_8)), 0)
            XCTAssertEqual(zip_close(archive), 0)
        }
        let reopened = zip_open(path, ZIP_RDONLY, &error)
        XCTAssertNotNil(reopened)
        XCTAssertEqual(zip_get_num_entries(reopened, 0), 1)
        XCTAssertEqual(String(cString: zip_get_name(reopened, 0, 0)), "manifest.json")
        zip_discard(reopened)
    }
}
