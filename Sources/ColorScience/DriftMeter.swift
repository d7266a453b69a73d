/// The drift metric: how far the colour of a region wanders through a shot. Regions (blocks
/// of the frame shrunk to at most `workingWidth` pixels across) are followed from frame to
/// frame by block matching on L*, and each one's mean a*, b* is compared with its own at the
/// start of its track:
///
///     frame ─▶ shrink ─▶ cut? (L* histograms) ─▶ yes: close every track, seed a grid of blocks
///                                  │ no
///                                  ▼
///            each track: best match of its last block within ±search px (mean |ΔL*|)
///              ─▶ too different (occluded, left the frame): closed
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
    /// How far a block may move between two frames, in working pixels.
    public var search = 3
    /// A block whose best match differs by more than this (mean |ΔL*|) is lost.
    public var maximumError: Float = 6
    /// Tracks shorter than this are not counted (a region seen for a moment has no drift).
    public var minimumFrames = 8

    private struct Track {
        var x: Int, y: Int
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

    /// Mean a and b of the block at (x, y), the clip's and the truth's (0 when not given).
    private func meanAB(_ x: Int, _ y: Int) -> (Float, Float, Float, Float) {
        var sa: Float = 0, sb: Float = 0, sta: Float = 0, stb: Float = 0
        for dy in 0..<block {
            let row = (y + dy) * size.w + x
            for dx in 0..<block { sa += a[row + dx]; sb += b[row + dx] }
            if truthGiven { for dx in 0..<block { sta += ta[row + dx]; stb += tb[row + dx] } }
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
            for dy in 0..<block { for dx in 0..<block { taken[(t.y + dy) * w + t.x + dx] = true } }
        }
        var y = 0
        while y + block <= h {
            var x = 0
            while x + block <= w {
                if !taken[(y + block / 2) * w + x + block / 2] {
                    tracks.append(Track(x: x, y: y, start: meanAB(x, y)))
                }
                x += block
            }
            y += block
        }
    }

    /// Each track to its block's best match in this frame, or closed.
    private mutating func follow() {
        let (w, h) = size
        var kept: [Track] = []
        kept.reserveCapacity(tracks.count)
        let n = Float(block * block)
        for var t in tracks {
            var best = Float.infinity, bx = t.x, by = t.y
            for oy in -search...search {
                let y = t.y + oy
                if y < 0 || y + block > h { continue }
                for ox in -search...search {
                    let x = t.x + ox
                    if x < 0 || x + block > w { continue }
                    var e: Float = 0
                    for dy in 0..<block {
                        let p = (t.y + dy) * w + t.x, q = (y + dy) * w + x
                        for dx in 0..<block { e += abs(l[q + dx] - previousL[p + dx]) }
                    }
                    // Ties go to the smaller move (flat regions match everywhere).
                    if e < best || (e == best && abs(ox) + abs(oy) < abs(bx - t.x) + abs(by - t.y)) { best = e; bx = x; by = y }
                }
            }
            if best / n > maximumError {
                close(t)
                continue
            }
            t.x = bx
            t.y = by
            let m = meanAB(bx, by), s = t.start
            let length = { (x: Float, y: Float) in Double((x * x + y * y).squareRoot()) }
            t.sum.0 += length(m.0 - s.0, m.1 - s.1)
            t.sum.1 += length(m.2 - s.2, m.3 - s.3)
            t.sum.2 += length(m.0 - m.2 - (s.0 - s.2), m.1 - m.3 - (s.1 - s.3))
            t.frames += 1
            kept.append(t)
        }
        tracks = kept
    }
}
