import Foundation
import Vivify
import XCTest

/// The limits of a run as one value: the segment manifest's settings give the limits a job
/// was planned under, from manifests of every version.
final class RunLimitsTests: XCTestCase {
    /// The settings of a manifest as versions before `RunLimits` wrote them (keys sorted):
    /// `maxPixels`, `maxMemory` and `precision` beside the other settings.
    static func settingsJSON(maxMemory: Int? = nil, precision: String? = nil) -> Data {
        var extra = ""
        if let maxMemory { extra += "\"maxMemory\": \(maxMemory), " }
        if let precision { extra += "\"precision\": \"\(precision)\", " }
        return Data("""
            {"backend": "onednn", "codec": "libx264", "colorizeAfter": false, "copyAudioAndSubtitles": true, "input": "/tmp/in.mkv", \
            "maxPixels": 33177600, \(extra)"models": {"upscale vivify-fast-2x": "abab"}, "output": "/tmp/out.mkv", \
            "saturation": 1.0, "stabilize": true, "strict": false, "upscale": "2", "vivifyVersion": "0.1.0"}
            """.utf8)
    }

    func testOldManifestSettingsGiveTheLimitsTheyWerePlannedUnder() throws {
        let decode = { try JSONDecoder().decode(SegmentManifest.Settings.self, from: $0) }
        // `plan --max-pixels 33177600 --max-memory 256M --precision int8`.
        let int8 = try decode(Self.settingsJSON(maxMemory: 256 << 20, precision: "int8"))
        XCTAssertEqual(int8.limits, RunLimits(maxPixels: 33_177_600, maxMemory: 256 << 20, precision: .int8))
        XCTAssertEqual(int8.configuration.limits, int8.limits, "the rebuilt run carries them")
        // From before `--precision` and `--max-memory`: fp32, the default budget.
        let old = try decode(Self.settingsJSON())
        XCTAssertEqual(old.limits, RunLimits(maxPixels: 33_177_600, precision: .fp32))
        // A precision this version does not know is fp32, as before (fp16 is known since the
        // Vulkan backend's fp16 storage).
        XCTAssertEqual(try decode(Self.settingsJSON(precision: "fp8")).limits.precision, .fp32)
        XCTAssertEqual(try decode(Self.settingsJSON(precision: "fp16")).limits.precision, .fp16)
        XCTAssertEqual(try decode(Self.settingsJSON(precision: "bf16")).limits.precision, .bf16)

        // Written back as the run configuration's limits (manifest version 2), read back alike.
        let root = try JSONSerialization.jsonObject(with: JSONEncoder().encode(int8)) as? [String: Any] ?? [:]
        let written = (root["configuration"] as? [String: Any])?["limits"] as? [String: Any] ?? [:]
        XCTAssertEqual(written["maxPixels"] as? Int, 33_177_600)
        XCTAssertEqual(written["maxMemory"] as? Int, 256 << 20)
        XCTAssertEqual(written["precision"] as? String, "int8")
        XCTAssertEqual(try decode(JSONEncoder().encode(int8)), int8)
    }

    func testLimitsAreOneCodableValue() throws {
        let limits = RunLimits(threads: 3, maxPixels: 1234, maxMemory: 128 << 20, precision: .bf16)
        XCTAssertEqual(try JSONDecoder().decode(RunLimits.self, from: JSONEncoder().encode(limits)), limits)
        // Limits not given are left out (the library's defaults).
        XCTAssertEqual(String(decoding: try JSONEncoder().encode(RunLimits(maxPixels: 5)), as: UTF8.self), "{\"maxPixels\":5}")
        XCTAssertEqual(RunConfiguration(input: "a.mkv", output: "b.mkv").limits, RunLimits())
    }
}
