import Foundation

/// The plain sRGB ↔ CIE Lab conversion (D65, 2° observer), one colour at a time in `Double`,
/// written to follow scikit-image's `rgb2lab` / `lab2rgb` step by step.
///
/// This is the yardstick for ``LabConverter``: slow, obviously correct, and checked against
/// scikit-image's own output by the fixtures in `Tests/ColorScienceTests` (within 5e-7 for
/// rgbToLab, 5e-8 for labToRGB: the precision the fixtures are written with).
public enum LabReference {
    /// Converts one sRGB colour to CIE Lab, as `skimage.color.rgb2lab`.
    ///
    /// - Parameters:
    ///   - r: Red in [0, 1] (an 8-bit code divided by 255).
    ///   - g: Green in [0, 1].
    ///   - b: Blue in [0, 1].
    /// - Returns: L in [0, 100], a and b roughly in [-128, 127].
    public static func rgbToLab(_ r: Double, _ g: Double, _ b: Double) -> (l: Double, a: Double, b: Double) {
        let lin = SIMD3(decode(r), decode(g), decode(b))
        let m = LabConstants.xyzFromRGB, w = LabConstants.white
        var f = SIMD3<Double>()
        for i in 0..<3 {
            let xyz = m[3 * i] * lin[0] + m[3 * i + 1] * lin[1] + m[3 * i + 2] * lin[2]
            f[i] = labF(xyz / w[i])
        }
        return (116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2]))
    }

    /// Converts one CIE Lab colour to sRGB, as `skimage.color.lab2rgb`, including its clipping.
    ///
    /// Out-of-gamut input is handled the way scikit-image handles it: a negative z (the
    /// f-value of Z) is set to 0 before inverting f (skimage warns about it), and the final
    /// sRGB values are clipped to [0, 1].
    ///
    /// - Parameters:
    ///   - l: Lightness, nominally [0, 100]; any finite value is accepted.
    ///   - a: Green–red axis; any finite value.
    ///   - b: Blue–yellow axis; any finite value.
    /// - Returns: sRGB in [0, 1].
    public static func labToRGB(_ l: Double, _ a: Double, _ b: Double) -> (r: Double, g: Double, b: Double) {
        let fy = (l + 16.0) / 116.0
        let fx = (a / 500.0) + fy
        var fz = fy - (b / 200.0)
        if fz < 0 { fz = 0 }
        let w = LabConstants.white
        let xyz = SIMD3(labFInverse(fx) * w[0], labFInverse(fy) * w[1], labFInverse(fz) * w[2])
        let m = LabConstants.rgbFromXYZ
        var rgb = SIMD3<Double>()
        for i in 0..<3 {
            let lin = m[3 * i] * xyz[0] + m[3 * i + 1] * xyz[1] + m[3 * i + 2] * xyz[2]
            rgb[i] = min(max(encode(lin), 0), 1)
        }
        return (rgb[0], rgb[1], rgb[2])
    }

    /// sRGB code value in [0, 1] → linear light (skimage's `rgb2xyz` first step).
    static func decode(_ c: Double) -> Double {
        c > LabConstants.decodeThreshold ? pow((c + 0.055) / 1.055, 2.4) : c / 12.92
    }

    /// Linear light → sRGB code value, unclipped (skimage's `xyz2rgb` last step).
    static func encode(_ c: Double) -> Double {
        c > LabConstants.encodeThreshold ? 1.055 * pow(c, 1 / 2.4) - 0.055 : c * 12.92
    }

    /// The Lab companding function f(t), with skimage's threshold and linear segment.
    static func labF(_ t: Double) -> Double {
        t > LabConstants.fThreshold ? cbrt(t) : LabConstants.fSlope * t + LabConstants.fOffset
    }

    /// The C library's cube root (numpy's `np.cbrt` calls the same).
    static func cubeRoot(_ t: Double) -> Double { cbrt(t) }

    /// skimage's inverse of f (its threshold 0.2068966 is not exactly f(0.008856), as in skimage).
    static func labFInverse(_ t: Double) -> Double {
        t > LabConstants.fInverseThreshold ? t * t * t : (t - LabConstants.fOffset) / LabConstants.fSlope
    }
}
