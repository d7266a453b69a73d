/// Brings a Lab colour into the sRGB gamut by reducing its chroma, never its lightness: a
/// model's colour must not change the source's L (plain RGB clipping would).
public enum GamutFit {
    @inline(__always) @usableFromInline
    static func linearRGB(_ l: Float, _ a: Float, _ b: Float) -> (Float, Float, Float) {
        let fy = (l + 16) / 116, fx = a / 500 + fy, fz = fy - b / 200
        @inline(__always) func finv(_ t: Float) -> Float { t > 0.2068966 ? t * t * t : (t - 16.0 / 116) / 7.787 }
        let x = 0.95047 * finv(fx), y = finv(fy), z = 1.08883 * finv(fz)
        return (3.24048134 * x - 1.53715152 * y - 0.49853633 * z,
                -0.96925495 * x + 1.87599 * y + 0.04155593 * z,
                0.05564664 * x - 0.20404134 * y + 1.05731107 * z)
    }

    @inline(__always) @usableFromInline
    static func inGamut(_ l: Float, _ a: Float, _ b: Float) -> Bool {
        let (r, g, bl) = linearRGB(l, a, b)
        let lo: Float = -1e-4, hi: Float = 1 + 1e-4
        return r >= lo && r <= hi && g >= lo && g <= hi && bl >= lo && bl <= hi
    }

    /// Whether the colour is in the sRGB gamut (`l` clamped to [0, 100] as `fit` does).
    /// Inlinable, as `fit`: called per pixel from other modules.
    @inlinable @inline(__always)
    public static func contains(l: Float, a: Float, b: Float) -> Bool { inGamut(min(max(l, 0), 100), a, b) }

    /// Scales (a, b) towards grey until the colour fits, keeping `l` (clamped to [0, 100]).
    @inlinable @inline(__always)
    public static func fit(l: Float, a: inout Float, b: inout Float) {
        let l = min(max(l, 0), 100)
        if inGamut(l, a, b) { return }
        var lo: Float = 0, hi: Float = 1
        for _ in 0..<12 {
            let mid = (lo + hi) / 2
            if inGamut(l, a * mid, b * mid) { lo = mid } else { hi = mid }
        }
        a *= lo
        b *= lo
    }
}
