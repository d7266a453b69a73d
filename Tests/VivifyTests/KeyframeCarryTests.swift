import ColorScience
@testable import Models
import XCTest

/// A keyframe's colour reaches the frames of its shot at full resolution where they show its
/// content moved (block matching of lightness), and only there.
final class KeyframeCarryTests: XCTestCase {
    /// A textured lightness plane: blobs of every size from 2 to 22 pixels, no two blocks alike
    /// (a periodic pattern would let a block match a period away).
    static func texture(width w: Int, height h: Int, seed: UInt64 = 7, pixelsPerBlob: Int = 150) -> [Float] {
        var rng = seed
        func next() -> Float { rng = rng &* 6364136223846793005 &+ 1442695040888963407; return Float(rng >> 40) / Float(1 << 24) }
        var blobs: [(x: Float, y: Float, r: Float, v: Float)] = []
        for _ in 0..<(w * h / pixelsPerBlob) { blobs.append((next() * Float(w), next() * Float(h), 2 + 20 * next() * next(), 40 * next() - 20)) }
        var l = [Float](repeating: 50, count: w * h)
        for y in 0..<h {
            for x in 0..<w {
                var v: Float = 50
                for b in blobs where abs(Float(x) - b.x) < 3 * b.r && abs(Float(y) - b.y) < 3 * b.r {
                    let d = ((Float(x) - b.x) * (Float(x) - b.x) + (Float(y) - b.y) * (Float(y) - b.y)) / (b.r * b.r)
                    v += b.v * exp(-d)
                }
                l[y * w + x] = min(max(v, 2), 98)
            }
        }
        return l
    }

    /// `p` (`w`×`h`) as a camera zoomed by `zoom` about the centre and moved by `move` sees it:
    /// pixel y shows p's c + zoom (y − c) + move (bilinear, clamped a pixel inside the edges).
    static func zoomedAndMoved(_ p: [Float], _ w: Int, _ h: Int, zoom f: Float, move: (x: Float, y: Float)) -> [Float] {
        let cx = Float(w - 1) / 2, cy = Float(h - 1) / 2
        var out = [Float](repeating: 0, count: w * h)
        for y in 0..<h {
            let sy = min(max(cy + f * (Float(y) - cy) + move.y, 0), Float(h - 2)), y0 = Int(sy), ty = sy - Float(y0)
            for x in 0..<w {
                let sx = min(max(cx + f * (Float(x) - cx) + move.x, 0), Float(w - 2)), x0 = Int(sx), tx = sx - Float(x0)
                let top = p[y0 * w + x0] * (1 - tx) + p[y0 * w + x0 + 1] * tx
                let bottom = p[(y0 + 1) * w + x0] * (1 - tx) + p[(y0 + 1) * w + x0 + 1] * tx
                out[y * w + x] = top * (1 - ty) + bottom * ty
            }
        }
        return out
    }

    /// Mean |Δa| and |Δb| of one keyframe carried onto a frame against the truth, `margin`
    /// pixels from the edges left out.
    static func carryError(_ keyframe: KeyframeCarry.Prepared, frame: LightnessPyramid, l: [Float], truth: (a: [Float], b: [Float]),
                           width w: Int, height h: Int, margin: Int, zooms: Bool, zoomScan: Bool = true) -> Float {
        var a = [Float](repeating: 0, count: w * h), b = a
        KeyframeCarry.apply([.init(keyframe: keyframe, weight: 1)], frame: frame, l: l, a: &a, b: &b, width: w, height: h, threads: 2,
                            zooms: zooms, zoomScan: zoomScan)
        var e: Float = 0, count = 0
        for y in margin..<(h - margin) {
            for x in margin..<(w - margin) { e += abs(a[y * w + x] - truth.a[y * w + x]) + abs(b[y * w + x] - truth.b[y * w + x]); count += 2 }
        }
        return e / Float(count)
    }

    /// `p` moved by (`dx`, `dy`): out(x, y) = p(x − dx, y − dy), edges clamped.
    static func shifted(_ p: [Float], _ w: Int, _ h: Int, dx: Int, dy: Int) -> [Float] {
        var out = p
        for y in 0..<h { for x in 0..<w { out[y * w + x] = p[min(max(y - dy, 0), h - 1) * w + min(max(x - dx, 0), w - 1)] } }
        return out
    }

    func testBlockMatchingFindsAShiftAtEveryLevel() {
        // 9 px right and 5 up at 320×192: beyond the finest level's refinement alone, found
        // from the coarsest level down.
        let w = 320, h = 192
        let key = Self.texture(width: w, height: h)
        let frame = Self.shifted(key, w, h, dx: 9, dy: -5)
        let motion = BlockMotion(frame: LightnessPyramid(l: frame, width: w, height: h), key: LightnessPyramid(l: key, width: w, height: h),
                                 coarseRadius: KeyframeCarry.keyframeRadius, threads: 2)
        var right = 0, interior = 0
        for by in 2..<(motion.rows - 2) {
            for bx in 3..<(motion.columns - 3) {
                interior += 1
                let i = by * motion.columns + bx
                // The frame's content at x came from the keyframe at x − 9, y + 5.
                if motion.dx[i] == -9 && motion.dy[i] == 5 && motion.cost[i] < 0.01 { right += 1 }
            }
        }
        // A block with no blob in or near it is flat: every vector fits it equally.
        XCTAssertGreaterThanOrEqual(Double(right), 0.98 * Double(interior), "interior blocks find the shift exactly, with no L difference")
    }

    func testAStillFrameWithNoiseStandsStill() {
        // The keyframe again with ±0.8 L* of noise (a still camera): no block moves, so the
        // carried colour cannot slide from frame to frame where nothing moved.
        let w = 192, h = 128
        let key = Self.texture(width: w, height: h)
        var rng: UInt64 = 3
        let frame = key.map { v -> Float in
            rng = rng &* 6364136223846793005 &+ 1442695040888963407
            return v + 1.6 * (Float(rng >> 40) / Float(1 << 24) - 0.5)
        }
        let motion = BlockMotion(frame: LightnessPyramid(l: frame, width: w, height: h), key: LightnessPyramid(l: key, width: w, height: h),
                                 coarseRadius: KeyframeCarry.keyframeRadius, threads: 2)
        XCTAssertEqual(motion.dx.filter { $0 != 0 }.count + motion.dy.filter { $0 != 0 }.count, 0)
    }

    func testAShiftedFrameTakesTheKeyframesColourAtFullResolution() {
        // The keyframe's a has stripes one pixel wide (no grid could hold them); the frame is the
        // keyframe moved, and its guide colour is wrong everywhere (a = 0, b = 0).
        let w = 256, h = 160
        let kl = Self.texture(width: w, height: h)
        var ka = [Float](repeating: 0, count: w * h), kb = ka
        for y in 0..<h { for x in 0..<w { ka[y * w + x] = x % 2 == 0 ? 25 : -25; kb[y * w + x] = Float(y % 40) - 10 } }
        let (dx, dy) = (4, 3)
        let l = Self.shifted(kl, w, h, dx: dx, dy: dy)
        let truthA = Self.shifted(ka, w, h, dx: dx, dy: dy), truthB = Self.shifted(kb, w, h, dx: dx, dy: dy)
        var a = [Float](repeating: 0, count: w * h), b = a
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1)], frame: KeyframeCarry.pyramid(l: l, width: w, height: h), l: l, a: &a, b: &b, width: w, height: h, threads: 2)
        var error: Float = 0, count = 0
        for y in 12..<(h - 12) { for x in 12..<(w - 12) { error += abs(a[y * w + x] - truthA[y * w + x]) + abs(b[y * w + x] - truthB[y * w + x]); count += 2 } }
        XCTAssertLessThan(error / Float(count), 0.5, "the keyframe's stripes, moved with the content")
    }

    func testContentTheKeyframeDoesNotShowKeepsTheGuidesColour() {
        // The frame shows a different texture (new content, dense: no flat part, which would
        // match any flat part of the keyframe): its lightness matches nowhere, so the guide's
        // colour stays.
        let w = 160, h = 96
        let kl = Self.texture(width: w, height: h, seed: 7, pixelsPerBlob: 30), l = Self.texture(width: w, height: h, seed: 99, pixelsPerBlob: 30)
        let ka = [Float](repeating: 40, count: w * h), kb = ka
        var a = [Float](repeating: -10, count: w * h), b = a
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1)], frame: KeyframeCarry.pyramid(l: l, width: w, height: h), l: l, a: &a, b: &b, width: w, height: h, threads: 2)
        let moved = a.map { abs($0 + 10) }.reduce(0, +) / Float(a.count)
        XCTAssertLessThan(moved, 10, "mostly the guide's colour (a = -10), not the keyframe's (40): moved \(moved) of 50")
    }

    func testALargerKeyframeIsBroughtToTheFramesSize() {
        // A keyframe at twice the frame's size carries as the same keyframe at the frame's size.
        let w = 160, h = 96
        let big = Self.texture(width: 2 * w, height: 2 * h)
        var small = [Float](repeating: 0, count: w * h)
        Resample.area(big, 2 * w, 2 * h, into: &small, w, h)
        let bigA = big.map { ($0 - 50) * 0.8 }, bigB = big.map { (50 - $0) * 0.5 }
        var a = [Float](repeating: 0, count: w * h), b = a
        let prepared = KeyframeCarry.Prepared(l: big, a: bigA, b: bigB, width: 2 * w, height: 2 * h, frameWidth: w, frameHeight: h)
        XCTAssertEqual(prepared.l.count, w * h)
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1)], frame: KeyframeCarry.pyramid(l: small, width: w, height: h), l: small, a: &a, b: &b, width: w, height: h, threads: 1)
        let expected = small.map { ($0 - 50) * 0.8 }
        var error: Float = 0
        for i in 0..<(w * h) { error += abs(a[i] - expected[i]) }
        XCTAssertLessThan(error / Float(w * h), 0.5)
    }

    func testBlockMatchingFindsAShiftAcrossTheWholePicture() {
        // 70 px left and 30 down at 320×192: beyond any fixed search radius of the coarsest
        // level (its plane is 40×24 here), found by searching all of it.
        let w = 320, h = 192
        let key = Self.texture(width: w, height: h)
        let frame = Self.shifted(key, w, h, dx: -70, dy: 30)
        let motion = BlockMotion(frame: LightnessPyramid(l: frame, width: w, height: h), key: LightnessPyramid(l: key, width: w, height: h), threads: 2)
        var right = 0, inside = 0
        for by in 5..<(motion.rows - 1) {
            for bx in 1..<(motion.columns - 10) {
                inside += 1
                let i = by * motion.columns + bx
                if motion.dx[i] == 70 && motion.dy[i] == -30 && motion.cost[i] < 0.01 { right += 1 }
            }
        }
        XCTAssertGreaterThanOrEqual(Double(right), 0.95 * Double(inside), "blocks whose content the keyframe shows find it")
    }

    func testAReferenceCarriesOnlyWhereItShowsTheFramesScene() {
        // A reference photograph is carried like a keyframe where the frame shows its scene
        // (here the same texture 60 px away), and not at all when it shows another scene (no
        // flat part of the frame takes the colour of a flat part of an unrelated picture).
        let w = 320, h = 192
        let rl = Self.texture(width: w, height: h)
        var ra = [Float](repeating: 0, count: w * h), rb = ra
        for y in 0..<h { for x in 0..<w { ra[y * w + x] = x % 2 == 0 ? 25 : -25; rb[y * w + x] = Float(y % 40) - 10 } }
        let prepared = KeyframeCarry.Prepared(l: rl, a: ra, b: rb, width: w, height: h, frameWidth: w, frameHeight: h)
        // The same scene.
        let (dx, dy) = (60, -20)
        let l = Self.shifted(rl, w, h, dx: dx, dy: dy)
        let truthA = Self.shifted(ra, w, h, dx: dx, dy: dy), truthB = Self.shifted(rb, w, h, dx: dx, dy: dy)
        var a = [Float](repeating: 0, count: w * h), b = a
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        let same = KeyframeCarry.sceneAgreement(BlockMotion(frame: frame, key: prepared.pyramid, threads: 2), frame: frame)
        XCTAssertEqual(same, 1, "the same scene")
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1, gated: true)], frame: frame, l: l, a: &a, b: &b, width: w, height: h, threads: 2)
        var error: Float = 0, count = 0
        for y in 12..<(h - 32) { for x in 72..<(w - 12) { error += abs(a[y * w + x] - truthA[y * w + x]) + abs(b[y * w + x] - truthB[y * w + x]); count += 2 } }
        XCTAssertLessThan(error / Float(count), 0.5, "the reference's stripes, where the frame shows them")
        // Another scene: blobs of another draw, with flat ground between them that alone would
        // match the reference's flat ground.
        let other = Self.texture(width: w, height: h, seed: 99, pixelsPerBlob: 60)
        let otherFrame = KeyframeCarry.pyramid(l: other, width: w, height: h)
        let agreement = KeyframeCarry.sceneAgreement(BlockMotion(frame: otherFrame, key: prepared.pyramid, threads: 2), frame: otherFrame)
        XCTAssertEqual(agreement, 0, "another scene")
        let guideA = [Float](repeating: -10, count: w * h), guideB = [Float](repeating: 7, count: w * h)
        var oa = guideA, ob = guideB
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1, gated: true)], frame: otherFrame, l: other, a: &oa, b: &ob, width: w, height: h, threads: 2)
        func changed(_ x: [Float], _ y: [Float]) -> Int { zip(x, y).filter { $0 != $1 }.count }
        XCTAssertEqual(changed(oa, guideA) + changed(ob, guideB), 0, "the guide's colour, untouched")
        // The same picture as a keyframe (not gated) does carry into the flat ground: that is
        // what the gate is for.
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1)], frame: otherFrame, l: other, a: &oa, b: &ob, width: w, height: h, threads: 2)
        XCTAssertGreaterThan(changed(oa, guideA), w * h / 4)
    }

    func testAKeyframeFarAlongAPanIsFoundBySearchingAllOver() {
        // The frame shows the keyframe's content 70 px away at 320×192, beyond the keyframe's
        // near search (6 pixels of the 40×24 coarsest plane, 48 here): few blocks match near,
        // so the keyframe is searched all over, finds its scene, and its colour is carried.
        let w = 320, h = 192
        let kl = Self.texture(width: w, height: h)
        var ka = [Float](repeating: 0, count: w * h), kb = ka
        for y in 0..<h { for x in 0..<w { ka[y * w + x] = x % 2 == 0 ? 25 : -25; kb[y * w + x] = Float(y % 40) - 10 } }
        let (dx, dy) = (-70, 10)
        let l = Self.shifted(kl, w, h, dx: dx, dy: dy)
        let truthA = Self.shifted(ka, w, h, dx: dx, dy: dy), truthB = Self.shifted(kb, w, h, dx: dx, dy: dy)
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        let near = KeyframeCarry.sceneShare(BlockMotion(frame: frame, key: prepared.pyramid, coarseRadius: KeyframeCarry.keyframeRadius, threads: 2), frame: frame) ?? 0
        XCTAssertLessThan(near, KeyframeCarry.sceneShares.1, "the near search alone does not find it (the test sees the case)")
        var a = [Float](repeating: 0, count: w * h), b = a
        KeyframeCarry.apply([.init(keyframe: prepared, weight: 1)], frame: frame, l: l, a: &a, b: &b, width: w, height: h, threads: 2)
        var error: Float = 0, count = 0
        for y in 22..<(h - 12) { for x in 12..<(w - 82) { error += abs(a[y * w + x] - truthA[y * w + x]) + abs(b[y * w + x] - truthB[y * w + x]); count += 2 } }
        XCTAssertLessThan(error / Float(count), 0.5, "the keyframe's stripes, where the frame shows them")
    }

    func testAZoomedFrameIsMatchedToTheKeyframeZoomedAlike() {
        // The camera zoomed in by a quarter since the keyframe: the frame's pixel p shows the
        // keyframe's c + 0.8 (p − c). Blocks of fixed size match such a frame ever worse away
        // from its centre; the zoom fitted to the blocks that did match is taken out of the
        // keyframe, and its colour is carried over the whole frame.
        let w = 320, h = 192
        let kl = Self.texture(width: w, height: h)
        var ka = [Float](repeating: 0, count: w * h), kb = ka
        for y in 0..<h { for x in 0..<w { ka[y * w + x] = 30 * sin(Float(x) / 9); kb[y * w + x] = 30 * cos(Float(y) / 7) } }
        let f: Float = 0.8
        func zoomed(_ p: [Float]) -> [Float] { Self.zoomedAndMoved(p, w, h, zoom: f, move: (0, 0)) }
        let l = zoomed(kl), truthA = zoomed(ka), truthB = zoomed(kb)
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        let motion = BlockMotion(frame: frame, key: prepared.pyramid, coarseRadius: KeyframeCarry.keyframeRadius, threads: 2)
        let z = KeyframeCarry.fittedZoom(motion, frame: frame)?.z
        XCTAssertNotNil(z)
        XCTAssertEqual(z ?? 0, f - 1, accuracy: 0.04, "the zoom, from the blocks matched at the keyframe's own scale")
        func error(zooms: Bool) -> Float {
            Self.carryError(prepared, frame: frame, l: l, truth: (truthA, truthB), width: w, height: h, margin: 8, zooms: zooms)
        }
        let plain = error(zooms: false), zoomAware = error(zooms: true)
        print("zoomed frame: mean ab error \(plain) matched at the keyframe's scale, \(zoomAware) with the zoom taken out")
        XCTAssertLessThan(zoomAware, 1.5, "the keyframe's colour over the zoomed frame")
        XCTAssertLessThan(zoomAware, 0.6 * plain, "taking the zoom out carries more of it")
    }

    func testAFrameZoomedTooFarForAFitIsFoundByTheZoomScan() {
        // The camera zoomed in by 45% and moved 40 px right since the keyframe: the frame's pixel
        // p shows the keyframe's c + 0.55 (p − c) + (40, 0). Matched at the keyframe's scale too
        // few blocks match for a zoom to be fitted; the zooms scanned on the coarser planes find
        // one close enough to fit from.
        let w = 320, h = 192
        let kl = Self.texture(width: w, height: h)
        var ka = [Float](repeating: 0, count: w * h), kb = ka
        for y in 0..<h { for x in 0..<w { ka[y * w + x] = 30 * sin(Float(x) / 9); kb[y * w + x] = 30 * cos(Float(y) / 7) } }
        let f: Float = 0.55, shift: Float = 40
        func zoomedAndMoved(_ p: [Float], zoom: Float, shift: Float) -> [Float] { Self.zoomedAndMoved(p, w, h, zoom: zoom, move: (shift, 0)) }
        func zoomed(_ p: [Float]) -> [Float] { zoomedAndMoved(p, zoom: f, shift: shift) }
        let l = zoomed(kl), truthA = zoomed(ka), truthB = zoomed(kb)
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        XCTAssertEqual(KeyframeCarry.scanZooms(prepared, frame: frame, threads: 2) ?? 0, f, accuracy: 0.07,
                       "the scanned zoom nearest the camera's")
        XCTAssertNil(KeyframeCarry.scanZooms(prepared, frame: KeyframeCarry.pyramid(l: zoomedAndMoved(kl, zoom: 1, shift: 12), width: w, height: h),
                                             threads: 2), "a camera that only moved: no zoom")
        func error(scan: Bool) -> Float {
            Self.carryError(prepared, frame: frame, l: l, truth: (truthA, truthB), width: w, height: h, margin: 8, zooms: true, zoomScan: scan)
        }
        let fitted = error(scan: false), scanned = error(scan: true)
        print("zoomed 45% and moved: mean ab error \(fitted) fitting only, \(scanned) with the zoom scan")
        XCTAssertLessThan(scanned, 1.5, "the keyframe's colour over the frame")
        XCTAssertLessThan(scanned, 0.5 * fitted, "the scan carries more of it than fitting alone")
    }

    func testAZoomedAndMovedFrameLargerThanTheMatchingPlanesIsMatched() {
        // An 800×480 frame (matched on 640×384 planes): the camera zoomed in by 30% and moved
        // 30 px left and 12 px up (full-resolution pixels) since the keyframe. The zoom and move
        // are fitted on the matching planes and warped out of the full-resolution keyframe.
        let sw = 320, sh = 192, w = 800, h = 480
        var kl = [Float](repeating: 0, count: w * h)
        Resample.bilinear(Self.texture(width: sw, height: sh), sw, sh, into: &kl, w, h)
        var ka = [Float](repeating: 0, count: w * h), kb = ka
        for y in 0..<h { for x in 0..<w { ka[y * w + x] = 30 * sin(Float(x) / 20); kb[y * w + x] = 30 * cos(Float(y) / 16) } }
        func zoomed(_ p: [Float]) -> [Float] { Self.zoomedAndMoved(p, w, h, zoom: 0.7, move: (-30, -12)) }
        let l = zoomed(kl), truthA = zoomed(ka), truthB = zoomed(kb)
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        XCTAssertEqual(frame.width, 640, "matched on smaller planes than the frame")
        let prepared = KeyframeCarry.Prepared(l: kl, a: ka, b: kb, width: w, height: h, frameWidth: w, frameHeight: h)
        func error(zooms: Bool) -> Float {
            Self.carryError(prepared, frame: frame, l: l, truth: (truthA, truthB), width: w, height: h, margin: 16, zooms: zooms)
        }
        let plain = error(zooms: false), zoomAware = error(zooms: true)
        print("800x480 frame zoomed 30% and moved: mean ab error \(plain) at the keyframe's scale, \(zoomAware) with the zoom and move taken out")
        XCTAssertLessThan(zoomAware, 1.0, "the keyframe's colour over the frame")
        XCTAssertLessThan(zoomAware, 0.5 * plain, "taking the zoom and move out carries more of it")
    }
}
