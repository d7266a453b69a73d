import CFFmpeg

/// An exact fraction, as FFmpeg uses for time bases, frame rates and aspect ratios.
public struct Rational: Codable, Sendable, Hashable, CustomStringConvertible {
    /// The numerator.
    public var num: Int
    /// The denominator; zero means "unknown".
    public var den: Int

    /// Makes `num/den`.
    public init(_ num: Int, _ den: Int) {
        self.num = num
        self.den = den
    }

    /// Whether the value is known (non-zero denominator and numerator).
    public var isValid: Bool { num != 0 && den != 0 }

    /// The value as a floating-point number (0 when unknown).
    public var doubleValue: Double { den == 0 ? 0 : Double(num) / Double(den) }

    /// The reciprocal.
    public var inverted: Rational { Rational(den, num) }

    /// Parses "30", "29.97", "30000/1001" or "30000:1001": positive, and each part within
    /// 32 bits (FFmpeg's AVRational), so nothing downstream can overflow converting it.
    public init?(parsing text: String) {
        let parts = text.split(whereSeparator: { $0 == "/" || $0 == ":" })
        let limit = Int(Int32.max)
        if parts.count == 2, let n = Int(parts[0]), let d = Int(parts[1]), n > 0, d > 0, n <= limit, d <= limit {
            self.init(n, d)
        } else if parts.count == 1, let n = Int(parts[0]), n > 0, n <= limit {
            self.init(n, 1)
        } else if parts.count == 1, let value = Double(parts[0]), value > 0, value.isFinite, value <= Double(limit) {
            let q = av_d2q(value, 1_000_000)
            self.init(Int(q.num), Int(q.den))
        } else {
            return nil
        }
    }

    public var description: String { den == 1 ? "\(num)" : "\(num)/\(den)" }

    /// As FFmpeg's type; parts beyond 32 bits are clamped (parsing never makes one).
    var av: AVRational { AVRational(num: Int32(clamping: num), den: Int32(clamping: den)) }
    init(_ av: AVRational) { self.init(Int(av.num), Int(av.den)) }

    /// Converts `value` expressed in `self` units into `other` units, rounding to nearest.
    public func rescale(_ value: Int64, to other: Rational) -> Int64 {
        av_rescale_q(value, av, other.av)
    }
}
