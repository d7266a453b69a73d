import Foundation
package import Tracing

/// `vivify bench`: generated frames through the real pipeline (offline, nothing dropped,
/// output discarded), reported against the target frame rate.
package enum Bench {
    /// What a bench run found.
    package struct Result: Sendable {
        /// The frame-timing summary.
        package var report: TraceReport
        /// Floating-point operations per frame of each model stage, by stage name.
        package var flopsPerFrame: [String: Double]
        /// Achieved GFLOP/s of each model stage (FLOPs per frame / median stage time).
        package var gflops: [String: Double]
        /// The tracer, for trace and plot export.
        package var tracer: FrameTracer?

        /// The lines `vivify bench` prints.
        package var text: String {
            var lines = [report.text.trimmingCharacters(in: .newlines)]
            for (name, flops) in flopsPerFrame.sorted(by: { $0.key < $1.key }) {
                lines.append(String(format: "  %@: %.1f GFLOP per frame, %.0f GFLOP/s achieved", name, flops / 1e9, gflops[name] ?? 0))
            }
            let met = report.achievedFps >= report.targetFps
            lines.append("result: \(met ? "meets" : "does NOT meet") \(String(format: "%.0f", report.targetFps)) fps (achieved \(String(format: "%.1f", report.achievedFps)) fps); limiting stage: \(report.bottleneckStage)")
            return lines.joined(separator: "\n") + "\n"
        }
    }

    /// The configuration of a bench: `frames` generated frames of `size` (`input.synthetic`),
    /// the output thrown away, 30 fps the target; the caller adds the stages, backend, target
    /// and limits.
    package static func configuration(size: FrameSize, frames: Int) -> RunConfiguration {
        var c = RunConfiguration(input: "generated", output: "-")
        c.input.synthetic = SyntheticInput(size: size, frames: frames)
        c.output.discard = true
        c.run.targetFPS = 30
        return c
    }

    /// Runs the configuration's generated frames (`configuration(size:frames:)`) through the
    /// pipeline with its stages, backend (`auto` resolved here) and limits.
    package static func run(_ configuration: RunConfiguration, log: @escaping (String) -> Void = { _ in }) throws -> Result {
        var c = configuration
        c.run.backend = try c.run.backend.resolved()
        let job = Job(configuration: c)
        job.events.warning = log
        let result = try job.run()
        // FLOPs from the chain that ran (the same processors, configured for these frames).
        let flops = try job.lastChain?.flopsPerFrame() ?? [:]
        var gflops: [String: Double] = [:]
        for (name, f) in flops {
            if let stage = result.report.stages.first(where: { $0.name == name }), stage.p50Ms > 0 {
                gflops[name] = f / (stage.p50Ms / 1000) / 1e9
            }
        }
        return Result(report: result.report, flopsPerFrame: flops, gflops: gflops, tracer: job.lastTracer)
    }
}
