/// One decoded picture: tightly packed 8-bit planes plus its timing and colour description.
///
/// A frame is a value; keep one `var` and refill it to avoid allocating per frame (its planes
/// are reused in place while the storage is uniquely referenced).
public struct VideoFrame: Sendable {
    /// The layout of `planes`.
    public var format: PixelFormat
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// The pixel data, one array per plane, rows packed without padding.
    public var planes: [[UInt8]]
    /// Presentation timestamp in `timeBase` units, when known.
    public var pts: Int64?
    /// How long the frame is shown, in `timeBase` units, when known.
    public var duration: Int64?
    /// Unit of `pts` and `duration`.
    public var timeBase: Rational
    /// Colour description of the pixels.
    public var color: ColorInfo
    /// Shape of one pixel (1:1 for square pixels).
    public var sampleAspectRatio: Rational

    /// Makes a zero-filled frame of the given layout.
    public init(format: PixelFormat, width: Int, height: Int, timeBase: Rational = Rational(1, 1),
                color: ColorInfo = .unspecified, sampleAspectRatio: Rational = Rational(1, 1)) {
        self.format = format
        self.width = width
        self.height = height
        self.planes = (0..<format.planeCount).map {
            [UInt8](repeating: 0, count: format.rowBytes(plane: $0, width: width) * format.rows(plane: $0, height: height))
        }
        self.pts = nil
        self.duration = nil
        self.timeBase = timeBase
        self.color = color
        self.sampleAspectRatio = sampleAspectRatio
    }

    /// Changes the layout, reallocating planes only when their sizes change.
    public mutating func reshape(format: PixelFormat, width: Int, height: Int) {
        if format == self.format && width == self.width && height == self.height { return }
        self.format = format
        self.width = width
        self.height = height
        let count = format.planeCount
        if planes.count != count { planes = Array(repeating: [], count: count) }
        for p in 0..<count {
            let size = format.rowBytes(plane: p, width: width) * format.rows(plane: p, height: height)
            if planes[p].count != size { planes[p] = [UInt8](repeating: 0, count: size) }
        }
    }

    /// Presentation time in seconds, when known.
    public var seconds: Double? { pts.map { Double($0) * timeBase.doubleValue } }
}
