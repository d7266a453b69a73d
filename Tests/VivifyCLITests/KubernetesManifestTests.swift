import Foundation
import XCTest

/// The shipped Kubernetes manifest (deploy/kubernetes/vivify-job.yaml): it parses, it is an
/// Indexed Job plus a join Job naming the image, the shared volume and the work directory, and
/// its own command lines — run here on one machine, with JOB_COMPLETION_INDEX set as
/// Kubernetes sets it — give the unsegmented run's file. (No cluster runs it here.)
final class KubernetesManifestTests: XCTestCase {
    static let manifestPath = CLI.packageRoot.appendingPathComponent("deploy/kubernetes/vivify-job.yaml").path

    /// The YAML documents as JSON objects (PyYAML's safe loader, as kubectl would read them).
    static func documents() throws -> [[String: Any]] {
        let script = "import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))"
        let r = try CLI.run("/usr/bin/env", ["python3", "-c", script, manifestPath])
        guard r.code == 0 else { throw XCTSkip("python3 with PyYAML is needed to read the manifest: \(r.stderr)") }
        let parsed = try JSONSerialization.jsonObject(with: r.stdout) as? [Any] ?? []
        return parsed.compactMap { $0 as? [String: Any] }
    }

    static func podSpec(_ job: [String: Any]) -> [String: Any] {
        (((job["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any]) ?? [:]
    }

    static func container(_ job: [String: Any]) -> [String: Any] {
        (podSpec(job)["containers"] as? [[String: Any]])?.first ?? [:]
    }

    func testShape() throws {
        let docs = try Self.documents()
        XCTAssertEqual(docs.count, 2, "an Indexed Job and a join Job")
        XCTAssertTrue(docs.allSatisfy { $0["apiVersion"] as? String == "batch/v1" && $0["kind"] as? String == "Job" })
        let work = try XCTUnwrap(docs.first { ($0["spec"] as? [String: Any])?["completionMode"] as? String == "Indexed" })
        let join = try XCTUnwrap(docs.first { ($0["spec"] as? [String: Any])?["completionMode"] == nil })
        let spec = work["spec"] as? [String: Any] ?? [:]
        XCTAssertGreaterThan(spec["completions"] as? Int ?? 0, 0)
        XCTAssertGreaterThan(spec["parallelism"] as? Int ?? 0, 0)
        for job in [work, join] {
            let c = Self.container(job)
            XCTAssertEqual(c["image"] as? String, "vivify:latest")
            XCTAssertEqual(Self.podSpec(job)["restartPolicy"] as? String, "Never")
            let mounts = c["volumeMounts"] as? [[String: Any]] ?? []
            XCTAssertEqual(mounts.first?["mountPath"] as? String, "/data")
            let volumes = Self.podSpec(job)["volumes"] as? [[String: Any]] ?? []
            let claim = (volumes.first { $0["name"] as? String == mounts.first?["name"] as? String }?["persistentVolumeClaim"] as? [String: Any])?["claimName"]
            XCTAssertEqual(claim as? String, "vivify-data", "both jobs mount the shared volume")
        }
        let workCommand = Self.container(work)["command"] as? [String] ?? []
        XCTAssertEqual(Array(workCommand.prefix(2)), ["vivify", "work"])
        XCTAssertFalse(workCommand.contains("--index"), "the index comes from JOB_COMPLETION_INDEX")
        let joinScript = (Self.container(join)["command"] as? [String] ?? []).last ?? ""
        XCTAssertTrue(joinScript.contains("vivify join \(workCommand[2])"), "the join reads the workers' directory: \(joinScript)")
        XCTAssertTrue(joinScript.contains("75"), "the join waits while segments are missing (exit 75)")
    }

    /// The manifest's command lines, /data mapped to a temporary folder: the join waits
    /// (exit 75) while segments are missing, the workers run out of order by
    /// JOB_COMPLETION_INDEX, and the joined file equals an unsegmented run.
    func testItsCommandLinesGiveTheUnsegmentedFile() throws {
        let docs = try Self.documents()
        let work = try XCTUnwrap(docs.first { ($0["spec"] as? [String: Any])?["completionMode"] as? String == "Indexed" })
        let join = try XCTUnwrap(docs.first { ($0["spec"] as? [String: Any])?["completionMode"] == nil })
        let data = try CLI.tempDir()
        let source = try SegmentTests.clip(in: data, name: "in.mp4")
        let reference = try SegmentTests.reference(source, data)
        let workCommand = (Self.container(work)["command"] as? [String] ?? []).map { $0.replacingOccurrences(of: "/data", with: data) }
        let workDir = workCommand[2]
        let plan = try CLI.vivify(["plan", source, data + "/out.mkv", "--work", workDir] + SegmentTests.upscaleJob)
        XCTAssertEqual(plan.code, 0, plan.stderr)
        let segments = Int(String(decoding: plan.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
        XCTAssertEqual(segments, (work["spec"] as? [String: Any])?["completions"] as? Int, "the example's completions fit this clip")

        let binDir = URL(fileURLWithPath: CLI.binary).deletingLastPathComponent().path
        let path = binDir + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let joinCommand = (Self.container(join)["command"] as? [String] ?? []).map { $0.replacingOccurrences(of: "/data", with: data) }
        // The join starts before any worker: it must wait, not fail.
        let joiner = Process()
        joiner.executableURL = URL(fileURLWithPath: joinCommand[0])
        joiner.arguments = Array(joinCommand.dropFirst()).map { $0.replacingOccurrences(of: "sleep 30", with: "sleep 1") }
        joiner.environment = ["PATH": path]
        joiner.standardOutput = FileHandle.nullDevice
        joiner.standardError = FileHandle.nullDevice
        try joiner.run()
        defer { if joiner.isRunning { joiner.terminate() } }

        for index in (0..<segments).reversed() {
            let worker = Process()
            worker.executableURL = URL(fileURLWithPath: CLI.binary)
            worker.arguments = Array(workCommand.dropFirst())
            worker.environment = ["PATH": path, "JOB_COMPLETION_INDEX": String(index)]
            worker.standardOutput = FileHandle.nullDevice
            worker.standardError = FileHandle.nullDevice
            try worker.run()
            worker.waitUntilExit()
            XCTAssertEqual(worker.terminationStatus, 0, "segment \(index)")
            if index > 0 { XCTAssertTrue(joiner.isRunning, "the join waits while segments are missing") }
        }
        let end = Date().addingTimeInterval(60)
        while joiner.isRunning && Date() < end { usleep(100_000) }
        XCTAssertFalse(joiner.isRunning)
        XCTAssertEqual(joiner.terminationStatus, 0)
        XCTAssertEqual(try SegmentTests.frameDigests(data + "/out.mkv"), try SegmentTests.frameDigests(reference), "frames, timestamps and pixels")
        XCTAssertEqual(try SegmentTests.frameDigests(data + "/out.mkv", stream: "a"), try SegmentTests.frameDigests(reference, stream: "a"), "audio packets")
        // The join removed the segments and manifest, and left its record, so that a join pod
        // retried after its success exits 0 instead of failing the job.
        XCTAssertEqual(Set(try FileManager.default.contentsOfDirectory(atPath: workDir)), ["joined.json", "join.lock"], "the join removed the work files")
    }
}
