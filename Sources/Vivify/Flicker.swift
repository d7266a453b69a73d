internal import ColorScience
import Foundation
internal import MediaIO

/// Measures the flicker and drift metrics of a video file (see `FlickerMeter`, `DriftMeter`),
/// decoding it to RGB and converting every frame to Lab.
package enum Flicker {
    /// What `measure` found.
    package struct Measures: Sendable {
        /// The flicker metric (ab units) and the static pixel pairs it was measured on.
        package var value: Double, samples: Int
        /// Frames read.
        package var frames: Int
        /// The drift metric (ab units) and the regions followed.
        package var drift: Double, tracks: Int
        /// With a truth: its drift over the same regions, and the drift of the difference.
        package var truthDrift: Double?, differenceDrift: Double?
    }

    /// The metrics over every frame of `path`; with `truth` (the colour original of a clip
    /// colorized from its grey), the drift of the same regions in it too. The truth must have
    /// the same frames (it is resized to the clip's size).
    package static func measure(path: String, truth: String? = nil) throws -> Measures {
        // The reader's advice for a file that is not media names `run`'s --input-format, which
        // `flicker` does not take.
        func open(_ path: String) throws -> MediaReader {
            do {
                return try MediaReader(path: path, outputFormat: .rgb24, copyStreams: false)
            } catch let e as MediaError where e.message.hasSuffix(MediaError.rawFramesHint) {
                throw MediaError(e.kind, String(e.message.dropLast(MediaError.rawFramesHint.count))
                                 + "Pass a video file FFmpeg reads (`vivify flicker` takes no raw frames: write them into a file with `vivify run` first).")
            }
        }
        let reader = try open(path)
        let truthReader = try truth.map { try open($0) }
        let lab = LabConverter()
        var meter = FlickerMeter()
        var drift = DriftMeter()
        // The whole-pixel tracker of the figures before 2026-12-01, for comparison.
        if ProcessInfo.processInfo.environment["VIVIFY_DRIFT_TRACKING"] == "integer" { drift.tracking = .integer }
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var truthFrame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var frames = 0
        while true {
            guard try next(reader, into: &frame) else { break }
            var truthAB: (a: [Float], b: [Float])?
            if let truthReader, let truth {
                guard try next(truthReader, into: &truthFrame) else {
                    throw MediaError(.invalidOptions, "'--truth \(truth)' has fewer frames than '\(path)' (it ended after \(frames)). Give the colour original the clip was made from, frame for frame.")
                }
                // Another size is fine (an upscaled output against its original); another aspect
                // is another clip, whose regions would not be the same ones.
                let aspect = Double(truthFrame.width) * Double(frame.height) / (Double(truthFrame.height) * Double(frame.width))
                guard abs(aspect - 1) <= 0.02 else {
                    throw MediaError(.invalidOptions, "'--truth \(truth)' is \(truthFrame.width)×\(truthFrame.height), of another aspect than '\(path)' (\(frame.width)×\(frame.height)). Give the colour original the clip was made from, frame for frame.")
                }
                let (_, ta, tb) = lab.lab(of: truthFrame.planes[0], width: truthFrame.width, height: truthFrame.height)
                if truthFrame.width == frame.width && truthFrame.height == frame.height {
                    truthAB = (ta, tb)
                } else {
                    var ra: [Float] = [], rb: [Float] = []
                    Resample.area(ta, truthFrame.width, truthFrame.height, into: &ra, frame.width, frame.height)
                    Resample.area(tb, truthFrame.width, truthFrame.height, into: &rb, frame.width, frame.height)
                    truthAB = (ra, rb)
                }
            }
            let (l, a, b) = lab.lab(of: frame.planes[0], width: frame.width, height: frame.height)
            meter.add(l: l, a: a, b: b)
            drift.add(l: l, a: a, b: b, width: frame.width, height: frame.height, truth: truthAB)
            frames += 1
        }
        drift.finish()
        return Measures(value: meter.value, samples: meter.samples, frames: frames, drift: drift.value, tracks: drift.tracksCounted,
                        truthDrift: truth == nil ? nil : drift.truthValue, differenceDrift: truth == nil ? nil : drift.differenceValue)
    }

    /// The next decoded frame, or false at the end.
    private static func next(_ reader: MediaReader, into frame: inout VideoFrame) throws -> Bool {
        while true {
            switch try reader.read(into: &frame) {
            case .end: return false
            case .packet: continue
            case .frame: return true
            }
        }
    }
}
