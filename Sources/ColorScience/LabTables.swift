import Foundation

// The tables of the fast path, built once per process from the reference (Double) curves:
// the sRGB decoding exactly, the sRGB encoding with the reference's own rounding, and the Lab
// function f as a piecewise-linear fit (the three cube roots per pixel were 2/3 of the
// forward cost when computed by Newton steps).

/// Lookup tables shared by every ``LabConverter`` (immutable after construction).
final class LabTables: @unchecked Sendable {
    /// The process-wide tables (built on first use, in about 10 ms).
    static let shared = LabTables()

    /// sRGB code 0…255 → linear light, `Float(LabReference.decode(code / 255))`.
    let decode: UnsafeMutablePointer<Float>

    /// Cells of the encoding table: cell i holds the linear values that round to i/4096.
    static let cells = 4097
    /// Per cell: the 8-bit code of the cell's smallest value.
    let encodeBase: UnsafeMutablePointer<UInt8>
    /// Per cell: the smallest `Float` in the cell whose code is `encodeBase + 1`, or +∞.
    let encodeStep: UnsafeMutablePointer<Float>

    /// f(t) = `labF[2i] + labF[2i + 1] · t` in cell i = `labFCell(t)`: 256 cells per octave
    /// for t in [2^-8, 2), cells below skimage's threshold 0.008856 holding its linear segment.
    let labF: UnsafeMutablePointer<Float>
    /// Cells per octave of `labF`.
    static let labFCellsPerOctave = 256
    /// Octaves of `labF`: 2^-8 … 2^0 (t never exceeds 1.0001 for colours in the sRGB cube).
    static let labFOctaves = 9

    private init() {
        labF = .allocate(capacity: 2 * Self.labFCellsPerOctave * Self.labFOctaves)
        Self.fillLabF(labF)

        decode = .allocate(capacity: 256)
        for code in 0..<256 { decode[code] = Float(LabReference.decode(Double(code) / 255)) }

        // The 8-bit code changes at most once inside a cell: cells are 1/4096 ≈ 2.4e-4 wide,
        // and consecutive code boundaries are at least 1 / (255 × 12.92) ≈ 3.0e-4 apart in
        // linear light (12.92 is the curve's steepest slope, at the bottom). So one threshold
        // per cell gives the exact rounding of the reference for every Float input.
        encodeBase = .allocate(capacity: Self.cells)
        encodeStep = .allocate(capacity: Self.cells)
        for cell in 0..<Self.cells {
            let (lo, hi) = Self.bounds(ofCell: cell)
            let base = Self.referenceCode(lo), top = Self.referenceCode(hi)
            encodeBase[cell] = base
            if top == base {
                encodeStep[cell] = .infinity
            } else if top == base + 1 {
                // Smallest Float in (lo, hi] with the higher code: bisect over bit patterns,
                // which are ordered like the values for non-negative floats.
                var below = lo.bitPattern, above = hi.bitPattern
                while above - below > 1 {
                    let mid = below + (above - below) / 2
                    if Self.referenceCode(Float(bitPattern: mid)) > base { above = mid } else { below = mid }
                }
                encodeStep[cell] = Float(bitPattern: above)
            } else {
                fatalError("LabTables: encoding cell \(cell) spans codes \(base)…\(top); the cells must be narrower than one code step.")
            }
        }
    }

    /// The 8-bit code of clipped linear light `x` in cell `cell` (= `encodeCell(x)`).
    @inline(__always) func code(_ x: Float, cell: UInt32) -> UInt32 {
        let i = Int(cell)
        return UInt32(encodeBase[i]) &+ (x >= encodeStep[i] ? 1 : 0)
    }

    /// The reference's 8-bit code of linear light `x`: round(255 × clip(encode(x))), halves up.
    static func referenceCode(_ x: Float) -> UInt8 {
        UInt8((min(max(LabReference.encode(Double(x)), 0), 1) * 255).rounded())
    }

    /// The smallest and largest `Float` in [0, 1] that `encodeCell` puts in `cell`.
    static func bounds(ofCell cell: Int) -> (lo: Float, hi: Float) {
        let scale = Float(cells - 1)
        // (cell ± 0.5) / 4096 is exact in Float; which side a tie lands on is settled by asking.
        var lo = cell == 0 ? 0 : Float(cell) / scale - 0.5 / scale
        if encodeCell(lo) != UInt32(cell) { lo = lo.nextUp }
        var hi = cell == cells - 1 ? 1 : Float(cell) / scale + 0.5 / scale
        if encodeCell(hi) != UInt32(cell) { hi = hi.nextDown }
        return (lo, hi)
    }

    /// Fills `table` with the best straight line (minimax) for f on each cell.
    ///
    /// Per cell [lo, hi] above the threshold, the chord of the concave cube root lies below the
    /// curve by at most d (where the slope of the curve equals the chord's); the chord raised by
    /// d/2 is the best line, off by ≤ d/2 ≈ 2.1e-7 × f(t) at 256 cells per octave. The one
    /// cell that straddles the threshold gets the cube root's line: skimage's linear segment is
    /// nearly its tangent there, so the error stays below 4e-7.
    private static func fillLabF(_ table: UnsafeMutablePointer<Float>) {
        let perOctave = labFCellsPerOctave
        for octave in 0..<labFOctaves {
            let start = Double(1 << octave) / 256
            for j in 0..<perOctave {
                let lo = start * (1 + Double(j) / Double(perOctave)), hi = start * (1 + Double(j + 1) / Double(perOctave))
                let (a, b): (Double, Double)
                if hi <= LabConstants.fThreshold {
                    (a, b) = (LabConstants.fOffset, LabConstants.fSlope)
                } else {
                    let slope = (LabReference.cubeRoot(hi) - LabReference.cubeRoot(lo)) / (hi - lo)
                    let touch = pow(1 / (3 * slope), 1.5)  // where the curve's slope equals the chord's
                    let gap = LabReference.cubeRoot(touch) - (LabReference.cubeRoot(lo) + slope * (touch - lo))
                    (a, b) = (LabReference.cubeRoot(lo) - slope * lo + gap / 2, slope)
                }
                let cell = octave * perOctave + j
                table[2 * cell] = Float(a)
                table[2 * cell + 1] = Float(b)
            }
        }
    }
}
