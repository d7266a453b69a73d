/// The drift metric: how far the colour of a region wanders through a shot. Regions (blocks
/// of the frame shrunk to at most `workingWidth` pixels across) are followed from frame to
/// frame by block matching on L*, and each one's mean a*, b* is compared with its own at the
/// start of its track:
///
///     frame ─▶ shrink ─▶ cut? (L* histograms) ─▶ yes: close every track, seed a grid of blocks
///                                  │ no
///                                  ▼
///            each track: best match of its last block within ±search px (mean |ΔL*| over
///              the part in the frame; up to half a block out of it), refined to sub-pixel
///              (Lucas–Kanade) where it has texture, or where it is flat, the match of the
///              window three blocks across around it
///              ─▶ matched out of the frame (left it), or too different (occluded): closed
///              ─▶ else moved there; distance of its mean ab from its first mean ab added
///            fewer than half the tracks left ─▶ new blocks seeded where none is
///
/// The value is the mean of those distances over every frame of every track that lived at
/// least `minimumFrames` frames (ab units). Flicker (`FlickerMeter`) sees colour jump between
/// two frames; drift sees it slide over seconds, as a sky going from grey to beige to rust
/// does in a slow zoom. Both are measured the same way on the truth, and the colorized clip's
/// figure is read against the truth's (real colour moves too: light changes, things turn).
/// Given the truth's a*, b* beside a colorized clip's planes, the meter follows the same
/// regions in both and also measures how far the colorized colour drifts from the truth's own
/// change (the drift of their difference: 0 when the colour changes exactly as the truth's does).
public struct DriftMeter {
    /// Frames are shrunk (area average) to at most this width first.
    public var workingWidth = 192
    /// The side of a block, in working pixels.
    public var block = 8
    /// How far a block may move between two frames, in working pixels (sub-pixel tracking
    /// refines that by up to one more).
    public var search = 3
    /// A block whose best match differs by more than this (mean |ΔL*|) is lost.
    public var maximumError: Float = 6
    /// Tracks shorter than this are not counted (a region seen for a moment has no drift).
    public var minimumFrames = 8
    /// How regions are followed (`.integer`: the meter before 2026-12-01, for comparison).
    public var tracking = Tracking.subpixel
    /// A block is followed by its own match only when the smaller eigenvalue of its structure
    /// tensor (summed squared L* gradients) is at least this per pixel; a flatter one is
    /// matched with the window around it.
    public var minimumTexture: Float = 1

    /// How regions are followed from frame to frame.
    public enum Tracking: Sendable {
        /// Whole pixels, each block on its own best match.
        case integer
        /// Whole pixels refined to sub-pixel by Lucas–Kanade steps; a flat block is matched with
        /// the window three blocks across around it.
        case subpixel
    }

    private struct Track {
        /// The block's corner, in working pixels.
        var x: Float, y: Float
        /// Mean a, b where the track began: the clip's, then the truth's.
        var start: (Float, Float, Float, Float)
        /// Summed distances: the clip's, the truth's, their difference's.
        var sum: (Double, Double, Double) = (0, 0, 0)
        var frames = 0
    }

    private var tracks: [Track] = []
    private var seeded = 0
    private var previousL: [Float] = []
    private var previousHistogram: [Float] = []
    private var size = (w: 0, h: 0)
    private var l: [Float] = [], a: [Float] = [], b: [Float] = [], ta: [Float] = [], tb: [Float] = []
    private var truthGiven = false
    private var sum: (Double, Double, Double) = (0, 0, 0)
    private var count = 0
    private var counted = 0

    /// Makes a meter.
    public init() {}

    /// Adds the next frame's planes (`width`×`height` each); `truth` is the same frame's
    /// true a and b planes, when known (the same size).
    public mutating func add(l fl: [Float], a fa: [Float], b fb: [Float], width: Int, height: Int, truth: (a: [Float], b: [Float])? = nil) {
        let n = width * height
        guard width > 0, height > 0, fl.count >= n, fa.count >= n, fb.count >= n else { return }
        if let truth { guard truth.a.count >= n, truth.b.count >= n else { return } }
        let w = min(width, workingWidth), h = max(1, (height * w + width / 2) / width)
        Resample.area(fl, width, height, into: &l, w, h)
        Resample.area(fa, width, height, into: &a, w, h)
        Resample.area(fb, width, height, into: &b, w, h)
        truthGiven = truth != nil
        if let truth {
            Resample.area(truth.a, width, height, into: &ta, w, h)
            Resample.area(truth.b, width, height, into: &tb, w, h)
        }
        let histogram = ShotHistogram.of(l)
        let cut = size != (w, h) || previousHistogram.isEmpty || ShotHistogram.distance(histogram, previousHistogram) > ShotHistogram.cutThreshold
        size = (w, h)
        if cut {
            for t in tracks { close(t) }
            tracks = []
            seed()
            seeded = tracks.count
        } else {
            follow()
            if tracks.count * 2 < seeded { seed() }
        }
        previousL = l
        previousHistogram = histogram
    }

    /// Closes the tracks still open (the video ended).
    public mutating func finish() {
        for t in tracks { close(t) }
        tracks = []
    }

    /// The metric so far, over the tracks closed (call `finish` at the end); 0 when none counted.
    public var value: Double { count == 0 ? 0 : sum.0 / Double(count) }
    /// The truth's drift over the same regions (when the truth was given).
    public var truthValue: Double { count == 0 ? 0 : sum.1 / Double(count) }
    /// The drift of the difference from the truth over the same regions (when it was given).
    public var differenceValue: Double { count == 0 ? 0 : sum.2 / Double(count) }
    /// Tracks counted.
    public var tracksCounted: Int { counted }

    private mutating func close(_ t: Track) {
        guard t.frames >= minimumFrames else { return }
        sum.0 += t.sum.0
        sum.1 += t.sum.1
        sum.2 += t.sum.2
        count += t.frames
        counted += 1
    }

    /// Mean a and b of the block with its corner at (x, y), the clip's and the truth's (0 when
    /// not given); between pixels, bilinear.
    private func meanAB(_ x: Float, _ y: Float) -> (Float, Float, Float, Float) {
        var sa: Float = 0, sb: Float = 0, sta: Float = 0, stb: Float = 0
        let whole = x == x.rounded() && y == y.rounded()
        for dy in 0..<block {
            for dx in 0..<block {
                let px = x + Float(dx), py = y + Float(dy)
                if whole {
                    let i = Int(py) * size.w + Int(px)
                    sa += a[i]; sb += b[i]
                    if truthGiven { sta += ta[i]; stb += tb[i] }
                } else {
                    sa += sample(a, px, py); sb += sample(b, px, py)
                    if truthGiven { sta += sample(ta, px, py); stb += sample(tb, px, py) }
                }
            }
        }
        let n = Float(block * block)
        return (sa / n, sb / n, sta / n, stb / n)
    }

    /// New blocks on the grid wherever no track's block lies.
    private mutating func seed() {
        let (w, h) = size
        guard w >= block, h >= block else { return }
        var taken = [Bool](repeating: false, count: w * h)
        for t in tracks {
            let tx = min(max(Int(t.x.rounded()), 0), w - block), ty = min(max(Int(t.y.rounded()), 0), h - block)
            for dy in 0..<block { for dx in 0..<block { taken[(ty + dy) * w + tx + dx] = true } }
        }
        var y = 0
        while y + block <= h {
            var x = 0
            while x + block <= w {
                if !taken[(y + block / 2) * w + x + block / 2] {
                    tracks.append(Track(x: Float(x), y: Float(y), start: meanAB(Float(x), Float(y))))
                }
                x += block
            }
            y += block
        }
    }

    /// Bilinear sample of a working plane at (x, y), clamped to the plane.
    @inline(__always)
    private func sample(_ p: [Float], _ x: Float, _ y: Float) -> Float {
        let (w, h) = size
        let cx = min(max(x, 0), Float(w - 1)), cy = min(max(y, 0), Float(h - 1))
        let x0 = min(Int(cx), max(w - 2, 0)), y0 = min(Int(cy), max(h - 2, 0))
        let x1 = min(x0 + 1, w - 1), y1 = min(y0 + 1, h - 1)
        let tx = cx - Float(x0), ty = cy - Float(y0)
        let top = p[y0 * w + x0] + (p[y0 * w + x1] - p[y0 * w + x0]) * tx
        let bottom = p[y1 * w + x0] + (p[y1 * w + x1] - p[y1 * w + x0]) * tx
        return top + (bottom - top) * ty
    }

    /// Each track to its block's best match in this frame, or closed.
    private mutating func follow() {
        switch tracking {
        case .integer: followInteger()
        case .subpixel: followSubpixel()
        }
    }

    /// Where one track's block went: its new corner, and whether texture fixed it.
    private struct Match {
        var x: Float, y: Float
        var textured: Bool
        /// Matched out of the frame: the region left it.
        var left = false
    }

    /// Where the block of `t` went in this frame: matched with the window around it (`pad`
    /// pixels wider on each side) at whole pixels, then refined by Lucas–Kanade steps when the
    /// window has texture in both directions.
    private func match(_ t: Track, pad: Int) -> Match {
        let (w, h) = size
        let side = block + 2 * pad
        let ox0 = t.x - Float(pad), oy0 = t.y - Float(pad)
        // Pixels outside the frame are NaN: left out of the comparison.
        let inside = { (px: Float, py: Float) in px > -0.5 && py > -0.5 && px < Float(w) - 0.5 && py < Float(h) - 0.5 }
        var template = [Float](repeating: 0, count: side * side)
        for dy in 0..<side {
            for dx in 0..<side {
                let px = ox0 + Float(dx), py = oy0 + Float(dy)
                template[dy * side + dx] = inside(px, py) ? sample(previousL, px, py) : .nan
            }
        }
        // Whole pixels first (ties to the smaller move), as the integer tracker. Every
        // candidate's window lies on one grid (whole-pixel steps from the track's corner), so
        // this frame is sampled onto it once. A block may be matched up to half its side (and
        // at most `search`) out of the frame, on the part still in it (at least half the
        // window): that is how a
        // region that leaves the frame is found to have left, where a search kept inside
        // held it at the border, measuring whatever passed there.
        let span = side + 2 * search
        var patch = [Float](repeating: 0, count: span * span)
        let px0 = ox0 - Float(search), py0 = oy0 - Float(search)
        for j in 0..<span {
            for i in 0..<span {
                let px = px0 + Float(i), py = py0 + Float(j)
                patch[j * span + i] = inside(px, py) ? sample(l, px, py) : .nan
            }
        }
        let out = Float(block / 2)
        var best = Float.infinity, bx = 0, by = 0
        for oy in -search...search {
            let y = t.y + Float(oy)
            if y < -out || y > Float(h - block) + out { continue }
            for ox in -search...search {
                let x = t.x + Float(ox)
                if x < -out || x > Float(w - block) + out { continue }
                var e: Float = 0, n = 0
                for dy in 0..<side {
                    let row = (dy + oy + search) * span + ox + search
                    for dx in 0..<side {
                        let d = abs(patch[row + dx] - template[dy * side + dx])
                        if !d.isNaN { e += d; n += 1 }
                    }
                }
                guard 2 * n >= side * side else { continue }
                e = e / Float(n) * Float(side * side)
                if e < best || (e == best && abs(ox) + abs(oy) < abs(bx) + abs(by)) { best = e; bx = ox; by = oy }
            }
        }
        // No candidate had half its window in the frame (a wide window in a corner): no match.
        guard best < .infinity else { return Match(x: t.x, y: t.y, textured: false) }
        // Matched out of the frame: it left (`followSubpixel` closes it).
        if t.x + Float(bx) < 0 || t.y + Float(by) < 0 || t.x + Float(bx) > Float(w - block) || t.y + Float(by) > Float(h - block) {
            return Match(x: t.x + Float(bx), y: t.y + Float(by), textured: true, left: true)
        }
        var x = t.x + Float(bx), y = t.y + Float(by)
        // Lucas–Kanade: solve G d = Σ g (T − I) at the current estimate, a few times, over the
        // template's pixels in the frame.
        var textured = false
        for step in 0..<4 {
            var gxx: Float = 0, gxy: Float = 0, gyy: Float = 0, ex: Float = 0, ey: Float = 0
            var counted = 0
            for dy in 0..<side {
                for dx in 0..<side {
                    let tv = template[dy * side + dx]
                    if tv.isNaN { continue }
                    let px = x - Float(pad) + Float(dx), py = y - Float(pad) + Float(dy)
                    let gx = (sample(l, px + 0.5, py) - sample(l, px - 0.5, py))
                    let gy = (sample(l, px, py + 0.5) - sample(l, px, py - 0.5))
                    let r = tv - sample(l, px, py)
                    gxx += gx * gx; gxy += gx * gy; gyy += gy * gy
                    ex += gx * r; ey += gy * r
                    counted += 1
                }
            }
            if step == 0 {
                let mean = (gxx + gyy) / 2, d = ((gxx - gyy) * (gxx - gyy) / 4 + gxy * gxy).squareRoot()
                textured = counted > 0 && (mean - d) / Float(counted) >= minimumTexture
                if !textured { break }
            }
            let det = gxx * gyy - gxy * gxy
            guard det > 0 else { break }
            let ux = (gyy * ex - gxy * ey) / det, uy = (gxx * ey - gxy * ex) / det
            guard ux.isFinite && uy.isFinite else { break }
            // Within a pixel of the whole-pixel match: past it the whole-pixel search decides.
            x = min(max(x + ux, t.x + Float(bx) - 1), t.x + Float(bx) + 1)
            y = min(max(y + uy, t.y + Float(by) - 1), t.y + Float(by) + 1)
            if abs(ux) < 0.01 && abs(uy) < 0.01 { break }
        }
        return Match(x: x, y: y, textured: textured)
    }

    /// Sub-pixel tracking. Matching every block to the previous frame at whole pixels loses up to
    /// half a pixel a frame, the same way each frame of a steady pan (2.3 px a frame matches at
    /// 2), so blocks slid off their content by a third of a pixel a frame; and a block on a flat
    /// wall matches equally well everywhere and stayed put while the camera moved, sliding over
    /// the wall's colour. Here each block is matched at whole pixels and refined by Lucas–Kanade
    /// steps where its structure tensor has texture in both directions; a flat block is matched
    /// with the window three blocks across around it instead (its own motion, read from the
    /// texture around it), and stays on its own whole-pixel match only when that is flat too.
    private mutating func followSubpixel() {
        let (w, h) = size
        let n = block * block
        var matches: [Match] = []
        matches.reserveCapacity(tracks.count)
        for t in tracks {
            var m = match(t, pad: 0)
            if !m.textured {
                let wide = match(t, pad: block)
                if wide.textured { m = wide }
            }
            matches.append(m)
        }
        var kept: [Track] = []
        kept.reserveCapacity(tracks.count)
        for (i, var t) in tracks.enumerated() {
            let m = matches[i]
            // Left the frame: closed.
            guard !m.left, m.x > -0.5, m.y > -0.5, m.x < Float(w - block) + 0.5, m.y < Float(h - block) + 0.5 else {
                close(t)
                continue
            }
            let x = min(max(m.x, 0), Float(w - block)), y = min(max(m.y, 0), Float(h - block))
            var e: Float = 0
            for dy in 0..<block {
                for dx in 0..<block {
                    e += abs(sample(l, x + Float(dx), y + Float(dy)) - sample(previousL, t.x + Float(dx), t.y + Float(dy)))
                }
            }
            if e / Float(n) > maximumError {
                close(t)
                continue
            }
            t.x = x
            t.y = y
            add(meanAB(x, y), to: &t)
            kept.append(t)
        }
        tracks = kept
    }

    /// The distances of a track's new mean colour from its start, added.
    private func add(_ m: (Float, Float, Float, Float), to t: inout Track) {
        let s = t.start
        let length = { (x: Float, y: Float) in Double((x * x + y * y).squareRoot()) }
        t.sum.0 += length(m.0 - s.0, m.1 - s.1)
        t.sum.1 += length(m.2 - s.2, m.3 - s.3)
        t.sum.2 += length(m.0 - m.2 - (s.0 - s.2), m.1 - m.3 - (s.1 - s.3))
        t.frames += 1
    }

    /// The tracker before 2026-12-01: whole pixels, each block on its own match.
    private mutating func followInteger() {
        let (w, h) = size
        var kept: [Track] = []
        kept.reserveCapacity(tracks.count)
        let n = Float(block * block)
        for var t in tracks {
            let tx = Int(t.x.rounded()), ty = Int(t.y.rounded())
            var best = Float.infinity, bx = tx, by = ty
            for oy in -search...search {
                let y = ty + oy
                if y < 0 || y + block > h { continue }
                for ox in -search...search {
                    let x = tx + ox
                    if x < 0 || x + block > w { continue }
                    var e: Float = 0
                    for dy in 0..<block {
                        let p = (ty + dy) * w + tx, q = (y + dy) * w + x
                        for dx in 0..<block { e += abs(l[q + dx] - previousL[p + dx]) }
                    }
                    // Ties go to the smaller move (flat regions match everywhere).
                    if e < best || (e == best && abs(ox) + abs(oy) < abs(bx - tx) + abs(by - ty)) { best = e; bx = x; by = y }
                }
            }
            if best / n > maximumError {
                close(t)
                continue
            }
            t.x = Float(bx)
            t.y = Float(by)
            add(meanAB(t.x, t.y), to: &t)
            kept.append(t)
        }
        tracks = kept
    }
}
