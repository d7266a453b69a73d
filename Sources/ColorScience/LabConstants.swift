// The numbers of scikit-image's `rgb2lab` / `lab2rgb` (skimage/color/colorconv.py, illuminant
// "D65", observer "2"), kept in one place so that the reference and the fast path cannot drift
// apart. They are skimage's own rounded constants, not the exact CIE ratios (6/29)^3 and
// 841/108: matching skimage within 1e-3 is the contract, so its rounding is followed too.

/// Constants of the sRGB ↔ CIE Lab conversion, exactly as scikit-image uses them.
enum LabConstants {
    /// sRGB decoding: codes above this use ((c + 0.055) / 1.055)^2.4, the rest c / 12.92.
    static let decodeThreshold = 0.04045
    /// sRGB encoding: linear values above this use 1.055 * c^(1/2.4) - 0.055, the rest 12.92 * c.
    static let encodeThreshold = 0.0031308

    /// skimage's `xyz_from_rgb` (row-major: X, Y, Z rows; R, G, B columns).
    static let xyzFromRGB: [Double] = [
        0.412453, 0.357580, 0.180423,
        0.212671, 0.715160, 0.072169,
        0.019334, 0.119193, 0.950227,
    ]
    /// skimage's `rgb_from_xyz = linalg.inv(xyz_from_rgb)`.
    static let rgbFromXYZ: [Double] = inverse3x3(xyzFromRGB)

    /// Reference white of illuminant D65, 2° observer, as in skimage's table.
    static let white: [Double] = [0.95047, 1.0, 1.08883]

    /// f(t) = cbrt(t) above this (skimage: `arr > 0.008856`), else `slope * t + offset`.
    static let fThreshold = 0.008856
    /// Slope of the linear part of f near zero.
    static let fSlope = 7.787
    /// Offset of the linear part of f, 16/116.
    static let fOffset = 16.0 / 116.0
    /// Inverse f: t^3 above this (skimage: `out > 0.2068966`), else (t - offset) / slope.
    static let fInverseThreshold = 0.2068966

    /// Inverse of a row-major 3×3 matrix by cofactors (the matrix is well conditioned).
    static func inverse3x3(_ m: [Double]) -> [Double] {
        let c00 = m[4] * m[8] - m[5] * m[7], c01 = m[5] * m[6] - m[3] * m[8], c02 = m[3] * m[7] - m[4] * m[6]
        let c10 = m[2] * m[7] - m[1] * m[8], c11 = m[0] * m[8] - m[2] * m[6], c12 = m[1] * m[6] - m[0] * m[7]
        let c20 = m[1] * m[5] - m[2] * m[4], c21 = m[2] * m[3] - m[0] * m[5], c22 = m[0] * m[4] - m[1] * m[3]
        let det = m[0] * c00 + m[1] * c01 + m[2] * c02
        return [c00 / det, c10 / det, c20 / det,
                c01 / det, c11 / det, c21 / det,
                c02 / det, c12 / det, c22 / det]
    }
}
