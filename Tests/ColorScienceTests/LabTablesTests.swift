@testable import ColorScience
import XCTest

/// The fast path's tables against the reference curves they stand for.
final class LabTablesTests: XCTestCase {
    /// The encoding table rounds exactly as the reference does, for every Float tried: an even
    /// sweep of [0, 1], and both sides of every code boundary.
    func testEncodingTableRoundsLikeTheReference() {
        let tables = LabTables.shared
        var checked = 0, wrong = 0
        func check(_ x: Float) {
            let fast = tables.code(clippedLinear(x), cell: encodeCell(clippedLinear(x)))
            checked += 1
            if fast != UInt32(LabTables.referenceCode(x)) { wrong += 1 }
        }
        for i in 0...1_000_000 { check(Float(i) / 1_000_000) }
        for cell in 0..<LabTables.cells where tables.encodeStep[cell].isFinite {
            let step = tables.encodeStep[cell]
            check(step.nextDown)
            check(step)
            check(step.nextUp)
        }
        for x: Float in [-1, -0.0, 0, 1, 1.5, 1e30, -1e30] { check(x) }
        XCTAssertEqual(wrong, 0, "\(wrong) of \(checked) linear values encoded differently from the reference")
        // Non-finite linear light (from non-finite Lab) still lands inside the table.
        for (x, code) in [(Float.nan, UInt32(0)), (.infinity, 255), (-.infinity, 0)] {
            XCTAssertEqual(tables.code(clippedLinear(x), cell: encodeCell(clippedLinear(x))), code, "code of \(x)")
        }
    }

    /// The piecewise-linear f stays within 4e-7 of skimage's f (cube root above 0.008856,
    /// 7.787 t + 16/116 below), which keeps a = 500 (fx − fy) within 4e-4.
    func testLabFTableIsCloseToTheReference() {
        let tables = LabTables.shared
        var worst = MaxError()
        var t: Float = 0
        var i = 0
        while t <= 1.0002 {
            let cell = Int(labFCell(t))
            let fast = tables.labF[2 * cell] + tables.labF[2 * cell + 1] * t
            worst.add(Double(fast), LabReference.labF(Double(t)), at: i)
            t += 1.0 / 3_000_000
            i += 1
        }
        print("f table: max |Δf| \(worst) over \(i) values of t in [0, 1.0002]")
        XCTAssertLessThanOrEqual(worst.value, 4e-7, "f table: max |Δf| \(worst)")
    }

    func testLabFCellStaysInsideTheTable() {
        let last = UInt32(LabTables.labFCellsPerOctave * LabTables.labFOctaves - 1)
        for t: Float in [0, -1, .nan, .infinity, -.infinity, 1e-30, 0x1p-8, 1, 1.9999999, 2, 3, 1e30] {
            XCTAssertLessThanOrEqual(labFCell(t), last, "cell of \(t)")
        }
        XCTAssertEqual(labFCell(0x1p-8), 0)
        XCTAssertEqual(labFCell(1), 8 * 256)
    }
}
