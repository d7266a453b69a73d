import EngineDNNL
import Foundation
import MediaIO
import Models
import Vivify
import XCTest

/// The thread count travels with the run's limits like every other limit (issue 30): nothing
/// process-wide is set, so configurations with other counts used one after the other in one
/// process each compute with their own, and the count changes no bit of a picture.
final class ThreadCountTests: XCTestCase {
    private func temporaryDirectory() throws -> String {
        let dir = NSTemporaryDirectory() + "vivify-threads-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    func testEachConfigurationComputesWithItsOwnCount() throws {
        let one = RunLimits(threads: 1), three = RunLimits(threads: 3)
        XCTAssertEqual(one.compute.threads, 1)
        XCTAssertEqual(three.compute.threads, 3)
        XCTAssertEqual(RunLimits().threadCount, ProcessInfo.processInfo.activeProcessorCount, "default: all cores")

        // oneDNN's OpenMP regions take the count of the thread that starts them: each model
        // sets its own on the thread that runs it, whatever ran before.
        var picture = FloatPlanarImage(channels: 3, width: 40, height: 24)
        for i in picture.data.indices { picture.data[i] = Float(i % 97) / 96 }
        let a = try Upscaler(model: "2", settings: one.compute)
        let b = try Upscaler(model: "2", settings: three.compute)
        XCTAssertEqual(a.threads, 1)
        XCTAssertEqual(b.threads, 3)
        var pictures: [FloatPlanarImage] = []
        for (upscaler, expected) in [(a, 1), (b, 3), (a, 1)] {
            pictures.append(try upscaler.upscale(picture))
            XCTAssertEqual(OpenMPThreads.current(), expected, "oneDNN ran \(upscaler === a ? "a" : "b") with its own count")
        }
        XCTAssertEqual(pictures[0].data, pictures[1].data, "1 and 3 threads upscale alike, bit for bit")
        XCTAssertEqual(pictures[0].data, pictures[2].data)

        // Runs one after the other in one process: each records the count it ran with
        // (`--stats` "threads").
        for threads in [1, 2, 1] {
            var c = RunConfiguration(input: "generated", output: "-")
            c.input.synthetic = SyntheticInput(size: FrameSize(width: 32, height: 16), frames: 2)
            c.output.discard = true
            c.stages = [.upscale(model: "2")]
            c.limits = RunLimits(threads: threads)
            let job = Job(configuration: c)
            _ = try job.run()
            XCTAssertEqual(try job.runDescription().settings["threads"], String(threads))
        }
    }

    /// An offline video run's model stages run at once, one frame each: without `--threads`
    /// they share the cores out (on 2 cores one each), which `--stats` records as
    /// "stage_threads"; `--threads N` keeps N for each, a live run and a single stage keep all
    /// cores, and so does the sequential loop.
    func testModelStagesShareTheCoresOutWhenTheyRunAtOnce() throws {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        let automatic = RunLimits()
        XCTAssertEqual(automatic.stageThreads(modelStages: 1), cores)
        XCTAssertEqual(automatic.stageThreads(modelStages: 2), max(1, cores / 2))
        XCTAssertEqual(automatic.stageThreads(modelStages: 3), max(1, cores / 3))
        XCTAssertEqual(automatic.stageThreads(modelStages: 10_000), 1, "at least one each")
        XCTAssertEqual(RunLimits(threads: 3).stageThreads(modelStages: 2), 3, "--threads is for each stage")

        var c = RunConfiguration(input: "generated", output: "-")
        c.input.synthetic = SyntheticInput(size: FrameSize(width: 32, height: 16), frames: 2)
        c.output.discard = true
        c.stages = [.colorize(model: "vivify-color", stabilize: false), .upscale(model: "2")]
        XCTAssertEqual(c.modelCompute.threads, max(1, cores / 2))
        let job = Job(configuration: c)
        _ = try job.run()
        let settings = try job.runDescription().settings
        XCTAssertEqual(settings["threads"], String(cores))
        XCTAssertEqual(settings["stage_threads"], String(max(1, cores / 2)))
        let sequential = Job(configuration: c)
        sequential.sequential = true
        _ = try sequential.run()
        XCTAssertEqual(try sequential.runDescription().settings["stage_threads"], String(cores), "one stage at a time: all cores")

        var live = c
        live.run.mode = .live
        XCTAssertEqual(live.modelCompute.threads, cores)
        var given = c
        given.limits = RunLimits(threads: 2)
        XCTAssertEqual(given.modelCompute.threads, 2)
        var single = c
        single.stages = [.upscale(model: "2")]
        XCTAssertEqual(single.modelCompute.threads, cores)
    }

    func testColorizeAndUpscaleGiveTheSamePictureAtOneAndTwoThreads() throws {
        let dir = try temporaryDirectory()
        // A grey picture with structure: gradients and stripes.
        let w = 96, h = 64
        var grey = FloatPlanarImage(channels: 3, width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                let v = Float((x * 3 + y * 2) % 256) / 255 * 0.7 + (x / 4 % 2 == 0 ? 0.2 : 0)
                for c in 0..<3 { grey.data[(c * h + y) * w + x] = v }
            }
        }
        let input = "\(dir)/in.png"
        _ = try ImageIO.write(StillImage(color: grey), to: input)
        var outputs: [[Float]] = []
        for threads in [1, 2] {
            var c = RunConfiguration(input: input, output: "\(dir)/out-\(threads).png")
            c.stages = [.colorize(model: "vivify-color", stabilize: false), .upscale(model: "2")]
            c.limits = RunLimits(threads: threads)
            _ = try ImageJob.run(c)
            let out = try ImageIO.read(path: c.output.path)
            XCTAssertEqual(out.width, 2 * w)
            outputs.append(out.color.data)
        }
        XCTAssertEqual(outputs[0], outputs[1], "1 and 2 threads give the same picture, bit for bit")
    }
}
