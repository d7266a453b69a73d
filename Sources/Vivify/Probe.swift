import Foundation
package import MediaIO

/// `vivify probe`: what an input holds, as text or JSON.
package enum Probe {
    /// Describes `input`. With `countFrames`, a media file is demuxed to count its frames and
    /// tell whether the rate varies.
    package static func describe(_ input: InputSettings, countFrames: Bool) throws -> MediaInfo {
        let source = try Job.openSource(input, copyStreams: true, maxPixels: MediaLimits.defaultMaxPixels, allowStill: true)
        var info = source.info
        if countFrames, source is MediaReader {
            let scan = try MediaReader.scanVideoPackets(path: input.path)
            info.video.frameCount = scan.count
            info.video.isVariableFrameRate = scan.isVariableFrameRate
        }
        return info
    }

    /// A human-readable report.
    package static func text(_ info: MediaInfo, name: String) -> String {
        let v = info.video
        var lines: [String] = []
        lines.append("input: \(name)")
        lines.append("container: \(info.container)")
        if let d = info.duration { lines.append(String(format: "duration: %.3f s", d)) }
        lines.append("video: \(v.codecName) \(v.width)x\(v.height) \(v.sourcePixelFormatName)")
        if Job.isStill(info) {
            // A picture has no rate or frame count of its own (FFmpeg gives it 25 fps).
            lines.append("still picture: colour or upscale it with `vivify image \(name) OUTPUT.png`")
            lines.append("sample aspect ratio: \(v.sampleAspectRatio.num):\(v.sampleAspectRatio.den)")
            lines.append("colour: \(v.color)")
            return lines.joined(separator: "\n") + "\n"
        }
        let rate = String(format: "%.3f", v.frameRate.doubleValue)
        lines.append("frame rate: \(v.frameRate) (\(rate) fps)\(v.isVariableFrameRate ? ", variable" : ", constant")")
        lines.append("time base: \(v.timeBase)")
        lines.append("frames: \(v.frameCount.map(String.init) ?? "unknown (use --count-frames)")")
        lines.append("sample aspect ratio: \(v.sampleAspectRatio.num):\(v.sampleAspectRatio.den)")
        lines.append("colour: \(v.color)")
        if v.rotation != 0 { lines.append(String(format: "rotation: %.0f degrees", v.rotation)) }
        for s in info.streams {
            var line = "stream #\(s.index): \(s.kind) \(s.codecName)"
            if !s.details.isEmpty { line += " (\(s.details))" }
            if let d = s.duration { line += String(format: ", %.3f s", d) }
            lines.append(line)
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A JSON report with stable keys (documented in the README).
    package static func json(_ info: MediaInfo, name: String) -> String {
        let v = info.video
        var video: [String: Any] = [
            "codec": v.codecName, "width": v.width, "height": v.height, "pixel_format": v.sourcePixelFormatName,
            "frame_rate": "\(v.frameRate.num)/\(v.frameRate.den)", "variable_frame_rate": v.isVariableFrameRate,
            "time_base": "\(v.timeBase.num)/\(v.timeBase.den)",
            "sample_aspect_ratio": "\(v.sampleAspectRatio.num):\(v.sampleAspectRatio.den)",
            "color_matrix": v.color.matrixName, "color_primaries": v.color.primariesName,
            "color_transfer": v.color.transferName, "color_range": v.color.rangeName, "rotation": v.rotation,
        ]
        video["frames"] = v.frameCount ?? NSNull()
        video["duration"] = v.duration ?? NSNull()
        let streams: [[String: Any]] = info.streams.map {
            ["index": $0.index, "kind": $0.kind, "codec": $0.codecName, "details": $0.details, "duration": $0.duration ?? NSNull()]
        }
        let root: [String: Any] = ["input": name, "container": info.container, "duration": info.duration ?? NSNull(),
                                   "still": Job.isStill(info), "video": video, "streams": streams]
        let data = (try? JSONSerialization.data(withJSONObject: root, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
