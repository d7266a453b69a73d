// The arithmetic of the fast Lab path, per pixel in `Float`, as short loops over blocks of
// planes. The arithmetic loops are branch-free so that LLVM's loop vectorizer turns them into
// SSE code (4 values per instruction); the table reads (decode, f, encode) are gathers, which
// baseline x86-64 lacks, so they get scalar loops of their own that do nothing else.
//
// Why plain `Float` and not `SIMD8<Float>`: in Swift 6.3 the arithmetic operators of the float
// SIMD types are generic lane-by-lane loops (only the comparisons are lowered to vector
// builtins). LLVM has to re-vectorize them after inlining, and for chains as long as a cube
// root by Newton steps its SLP vectorizer left lane shuffles and scalar lanes behind: that
// version ran the 1920×1080 round trip in 57 ms on 2 threads. The same arithmetic written
// per value in loops vectorized cleanly.
//
// Rounding to an integer uses the 1.5·2^23 trick (no float → int conversion needed). The
// vector body and the scalar remainder of a vectorized loop run the same IEEE operations
// (Swift neither contracts a*b+c into FMA nor reassociates), so a pixel's result does not
// depend on where a block or a thread's chunk starts.

/// A 3×3 matrix of `Float` (row-major), held in registers by the loops.
struct Matrix3F: Sendable {
    let m0, m1, m2, m3, m4, m5, m6, m7, m8: Float

    init(_ m: [Float]) {
        (m0, m1, m2, m3, m4, m5, m6, m7, m8) = (m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], m[8])
    }

    /// skimage's xyz_from_rgb with each row divided by the white point (gives x/Xn, y/Yn, z/Zn).
    static let forward = Matrix3F((0..<9).map { Float(LabConstants.xyzFromRGB[$0] / LabConstants.white[$0 / 3]) })
    /// skimage's rgb_from_xyz with each column multiplied by the white point (takes x/Xn, y/Yn, z/Zn).
    static let backward = Matrix3F((0..<9).map { Float(LabConstants.rgbFromXYZ[$0] * LabConstants.white[$0 % 3]) })
}

/// The cell of `LabTables.labF` for t: exponent and top 8 mantissa bits of t clamped to
/// [2^-8, 2) (written so that NaN lands in cell 0: a cell is always inside the table).
@inline(__always) func labFCell(_ t: Float) -> UInt32 {
    // Literals, not `LabTables` statics: a lazily initialized global read in a loop is a
    // `swift_once` call, and a call stops the loop from vectorizing.
    let lowest: Float = 0x1p-8, highest: Float = 0x1.fffffep0
    var c = t > lowest ? t : lowest
    c = c < highest ? c : highest
    return (c.bitPattern >> 15) &- (119 << 8)  // 119 = biased exponent of 2^-8
}

/// skimage's inverse of f: t³ above 0.2068966, else (t − 16/116) / 7.787.
@inline(__always) func labFInverse(_ t: Float) -> Float {
    let linear = (t - Float(LabConstants.fOffset)) * Float(1 / LabConstants.fSlope)
    return t > Float(LabConstants.fInverseThreshold) ? t * t * t : linear
}

/// Linear light clipped to [0, 1] (NaN → 0), as skimage clips the encoded value: the
/// encoding is monotonic, so clipping before it is the same.
@inline(__always) func clippedLinear(_ v: Float) -> Float {
    let x = v > 0 ? v : 0
    return x < 1 ? x : 1
}

/// The table cell of a clipped linear value: round(x · 4096), via the 1.5·2^23 trick.
@inline(__always) func encodeCell(_ x: Float) -> UInt32 {
    (x * 4096 + 12_582_912).bitPattern & 0x1FFF  // 4096 = LabTables.cells - 1
}

// MARK: - Block loops (keep them free of calls and early exits so that they vectorize)

/// Linear light of `n` rgb24 pixels into three planes, through the 256-entry table.
/// (Table lookups do not vectorize without a gather instruction: this loop stays scalar.)
@inline(__always) func decodeBlock(_ src: UnsafePointer<UInt8>, _ table: UnsafePointer<Float>, _ n: Int,
                                   _ r: UnsafeMutablePointer<Float>, _ g: UnsafeMutablePointer<Float>, _ b: UnsafeMutablePointer<Float>)
{
    for i in 0..<n {
        r[i] = table[Int(src[3 * i])]
        g[i] = table[Int(src[3 * i + 1])]
        b[i] = table[Int(src[3 * i + 2])]
    }
}

/// Linear Y/Yn of `n` rgb24 pixels: the same operations as `matrixCellsBlockInPlace`'s y.
@inline(__always) func decodeYBlock(_ src: UnsafePointer<UInt8>, _ table: UnsafePointer<Float>, _ n: Int,
                                    _ y: UnsafeMutablePointer<Float>, _ m: Matrix3F)
{
    for i in 0..<n {
        y[i] = m.m3 * table[Int(src[3 * i])] + m.m4 * table[Int(src[3 * i + 1])] + m.m5 * table[Int(src[3 * i + 2])]
    }
}

/// (p, q, r) ← M · (p, q, r) for every pixel, in place.
@inline(__always) func matrixBlockInPlace(_ p: UnsafeMutablePointer<Float>, _ q: UnsafeMutablePointer<Float>,
                                          _ r: UnsafeMutablePointer<Float>, _ n: Int, _ m: Matrix3F)
{
    for i in 0..<n {
        let u = p[i], v = q[i], w = r[i]
        p[i] = m.m0 * u + m.m1 * v + m.m2 * w
        q[i] = m.m3 * u + m.m4 * v + m.m5 * w
        r[i] = m.m6 * u + m.m7 * v + m.m8 * w
    }
}

/// As `matrixBlockInPlace`, also writing each result's `labFCell` (the cell arithmetic
/// vectorizes here; the table reads that follow cannot).
@inline(__always) func matrixCellsBlockInPlace(_ p: UnsafeMutablePointer<Float>, _ q: UnsafeMutablePointer<Float>,
                                               _ r: UnsafeMutablePointer<Float>, _ n: Int, _ m: Matrix3F,
                                               _ cp: UnsafeMutablePointer<UInt32>, _ cq: UnsafeMutablePointer<UInt32>,
                                               _ cr: UnsafeMutablePointer<UInt32>)
{
    for i in 0..<n {
        let u = p[i], v = q[i], w = r[i]
        let x = m.m0 * u + m.m1 * v + m.m2 * w
        let y = m.m3 * u + m.m4 * v + m.m5 * w
        let z = m.m6 * u + m.m7 * v + m.m8 * w
        p[i] = x
        q[i] = y
        r[i] = z
        cp[i] = labFCell(x)
        cq[i] = labFCell(y)
        cr[i] = labFCell(z)
    }
}

/// The `labFCell` of every value of one plane.
@inline(__always) func labFCellBlock(_ t: UnsafePointer<Float>, _ cell: UnsafeMutablePointer<UInt32>, _ n: Int) {
    for i in 0..<n { cell[i] = labFCell(t[i]) }
}

/// t ← f(t) over one plane, in place, given each value's cell (scalar: two table reads).
@inline(__always) func labFBlockInPlace(_ t: UnsafeMutablePointer<Float>, _ cell: UnsafePointer<UInt32>, _ n: Int,
                                        _ table: UnsafePointer<Float>)
{
    for i in 0..<n {
        let k = Int(cell[i])
        t[i] = table[2 * k] + table[2 * k + 1] * t[i]
    }
}

/// (fx, fy, fz) → (L, a, b), in place.
@inline(__always) func labFromFBlockInPlace(_ x: UnsafeMutablePointer<Float>, _ y: UnsafeMutablePointer<Float>,
                                            _ z: UnsafeMutablePointer<Float>, _ n: Int)
{
    for i in 0..<n {
        let fx = x[i], fy = y[i], fz = z[i]
        x[i] = 116 * fy - 16
        y[i] = 500 * (fx - fy)
        z[i] = 200 * (fy - fz)
    }
}

/// fy → L, in place (the same operations as `labFromFBlockInPlace`'s L).
@inline(__always) func lightnessFromFBlockInPlace(_ y: UnsafeMutablePointer<Float>, _ n: Int) {
    for i in 0..<n { y[i] = 116 * y[i] - 16 }
}

/// (L, a, b) → (x/Xn, y/Yn, z/Zn) into three planes, with skimage's clamp of a negative z.
@inline(__always) func xyzFromLabBlock(_ l: UnsafePointer<Float>, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ n: Int,
                                       _ x: UnsafeMutablePointer<Float>, _ y: UnsafeMutablePointer<Float>, _ z: UnsafeMutablePointer<Float>)
{
    for i in 0..<n {
        let fy = (l[i] + 16) * Float(1.0 / 116.0)
        let fx = a[i] * Float(1.0 / 500.0) + fy
        let fz = fy - b[i] * Float(1.0 / 200.0)
        x[i] = labFInverse(fx)
        y[i] = labFInverse(fy)
        z[i] = labFInverse(fz < 0 ? 0 : fz)  // skimage sets a negative z to 0 (with a warning)
    }
}

/// Linear light → clipped linear light and its encoding-table cell, for one plane.
@inline(__always) func encodeCellBlock(_ v: UnsafeMutablePointer<Float>, _ cell: UnsafeMutablePointer<UInt32>, _ n: Int) {
    for i in 0..<n {
        let x = clippedLinear(v[i])
        v[i] = x
        cell[i] = encodeCell(x)
    }
}
