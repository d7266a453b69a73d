/// A float image in planar CHW layout, the form the inference engine consumes: channel after
/// channel, each `height` rows of `width` values. RGB values are in [0, 1].
public struct FloatPlanarImage: Sendable, Equatable {
    /// Number of channels (3 for RGB, 1 for grey).
    public var channels: Int
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// `channels * height * width` values.
    public var data: [Float]

    /// Makes a zero-filled image.
    public init(channels: Int, width: Int, height: Int) {
        self.channels = channels
        self.width = width
        self.height = height
        self.data = [Float](repeating: 0, count: channels * width * height)
    }

    /// Fills this image from an `rgb24` or `gray` frame, dividing by 255, reusing storage.
    public mutating func load(from frame: VideoFrame) {
        precondition(frame.format == .rgb24 || frame.format == .gray, "load(from:) takes rgb24 or gray frames")
        let c = frame.format == .rgb24 ? 3 : 1
        let n = frame.width * frame.height
        if channels != c || width != frame.width || height != frame.height {
            channels = c; width = frame.width; height = frame.height
            data = [Float](repeating: 0, count: c * n)
        }
        let scale: Float = 1.0 / 255.0
        frame.planes[0].withUnsafeBufferPointer { src in
            data.withUnsafeMutableBufferPointer { dst in
                let s = src.baseAddress!, d = dst.baseAddress!
                if c == 3 {
                    // Straight-line de-interleaving the compiler vectorises.
                    let r = d, g = d + n, b = d + 2 * n
                    for i in 0..<n {
                        r[i] = Float(s[3 * i]) * scale
                        g[i] = Float(s[3 * i + 1]) * scale
                        b[i] = Float(s[3 * i + 2]) * scale
                    }
                } else {
                    for i in 0..<n { d[i] = Float(s[i]) * scale }
                }
            }
        }
    }

    /// Writes this image into `frame` (resized to fit) as `rgb24` or `gray`, scaling by 255,
    /// rounding to nearest and clamping to [0, 255].
    public func store(into frame: inout VideoFrame) {
        precondition(channels == 3 || channels == 1, "store(into:) needs 1 or 3 channels")
        frame.reshape(format: channels == 3 ? .rgb24 : .gray, width: width, height: height)
        let n = width * height
        let c = channels
        // Round half up after clamping: floor(x·255 + 0.5) as a truncating conversion, which
        // vectorises (`rounded()` is a libm call per value).
        @inline(__always) func byte(_ v: Float) -> UInt8 { UInt8(truncatingIfNeeded: Int32(min(max(v * 255 + 0.5, 0), 255))) }
        data.withUnsafeBufferPointer { src in
            frame.planes[0].withUnsafeMutableBufferPointer { dst in
                let s = src.baseAddress!, d = dst.baseAddress!
                if c == 3 {
                    let r = s, g = s + n, b = s + 2 * n
                    for i in 0..<n {
                        d[3 * i] = byte(r[i])
                        d[3 * i + 1] = byte(g[i])
                        d[3 * i + 2] = byte(b[i])
                    }
                } else {
                    for i in 0..<n { d[i] = byte(s[i]) }
                }
            }
        }
    }

    /// This image as 3 channels: grey is repeated into R, G and B; RGB is returned as is.
    public func expandedToRGB() -> FloatPlanarImage {
        guard channels == 1 else { return self }
        var rgb = FloatPlanarImage(channels: 3, width: width, height: height)
        let n = width * height
        for k in 0..<3 { rgb.data.replaceSubrange(k * n..<(k + 1) * n, with: data) }
        return rgb
    }
}
