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

    /// An SVG plot: end-to-end latency of each processed frame against the budget line, drops
    /// marked along the bottom.
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
        let width = 960.0, height = 440.0, left = 64.0, right = 170.0, top = 28.0, bottom = 56.0
        // The window may start past frame 0 on a long stream: x spans the ids it holds.
        let firstID = all.first?.id ?? 0
        let lastID = max(all.last?.id ?? 0, firstID + 1)
        let yTicks = Self.ticks(upTo: max(budget * 1.5, (endToEnd.map(\.1).max() ?? budget) * 1.1))
        let ymax = yTicks.last ?? budget * 1.5
        let xTicks = Self.ticks(from: firstID, to: lastID)
        func x(_ i: Int) -> Double { left + (width - left - right) * Double(i - firstID) / Double(lastID - firstID) }
        func y(_ v: Double) -> Double { top + (height - top - bottom) * (1 - min(v, ymax) / ymax) }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        func label(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%g", v) }
        func escape(_ t: String) -> String {
            t.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        let palette = ["#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f", "#1f77b4"]
        let plotRight = width - right
        var svg = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))" font-family="sans-serif">
        <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
        <text x="\(f(left))" y="16" font-size="13">Latency per frame (ms): end to end and per stage; budget \(f(budget)) ms at \(f(targetFPS)) fps; \(drops.count) dropped</text>

        """
        // Grid, ticks and their labels.
        svg += "<g class=\"axis-y\">\n"
        for t in yTicks {
            svg += "<line x1=\"\(f(left - 4))\" y1=\"\(f(y(t)))\" x2=\"\(f(plotRight))\" y2=\"\(f(y(t)))\" stroke=\"#e6e6e6\"/>"
            svg += "<text class=\"tick\" x=\"\(f(left - 8))\" y=\"\(f(y(t) + 4))\" font-size=\"11\" text-anchor=\"end\">\(label(t))</text>\n"
        }
        svg += "<text x=\"14\" y=\"\(f((top + height - bottom) / 2))\" font-size=\"11\" transform=\"rotate(-90 14 \(f((top + height - bottom) / 2)))\" text-anchor=\"middle\">latency (ms)</text>\n</g>\n"
        svg += "<g class=\"axis-x\">\n"
        for t in xTicks {
            svg += "<line x1=\"\(f(x(t)))\" y1=\"\(f(y(0)))\" x2=\"\(f(x(t)))\" y2=\"\(f(y(0) + 5))\" stroke=\"black\"/>"
            svg += "<text class=\"tick\" x=\"\(f(x(t)))\" y=\"\(f(y(0) + 18))\" font-size=\"11\" text-anchor=\"middle\">\(t)</text>\n"
        }
        svg += "<text x=\"\(f((left + plotRight) / 2))\" y=\"\(f(height - 10))\" font-size=\"11\" text-anchor=\"middle\">frame</text>\n</g>\n"
        svg += "<line x1=\"\(f(left))\" y1=\"\(f(y(0)))\" x2=\"\(f(plotRight))\" y2=\"\(f(y(0)))\" stroke=\"black\"/>\n"
        svg += "<line x1=\"\(f(left))\" y1=\"\(f(top))\" x2=\"\(f(left))\" y2=\"\(f(y(0)))\" stroke=\"black\"/>\n"
        svg += "<line class=\"budget\" x1=\"\(f(left))\" y1=\"\(f(y(budget)))\" x2=\"\(f(plotRight))\" y2=\"\(f(y(budget)))\" stroke=\"red\" stroke-dasharray=\"6,4\"/>\n"
        // Series: stages thin, end to end on top.
        var legend: [(name: String, color: String, dashed: Bool)] = []
        for (k, points) in perStage.enumerated() where !points.isEmpty {
            let color = palette[k % palette.count]
            let path = points.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ")
            svg += "<polyline data-series=\"\(escape(stageNames[k]))\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1\" points=\"\(path)\"/>\n"
            legend.append((stageNames[k], color, false))
        }
        if !endToEnd.isEmpty {
            let path = endToEnd.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ")
            svg += "<polyline data-series=\"end-to-end\" fill=\"none\" stroke=\"steelblue\" stroke-width=\"2\" points=\"\(path)\"/>\n"
        }
        legend.insert(("end to end", "steelblue", false), at: 0)
        legend.append(("budget \(f(budget)) ms", "red", true))
        for d in drops {
            svg += "<line class=\"drop\" x1=\"\(f(x(d.id)))\" y1=\"\(f(y(0) - 10))\" x2=\"\(f(x(d.id)))\" y2=\"\(f(y(0)))\" stroke=\"orange\" stroke-width=\"2\"><title>frame \(d.id) dropped before \(escape(d.stage < stageNames.count ? stageNames[d.stage] : "stage \(d.stage)"))</title></line>\n"
        }
        // The legend, right of the plot.
        svg += "<g class=\"legend\">\n"
        var ly = top + 8
        for entry in legend {
            svg += "<line x1=\"\(f(plotRight + 14))\" y1=\"\(f(ly))\" x2=\"\(f(plotRight + 38))\" y2=\"\(f(ly))\" stroke=\"\(entry.color)\" stroke-width=\"2\"\(entry.dashed ? " stroke-dasharray=\"6,4\"" : "")/>"
            svg += "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">\(escape(entry.name))</text>\n"
            ly += 18
        }
        svg += "<line x1=\"\(f(plotRight + 26))\" y1=\"\(f(ly - 6))\" x2=\"\(f(plotRight + 26))\" y2=\"\(f(ly + 4))\" stroke=\"orange\" stroke-width=\"2\"/>"
        svg += "<text class=\"legend-entry\" x=\"\(f(plotRight + 44))\" y=\"\(f(ly + 4))\" font-size=\"11\">dropped frame (\(drops.count))</text>\n</g>\n"
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
