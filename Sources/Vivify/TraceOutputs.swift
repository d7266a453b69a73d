import Foundation
internal import MediaIO
import SafeFiles
package import Tracing

/// Where a run's frame-timing outputs go.
public struct TraceOutputs: Codable, Sendable, Equatable {
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

    /// Whether no report is asked for.
    public var isEmpty: Bool { stats == nil && trace == nil && plot == nil }

    /// Checks, before any work, that every requested file can be written: its folder exists and
    /// is writable, and it is not a device, FIFO, directory or one of `inputs` (model files
    /// included), nor the run's own `outputs` or another of these reports (`--stats out.mkv`
    /// replaced the run's video). These reports are rewritten by every run, so an existing one
    /// is replaced without -y.
    package func check(inputs: [String], outputs: [String] = []) throws {
        var claimed = outputs.filter { $0 != "-" }.map { (Self.canonical($0), $0) }
        for (option, path) in [("--stats", stats), ("--trace", trace), ("--plot", plot)].compactMap({ o, p in p.map { (o, $0) } }) {
            let c = Self.canonical(path)
            if let other = claimed.first(where: { $0.0 == c }) {
                throw MediaError(.invalidOptions, "'\(option) \(path)' names '\(other.1)', which this run also writes. Give the report a file of its own.")
            }
            for input in inputs where input != "-" && Self.canonical(input) == c {
                throw MediaError(.invalidOptions, "'\(option) \(path)' names '\(input)', which this run reads (an input or a model file). Give the report a file of its own.")
            }
            try Self.guardReport(path, option: option, inputs: inputs)
            claimed.append((c, path))
        }
    }

    /// `OutputGuard`'s checks for a report; a hard link to a file the run reads is named as the
    /// report it is (not "the output … is the input file").
    static func guardReport(_ path: String, option: String, inputs: [String]) throws {
        if let read = sameFile(as: path, among: inputs) {
            throw MediaError(.invalidOptions, "'\(option) \(path)' is '\(read)' (the same file on disk), which this run reads (an input, a model, reference, keyframe or hints file). Give the report a file of its own.")
        }
        _ = try OutputGuard.check(output: path, inputs: inputs, existing: .replace)
    }

    /// The first of `files` that is `path` on disk, if any.
    static func sameFile(as path: String, among files: [String]) -> String? {
        files.first { $0 != "-" && OutputGuard.isSameFile($0, path) }
    }

    /// The absolute path with links in its existing part resolved (a file that does not exist
    /// yet compares by its folder's real path and its name).
    static func canonical(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Writes every requested file (each through a temporary file and a rename; a failed write
    /// removes its temporary file).
    package func write(_ tracer: FrameTracer, report: TraceReport) throws {
        func put(_ data: Data, _ path: String) throws {
            do {
                try PartialFile(target: URL(fileURLWithPath: path)).write { try Self.writeAll(data, to: $0) }
            } catch let e as PartialFile.Failure {
                throw MediaError(.outputUnwritable, "Cannot write '\(path)': \(e.reason). Choose a writable location.")
            } catch let e as MediaError {
                throw MediaError(e.kind, "Cannot write '\(path)': \(SegmentedJob.sentence(e.message)). Choose a location you can write to, with free space.")
            }
        }
        if let stats { try put(try report.json(), stats) }
        if let trace { try put(try tracer.chromeTrace(), trace) }
        if let plot { try put(Data(tracer.latencyPlot().utf8), plot) }
    }

    /// Writes `data` with POSIX calls, so a full disk or a file-size limit is reported as the
    /// system says it ("No space left on device", "File too large").
    static func writeAll(_ data: Data, to url: URL) throws {
        let fd = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw MediaError(.outputUnwritable, String(cString: strerror(errno))) }
        defer { close(fd) }
        try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var done = 0
            while done < raw.count {
                let n = Foundation.write(fd, raw.baseAddress! + done, raw.count - done)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw MediaError(.outputUnwritable, String(cString: strerror(errno)))
                }
                done += n
            }
        }
        guard fsync(fd) == 0 || errno == EINVAL else { throw MediaError(.outputUnwritable, String(cString: strerror(errno))) }
    }
}
