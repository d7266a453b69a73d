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
        var points: [(Int, Double)] = []
        var drops: [Int] = []
        for (id, r) in all {
            guard let arrival = r.spans.first(where: { $0.stage == 0 }) else { continue }
            if r.dropped != nil { drops.append(id); continue }
            if let done = r.spans.first(where: { $0.stage == last }) { points.append((id, (done.end - arrival.start) * 1000)) }
        }
        let width = 900.0, height = 400.0, left = 60.0, right = 20.0, top = 20.0, bottom = 50.0
        // The window may start past frame 0 on a long stream: x spans the ids it holds.
        let firstID = all.first?.id ?? 0
        let n = max((all.last?.id ?? 0) - firstID, 1)
        let ymax = max(budget * 1.5, (points.map(\.1).max() ?? budget) * 1.1)
        func x(_ i: Int) -> Double { left + (width - left - right) * Double(i - firstID) / Double(n) }
        func y(_ v: Double) -> Double { top + (height - top - bottom) * (1 - v / ymax) }
        func f(_ v: Double) -> String { String(format: "%.1f", v) }
        var svg = """
        <?xml version="1.0" encoding="UTF-8"?>
        <svg xmlns="http://www.w3.org/2000/svg" width="\(Int(width))" height="\(Int(height))" viewBox="0 0 \(Int(width)) \(Int(height))">
        <rect x="0" y="0" width="\(Int(width))" height="\(Int(height))" fill="white"/>
        <text x="\(f(left))" y="14" font-family="sans-serif" font-size="12">End-to-end latency per frame (ms); budget \(f(budget)) ms at \(f(targetFPS)) fps; \(drops.count) dropped</text>
        <line x1="\(f(left))" y1="\(f(y(0)))" x2="\(f(width - right))" y2="\(f(y(0)))" stroke="black"/>
        <line x1="\(f(left))" y1="\(f(top))" x2="\(f(left))" y2="\(f(y(0)))" stroke="black"/>
        <line x1="\(f(left))" y1="\(f(y(budget)))" x2="\(f(width - right))" y2="\(f(y(budget)))" stroke="red" stroke-dasharray="6,4"/>
        <text x="\(f(width - right - 90))" y="\(f(y(budget) - 4))" font-family="sans-serif" font-size="11" fill="red">budget \(f(budget)) ms</text>
        <text x="\(f(left - 8))" y="\(f(top + 10))" font-family="sans-serif" font-size="11" text-anchor="end">\(f(ymax))</text>
        <text x="\(f(left - 8))" y="\(f(y(0)))" font-family="sans-serif" font-size="11" text-anchor="end">0</text>
        <text x="\(f((left + width) / 2))" y="\(f(height - 12))" font-family="sans-serif" font-size="11" text-anchor="middle">frame</text>

        """
        if !points.isEmpty {
            let path = points.map { "\(f(x($0.0))),\(f(y($0.1)))" }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"steelblue\" stroke-width=\"1.5\" points=\"\(path)\"/>\n"
        }
        for d in drops {
            svg += "<line x1=\"\(f(x(d)))\" y1=\"\(f(y(0) + 4))\" x2=\"\(f(x(d)))\" y2=\"\(f(y(0) + 12))\" stroke=\"orange\"><title>frame \(d) dropped</title></line>\n"
        }
        svg += "</svg>\n"
        return svg
    }
}
