internal import ColorScience
import Foundation
internal import MediaIO

/// Measures the flicker metric of a video file (see `FlickerMeter`), decoding it to RGB and
/// converting every frame to Lab.
public enum Flicker {
    /// The metric over every frame of `path`, with the number of static pixel pairs measured.
    public static func measure(path: String) throws -> (value: Double, samples: Int, frames: Int) {
        let reader = try MediaReader(path: path, outputFormat: .rgb24, copyStreams: false)
        let lab = LabConverter()
        var meter = FlickerMeter()
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var frames = 0
        while true {
            switch try reader.read(into: &frame) {
            case .end:
                return (meter.value, meter.samples, frames)
            case .packet:
                continue
            case .frame:
                let (l, a, b) = lab.lab(of: frame.planes[0], width: frame.width, height: frame.height)
                meter.add(l: l, a: a, b: b)
                frames += 1
            }
        }
    }
}
