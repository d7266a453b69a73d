import Foundation
internal import MediaIO
import SafeFiles
public import Tracing

/// Where a run's frame-timing outputs go.
public struct TraceOutputs: Sendable {
    /// `--stats FILE.json`.
    public var stats: String?
    /// `--trace FILE.json` (Chrome trace-event format).
    public var trace: String?
    /// `--plot FILE.svg`.
    public var plot: String?

    /// Makes the set; nil fields are not written.
    public init(stats: String? = nil, trace: String? = nil, plot: String? = nil) {
        self.stats = stats
        self.trace = trace
        self.plot = plot
    }

    /// Writes every requested file (each through a temporary file and a rename).
    public func write(_ tracer: FrameTracer, report: TraceReport) throws {
        func put(_ data: Data, _ path: String) throws {
            do {
                try PartialFile(target: URL(fileURLWithPath: path)).write { try data.write(to: $0) }
            } catch let e as PartialFile.Failure {
                throw MediaError(.outputUnwritable, "Cannot write '\(path)': \(e.reason). Choose a writable location.")
            } catch {
                throw MediaError(.outputUnwritable, "Cannot write '\(path)': \(error.localizedDescription). Choose a writable location.")
            }
        }
        if let stats { try put(try report.json(), stats) }
        if let trace { try put(try tracer.chromeTrace(), trace) }
        if let plot { try put(Data(tracer.latencyPlot().utf8), plot) }
    }
}
