/// The scene-cut test shared by the stabilizer, the colour guide and the drift meter: 32-bin
/// histograms of L* (each summing to 1) of consecutive frames more than `cutThreshold` apart in
/// L1 distance are different shots.
public enum ShotHistogram {
    /// The L1 distance between consecutive frames' histograms that counts as a cut.
    public static let cutThreshold: Float = 0.5

    /// The 32-bin histogram of L* values (0…100), summing to 1.
    public static func of(_ l: [Float]) -> [Float] {
        var h = [Float](repeating: 0, count: 32)
        for v in l { h[min(max(Int(v / 100 * 32), 0), 31)] += 1 }
        let n = Float(max(l.count, 1))
        return h.map { $0 / n }
    }

    /// The L1 distance between two histograms.
    public static func distance(_ x: [Float], _ y: [Float]) -> Float {
        zip(x, y).reduce(Float(0)) { $0 + abs($1.0 - $1.1) }
    }
}
