import Engine
import Foundation

/// One layer's time in a profiled run (`VulkanBackend.profiling`).
public struct VulkanLayerTime: Sendable, Equatable {
    /// One dispatch: its shader and the device time from the timestamp before it (after the
    /// work recorded before it) to the one after it.
    public struct Dispatch: Sendable, Equatable {
        public let shader: String
        public let milliseconds: Double
        public init(shader: String, milliseconds: Double) {
            self.shader = shader
            self.milliseconds = milliseconds
        }
    }

    /// The layer's name in the model file.
    public let layer: String
    /// Its operation (`Operation.kindName`).
    public let operation: String
    /// The shape of its output (channels × height × width; nil where not given).
    public var output: Shape?
    /// Its dispatches in order (none for a constant, uploaded at prepare, or a layer run on the host).
    public let dispatches: [Dispatch]
    /// The dispatches' device time; for a layer run on the host, the host's wall time.
    public let milliseconds: Double
    /// Whether the layer ran on the host (an external layer).
    public let onHost: Bool

    /// A layer timed on the device.
    public init(layer: String, operation: String, dispatches: [Dispatch]) {
        self.layer = layer
        self.operation = operation
        self.dispatches = dispatches
        milliseconds = dispatches.reduce(0) { $0 + $1.milliseconds }
        onHost = false
    }

    /// A layer run on the host.
    public init(layer: String, operation: String, hostMilliseconds: Double) {
        self.layer = layer
        self.operation = operation
        dispatches = []
        milliseconds = hostMilliseconds
        onHost = true
    }

    /// A few lines for a person: the total, the `top` slowest layers with their share and
    /// their dispatches, and the time per shader over all layers, slowest first.
    public static func summary(_ times: [VulkanLayerTime], top: Int = 10) -> [String] {
        let total = times.reduce(0) { $0 + $1.milliseconds }
        guard total > 0 else { return ["no layer timed"] }
        func ms(_ v: Double) -> String { String(format: v < 10 ? "%.3f" : "%.1f", v) }
        func share(_ v: Double) -> String { String(format: "%.1f%%", 100 * v / total) }
        let transfers = times.filter { $0.layer == "(input)" || $0.layer == "(output)" }.count
        var lines = ["\(ms(total)) ms in \(times.count - transfers) layers\(transfers > 0 ? " and \(transfers) transfer\(transfers == 1 ? "" : "s")" : "") (device timestamps around each dispatch; host steps by the clock)"]
        for t in times.sorted(by: { $0.milliseconds > $1.milliseconds }).prefix(top) {
            var how = t.onHost ? "on the host" : t.dispatches.isEmpty ? "no dispatch" : ""
            // Runs of one shader as one entry: "winograd_multiply_uniform ×4 12.5".
            var k = 0
            while k < t.dispatches.count {
                var j = k, sum = 0.0
                while j < t.dispatches.count && t.dispatches[j].shader == t.dispatches[k].shader { sum += t.dispatches[j].milliseconds; j += 1 }
                how += (how.isEmpty ? "" : ", ") + t.dispatches[k].shader + (j - k > 1 ? " ×\(j - k)" : "") + " " + ms(sum)
                k = j
            }
            let shape = t.output.map { " → \($0.c)×\($0.h)×\($0.w)" } ?? ""
            lines.append("  \(ms(t.milliseconds)) ms \(share(t.milliseconds))  \(t.layer) (\(t.operation)\(shape): \(how))")
        }
        var byShader: [String: (ms: Double, dispatches: Int)] = [:]
        for t in times {
            if t.onHost { byShader["host", default: (0, 0)].ms += t.milliseconds; byShader["host", default: (0, 0)].dispatches += 1 }
            for d in t.dispatches {
                byShader[d.shader, default: (0, 0)].ms += d.milliseconds
                byShader[d.shader, default: (0, 0)].dispatches += 1
            }
        }
        lines.append("  per shader: " + byShader.sorted { $0.value.ms > $1.value.ms }
            .map { "\($0.key) \(ms($0.value.ms)) ms (\(share($0.value.ms)), \($0.value.dispatches)×)" }
            .joined(separator: ", "))
        return lines
    }
}

/// A graph prepared by the Vulkan backend, whose last run may have been timed layer by layer.
public protocol VulkanProfiledGraph: PreparedGraph {
    /// Per layer of the last run, in the graph's order, with the staged plan's transfers of
    /// the input and the output first and last (layers "(input)" and "(output)"): empty before
    /// the first run, when the graph was prepared without `VulkanBackend.profiling`, or when
    /// the device's compute queue writes no timestamps (`timestampValidBits` 0).
    var layerTimes: [VulkanLayerTime] { get }
}
