import ColorScience
@testable import Models
import XCTest

/// In a shot anchored to its own colour, the previous frame's colour follows its content to
/// where it moved on the guide's fine grid, and holds nothing where the content is new.
final class PreviousFrameCarryTests: XCTestCase {
    static let f = ColourReference.fineSide

    /// A smooth colour field over the fine grid: a then b.
    static func colourField() -> [Float] {
        let f = Self.f
        var ab = [Float](repeating: 0, count: 2 * f * f)
        for y in 0..<f {
            for x in 0..<f {
                ab[y * f + x] = 40 * sin(Float(x) / 9) + 10 * cos(Float(y) / 13)
                ab[f * f + y * f + x] = 30 * cos(Float(x + y) / 11)
            }
        }
        return ab
    }

    /// `p` as a camera that moved by (-dx, -dy) sees it: pixel (x, y) shows p's (x - dx, y - dy), edges clamped.
    static func shifted(_ p: [Float], _ dx: Int, _ dy: Int, planes: Int = 1) -> [Float] {
        let f = Self.f
        var out = p
        for c in 0..<planes {
            for y in 0..<f {
                for x in 0..<f {
                    out[c * f * f + y * f + x] = p[c * f * f + min(max(y - dy, 0), f - 1) * f + min(max(x - dx, 0), f - 1)]
                }
            }
        }
        return out
    }

    func testColourFollowsTheContentWhereItMoved() {
        let f = Self.f
        let l = KeyframeCarryTests.texture(width: f, height: f)
        let ab = Self.colourField()
        let carry = PreviousFrameCarry(lFine: l, ab: ab)
        // The next frame: the same content 3 px right and 2 px down, coloured grey by the guide.
        let lNext = Self.shifted(l, 3, 2)
        var out = [Float](repeating: 0, count: 2 * f * f)
        let weight = carry.apply(lFine: lNext, ab: &out, threads: 2)
        // Where the content went, held at `hold` of the previous colour; read in place (no
        // following), the error would be the colour field's change over 3.6 px.
        let target = Self.shifted(ab, 3, 2, planes: 2)
        var error: Float = 0, unfollowed: Float = 0, count: Float = 0
        for c in 0..<2 {
            for y in 12..<(f - 12) {
                for x in 12..<(f - 12) {
                    let i = c * f * f + y * f + x
                    error += abs(out[i] - PreviousFrameCarry.hold * target[i])
                    unfollowed += abs(PreviousFrameCarry.hold * ab[i] - PreviousFrameCarry.hold * target[i])
                    count += 1
                }
            }
        }
        error /= count
        unfollowed /= count
        print("previous-frame carry: mean weight \(weight), error \(error) against \(unfollowed) read in place")
        XCTAssertGreaterThan(weight, 0.6 * PreviousFrameCarry.hold)
        XCTAssertLessThan(error, 0.25 * unfollowed)
    }

    func testNewContentKeepsItsOwnColour() {
        let f = Self.f
        let carry = PreviousFrameCarry(lFine: KeyframeCarryTests.texture(width: f, height: f), ab: Self.colourField())
        // A frame of other content: the guide's colour (here a flat 20, -10) stays nearly as it was.
        let other = KeyframeCarryTests.texture(width: f, height: f, seed: 99)
        var out = [Float](repeating: 20, count: f * f) + [Float](repeating: -10, count: f * f)
        let weight = carry.apply(lFine: other, ab: &out, threads: 2)
        let moved = zip(out, [Float](repeating: 20, count: f * f) + [Float](repeating: -10, count: f * f)).map { abs($0 - $1) }.reduce(0, +) / Float(2 * f * f)
        print("previous-frame carry onto other content: mean weight \(weight), colour moved \(moved)")
        XCTAssertLessThan(weight, 0.05 * PreviousFrameCarry.hold)
        XCTAssertLessThan(moved, 1)
    }
}
