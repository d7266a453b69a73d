/// The flicker metric: mean absolute frame-to-frame change of a* and b* ((|Δa| + |Δb|) / 2)
/// over the pixels whose L* changed by less than `staticThreshold` — colour that jumps where
/// nothing moved.
public struct FlickerMeter {
    /// |ΔL| below which a pixel counts as static.
    public var staticThreshold: Float
    private var previous: (l: [Float], a: [Float], b: [Float])?
    private var sum: Double = 0
    private var count = 0

    /// Makes a meter.
    public init(staticThreshold: Float = 1) { self.staticThreshold = staticThreshold }

    /// Adds the next frame's planes.
    public mutating func add(l: [Float], a: [Float], b: [Float]) {
        if let p = previous, p.l.count == l.count {
            for i in 0..<l.count where abs(l[i] - p.l[i]) < staticThreshold {
                sum += Double(abs(a[i] - p.a[i]) + abs(b[i] - p.b[i])) / 2
                count += 1
            }
        }
        previous = (l, a, b)
    }

    /// The metric so far (0 when no static pixels were seen).
    public var value: Double { count == 0 ? 0 : sum / Double(count) }
    /// Static pixel pairs measured.
    public var samples: Int { count }
}
