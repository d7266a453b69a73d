import Foundation
public import Tracing

/// `vivify bench`: generated frames through the real pipeline (offline, nothing dropped,
/// output discarded), reported against the target frame rate.
public enum Bench {
    /// What a bench run found.
    public struct Result: Sendable {
        /// The frame-timing summary.
        public var report: TraceReport
        /// Floating-point operations per frame of each model stage, by stage name.
        public var flopsPerFrame: [String: Double]
        /// Achieved GFLOP/s of each model stage (FLOPs per frame / median stage time).
        public var gflops: [String: Double]
        /// The tracer, for trace and plot export.
        public var tracer: FrameTracer?

        /// The lines `vivify bench` prints.
        public var text: String {
            var lines = [report.text.trimmingCharacters(in: .newlines)]
            for (name, flops) in flopsPerFrame.sorted(by: { $0.key < $1.key }) {
                lines.append(String(format: "  %@: %.1f GFLOP per frame, %.0f GFLOP/s achieved", name, flops / 1e9, gflops[name] ?? 0))
            }
            let met = report.achievedFps >= report.targetFps
            lines.append("result: \(met ? "meets" : "does NOT meet") \(String(format: "%.0f", report.targetFps)) fps (achieved \(String(format: "%.1f", report.achievedFps)) fps); limiting stage: \(report.bottleneckStage)")
            return lines.joined(separator: "\n") + "\n"
        }
    }

    /// Runs `frames` generated `size` frames through the pipeline with the given model.
    public static func run(size: FrameSize, frames: Int, stages: StageSettings, backend: BackendChoice,
                           targetFPS: Double, limits: RunLimits = RunLimits(), log: @escaping (String) -> Void = { _ in }) throws -> Result {
        var c = RunConfiguration(input: "generated", output: "-")
        c.limits = limits
        c.input.synthetic = SyntheticInput(size: size, frames: frames)
        c.output.discard = true
        c.stages = stages
        c.run.backend = backend
        c.run.targetFPS = targetFPS
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
