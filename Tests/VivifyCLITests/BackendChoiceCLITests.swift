import Foundation
import XCTest

/// `--backend auto` (the default) and the device list, through the binary on this machine's
/// real Vulkan driver: auto runs a GPU when there is one and never lavapipe (a CPU device),
/// so on a machine with no GPU (CI) it runs oneDNN and `--stats` says so; `VIVIFY_VULKAN_DEVICE`
/// naming no device is exit 64 with the list's command in the message.
final class BackendChoiceCLITests: XCTestCase {
    /// `vivify probe --devices --json`, parsed.
    static func devices(environment: [String: String] = [:]) throws -> (code: Int32, report: [String: Any], stderr: String) {
        let r = try CLI.vivify(["probe", "--devices", "--json"], environment: environment)
        let report = (try? JSONSerialization.jsonObject(with: r.stdout)) as? [String: Any] ?? [:]
        return (r.code, report, r.stderr)
    }

    /// The devices' entries; a skip when the driver lists none (unless VIVIFY_REQUIRE_VULKAN=1).
    static func listed() throws -> [[String: Any]] {
        let d = try devices()
        XCTAssertEqual(d.code, 0, d.stderr)
        let list = d.report["devices"] as? [[String: Any]] ?? []
        if list.isEmpty {
            if ProcessInfo.processInfo.environment["VIVIFY_REQUIRE_VULKAN"] == "1" {
                XCTFail("No Vulkan device (VIVIFY_REQUIRE_VULKAN=1): \(d.report["driver_problem"] ?? "")")
            } else {
                throw XCTSkip("No Vulkan device: install mesa-vulkan-drivers (scripts/install-deps).")
            }
        }
        return list
    }

    static func isGPU(_ d: [String: Any]) -> Bool { ["discrete", "integrated"].contains(d["type"] as? String) }

    /// The list names lavapipe as a CPU device with its driver and Vulkan version, and auto's
    /// choice follows the rule: the first discrete or integrated GPU, else oneDNN.
    func testDeviceListAndAutoChoice() throws {
        let list = try Self.listed()
        guard let lavapipe = list.first(where: { ($0["name"] as? String)?.hasPrefix("llvmpipe") == true }) else {
            throw XCTSkip("lavapipe is not among the Vulkan devices: \(list)")
        }
        XCTAssertEqual(lavapipe["type"] as? String, "cpu")
        XCTAssertTrue((lavapipe["driver"] as? String)?.contains("Mesa") == true, "\(lavapipe)")
        XCTAssertNotNil((lavapipe["api_version"] as? String).flatMap { $0.range(of: #"^1\.\d+\.\d+$"#, options: .regularExpression) }, "\(lavapipe)")
        XCTAssertEqual(list.map { $0["index"] as? Int }, Array(0..<list.count).map { $0 })
        let report = try Self.devices().report
        if let gpu = list.first(where: { $0["type"] as? String == "discrete" }) ?? list.first(where: Self.isGPU) {
            XCTAssertEqual(report["auto"] as? String, "vulkan")
            XCTAssertEqual(report["auto_device"] as? Int, gpu["index"] as? Int)
        } else {
            XCTAssertEqual(report["auto"] as? String, "onednn")
            XCTAssertTrue(report["auto_device"] is NSNull)
            XCTAssertEqual(report["vulkan_device"] as? Int, lavapipe["index"] as? Int, "--backend vulkan runs lavapipe when it is all there is")
        }
        // Naming lavapipe explicitly does not make auto run it.
        let named = try Self.devices(environment: ["VIVIFY_VULKAN_DEVICE": "\(lavapipe["index"] as? Int ?? 0)"])
        XCTAssertEqual(named.code, 0, named.stderr)
        XCTAssertEqual(named.report["auto"] as? String, "onednn")
        XCTAssertEqual(named.report["vulkan_device"] as? Int, lavapipe["index"] as? Int)
        // The text form says the same.
        let text = try CLI.vivify(["probe", "--devices"])
        XCTAssertEqual(text.code, 0, text.stderr)
        let out = String(decoding: text.stdout, as: UTF8.self)
        XCTAssertTrue(out.contains("llvmpipe") && out.contains("type: cpu"), out)
        if !list.contains(where: Self.isGPU) { XCTAssertTrue(out.contains("--backend auto: onednn"), out) }
    }

    /// A run with the default backend records the backend that ran in `--stats`: oneDNN here
    /// (no GPU), also when VIVIFY_VULKAN_DEVICE names lavapipe; the same run with
    /// `--backend onednn` gives the same bytes.
    func testAutoRunsOneDNNWithoutAGPU() throws {
        let list = try Self.listed()
        guard !list.contains(where: Self.isGPU), let lavapipe = list.firstIndex(where: { $0["type"] as? String == "cpu" }) else {
            throw XCTSkip("this machine has a GPU or no CPU Vulkan device: auto's oneDNN case is not what runs here")
        }
        let dir = try CLI.tempDir()
        let clip = dir + "/in.y4m"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=48x32:rate=10", "-frames:v", "2", "-pix_fmt", "yuv420p", clip])
        var outputs: [Data] = []
        for (name, extra, env) in [("auto", [String](), [String: String]()), ("named", [], ["VIVIFY_VULKAN_DEVICE": "\(lavapipe)"]),
                                   ("onednn", ["--backend", "onednn"], [:])] {
            let r = try CLI.vivify(["run", clip, "\(dir)/\(name).y4m", "--upscale", "--stats", "\(dir)/\(name).json", "--quiet"] + extra, environment: env)
            XCTAssertEqual(r.code, 0, "\(name): \(r.stderr)")
            let stats = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(name).json"))) as? [String: Any]
            let run = stats?["run"] as? [String: Any] ?? [:]
            XCTAssertEqual((run["settings"] as? [String: String])?["backend"], "onednn", name)
            XCTAssertEqual((run["models"] as? [[String: Any]])?.map { $0["backend"] as? String }, ["onednn"], name)
            outputs.append(try Data(contentsOf: URL(fileURLWithPath: "\(dir)/\(name).y4m")))
        }
        XCTAssertEqual(outputs[0], outputs[2], "auto and onednn differ")
        XCTAssertEqual(outputs[1], outputs[2], "auto with VIVIFY_VULKAN_DEVICE and onednn differ")
    }

    /// VIVIFY_VULKAN_DEVICE that names no device (out of range, not a number): exit 64 naming
    /// the value and `vivify probe --devices`, from `--backend vulkan`, from auto, and from the
    /// list itself (which still lists); nothing written.
    func testBadDeviceIndexIsABadSetting() throws {
        let count = try Self.listed().count
        let dir = try CLI.tempDir()
        let picture = dir + "/in.png"
        try CLI.ffmpeg(["-f", "lavfi", "-i", "testsrc2=size=32x24", "-frames:v", "1", picture])
        for value in ["\(count)", "-1", "first"] {
            for backend in ["vulkan", "auto"] {
                let out = "\(dir)/\(backend).png"
                let r = try CLI.vivify(["image", picture, out, "--upscale", "--backend", backend], environment: ["VIVIFY_VULKAN_DEVICE": value])
                XCTAssertEqual(r.code, 64, "\(value) \(backend): \(r.stderr)")
                XCTAssertTrue(r.stderr.contains("VIVIFY_VULKAN_DEVICE=\(value) names no Vulkan device") && r.stderr.contains("vivify probe --devices"), r.stderr)
                XCTAssertFalse(FileManager.default.fileExists(atPath: out))
            }
            let listing = try CLI.vivify(["probe", "--devices"], environment: ["VIVIFY_VULKAN_DEVICE": value])
            XCTAssertEqual(listing.code, 64, listing.stderr)
            XCTAssertTrue(String(decoding: listing.stdout, as: UTF8.self).contains("llvmpipe"), "the list is printed before the error")
            // Said once, on standard error (it was printed in the listing as well).
            let all = String(decoding: listing.stdout, as: UTF8.self) + listing.stderr
            XCTAssertEqual(all.components(separatedBy: "names no Vulkan device").count, 2, all)
        }
    }
}
