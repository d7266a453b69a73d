internal import ColorScience
internal import Engine
import Foundation
internal import MediaIO

/// Where a frame sits in its video, for keyframes.
package struct FramePosition: Sendable, Equatable {
    /// 0-based frame number of the source.
    package var index: Int
    /// Presentation time in seconds.
    package var seconds: Double

    /// Makes a position.
    package init(index: Int, seconds: Double) {
        self.index = index
        self.seconds = seconds
    }
}

/// The colorizer's guidance at run time (issue 28): references and keyframes matched by
/// meaning, hints spread along lightness edges.
///
///     frame L ─▶ encoder features ─▶ match against: references (always), the keyframes of
///                                    this shot (before: no cut since; after: same content),
///                                    weighted by nearness in time
///                                  ─▶ transferred ab where confident, else the model's
///     a frame that is a keyframe ─▶ the keyframe's own ab at the frame's L
///     first frame ─▶ hints, spread along edges; the result is then a keyframe of its shot
///     at full resolution ─▶ the keyframes (and the hinted frame) of this shot, and references
///                           of this frame's own scene, carried where the frame shows their
///                           content (`KeyframeCarry`)
///
/// With `anchorShots` (video, the stabilizer on) a shot with no keyframe anchors itself (issue
/// 29, item 4): its first frame's final colour becomes an anchor, later frames take the
/// anchor's colour where they match it confidently, and a frame whose content has moved on
/// (mean confidence below `anchorRefresh`) becomes the next anchor, carrying the colour
/// matched into it. So a region keeps the colour it had when the shot first showed it,
/// instead of the model's view of it sliding frame by frame as the framing changes.
package final class ColourGuide {
    /// What it was made from.
    package let spec: ColourGuideSpec
    /// Whether shots without keyframes anchor themselves to their own earlier frames.
    package let anchorShots: Bool
    /// Mean confidence of a frame's match to its shot's anchors below which the frame becomes
    /// an anchor too.
    var anchorRefresh: Float = 0.8
    /// Anchors kept per shot (the oldest goes first). One measured as well as three (drift
    /// within 0.1 on the tuning clips) at a third of the matching cost.
    var anchorLimit = 1
    /// The reference encoder, loaded when first needed: the built-in colorizer hands over its
    /// own features, so a video run with only shot anchors never loads it.
    private var loadedEncoder: ReferenceEncoder?
    private let backend: BackendChoice
    /// The precision the encoder computes in, the largest picture read and the threads.
    private let settings: ComputeSettings
    private let matcher: ReferenceMatcher
    private let lab: LabConverter
    private var references: [ColourReference] = []
    /// Each reference's full-resolution L, a and b, for carrying its colour where the frame
    /// shows the same scene (`KeyframeCarry`, gated by `sceneAgreement`).
    private var referencePlanes: [(l: [Float], a: [Float], b: [Float], w: Int, h: Int)] = []
    private var keyframes: [LoadedKeyframe] = []
    private var hintSeeds: [HintSpreader.Seed] = []
    /// The colorizer's frames over the source's, per axis (`configure`): 1 unless an upscaler
    /// runs before it.
    private var hintScale: (Double, Double) = (1, 1)
    private var hintsSize: (w: Int, h: Int)?
    /// The frame size configured, and its rate (for frame-number keyframes' times).
    private var frameSize: (w: Int, h: Int)?
    private var frameRate: Double = 30
    // State from frame to frame (forgotten by `reset`).
    private var lastCutSeconds = -Double.infinity
    /// The latest frame seen since `reset`, seconds and number (nil: none).
    private var lastSeenSeconds: Double?
    private var lastSeenIndex: Int?
    /// Keyframes before the first frame this guide saw (a stream's frame 0 may have been
    /// dropped in live mode, a segment starts mid-video) that hold its content: they carry
    /// into its shot as if no cut came between.
    private var carriedKeyframes: Set<Double> = []
    private var previousHistogram: [Float] = []
    private var hintsDone = false
    private var hintedFrame: LoadedKeyframe?
    /// Where the shot of the first frame this guide sees began, seconds from the video's first
    /// frame, when known (a segment's plan scanned the whole input); nil: the first frame seen
    /// starts a shot, and keyframes before it carry into it if their content is its own.
    package var knownShotStart: Double?
    /// Where shots start, seconds from the video's first frame, when a scan of the input found
    /// them (up to the first after the last keyframe): a keyframe then applies to the frames
    /// with no shot start between it and them, before and after it alike. Nil (a stream): a
    /// keyframe before a frame applies if no cut was seen since, one after it if its L
    /// histogram is the frame's.
    package var shotStarts: [Double]?
    /// Each frame's time, seconds from the video's first frame, when a scan of the file gave
    /// them: a keyframe by number is then at its frame's own time and one by time on the
    /// nearest frame, which a variable-rate file needs (nil: a stream, at the nominal rate).
    package var frameTimes: [Double]?
    /// Whether the frames this guide sees start after the video's first frame (a segment's
    /// window): the hints, which belong to the first frame, then do not apply to them.
    package var startsMidVideo = false
    /// This shot's anchors, oldest first.
    private var anchors: [ColourReference] = []
    /// The shot's previous frame, carried onto the next (`PreviousFrameCarry`).
    private var previousFrame: PreviousFrameCarry?
    /// This frame's colour on the fine grid as the stabilizer left it (set by the colorizer;
    /// nil when the frame took an exact keyframe or the model's colour alone).
    var stabilizedFine: [Float]?
    /// The last frame's mean match confidence to the anchors (nil: no anchor was used).
    private var anchorConfidence: Float?
    /// Whether the last frame's colour came from a keyframe (exact or matched).
    private var keyframeApplied = false
    /// Whether the last frame was coloured from what the user gave (a keyframe, the hinted frame
    /// or a reference photograph), not from the model and the shot's own anchors alone.
    var userGuided: Bool { keyframeApplied || !references.isEmpty }
    /// What a frame's colour can be carried from at full resolution.
    enum CarrySource: Hashable {
        /// A keyframe, by index into `keyframes`.
        case keyframe(Int)
        /// The first frame with the hints spread on it.
        case hinted
        /// A reference photograph, by index into `references`: only where the frame shows the
        /// reference's own scene (`KeyframeCarry.sceneAgreement`).
        case reference(Int)
    }
    /// What the last frame takes its colour from at full resolution where it shows their
    /// content, with their weights in time (`carry`).
    private var carrySources: [(source: CarrySource, weight: Float)] = []
    /// Keyframes, the hinted frame and references prepared for carrying (for one frame size).
    private var carryPrepared: [CarrySource: KeyframeCarry.Prepared] = [:]
    // Per-frame buffers.
    private var l224 = [Float](repeating: 0, count: 224 * 224)
    private(set) var lFine = [Float](repeating: 0, count: ColourReference.fineSide * ColourReference.fineSide)
    private var lGrid = [Float](repeating: 0, count: ReferenceEncoder.gridSide * ReferenceEncoder.gridSide)
    private var autoPlane: [Float] = [], autoFinePlane: [Float] = [], autoFine: [Float] = []

    /// A keyframe read and prepared.
    struct LoadedKeyframe {
        var position: Keyframe.Position
        var file: String
        var reference: ColourReference
        /// Full-resolution colour, for the frame the keyframe is.
        var width: Int, height: Int
        var a: [Float], b: [Float]
        /// Full-resolution L, for carrying its colour to the frames of its shot (`KeyframeCarry`).
        var l: [Float] = []
        var histogram: [Float]
        /// The EXIF orientation the file carried (applied when it was read), if any.
        var orientation: Int? = nil
    }

    /// What the guide decided for a frame.
    enum Outcome {
        /// Nothing applies: the model's colour as it is.
        case automatic
        /// The frame is a keyframe: its colour at full resolution (not yet fitted to the frame's L).
        case exact(a: [Float], b: [Float], width: Int, height: Int)
        /// Colour on the 112×112 grid (model and references mixed), and the references' detail
        /// to add at full resolution.
        case fine(ab: [Float], detail: DetailTransfer?)
    }

    /// Reads and prepares every reference and keyframe of `spec` (errors name the file and the
    /// fix, before any frame is processed), none larger than `settings.maxPixels`; the
    /// reference encoder computes in `settings.precision`, and it and the loops on
    /// `settings.threads` threads.
    package init(spec: ColourGuideSpec, backend: BackendChoice = .onednn, settings: ComputeSettings = ComputeSettings(),
                 anchorShots: Bool = false) throws {
        self.spec = spec
        self.anchorShots = anchorShots
        try spec.checkFiles()
        self.backend = backend
        self.settings = settings
        matcher = ReferenceMatcher(multiplier: backend.makeMatrixMultiplier(threads: settings.threads), threads: settings.threads)
        lab = LabConverter(threads: settings.threads)
        for path in spec.references {
            let (l, a, b, w, h) = try Self.readColour(path, option: "--reference", maxPixels: settings.maxPixels, lab: lab)
            references.append(try ColourReference(name: path, l: l, a: a, b: b, width: w, height: h, encoder: encoder()))
            referencePlanes.append((l, a, b, w, h))
        }
        for k in spec.keyframes {
            var orientation: Int?
            let (l, a, b, w, h) = try Self.readColour(k.file, option: "--keyframe", maxPixels: settings.maxPixels, lab: lab, orientation: &orientation)
            let r = try ColourReference(name: k.file, l: l, a: a, b: b, width: w, height: h, encoder: encoder())
            keyframes.append(LoadedKeyframe(position: k.position, file: k.file, reference: r, width: w, height: h, a: a, b: b, l: l,
                                            histogram: TemporalStabilizer.histogram(r.lFine), orientation: orientation))
        }
        for h in spec.hints { hintSeeds.append(HintSpreader.Seed(x: h.x, y: h.y, red: h.red, green: h.green, blue: h.blue)) }
        if let path = spec.hintsImage {
            let image = try ImageIO.read(path: path, maxPixels: settings.maxPixels)
            guard let alpha = image.alpha else {
                throw MediaError(.invalidOptions, "'--hints \(path)' has no alpha channel, so no pixel is marked as a hint. Save it as an RGBA PNG whose opaque pixels are the hints and the rest transparent.")
            }
            let rgb = image.color.channels == 3 ? image.color : image.color.expandedToRGB()
            let n = image.width * image.height
            for i in 0..<n where alpha.data[i] >= 0.5 {
                let q = { (v: Float) in UInt8(min(max(v * 255, 0), 255).rounded()) }
                hintSeeds.append(HintSpreader.Seed(x: i % image.width, y: i / image.width, red: q(rgb.data[i]), green: q(rgb.data[n + i]), blue: q(rgb.data[2 * n + i]),
                                                   fromImage: true))
            }
            guard hintSeeds.contains(where: \.fromImage) else {
                throw MediaError(.invalidOptions, "'--hints \(path)' has no opaque pixel, so it gives no hint. Paint the hints opaque on a transparent picture.")
            }
            hintsSize = (image.width, image.height)
        }
    }

    /// Reads a colour picture as planar L, a, b; refuses grey ones.
    static func readColour(_ path: String, option: String, maxPixels: Int, lab: LabConverter) throws -> (l: [Float], a: [Float], b: [Float], w: Int, h: Int) {
        var orientation: Int?
        return try readColour(path, option: option, maxPixels: maxPixels, lab: lab, orientation: &orientation)
    }

    /// `readColour`, also telling the EXIF orientation reading applied (nil: none).
    static func readColour(_ path: String, option: String, maxPixels: Int, lab: LabConverter,
                           orientation: inout Int?) throws -> (l: [Float], a: [Float], b: [Float], w: Int, h: Int) {
        let image = try ImageIO.read(path: path, maxPixels: maxPixels)
        orientation = image.appliedOrientation
        guard image.color.channels == 3 else {
            throw MediaError(.invalidOptions, "'\(option) \(path)' is a grey picture: it has no colour to give. Give a colour photograph (or colour the frame in an editor first).")
        }
        var packed = VideoFrame(format: .rgb24, width: 1, height: 1)
        image.color.store(into: &packed)
        let w = image.width, h = image.height
        var rgb = [UInt8](repeating: 0, count: 3 * w * h)
        packed.planes[0].withUnsafeBufferPointer { src in for i in 0..<rgb.count { rgb[i] = src[i] } }
        let (l, a, b) = lab.lab(of: rgb, width: w, height: h)
        // Grey stored as RGB: (almost) no pixel with visible chroma.
        var coloured = 0
        for i in 0..<(w * h) where a[i] * a[i] + b[i] * b[i] > 25 { coloured += 1 }
        if coloured * 200 < w * h {
            throw MediaError(.invalidOptions, "'\(option) \(path)' is grey (fewer than 0.5% of its pixels have any colour): it has no colour to give. Give a colour photograph (or colour the frame in an editor first).")
        }
        return (l, a, b, w, h)
    }

    /// The fewest pixels a keyframe may have on a side (fewer only where the frame has fewer).
    package static let smallestKeyframeSide = 16

    /// Checks the guide against the frames it will get: keyframes of the same aspect and a
    /// usable size, hints
    /// inside the picture. `sourceWidth`×`sourceHeight`: the first frame as given, before any
    /// stage (default: this size), whose pixel coordinates `--hint` takes; an upscaler before
    /// the colorizer (`--colorize-after`) scales them to the frames it gets.
    package func configure(width: Int, height: Int, frameRate: Double, sourceWidth: Int? = nil, sourceHeight: Int? = nil) throws {
        frameSize = (width, height)
        let sw = sourceWidth ?? width, sh = sourceHeight ?? height
        hintScale = (Double(width) / Double(max(sw, 1)), Double(height) / Double(max(sh, 1)))
        if frameRate.isFinite && frameRate > 0 { self.frameRate = frameRate }
        // The same aspect up to rounding a side of the smaller picture to whole pixels (half a
        // pixel each): a 2x2 keyframe passed for a 320x180 frame when this was max(width).
        func sameAspect(_ w: Int, _ h: Int) -> Bool { KeyframeCarry.sameAspect(w, h, width, height) }
        for k in keyframes where !sameAspect(k.width, k.height) {
            // The frame turned a quarter (a video stored turned, extracted by a tool that stands
            // it upright): said so.
            let quarter = width != height && abs(k.width * width - k.height * height) <= max(height, k.width)
            // Turned by its own EXIF orientation (5–8 swap the sides): the picture's pixels are
            // the frame's, but viewers (and vivify) stand it as the tag says.
            let turned = !quarter ? "" : (k.orientation ?? 1) >= 5
                ? " It is the frame turned a quarter by the picture's own EXIF orientation (\(k.orientation!), which vivify applies as viewers do): save it without the orientation tag, so that it stands as the frame does (`exiftool -Orientation= -n FILE` removes it, keeping the pixels)."
                : " It is the frame turned a quarter: the video is stored turned and was stood upright when the frame was taken out; take it as stored (`vivify run IN frame.png --max-frames 1`, or ffmpeg with -noautorotate)."
            throw MediaError(.invalidOptions, "The keyframe '\(k.file)' is \(k.width)x\(k.height), but the frames are \(width)x\(height): a keyframe must have the frame's aspect.\(turned) Colour the frame itself (extract it with `vivify run IN frame.png --max-frames 1`, or take it at any size with the same aspect).")
        }
        // The aspect's rounding lets a picture of a pixel or two pass (2x1 for 64x36 frames):
        // too little to carry any frame's colour, and surely not the picture meant.
        let side = (min(Self.smallestKeyframeSide, width), min(Self.smallestKeyframeSide, height))
        for k in keyframes where k.width < side.0 || k.height < side.1 {
            // The smallest size of the frame's aspect with both sides that long.
            let scale = max(Double(side.0) / Double(width), Double(side.1) / Double(height))
            let least = (Int((Double(width) * scale).rounded(.up)), Int((Double(height) * scale).rounded(.up)))
            throw MediaError(.invalidOptions, "The keyframe '\(k.file)' is \(k.width)x\(k.height): too small to carry the colour of \(width)x\(height) frames (each side at least \(Self.smallestKeyframeSide) pixels, or the frame's own). Colour the frame at its own size (extract it with `vivify run IN frame.png --max-frames 1`), or at any size of the same aspect from \(least.0)x\(least.1) up.")
        }
        for s in hintSeeds where !s.fromImage && (s.x >= sw || s.y >= sh) {
            throw MediaError(.invalidOptions, "The hint at \(s.x),\(s.y) is outside the \(sw)x\(sh) picture. Give pixel coordinates from 0,0 to \(sw - 1),\(sh - 1) of the first frame as stored, as `vivify run IN frame.png --max-frames 1` writes it (players stand a phone video stored turned upright, which swaps the coordinates).")
        }
        if let (hw, hh) = hintsSize, !sameAspect(hw, hh) {
            throw MediaError(.invalidOptions, "The hints picture '\(spec.hintsImage ?? "")' is \(hw)x\(hh), but the frames are \(width)x\(height). Paint the hints on a picture of the frame's size (or the same aspect), the frame as stored (`vivify run IN frame.png --max-frames 1` writes it; players stand a phone video stored turned upright).")
        }
    }

    /// The keyframes whose frame lies after the last frame seen (the input ended first): an
    /// input read as a stream (a FIFO, a pipe, a network source) cannot be checked before the
    /// work, so the run says afterwards which keyframes it never reached.
    package var keyframesNeverReached: [Keyframe] {
        guard let last = lastSeenSeconds, let lastIndex = lastSeenIndex else { return [] }
        return keyframes.filter {
            // With the frames' times, by the frame the keyframe falls on, as it is applied.
            if let times = frameTimes {
                guard let n = $0.position.frame(in: times, slack: halfFrame) else { return true }
                return n > lastIndex
            }
            switch $0.position {
            case .frame(let n): return n > lastIndex
            case .time(let t): return t >= last + halfFrame - 1e-9
            }
        }.map { Keyframe(position: $0.position, file: $0.file) }
    }

    /// Forgets what earlier frames left (cuts seen, hints applied).
    package func reset() {
        lastCutSeconds = -.infinity
        lastSeenSeconds = nil
        lastSeenIndex = nil
        carriedKeyframes = []
        previousHistogram = []
        hintsDone = false
        hintedFrame = nil
        carryPrepared[.hinted] = nil
        dropAnchors()
        anchorConfidence = nil
        keyframeApplied = false
    }

    /// A new shot (or a reset): no anchors, no previous frame to carry.
    private func dropAnchors() {
        anchors = []
        previousFrame = nil
    }

    private func seconds(_ p: Keyframe.Position) -> Double {
        if let times = frameTimes, let n = p.frame(in: times, slack: halfFrame), n < times.count { return times[n] }
        switch p {
        case .frame(let n): return Double(n) / frameRate
        case .time(let t): return t
        }
    }

    /// Half a frame, seconds: the slack between a time from a frame number and one from a timestamp.
    private var halfFrame: Double { 0.5 / (frameRate > 0 ? frameRate : 30) }

    private func isFrame(_ k: LoadedKeyframe, _ position: FramePosition) -> Bool {
        if let times = frameTimes, let n = k.position.frame(in: times, slack: halfFrame) { return n == position.index }
        switch k.position {
        case .frame(let n): return n == position.index
        case .time(let t): return Keyframe.Position.time(t, covers: position.seconds, frameRate: frameRate)
        }
    }

    /// The colour of one frame: `l` its full-resolution L, `autoAB` the model's a and b at
    /// `aw`×`ah`. Leaves the frame's L on the fine grid in `lFine` (for the stabilizer).
    /// `features` are the frame's encoder features when the colorizer computed them already.
    func colour(position: FramePosition?, l: [Float], width w: Int, height h: Int, autoAB: [Float], _ aw: Int, _ ah: Int,
                features given: EncodedFeatures? = nil, l224 shrunk: [Float]? = nil) throws -> Outcome {
        let s = ReferenceEncoder.inputSide, g = ReferenceEncoder.gridSide, f = ColourReference.fineSide
        lastFeatures = given
        if let shrunk, shrunk.count == s * s { l224 = shrunk } else { Resample.area(l, w, h, into: &l224, s, s) }
        Resample.area(l224, s, s, into: &lFine, f, f)
        Resample.area(l224, s, s, into: &lGrid, g, g)
        // Scene cuts, as the stabilizer finds them (L histograms of consecutive frames).
        let histogram = TemporalStabilizer.histogram(lFine)
        anchorConfidence = nil
        keyframeApplied = false
        carrySources = []
        stabilizedFine = nil
        if let position {
            lastSeenSeconds = max(lastSeenSeconds ?? position.seconds, position.seconds)
            lastSeenIndex = max(lastSeenIndex ?? position.index, position.index)
            if previousHistogram.isEmpty {
                dropAnchors()
                if let known = knownShotStart, known <= position.seconds + halfFrame {
                    // A segment's plan found where this shot began: its keyframes apply.
                    lastCutSeconds = known
                    carriedKeyframes = []
                } else {
                    // The first frame seen starts a shot; keyframes before it apply only if
                    // their content is this frame's (the same test as for keyframes after a frame).
                    lastCutSeconds = position.seconds
                    carriedKeyframes = Set(keyframes.filter {
                        seconds($0.position) < position.seconds && TemporalStabilizer.distance($0.histogram, histogram) <= TemporalStabilizer.defaultCutThreshold
                    }.map { seconds($0.position) })
                }
            } else if TemporalStabilizer.distance(histogram, previousHistogram) > TemporalStabilizer.defaultCutThreshold {
                lastCutSeconds = position.seconds
                carriedKeyframes = []
                dropAnchors()
            }
            previousHistogram = histogram
        }
        var weighted = references.map { ReferenceMatcher.Weighted(reference: $0, logWeight: 0) }
        if let position {
            if let k = keyframes.first(where: { isFrame($0, position) }) {
                keyframeApplied = true
                return .exact(a: k.a, b: k.b, width: k.width, height: k.height)
            }
            // The nearest keyframe before (no cut since it) and after (the same content).
            // `index`: the keyframe's in `keyframes` (-1: the hinted frame).
            var shot = keyframes.enumerated().map { (t: seconds($0.element.position), ref: $0.element.reference, histogram: $0.element.histogram, index: $0.offset) }
            if let hinted = hintedFrame { shot.append((seconds(hinted.position), hinted.reference, hinted.histogram, -1)) }
            // Half a frame's slack: a keyframe by number is at n / rate, the frame at its own
            // timestamp, which rounds differently (a keyframe on a shot's first frame was
            // dropped from the rest of its shot on a third of such frames).
            let before: (t: Double, ref: ColourReference, histogram: [Float], index: Int)?, after: (t: Double, ref: ColourReference, histogram: [Float], index: Int)?
            if let starts = shotStarts {
                // A shot starts in (a, b], each time given half a frame's slack.
                let now = position.seconds
                func cut(_ a: Double, _ b: Double) -> Bool { starts.contains { $0 > a + halfFrame && $0 <= b + halfFrame } }
                before = shot.filter { $0.t <= now + halfFrame && !cut($0.t, now) }.max { $0.t < $1.t }
                after = shot.filter { $0.t > now + halfFrame && !cut(now, $0.t) }.min { $0.t < $1.t }
            } else {
                before = shot.filter { $0.t <= position.seconds + halfFrame && ($0.t >= lastCutSeconds - halfFrame || carriedKeyframes.contains($0.t)) }.max { $0.t < $1.t }
                after = shot.filter { $0.t > position.seconds && TemporalStabilizer.distance($0.histogram, histogram) <= TemporalStabilizer.defaultCutThreshold }
                    .min { $0.t < $1.t }
            }
            switch (before, after) {
            case let (b?, a?):
                let db = position.seconds - b.t, da = a.t - position.seconds
                weighted.append(.init(reference: b.ref, logWeight: Float(log(max(da / (da + db), 1e-3)))))
                weighted.append(.init(reference: a.ref, logWeight: Float(log(max(db / (da + db), 1e-3)))))
                carrySources = [(Self.carrySource(b.index), Float(da / (da + db))), (Self.carrySource(a.index), Float(db / (da + db)))]
            case let (b?, nil):
                weighted.append(.init(reference: b.ref, logWeight: 0))
                carrySources = [(Self.carrySource(b.index), 1)]
            case let (nil, a?):
                weighted.append(.init(reference: a.ref, logWeight: 0))
                carrySources = [(Self.carrySource(a.index), 1)]
            case (nil, nil): break
            }
            keyframeApplied = before != nil || after != nil
            // No keyframe in this shot: its own anchors, the latest weighing most.
            if anchorShots && !keyframeApplied {
                for (i, anchor) in anchors.enumerated() {
                    weighted.append(.init(reference: anchor, logWeight: Float(i - (anchors.count - 1)) * 0.7))
                }
            }
        }
        // References (photographs) carry where the frame shows their own scene, whatever its time.
        carrySources += references.indices.map { (.reference($0), 1) }
        guard !weighted.isEmpty else { return .automatic }
        let features = try given ?? encoder().features(l224: l224)
        lastFeatures = features
        let t = try matcher.transfer(features: features, lGrid: lGrid, lFine: lFine, references: weighted)
        if anchorShots && !keyframeApplied && !anchors.isEmpty {
            anchorConfidence = t.weight.reduce(0, +) / Float(t.weight.count)
        }
        // The model's colour on the fine grid, mixed in where the match is not confident.
        // Mixed in place, channel by channel, in buffers kept from frame to frame.
        var ab = t.ab
        let n = aw * ah, ff = f * f
        if autoFine.count != 2 * ff { autoFine = [Float](repeating: 0, count: 2 * ff) }
        for c in 0..<2 {
            if autoPlane.count != n { autoPlane = [Float](repeating: 0, count: n) }
            for i in 0..<n { autoPlane[i] = autoAB[c * n + i] }
            Resample.bilinear(autoPlane, aw, ah, into: &autoFinePlane, f, f)
            for i in 0..<ff {
                let w = t.weight[i]
                autoFine[c * ff + i] = autoFinePlane[i]
                ab[c * ff + i] = w * t.ab[c * ff + i] + (1 - w) * autoFinePlane[i]
            }
        }
        if let path = Self.dumpPath {
            // Training data for the fusion (training/fusion.py): the fine grid's L, the
            // transferred ab, its weight and the model's ab, float32, in that order.
            let values = lFine + t.ab + t.weight + autoFine
            try values.withUnsafeBufferPointer { Data(buffer: $0) }.write(to: URL(fileURLWithPath: path))
        }
        // The learned fusion corrects the blend where a user's reference or keyframe is
        // matched (shot anchors, the model's own earlier colour, keep the blend).
        if keyframeApplied || !references.isEmpty, let fusion = try fusion() {
            try fusion.correct(&ab, l: lFine, transferred: t.ab, weight: t.weight, automatic: autoFine)
        }
        // A shot anchored to its own colour: the previous frame's too, where its content went.
        if anchorShots && !keyframeApplied, let previousFrame {
            previousFrame.apply(lFine: lFine, ab: &ab, threads: settings.threads)
        }
        let detail = DetailTransfer.enabled ? DetailTransfer(match: t.match, weight: t.weight, details: weighted.map(\.reference.detail), threads: settings.threads) : nil
        return .fine(ab: ab, detail: detail)
    }

    private var lastFeatures: EncodedFeatures?

    /// After the guide's colour is at full resolution (`a`, `b` at the frame's L `l`): the
    /// keyframes of the frame's shot give their own colour where the frame shows their content
    /// (`KeyframeCarry`).
    func carry(l: [Float], a: inout [Float], b: inout [Float], width w: Int, height h: Int) {
        guard KeyframeCarry.enabled, !carrySources.isEmpty else { return }
        let sources = carrySources.compactMap { source, weight -> KeyframeCarry.Source? in
            let gated: Bool
            if case .reference = source { gated = true } else { gated = false }
            if let p = carryPrepared[source], p.width == w, p.height == h { return .init(keyframe: p, weight: weight, gated: gated) }
            let planes: (l: [Float], a: [Float], b: [Float], w: Int, h: Int)
            switch source {
            case .keyframe(let i):
                let k = keyframes[i]
                planes = (k.l, k.a, k.b, k.width, k.height)
            case .hinted:
                guard let k = hintedFrame, k.l.count == k.width * k.height else { return nil }
                planes = (k.l, k.a, k.b, k.width, k.height)
            case .reference(let i):
                planes = referencePlanes[i]
                // A photograph of another shape is matched by meaning only.
                guard KeyframeCarry.sameAspect(planes.w, planes.h, w, h) else { return nil }
            }
            let p = KeyframeCarry.Prepared(l: planes.l, a: planes.a, b: planes.b, width: planes.w, height: planes.h, frameWidth: w, frameHeight: h)
            carryPrepared[source] = p
            return .init(keyframe: p, weight: weight, gated: gated)
        }
        guard !sources.isEmpty else { return }
        let frame = KeyframeCarry.pyramid(l: l, width: w, height: h)
        KeyframeCarry.apply(sources, frame: frame, l: l, a: &a, b: &b, width: w, height: h, threads: settings.threads)
    }

    /// A keyframe's carry source by its index in the shot list (-1: the hinted frame).
    private static func carrySource(_ index: Int) -> CarrySource { index < 0 ? .hinted : .keyframe(index) }

    /// Where each guided frame's fine-grid inputs are written (`VIVIFY_DUMP_GUIDE`, for
    /// training the fusion only; the last frame's overwrite the earlier ones').
    private static let dumpPath = ProcessInfo.processInfo.environment["VIVIFY_DUMP_GUIDE"]

    /// The learned fusion, prepared when first needed; nil when this binary has none or
    /// `VIVIFY_NO_FUSION=1` (for measuring what it adds).
    private func fusion() throws -> GuideFusion? {
        guard GuideFusion.isEmbedded, !Self.fusionOff else { return nil }
        if let f = loadedFusion { return f }
        let f = try GuideFusion(backend: backend, precision: settings.precision, threads: settings.threads)
        loadedFusion = f
        return f
    }

    private var loadedFusion: GuideFusion?
    private static let fusionOff = ProcessInfo.processInfo.environment["VIVIFY_NO_FUSION"] == "1"

    private func encoder() throws -> ReferenceEncoder {
        if let e = loadedEncoder { return e }
        let e = try ReferenceEncoder(backend: backend, precision: settings.precision, threads: settings.threads)
        loadedEncoder = e
        return e
    }

    /// After the frame's colour is final: the first frame gets the hints, and becomes a
    /// keyframe of its shot (so the hints' colour follows the objects through the shot); with
    /// `anchorShots`, a shot's first frame and frames that have moved on from its anchors
    /// become anchors.
    func finish(position: FramePosition?, l: [Float], a: inout [Float], b: inout [Float], width w: Int, height h: Int) throws {
        try hint(position: position, l: l, a: &a, b: &b, width: w, height: h)
        guard anchorShots, position != nil, !keyframeApplied, hintedFrame == nil else { return }
        let f = ColourReference.fineSide
        let refresh = anchors.isEmpty || (anchorConfidence ?? 0) < anchorRefresh
        // The frame's final colour on the fine grid: as the stabilizer left it where there is
        // one (what the output was fitted from), else from the output.
        var abFine = stabilizedFine ?? []
        if refresh || abFine.count != 2 * f * f {
            var af = [Float](repeating: 0, count: f * f), bf = af
            Resample.area(a, w, h, into: &af, f, f)
            Resample.area(b, w, h, into: &bf, f, f)
            abFine = af + bf
        }
        if PreviousFrameCarry.enabled { previousFrame = PreviousFrameCarry(lFine: lFine, ab: abFine) }
        if refresh {
            let features = try lastFeatures ?? encoder().features(l224: l224)
            anchors.append(ColourReference(name: "anchor", features: features, lGrid: lGrid, lFine: lFine, abFine: abFine))
            if anchors.count > anchorLimit { anchors.removeFirst() }
        }
    }

    /// The first frame gets the hints, and becomes a keyframe of its shot.
    private func hint(position: FramePosition?, l: [Float], a: inout [Float], b: inout [Float], width w: Int, height h: Int) throws {
        guard !hintSeeds.isEmpty, !hintsDone else { return }
        hintsDone = true
        // The hints belong to the video's first frame, which a segment's window may not hold.
        if position != nil && startsMidVideo { return }
        let scale: (Double, Double) = hintsSize.map { (Double(w) / Double($0.w), Double(h) / Double($0.h)) } ?? (1, 1)
        let seeds = hintSeeds.map { s -> HintSpreader.Seed in
            var s = s
            if s.fromImage {
                s.x = min(Int(Double(s.x) * scale.0), w - 1); s.y = min(Int(Double(s.y) * scale.1), h - 1)
            } else {
                // A pixel of the source: the centre of where it went (an upscaler before).
                s.x = min(Int((Double(s.x) + 0.5) * hintScale.0), w - 1); s.y = min(Int((Double(s.y) + 0.5) * hintScale.1), h - 1)
            }
            return s
        }
        HintSpreader().apply(seeds, l: l, a: &a, b: &b, width: w, height: h)
        guard let position else { return }
        // The hinted frame as a keyframe for the rest of its shot.
        let f = ColourReference.fineSide
        var af = [Float](repeating: 0, count: f * f), bf = af
        Resample.area(a, w, h, into: &af, f, f)
        Resample.area(b, w, h, into: &bf, f, f)
        let features = try lastFeatures ?? encoder().features(l224: l224)
        let r = ColourReference(name: "hints", features: features, lGrid: lGrid, lFine: lFine, abFine: af + bf)
        // Its full-resolution colour too, carried to the frames of its shot (`carry`).
        carryPrepared[.hinted] = nil
        hintedFrame = LoadedKeyframe(position: .time(position.seconds), file: "hints", reference: r, width: w, height: h, a: a, b: b, l: l,
                                     histogram: TemporalStabilizer.histogram(lFine))
    }
}
