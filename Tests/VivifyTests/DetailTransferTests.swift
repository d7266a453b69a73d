import ColorScience
@testable import Models
@testable import Vivify
import XCTest

/// The reference's colour detail (what its 112×112 grid cannot hold) reaches the frame at full
/// resolution through the matches, and only where the lightness agrees.
final class DetailTransferTests: XCTestCase {
    /// A 448×448 reference: stripes two pixels wide in a (±30) and in L (45/55), too fine for
    /// the fine grid (four pixels a fine pixel), on a smooth b.
    static let side = 448
    static func reference() -> (l: [Float], a: [Float], b: [Float]) {
        let n = side * side
        var l = [Float](repeating: 0, count: n), a = l, b = l
        for y in 0..<side {
            for x in 0..<side {
                let stripe = (x / 2) % 2 == 0
                l[y * side + x] = stripe ? 45 : 55
                a[y * side + x] = stripe ? 30 : -30
                b[y * side + x] = 10 + 20 * Float(y) / Float(side)
            }
        }
        return (l, a, b)
    }

    static func detail(_ r: (l: [Float], a: [Float], b: [Float])) -> ColourDetail {
        let f = ColourReference.fineSide
        var af = [Float](repeating: 0, count: f * f), bf = af
        Resample.area(r.a, side, side, into: &af, f, f)
        Resample.area(r.b, side, side, into: &bf, f, f)
        return ColourDetail(l: r.l, a: r.a, b: r.b, width: side, height: side, abFine: af + bf, fineSide: f)
    }

    /// Every fine pixel matched to the same place in reference 0 (`at`: its own offset).
    static func identity(weight: Float) -> (match: [Int32], weight: [Float]) {
        let f = ColourReference.fineSide
        return ((0..<(f * f)).map { Int32($0) }, [Float](repeating: weight, count: f * f))
    }

    /// Mean |a − reference a| over the picture.
    static func error(_ a: [Float], _ truth: [Float]) -> Float {
        zip(a, truth).map { abs($0 - $1) }.reduce(0, +) / Float(a.count)
    }

    func testStripesFinerThanTheGridComeBack() {
        let r = Self.reference(), d = Self.detail(r), n = Self.side * Self.side
        // The base the frame has before: the fine grid's colour enlarged (the stripes average out).
        var a = [Float](repeating: 0, count: n), b = r.b
        XCTAssertGreaterThan(Self.error(a, r.a), 29, "the base cannot hold the stripes")
        let (match, weight) = Self.identity(weight: 1)
        DetailTransfer(match: match, weight: weight, details: [d]).apply(l: r.l, a: &a, b: &b, width: Self.side, height: Self.side)
        XCTAssertLessThan(Self.error(a, r.a), 3, "the stripes come from the reference at full resolution")
        XCTAssertLessThan(Self.error(b, r.b), 1, "b had no detail to add")
    }

    func testAShiftedFrameFindsItsStripesByLightness() {
        // The frame is the reference moved one pixel right: the fine match points one pixel off;
        // the search by lightness finds the stripe the frame's pixel is on.
        let r = Self.reference(), d = Self.detail(r), s = Self.side
        var l = r.l, truth = r.a
        for y in 0..<s { for x in 1..<s { l[y * s + x] = r.l[y * s + x - 1]; truth[y * s + x] = r.a[y * s + x - 1] } }
        var a = [Float](repeating: 0, count: s * s), b = r.b
        let (match, weight) = Self.identity(weight: 1)
        DetailTransfer(match: match, weight: weight, details: [d]).apply(l: l, a: &a, b: &b, width: s, height: s)
        XCTAssertLessThan(Self.error(a, truth), 3)
    }

    func testNothingIsAddedWithoutAConfidentMatchOrAgreeingLightness() {
        let r = Self.reference(), d = Self.detail(r), s = Self.side
        let f = ColourReference.fineSide
        for (match, weight, l) in [
            (Self.identity(weight: 0).match, Self.identity(weight: 0).weight, r.l),              // the model's colour was kept
            ([Int32](repeating: -1, count: f * f), Self.identity(weight: 1).weight, r.l),         // nothing matched
            (Self.identity(weight: 1).match, Self.identity(weight: 1).weight, r.l.map { $0 + 40 }), // lightness far off
        ] {
            var a = [Float](repeating: 5, count: s * s), b = r.b
            DetailTransfer(match: match, weight: weight, details: [d]).apply(l: l, a: &a, b: &b, width: s, height: s)
            XCTAssertLessThan(Self.error(a, [Float](repeating: 5, count: s * s)), 0.05)
        }
        // A reference without detail (an anchor frame) adds nothing either.
        var a = [Float](repeating: 5, count: s * s), b = r.b
        DetailTransfer(match: Self.identity(weight: 1).match, weight: Self.identity(weight: 1).weight, details: [nil]).apply(l: r.l, a: &a, b: &b, width: s, height: s)
        XCTAssertEqual(a, [Float](repeating: 5, count: s * s))
    }
}
