import Foundation
import MediaIO

// Raw and y4m frame streams of any size down to 1×1, read by the real readers and carried
// through the conversions a run applies to them (FrameConverter: to the models' rgb24, to
// every format a sink takes, a resize, planar float and back), so swscale's reads and writes
// around narrow planes are exercised. In a fuzz build `PaddedPlanes` also checks a guard band
// after each of its buffers once swscale has written them.

extension FuzzTarget {
    /// Headerless frames: byte 0 picks the format (bit 0: rgb24 or gray) and whether the body
    /// is cut to whole frames (bit 1 clear) or left as it is; bytes 1 and 2 are the width and
    /// height − 1 (1…64 each); byte 3 the size of the resize; the rest is the stream.
    static func rawFrames(_ data: Data) {
        guard data.count >= 4 else { return }
        let b = [UInt8](data.prefix(4))
        let format: PixelFormat = b[0] & 1 == 0 ? .rgb24 : .gray
        let width = Int(b[1] % 64) + 1, height = Int(b[2] % 64) + 1
        var body = data.dropFirst(4)
        let frameBytes = format.frameBytes(width: width, height: height)
        if b[0] & 2 == 0 { body = body.prefix(body.count / frameBytes * frameBytes) }
        let path = write(Data(body), "input.raw")
        guard let reader = try? RawVideoReader(path: path, format: format, width: width, height: height, rate: Rational(25, 1)) else { return }
        var frame = VideoFrame(format: format, width: 1, height: 1)
        let session = ConversionSession(resize: b[3])
        for _ in 0..<3 {
            guard let event = try? reader.read(into: &frame), case .frame = event else { return }
            session.convert(frame)
        }
    }

    /// A whole YUV4MPEG2 stream (any size and colour tag the reader takes), up to three frames,
    /// each converted as a run converts it; the frames are also written back out as y4m.
    static func y4mFrames(_ data: Data) {
        let path = write(data, "frames.y4m")
        guard let reader = try? Y4MReader(path: path) else { return }
        let v = reader.info.video
        // Streams whose frames cannot be in the input at all (bigger than it) end at the first
        // read; the conversions below are only sized for frames that were really read.
        var frame = VideoFrame(format: v.pixelFormat, width: 1, height: 1)
        let session = ConversionSession(resize: data.last ?? 0)
        let writer = try? Y4MWriter(path: scratch.appendingPathComponent("copy.y4m").path, header: reader.header)
        for _ in 0..<3 {
            guard let event = try? reader.read(into: &frame), case .frame = event else { break }
            session.convert(frame)
            try? writer?.write(frame)
        }
        try? writer?.finish()
    }

    /// The conversions of one run: one converter per direction, reused from frame to frame as
    /// the pipeline's stages reuse theirs.
    final class ConversionSession {
        let toRGB = FrameConverter(filter: .bicubic)
        let toSink = FrameConverter(filter: .bicubic)
        let resizer = FrameConverter(filter: .lanczos)
        var rgb = VideoFrame(format: .rgb24, width: 1, height: 1)
        var out = VideoFrame(format: .rgb24, width: 1, height: 1)
        var resized = VideoFrame(format: .rgb24, width: 1, height: 1)
        let resize: UInt8

        init(resize: UInt8) { self.resize = resize }

        func convert(_ frame: VideoFrame) {
            // Decoded frame → the models' rgb24 (ToRGBProcessor).
            rgb.reshape(format: .rgb24, width: frame.width, height: frame.height)
            guard (try? toRGB.convert(frame, into: &rgb)) != nil else { return }
            // rgb24 → planar float (the models' input) → rgb24 (the hand-over back).
            var planar = FloatPlanarImage(channels: 3, width: rgb.width, height: rgb.height)
            planar.load(from: rgb)
            planar.store(into: &out)
            // rgb24 → every format a sink takes (OutputConversionProcessor), and back to the
            // source's own format.
            for format in PixelFormat.allCases + [frame.format] {
                out.reshape(format: format, width: rgb.width, height: rgb.height)
                out.color = frame.color
                _ = try? toSink.convert(rgb, into: &out)
            }
            // A resize (ResizeProcessor: lanczos), to a size from 1×1 to 4× the frame.
            let w = max(1, Int(resize & 0x0F) * frame.width / 4), h = max(1, Int(resize >> 4) * frame.height / 4)
            resized.reshape(format: frame.format, width: w, height: h)
            _ = try? resizer.convert(frame, into: &resized)
        }
    }
}

#if VIVIFY_FUZZ
extension FuzzTarget {
    /// Writes one byte into the guard band after a narrow yuv420p picture's last plane and
    /// copies the planes out: in a fuzz build this traps ("swscale wrote past a plane buffer").
    public static func overrunAGuardBand() {
        GuardBandCheck.overrunOneByteAndStore(format: .yuv420p, width: 3, height: 8)
    }
}
#endif
