import Foundation

extension FrameTracer {
    /// The Chrome trace-event JSON (Perfetto, chrome://tracing): one track per stage, one
    /// complete ("X") slice per frame and stage, drops as instant ("i") events.
    public func chromeTrace() throws -> Data {
        let all = records
        let origin = all.compactMap { $0.record.spans.first?.start }.min() ?? 0
        func us(_ t: Double) -> Double { ((t - origin) * 1e6).rounded() }
        var events: [[String: Any]] = []
        for (k, name) in stageNames.enumerated() {
            events.append(["ph": "M", "name": "thread_name", "pid": 1, "tid": k, "args": ["name": name]])
            events.append(["ph": "M", "name": "thread_sort_index", "pid": 1, "tid": k, "args": ["sort_index": k]])
        }
        for (id, r) in all {
            var previousEnd: Double?
            for s in r.spans.sorted(by: { $0.stage < $1.stage }) {
                var args: [String: Any] = ["frame": id, "thread": s.thread]
                if let previousEnd { args["queue_wait_ms"] = max(0, s.start - previousEnd) * 1000 }
                events.append(["ph": "X", "name": "frame \(id)", "cat": stageNames[s.stage], "pid": 1, "tid": s.stage,
                               "ts": us(s.start), "dur": max(1, us(s.end) - us(s.start)), "args": args])
                previousEnd = s.end
            }
            if let d = r.dropped {
                events.append(["ph": "i", "s": "t", "name": "drop frame \(id)", "cat": "drop", "pid": 1, "tid": d.stage,
                               "ts": us(d.time), "args": ["frame": id, "dropped_before": stageNames[d.stage]]])
            }
        }
        let root: [String: Any] = ["traceEvents": events, "displayTimeUnit": "ms"]
        return try JSONSerialization.data(withJSONObject: root, options: [.sortedKeys])
    }

    /// An SVG plot in two panels over the same frame axis. Above, end-to-end latency of each
    /// processed frame against the budget line, drops marked along the bottom. Below, the
    /// stage view: each stage's own time on each frame on a scale of its own (stage times are
    /// a few milliseconds and latency can be seconds, so on one scale the stages were squashed
    /// flat), with the budget line each stage must keep under for the pipeline to hold the
    /// rate, and each stage's median and 95th percentile beside its legend entry.
    public func latencyPlot() -> String {
        let all = records
        let budget = 1000 / targetFPS
        let last = stageNames.count - 1
        // One series for the end-to-end latency, one per stage (its own time on the frame).
        var endToEnd: [(Int, Double)] = []
        var perStage = [[(Int, Double)]](repeating: [], count: stageNames.count)
        var drops: [(id: Int, stage: Int)] = []
        for (id, r) in all {
            guard let arrival = r.spans.first(where: { $0.stage == 0 }) else { continue }
            for span in r.spans where span.stage < perStage.count { perStage[span.stage].append((id, (span.end - span.start) * 1000)) }
            if let d = r.dropped { drops.append((id, d.stage)); continue }
            if let done = r.spans.first(where: { $0.stage == last }) { endToEnd.append((id, (done.end - arrival.start) * 1000)) }
        }
        let width = 960.0, left = 64.0, right = 210.0, top = 28.0
        let panelHeight = 300.0, gap = 70.0, bottom = 56.0
        let height = top + panelHeight + gap + panelHeight + bottom
        // The window may start past frame 0 on a long stream: x spans the ids it holds.
        let firstID = all.first?.id ?? 0
        let lastID = max(all.last?.id ?? 0, firstID + 1)
        let xTicks = Self.ticks(from: firstID, to: lastID)
        let plotRight = width - right
        func x(_ i: Int) -> Double { left + (plotRight - left) * Double(i - firstID) / Double(lastID - firstID) }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        func label(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%g", v) }
        func escape(_ t: String) -> String {
            t.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        func percentile(_ values: [Double], _ q: Double) -> Double {
            let v = values.sorted()
            return v.isEmpty ? 0 : v[min(v.count - 1, Int((q * Double(v.count - 1)).rounded()))]
        }
        let palette = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#1f77b4"]

        /// One panel's axes, grid and budget line; returns its y mapping.
        func panel(_ cls: String, tickClass: String, panelTop: Double, ymax wanted: Double, yLabel: String, svg: inout String) -> (Double) -> Double {
            let yTicks = Self.ticks(upTo: wanted)
            let ymax = yTicks.last ?? wanted
            let base = panelTop + panelHeight
            let y: (Double) -> Double = { v in panelTop + panelHeight * (1 - min(v, ymax) / ymax) }
            svg += "<g class=\"\(cls)\">\n"
            for t in yTicks {
                svg += "<line x1=\"\(f(left - 4))\" y1=\"\(f(y(t)))\" x2=\"\(f(plotRight))\" y2=\"\(f(y(t)))\" stroke=\"#e6e6e6\"/>"
                svg += "<text class=\"\(tickClass)\" x=\"\(f(left - 8))\" y=\"\(f(y(t) + 4))\" font-size=\"11\" text-anchor=\"end\">\(label(t))</text>\n"
            }
            let middle = panelTop + panelHeight / 2
            svg += "<text x=\"14\" y=\"\(f(middle))\" font-size=\"11\" transform=\"rotate(-90 14 \(f(middle)))\" text-anchor=\"middle\">\(yLabel)</text>\n"
            for t in xTicks {
                svg += "<line x1=\"\(f(x(t)))\" y1=\"\(f(base))\" x2=\"\(f(x(t)))\" y2=\"\(f(base + 5))\" stroke=\"black\"/>"
                svg += "<text class=\"\(tickClass)\" x=\"\(f(x(t)))\" y=\"\(f(base + 18))\" font-size=\"11\" text-anchor=\"middle\">\(t)</text>\n"
            }
            svg += "<line x1=\"\(f(left))\" y1=\"\(f(base))\" x2=\"\(f(plotRight))\" y2=\"\(f(base))\" stroke=\"black\"/>\n"
            svg += "<line x1=\"\(f(left))\" y1=\"\(f(panelTop))\" x2=\"\(f(left))\" y2=\"\(f(base))\" stroke=\"black\"/>\n"
            svg += "<line class=\"budget\" x1=\"\(f(left))\" y1=\"\(f(y(budget)))\" x2=\"\(f(plotRight))\" y2=\"\(f(y(budget)))\" stroke=\"red\" stroke-dasharray=\"6,4\"/>\n"
            return y
        }
        func legendLine(_ ly: Double, _ color: String, dashed: Bool) -> String {
            "<line x1=\"\(f(plotRight + 14))\" y1=\"\(f(ly))\" x2=\"\(f(plotRight + 38))\" y2=\"\(f(ly))\" stroke=\"\(color)\" stroke-width=\"2\"\(dashed ? " stroke-dasharray=\"6,4\"" : "")/>"
        }

        var svg = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif">
        <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
        <text x="\(f(left))" y="16" font-size="13">End-to-end latency per frame (ms); budget \(f(budget)) ms at \(f(targetFPS)) fps; \(drops.count) dropped</text>

        """
        // Above: end to end.
        let yLatency = panel("latency-view", tickClass: "tick", panelTop: top,
                             ymax: max(budget * 1.5, (endToEnd.map(\.1).max() ?? budget) * 1.1), yLabel: "latency (ms)", svg: &svg)
        if !endToEnd.isEmpty {
            let path = endToEnd.map { "\(f(x($0.0))),\(f(yLatency($0.1)))" }.joined(separator: " ")
            svg += "<polyline data-series=\"end-to-end\" fill=\"none\" stroke=\"steelblue\" stroke-width=\"2\" points=\"\(path)\"/>\n"
        }
        for d in drops {
            svg += "<line class=\"drop\" x1=\"\(f(x(d.id)))\" y1=\"\(f(yLatency(0) - 10))\" x2=\"\(f(x(d.id)))\" y2=\"\(f(yLatency(0)))\" stroke=\"orange\" stroke-width=\"2\"><title>frame \(d.id) dropped before \(escape(d.stage < stageNames.count ? stageNames[d.stage] : "stage \(d.stage)"))</title></line>\n"
        }
        svg += "</g>\n<g class=\"legend\">\n"
        var ly = top + 8
        svg += legendLine(ly, "steelblue", dashed: false) + "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">end to end</text>\n"
        ly += 18
        svg += legendLine(ly, "red", dashed: true) + "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">budget \(f(budget)) ms</text>\n"
        ly += 18
        svg += "<line x1=\"\(f(plotRight + 26))\" y1=\"\(f(ly - 6))\" x2=\"\(f(plotRight + 26))\" y2=\"\(f(ly + 4))\" stroke=\"orange\" stroke-width=\"2\"/>"
        svg += "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">dropped frame (\(drops.count))</text>\n</g>\n"

        // Below: the stage view, on the scale of the slowest stage (and the budget).
        let stageTop = top + panelHeight + gap
        svg += "<text x=\"\(f(left))\" y=\"\(f(stageTop - 12))\" font-size=\"13\">Stage view: each stage's time per frame (ms); a stage above the budget line cannot keep \(f(targetFPS)) fps</text>\n"
        let slowest = perStage.flatMap { $0.map(\.1) }.max() ?? budget
        let yStage = panel("stage-view", tickClass: "stage-tick", panelTop: stageTop,
                           ymax: max(budget * 1.2, slowest * 1.1), yLabel: "stage time (ms)", svg: &svg)
        var legend: [(name: String, color: String, stats: String)] = []
        for (k, points) in perStage.enumerated() where !points.isEmpty {
            let color = palette[k % palette.count]
            let path = points.map { "\(f(x($0.0))),\(f(yStage($0.1)))" }.joined(separator: " ")
            svg += "<polyline data-series=\"\(escape(stageNames[k]))\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.5\" points=\"\(path)\"/>\n"
            let times = points.map(\.1)
            legend.append((stageNames[k], color, "median \(f(percentile(times, 0.5))), p95 \(f(percentile(times, 0.95)))"))
        }
        svg += "</g>\n<g class=\"legend\">\n"
        ly = stageTop + 8
        for entry in legend {
            svg += legendLine(ly, entry.color, dashed: false)
            svg += "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">\(escape(entry.name))</text>\n"
            svg += "<text class=\"stage-stats\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 17))\" font-size=\"10\" fill=\"#555\">\(entry.stats)</text>\n"
            ly += 32
        }
        svg += legendLine(ly, "red", dashed: true) + "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">budget \(f(budget)) ms</text>\n</g>\n"
        svg += "<text x=\"\(f((left + plotRight) / 2))\" y=\"\(f(height - 10))\" font-size=\"11\" text-anchor=\"middle\">frame</text>\n"
        svg += "</svg>\n"
        return svg
    }

    /// Round tick values from 0 to at least `maximum` (about five steps of 1, 2 or 5 × 10^k).
    static func ticks(upTo maximum: Double) -> [Double] {
        guard maximum > 0, maximum.isFinite else { return [0, 1] }
        let raw = maximum / 5
        let magnitude = pow(10, floor(log10(raw)))
        let step = [1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude
        var values: [Double] = []
        var v = 0.0
        while v < maximum + step / 2 {
            values.append(v)
            if v >= maximum { break }
            v += step
        }
        return values
    }

    /// Round frame numbers between `first` and `last` (about eight).
    static func ticks(from first: Int, to last: Int) -> [Int] {
        let span = max(last - first, 1)
        let raw = Double(span) / 8
        let magnitude = max(pow(10, floor(log10(max(raw, 1)))), 1)
        let step = max(Int(([1.0, 2, 5, 10].map { $0 * magnitude }.first { $0 >= raw } ?? 10 * magnitude)), 1)
        let start = (first + step - 1) / step * step
        return Array(stride(from: start, through: last, by: step))
    }
}
