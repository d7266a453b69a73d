import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Tracing
import XCTest

/// The tracer driven by hand: known spans in, known statistics and well-formed files out.
final class FrameTracerTests: XCTestCase {
    /// 10 frames at 30 fps; the "model" takes 50 ms, so frames 1, 3, 5, 7, 9 are dropped.
    func makeTracer() -> FrameTracer {
        let t = FrameTracer(stageNames: ["decode", "upscale", "encode"], targetFPS: 30, clock: { 0 })
        for id in 0..<10 {
            let arrival = Double(id) / 30
            t.span(stage: 0, id: id, thread: "decode", start: arrival, end: arrival + 0.002)
            if id % 2 == 1 {
                t.dropped(id: id, beforeStage: 1, at: arrival + 0.03)
                continue
            }
            t.span(stage: 1, id: id, thread: "upscale", start: arrival + 0.003, end: arrival + 0.053)
            t.span(stage: 2, id: id, thread: "encode", start: arrival + 0.054, end: arrival + 0.058)
        }
        return t
    }

    /// A pipeline keeps the rate when each stage fits in one frame's budget, whatever the
    /// end-to-end latency (issue 33: the live summary always said 0% because it compared the
    /// whole pipeline's latency with one frame's budget).
    func testBudgetIsMetPerStageNotByLatency() {
        let t = FrameTracer(stageNames: ["decode", "colorize", "upscale", "encode"], targetFPS: 30, clock: { 0 })
        for id in 0..<10 {
            let arrival = Double(id) / 30
            // Three 25 ms stages one after another: 80 ms end to end, every stage within 33 ms;
            // frame 9's upscale takes 40 ms.
            t.span(stage: 0, id: id, thread: "decode", start: arrival, end: arrival + 0.005)
            t.span(stage: 1, id: id, thread: "colorize", start: arrival + 0.005, end: arrival + 0.030)
            t.span(stage: 2, id: id, thread: "upscale", start: arrival + 0.030, end: arrival + (id == 9 ? 0.070 : 0.055))
            t.span(stage: 3, id: id, thread: "encode", start: arrival + 0.075, end: arrival + 0.080)
        }
        let r = t.report()
        XCTAssertEqual(r.endToEnd.p50Ms, 80, accuracy: 1e-6, "latency is latency")
        XCTAssertEqual(r.budgetMetRatio, 0.9, accuracy: 1e-9, "9 of 10 frames with every stage within 33.3 ms")
        XCTAssertTrue(r.text.contains("90.0% of frames with every stage within the budget"), r.text)
    }

    func testStatistics() throws {
        let r = makeTracer().report()
        XCTAssertEqual(r.framesIn, 10)
        XCTAssertEqual(r.framesProcessed, 5)
        XCTAssertEqual(r.framesDropped, 5)
        XCTAssertEqual(r.dropsByStage, ["upscale": 5])
        XCTAssertEqual(r.budgetMs, 1000.0 / 30, accuracy: 1e-9)
        XCTAssertEqual(r.bottleneckStage, "upscale")
        XCTAssertEqual(r.bottleneckExcessMs, 50 - 1000.0 / 30, accuracy: 1e-6)
        XCTAssertEqual(r.endToEnd.p50Ms, 58, accuracy: 1e-6)
        XCTAssertEqual(r.budgetMetRatio, 0)
        let upscale = r.stages[1]
        XCTAssertEqual(upscale.count, 5)
        XCTAssertEqual(upscale.p95Ms, 50, accuracy: 1e-6)
        XCTAssertEqual(upscale.queueWaitP50Ms, 1, accuracy: 1e-6)
        // Last processed frame (8) ends at 8/30 + 0.058; first arrival at 0.
        XCTAssertEqual(r.achievedFps, 5 / (8.0 / 30 + 0.058), accuracy: 1e-6)
        XCTAssertTrue(r.text.contains("dropped 5 (before upscale: 5)"), r.text)
        XCTAssertTrue(r.text.contains("bottleneck: upscale"), r.text)
    }

    /// A paced 25 fps source processed in full: throughput can only be 25 fps, which "keeps up"
    /// rather than missing the 30 fps target; the same run with a drop misses it.
    func testPacedSourceBelowTheTargetIsKeptUpWith() {
        func run(dropping: Int?) -> TraceReport {
            let t = FrameTracer(stageNames: ["decode", "upscale", "encode"], targetFPS: 30, clock: { 0 })
            for id in 0..<50 {
                let arrival = Double(id) / 25
                t.span(stage: 0, id: id, thread: "decode", start: arrival, end: arrival + 0.002)
                if id == dropping { t.dropped(id: id, beforeStage: 1, at: arrival + 0.003); continue }
                t.span(stage: 1, id: id, thread: "upscale", start: arrival + 0.003, end: arrival + 0.013)
                t.span(stage: 2, id: id, thread: "encode", start: arrival + 0.014, end: arrival + 0.016)
            }
            return t.report()
        }
        let full = run(dropping: nil)
        XCTAssertEqual(full.inputFps, 25, accuracy: 1e-6)
        XCTAssertLessThan(full.achievedFps, 30)
        XCTAssertTrue(full.text.contains("kept up with the input's 25.0 fps"), full.text)
        let lossy = run(dropping: 20)
        XCTAssertTrue(lossy.text.contains("NOT met"), lossy.text)
        XCTAssertTrue(makeTracer().report().text.contains("NOT met"), "a source at the target rate that drops frames")
    }

    /// The stats JSON has the documented keys with the documented types.
    func testStatsJSONMatchesTheSchema() throws {
        let data = try makeTracer().report().json()
        let j = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        for key in ["frames_in", "frames_processed", "frames_dropped"] { XCTAssertTrue(j[key] is Int, key) }
        for key in ["target_fps", "achieved_fps", "budget_ms", "budget_met_ratio", "input_fps"] { XCTAssertTrue(j[key] is Double || j[key] is Int, key) }
        XCTAssertTrue(j["bottleneck_stage"] is String)
        let stages = try XCTUnwrap(j["stages"] as? [[String: Any]])
        XCTAssertEqual(stages.count, 3)
        for s in stages {
            XCTAssertTrue(s["name"] is String)
            for key in ["p50_ms", "p95_ms", "p99_ms", "max_ms"] { XCTAssertNotNil(s[key] as? Double, key) }
            XCTAssertTrue(s["count"] is Int)
        }
        let e2e = try XCTUnwrap(j["end_to_end"] as? [String: Any])
        for key in ["p50_ms", "p95_ms", "p99_ms"] { XCTAssertNotNil(e2e[key] as? Double, key) }
    }

    func testChromeTraceIsValidTraceEventJSON() throws {
        let data = try makeTracer().chromeTrace()
        let j = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let events = try XCTUnwrap(j["traceEvents"] as? [[String: Any]])
        let slices = events.filter { $0["ph"] as? String == "X" }
        let drops = events.filter { $0["ph"] as? String == "i" }
        XCTAssertEqual(slices.count, 10 + 5 + 5, "one slice per frame and stage")
        XCTAssertEqual(drops.count, 5)
        for e in slices {
            XCTAssertNotNil(e["ts"] as? Double)
            XCTAssertNotNil(e["dur"] as? Double)
            XCTAssertNotNil(e["tid"] as? Int)
            XCTAssertEqual(e["pid"] as? Int, 1)
        }
        let names = events.filter { $0["ph"] as? String == "M" && $0["name"] as? String == "thread_name" }
        XCTAssertEqual(Set(names.compactMap { ($0["args"] as? [String: Any])?["name"] as? String }), ["decode", "upscale", "encode"])
    }

    func testPlotIsWellFormedSVG() throws {
        let svg = makeTracer().latencyPlot()
        final class Collector: NSObject, XMLParserDelegate {
            var elements: [String: Int] = [:]
            var series: [String] = []
            var drops = 0
            var texts: [(cls: String, text: String)] = []
            var currentClass: String?
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                elements[name, default: 0] += 1
                if name == "polyline", let s = attributes["data-series"] { series.append(s) }
                if name == "line", attributes["class"] == "drop" { drops += 1 }
                currentClass = name == "text" ? attributes["class"] ?? "" : nil
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) {
                if let c = currentClass { texts.append((c, string)) }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) { currentClass = nil }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let c = Collector()
        parser.delegate = c
        XCTAssertTrue(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        XCTAssertEqual(c.elements["svg"], 1)
        // One curve end to end and one per stage (drops have no end-to-end point).
        XCTAssertEqual(Set(c.series), ["end-to-end", "decode", "upscale", "encode"])
        XCTAssertEqual(c.drops, 5, "one mark per dropped frame")
        // Axis ticks with labels: the latency axis passes the 33.3 ms budget and the 58 ms
        // frames; the frame axis spans 0-9.
        let ticks = c.texts.filter { $0.cls == "tick" }.map(\.text)
        let yValues = ticks.compactMap(Double.init).filter { $0 > 9 }
        XCTAssertGreaterThanOrEqual(yValues.max() ?? 0, 58)
        XCTAssertTrue(ticks.contains("0") && ticks.contains("8"), "frame ticks: \(ticks)")
        XCTAssertGreaterThanOrEqual(ticks.count, 8)
        let legend = c.texts.filter { $0.cls == "legend-entry" }.map(\.text)
        for entry in ["end to end", "decode", "upscale", "encode", "budget 33.3 ms", "dropped frame (5)"] {
            XCTAssertTrue(legend.contains(entry), "legend has '\(entry)': \(legend)")
        }
    }

    /// The stage view has a scale of its own (issue 33: stage lines of a few milliseconds were
    /// squashed flat under an end-to-end line of hundreds), and says each stage's median.
    func testStageViewIsReadableBesideALongLatency() throws {
        let t = FrameTracer(stageNames: ["decode", "colorize", "encode"], targetFPS: 30, clock: { 0 })
        for id in 0..<20 {
            let arrival = Double(id) / 30
            // Stages of 2, 12 + id/2 and 4 ms, with 400 ms of queueing before the colorizer.
            t.span(stage: 0, id: id, thread: "decode", start: arrival, end: arrival + 0.002)
            let colorize = 0.012 + Double(id) * 0.0005
            t.span(stage: 1, id: id, thread: "colorize", start: arrival + 0.402, end: arrival + 0.402 + colorize)
            t.span(stage: 2, id: id, thread: "encode", start: arrival + 0.403 + colorize, end: arrival + 0.407 + colorize)
        }
        let svg = t.latencyPlot()
        final class Ticks: NSObject, XMLParserDelegate {
            var byClass: [String: [String]] = [:]
            var current: String?
            func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                current = name == "text" ? attributes["class"] : nil
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) { if let c = current { byClass[c, default: []].append(string) } }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) { current = nil }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let c = Ticks()
        parser.delegate = c
        XCTAssertTrue(parser.parse())
        // Latency axis reaches the ~420 ms frames; the stage axis tops out near the 33 ms budget.
        let latencyMax = (c.byClass["tick"] ?? []).compactMap(Double.init).max() ?? 0
        let stageAxis = (c.byClass["stage-tick"] ?? []).compactMap(Double.init)
        XCTAssertGreaterThanOrEqual(latencyMax, 420)
        // The frame ticks (0…19) share the class; the y ticks go up to the stage scale's top.
        XCTAssertGreaterThanOrEqual(stageAxis.max() ?? 0, 33.3)
        XCTAssertLessThanOrEqual(stageAxis.max() ?? .infinity, 50, "stage view scaled to the stages, not the latency: \(stageAxis)")
        // Medians: decode 2, colorize 12 + 9.5/2 ≈ 16.8 (ids 0…19, the middle one 10 → 17.0), encode 4.
        let stats = c.byClass["stage-stats"] ?? []
        XCTAssertEqual(stats.count, 3, "\(stats)")
        XCTAssertTrue(stats[0].hasPrefix("median 2.0"), "\(stats)")
        XCTAssertTrue(stats[1].hasPrefix("median 17.0"), "\(stats)")
        XCTAssertTrue(stats[2].hasPrefix("median 4.0"), "\(stats)")
    }
}
