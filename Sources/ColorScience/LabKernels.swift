// The arithmetic of the fast Lab path, per pixel in `Float`, branch-free, and written so that
// LLVM's loop vectorizer turns the block loops below into SSE code (4 pixels per instruction).
//
// Why plain `Float` and not `SIMD8<Float>`: in Swift 6.3 the arithmetic operators of the float
// SIMD types are generic lane-by-lane loops (only the comparisons are lowered to vector
// builtins). LLVM has to re-vectorize them after inlining, and for chains as long as these its
// SLP vectorizer leaves lane shuffles and scalar lanes behind: the same kernels written with
// `SIMD8<Float>` ran the 1920×1080 round trip in 57 ms on 2 threads, against ~6 ms written as
// below. The loop vectorizer handles selects, bit casts and integer division by a constant,
// so everything here stays in vector registers.
//
// Roots come from exponent-bit estimates refined by division-free Newton steps; rounding to an
// integer uses the 1.5·2^23 trick (no float → int conversion instruction needed).
//
// The vector body and the scalar remainder of a vectorized loop run the same IEEE operations
// (Swift does not contract a*b+c into FMA nor reassociate), so a pixel's result does not
// depend on where a block or a thread's chunk starts.

/// Coefficients of the fast path in `Float`, derived once from ``LabConstants``.
struct LabKernelConstants {
    /// xyz_from_rgb with each row divided by the white point (gives x/Xn, y/Yn, z/Zn).
    let forward: [Float]
    /// rgb_from_xyz with each column multiplied by the white point (takes x/Xn, y/Yn, z/Zn).
    let backward: [Float]

    init() {
        let m = LabConstants.xyzFromRGB, inv = LabConstants.rgbFromXYZ, w = LabConstants.white
        forward = (0..<9).map { Float(m[$0] / w[$0 / 3]) }
        backward = (0..<9).map { Float(inv[$0] * w[$0 % 3]) }
    }
}

/// A 3×3 matrix in registers (row-major), so that the loops load no coefficients.
struct Matrix3F {
    let m0, m1, m2, m3, m4, m5, m6, m7, m8: Float

    init(_ m: UnsafePointer<Float>) {
        (m0, m1, m2, m3, m4, m5, m6, m7, m8) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
    }
}

/// t^(1/3) for t ≥ 0.008856 (callers clamp), relative error ≤ 5e-7.
///
/// Estimates t^(-1/3) from the exponent bits (≈ 3.4 % off), refines it with three Newton
/// steps r ← r·(4 − t·r³)/3 (no division; the error goes 3.4 % → 0.5 % → 2e-5 → float
/// rounding), then returns t·r².
@inline(__always) func cubeRoot(_ t: Float) -> Float {
    var r = Float(bitPattern: 0x54A2_3000 &- t.bitPattern / 3)
    let third = t * (1.0 / 3.0)
    r = r * (4.0 / 3.0 - third * (r * r * r))
    r = r * (4.0 / 3.0 - third * (r * r * r))
    r = r * (4.0 / 3.0 - third * (r * r * r))
    return t * (r * r)
}

/// x^(1/2.4) = x^(5/12) for x in [0.0031308, 1] (callers clamp), relative error ≤ 1e-6.
///
/// Estimates r = x^(-1/12) from the exponent bits (≈ 3 % off), takes one Newton step with
/// constants tuned for that estimate (→ 0.3 %), two plain Newton steps
/// r ← r·(13 − x·r¹²)/12 (→ 5e-5 → float rounding), and returns x·r⁷.
@inline(__always) func powFiveTwelfths(_ x: Float) -> Float {
    var r = Float(bitPattern: 0x44C4_7000 &- x.bitPattern / 12)
    var r2 = r * r, r4 = r2 * r2
    r = r * (1.0831 - (0.0803 * x) * (r4 * r4 * r4))
    let twelfth = x * (1.0 / 12.0)
    r2 = r * r; r4 = r2 * r2
    r = r * (13.0 / 12.0 - twelfth * (r4 * r4 * r4))
    r2 = r * r; r4 = r2 * r2
    r = r * (13.0 / 12.0 - twelfth * (r4 * r4 * r4))
    r2 = r * r; r4 = r2 * r2
    return x * (r4 * r2 * r)
}

/// The Lab companding function f(t) with skimage's threshold and linear segment.
@inline(__always) func labF(_ t: Float) -> Float {
    let threshold = Float(LabConstants.fThreshold)
    // The root of a clamped value: black (t = 0) would otherwise make r huge and r³ overflow.
    let root = cubeRoot(t < threshold ? threshold : t)
    let linear = Float(LabConstants.fSlope) * t + Float(LabConstants.fOffset)
    return t > threshold ? root : linear
}

/// skimage's inverse of f: t³ above 0.2068966, else (t − 16/116) / 7.787.
@inline(__always) func labFInverse(_ t: Float) -> Float {
    let linear = (t - Float(LabConstants.fOffset)) * Float(1 / LabConstants.fSlope)
    return t > Float(LabConstants.fInverseThreshold) ? t * t * t : linear
}

/// Linear light → 8-bit sRGB code: clipped to [0, 1] first (the encoding is monotonic, so
/// this equals skimage's clip afterwards), encoded, rounded to nearest.
@inline(__always) func encodeToByte(_ v: Float) -> UInt32 {
    let threshold = Float(LabConstants.encodeThreshold)
    var x = v < 0 ? 0 : v
    x = x > 1 ? 1 : x
    let curve = 1.055 * powFiveTwelfths(x < threshold ? threshold : x) - 0.055
    let srgb = x > threshold ? curve : 12.92 * x
    // Adding 1.5·2^23 leaves round-to-nearest(srgb·255) in the low mantissa bits (0…255).
    return (srgb * 255 + 12_582_912).bitPattern & 0xFF
}

/// Lab from linear-light sRGB; `m` is the forward matrix.
@inline(__always) func labFromLinear(_ r: Float, _ g: Float, _ b: Float, _ m: Matrix3F) -> (l: Float, a: Float, b: Float) {
    let fx = labF(m.m0 * r + m.m1 * g + m.m2 * b)
    let fy = labF(m.m3 * r + m.m4 * g + m.m5 * b)
    let fz = labF(m.m6 * r + m.m7 * g + m.m8 * b)
    return (116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz))
}

/// Lab → packed 8-bit sRGB r | g << 8 | b << 16; `m` is the backward matrix.
@inline(__always) func packedRGBFromLab(_ l: Float, _ a: Float, _ b: Float, _ m: Matrix3F) -> UInt32 {
    let fy = (l + 16) * Float(1.0 / 116.0)
    let fx = a * Float(1.0 / 500.0) + fy
    var fz = fy - b * Float(1.0 / 200.0)
    fz = fz < 0 ? 0 : fz  // skimage sets a negative z to 0 (with a warning)
    let x = labFInverse(fx), y = labFInverse(fy), z = labFInverse(fz)
    let red = encodeToByte(m.m0 * x + m.m1 * y + m.m2 * z)
    let green = encodeToByte(m.m3 * x + m.m4 * y + m.m5 * z)
    let blue = encodeToByte(m.m6 * x + m.m7 * y + m.m8 * z)
    return red | (green << 8) | (blue << 16)
}

// MARK: - Block loops (each vectorizes; keep them free of calls and early exits)

/// Linear light of `n` rgb24 pixels into three planes, through the 256-entry table.
@inline(__always) func decodeBlock(_ src: UnsafePointer<UInt8>, _ table: UnsafePointer<Float>, _ n: Int,
                                   _ r: UnsafeMutablePointer<Float>, _ g: UnsafeMutablePointer<Float>, _ b: UnsafeMutablePointer<Float>)
{
    for i in 0..<n {
        r[i] = table[Int(src[3 * i])]
        g[i] = table[Int(src[3 * i + 1])]
        b[i] = table[Int(src[3 * i + 2])]
    }
}

/// Linear planes → Lab planes, in place (l, a, b hold r, g, b on entry).
@inline(__always) func labBlockInPlace(_ l: UnsafeMutablePointer<Float>, _ a: UnsafeMutablePointer<Float>,
                                       _ b: UnsafeMutablePointer<Float>, _ n: Int, _ m: Matrix3F)
{
    for i in 0..<n {
        let lab = labFromLinear(l[i], a[i], b[i], m)
        l[i] = lab.l
        a[i] = lab.a
        b[i] = lab.b
    }
}

/// Linear Y of `n` rgb24 pixels, with the same operations as `labFromLinear`'s y.
@inline(__always) func linearYBlock(_ src: UnsafePointer<UInt8>, _ table: UnsafePointer<Float>, _ n: Int,
                                    _ y: UnsafeMutablePointer<Float>, _ m: Matrix3F)
{
    for i in 0..<n {
        y[i] = m.m3 * table[Int(src[3 * i])] + m.m4 * table[Int(src[3 * i + 1])] + m.m5 * table[Int(src[3 * i + 2])]
    }
}

/// Y/Yn → L, in place.
@inline(__always) func lightnessBlockInPlace(_ l: UnsafeMutablePointer<Float>, _ n: Int) {
    for i in 0..<n { l[i] = 116 * labF(l[i]) - 16 }
}

/// Lab planes → packed pixels.
@inline(__always) func packedBlock(_ l: UnsafePointer<Float>, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>,
                                   _ n: Int, _ out: UnsafeMutablePointer<UInt32>, _ m: Matrix3F)
{
    for i in 0..<n { out[i] = packedRGBFromLab(l[i], a[i], b[i], m) }
}
