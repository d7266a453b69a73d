import Foundation
internal import MediaIO

// What the user says about colour beside the model: reference photos, keyframes, hints
// (issue 28). Parsed from the command line, recorded in segment manifests (files by SHA-256),
// and turned into a `ColourGuide` when the colorizer is loaded.

/// A colour version of one frame of a video: where it belongs and the picture.
public struct Keyframe: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Where in the video the keyframe belongs.
    public enum Position: Sendable, Equatable, Codable {
        /// A 0-based frame number.
        case frame(Int)
        /// A time in seconds from the video's first frame (not the file's own timestamps,
        /// which start at 1.4 s and later in MPEG-TS).
        case time(Double)

        /// Whether a keyframe at time `t` belongs to the frame presented at `seconds`, the
        /// frames `frameRate` a second: the one frame whose time lies in [t − ½ frame,
        /// t + ½ frame), so a time halfway between two frames (12.5 s at 25 fps) takes the
        /// later one (a symmetric test took neither), allowing for rounding in the times.
        package static func time(_ t: Double, covers seconds: Double, frameRate: Double) -> Bool {
            let half = 0.5 / (frameRate > 0 ? frameRate : 30), slack = 1e-9
            return seconds >= t - half + slack && seconds < t + half + slack
        }

        /// The frame a keyframe at this position belongs to, of frames presented at
        /// `frameSeconds` (each frame's time from the first, in order, from a scan of the
        /// file): a number as it is; a time, the nearest frame (of two equally near, the
        /// later), so a time in the gap of a variable-rate file takes the frame beside it.
        /// Nil for a time past the last frame by more than `slack` (half a frame), or with no frames.
        package func frame(in frameSeconds: [Double], slack: Double) -> Int? {
            switch self {
            case .frame(let n): return n
            case .time(let t):
                // The last frame takes the times up to half a frame past it, that half frame's
                // end excluded (as a tie between two frames goes to the later one, here none).
                guard let last = frameSeconds.last, t < last + slack - 1e-9 else { return nil }
                // The first frame at or after t, then the nearer of it and the one before.
                var lo = 0, hi = frameSeconds.count
                while lo < hi {
                    let mid = (lo + hi) / 2
                    if frameSeconds[mid] < t - 1e-9 { lo = mid + 1 } else { hi = mid }
                }
                if lo == frameSeconds.count { return frameSeconds.count - 1 }
                if lo > 0 && t - frameSeconds[lo - 1] < frameSeconds[lo] - t - 1e-9 { return lo - 1 }
                return lo
            }
        }

        /// As written on the command line: `12` or `12.5s`.
        public var text: String {
            switch self {
            case .frame(let n): return "\(n)"
            case .time(let t): return "\(t)s"
            }
        }
    }

    /// Where it belongs.
    public var position: Position
    /// The colour picture (PNG or JPEG).
    public var file: String

    /// Makes a keyframe.
    public init(position: Position, file: String) {
        self.position = position
        self.file = file
    }

    /// Parses `N=FILE` (a 0-based frame number) or `12.5s=FILE` (seconds); nil when malformed.
    public init?(parsing text: String) {
        guard let eq = text.firstIndex(of: "=") else { return nil }
        let at = text[..<eq].trimmingCharacters(in: .whitespaces).lowercased(), file = String(text[text.index(after: eq)...])
        guard !file.isEmpty else { return nil }
        if at.hasSuffix("s"), let t = Double(at.dropLast()), t.isFinite, t >= 0 {
            self.init(position: .time(t), file: file)
        } else if let n = Int(at), n >= 0 {
            self.init(position: .frame(n), file: file)
        } else {
            return nil
        }
    }

    public var description: String { "\(position.text)=\(file)" }

    /// Why a `--keyframe` argument is refused.
    public static func parseError(_ text: String) -> String {
        "'--keyframe \(text)' is not a keyframe. Write it as N=FILE with a 0-based frame number (--keyframe 0=first.png) or as a time in seconds, --keyframe 12.5s=shot.png."
    }
}

/// A colour the user puts on one pixel of the first frame or picture.
public struct ColourHint: Sendable, Equatable, Codable, CustomStringConvertible {
    /// Column and row in pixels of the colorizer's input.
    public var x: Int, y: Int
    /// The colour, 8-bit sRGB.
    public var red: UInt8, green: UInt8, blue: UInt8

    /// Makes a hint.
    public init(x: Int, y: Int, red: UInt8, green: UInt8, blue: UInt8) {
        self.x = x
        self.y = y
        self.red = red
        self.green = green
        self.blue = blue
    }

    /// Parses `X,Y=#RRGGBB` (the `#` optional); nil when malformed.
    public init?(parsing text: String) {
        guard let eq = text.firstIndex(of: "=") else { return nil }
        let xy = text[..<eq].split(separator: ",")
        var hex = String(text[text.index(after: eq)...]).trimmingCharacters(in: .whitespaces)
        if hex.hasPrefix("#") { hex.removeFirst() }
        guard xy.count == 2, let x = Int(xy[0].trimmingCharacters(in: .whitespaces)), let y = Int(xy[1].trimmingCharacters(in: .whitespaces)),
              x >= 0, y >= 0, hex.count == 6, let v = UInt32(hex, radix: 16) else { return nil }
        self.init(x: x, y: y, red: UInt8(v >> 16 & 255), green: UInt8(v >> 8 & 255), blue: UInt8(v & 255))
    }

    public var description: String { String(format: "%d,%d=#%02X%02X%02X", x, y, red, green, blue) }

    /// Why a `--hint` argument is refused.
    public static func parseError(_ text: String) -> String {
        "'--hint \(text)' is not a colour hint. Write it as X,Y=#RRGGBB with pixel coordinates of the first frame, e.g. --hint 120,45=#C0392B."
    }
}

/// Everything that guides the colorizer beyond its own prediction.
public struct ColourGuideSpec: Sendable, Equatable, Codable {
    /// Colour photographs whose colours the output takes where its content corresponds.
    public var references: [String]
    /// Colour versions of single frames (video).
    public var keyframes: [Keyframe]
    /// Colours on single pixels of the first frame or picture.
    public var hints: [ColourHint]
    /// An RGBA picture whose opaque pixels are hints.
    public var hintsImage: String?

    /// No guidance.
    public init(references: [String] = [], keyframes: [Keyframe] = [], hints: [ColourHint] = [], hintsImage: String? = nil) {
        self.references = references
        self.keyframes = keyframes
        self.hints = hints
        self.hintsImage = hintsImage
    }

    /// Whether anything of it belongs to a place in a video and carries through its shot
    /// (keyframes, and the hinted first frame): a segment starting mid-shot must know where
    /// its shot began.
    package var carriesThroughShots: Bool { !keyframes.isEmpty || hasHints }

    /// Whether hints are given (on the command line or as a picture).
    package var hasHints: Bool { !hints.isEmpty || hintsImage != nil }

    /// Whether nothing guides the colorizer.
    public var isEmpty: Bool { references.isEmpty && keyframes.isEmpty && hints.isEmpty && hintsImage == nil }

    /// Every file it reads (references, keyframes, the hints picture).
    public var files: [String] { references + keyframes.map(\.file) + (hintsImage.map { [$0] } ?? []) }

    /// One line per item for reports (`--stats`).
    package var summary: [String] {
        references.map { "reference \($0)" } + keyframes.map { "keyframe \($0)" } + hints.map { "hint \($0)" }
            + (hintsImage.map { ["hints \($0)"] } ?? [])
    }

    /// Checks what can be checked without the video: one keyframe per frame (64), the files
    /// exist and are readable (`inputUnreadable`, exit 66, naming the file and the option).
    package func checkFiles() throws {
        // Two colours for one frame: which one was meant cannot be told (the last one won).
        for (i, k) in keyframes.enumerated() {
            if let earlier = keyframes[..<i].first(where: { $0.position == k.position }) {
                throw MediaError(.invalidOptions, "'--keyframe \(earlier)' and '--keyframe \(k)' are both for one frame. Give one keyframe per frame.")
            }
        }
        // Two colours for one pixel: the same question.
        for (i, h) in hints.enumerated() {
            if let earlier = hints[..<i].first(where: { $0.x == h.x && $0.y == h.y }), earlier != h {
                throw MediaError(.invalidOptions, "'--hint \(earlier)' and '--hint \(h)' colour one pixel. Give one colour per pixel.")
            }
        }
        for (option, file) in references.map({ ("--reference", $0) }) + keyframes.map({ ("--keyframe", $0.file) })
            + (hintsImage.map { [("--hints", $0)] } ?? []) {
            guard FileManager.default.isReadableFile(atPath: file) else {
                throw MediaError(.inputUnreadable, "Cannot read '\(file)' given to \(option): no such file or no permission. " + (option == "--hints"
                    ? "Give the path of an RGBA PNG whose opaque pixels are the hints." : "Give the path of a colour PNG or JPEG."))
            }
            // A folder (`--reference .`) or a device: named with the option it was given to.
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), isFolder.boolValue {
                throw MediaError(.inputUnreadable, "'\(file)' given to \(option) is a folder, not a picture. " + (option == "--hints"
                    ? "Give the path of an RGBA PNG whose opaque pixels are the hints." : "Give the path of a colour PNG or JPEG (one \(option) per picture)."))
            }
        }
    }

    /// The last keyframe's frame and time (seconds from the first frame): of frames at
    /// `frameSeconds` when a scan gave them (a variable rate is then followed), else at
    /// `frameRate` (a stream, a y4m). Frame 0 when there is none (the hints' first frame).
    package func lastKeyframe(frameSeconds: [Double]?, frameRate: Double) -> (frame: Int, seconds: Double) {
        let slack = 0.5 / (frameRate > 0 ? frameRate : 30)
        var frame = 0, seconds = 0.0
        for k in keyframes {
            if let times = frameSeconds, let n = k.position.frame(in: times, slack: slack) {
                frame = max(frame, n)
                seconds = max(seconds, n < times.count ? times[n] : Double(n) / max(frameRate, 1e-9))
                continue
            }
            switch k.position {
            case .frame(let n):
                frame = max(frame, n)
                if frameRate > 0 { seconds = max(seconds, Double(n) / frameRate) }
            case .time(let t): seconds = max(seconds, t)
            }
        }
        return (frame, seconds)
    }

    /// Whether checking the keyframes needs each frame's time (`checkKeyframes`): one given
    /// by time, which must fall on a frame and on no other keyframe's.
    package var needsFrameTimes: Bool {
        keyframes.contains { if case .time = $0.position { return true } else { return false } }
    }

    /// Checks frame-number keyframes against the number of frames the input has (when known),
    /// and that no two keyframes fall on one frame. `frameSeconds`, the presentation time of
    /// each frame in order counted from the first frame, maps a time to the frame the guide gives it (the first within half
    /// a frame, as `ColourGuide` applies it); without it only two times within half a frame of
    /// each other are known to share one.
    package func checkKeyframes(frameCount known: Int?, duration: Double?, frameRate: Double, input: String, frameSeconds: [Double]? = nil) throws {
        // Containers that store no frame count (Matroska): the count the duration and rate give.
        // With each frame's time, their count (a variable rate makes duration × rate wrong).
        var frameCount = frameSeconds.map(\.count) ?? known
        if frameCount == nil, let duration, duration > 0, frameRate > 0 { frameCount = Int((duration * frameRate).rounded()) }
        for k in keyframes {
            switch k.position {
            case .frame(let n):
                if let frameCount, frameCount > 0, n >= frameCount {
                    throw MediaError(.invalidOptions, "'--keyframe \(k)': '\(input)' has \(frameCount) frames (0 to \(frameCount - 1)), so frame \(n) is past the end. Give the number of a frame in the video.")
                }
            case .time(let t):
                // With each frame's time the check below says more (a file whose timestamps
                // start late has frames past its duration).
                if frameSeconds == nil, let duration, duration > 0, t > duration {
                    throw MediaError(.invalidOptions, "'--keyframe \(k)': '\(input)' lasts \(String(format: "%.2f", duration)) s, so \(t) s is past the end. Give a time within the video.")
                }
            }
        }
        // A frame number and a time, or two times, for one frame: as `checkFiles` refuses two
        // numbers for one frame (the colour that applied was the first given, silently).
        guard frameRate > 0 else { return }
        let half = 0.5 / frameRate
        let frames = keyframes.map { k -> Int? in
            switch k.position {
            case .frame(let n): return n
            // The nearest frame (a variable-rate file's gaps included), as `ColourGuide` applies it.
            case .time: return frameSeconds.flatMap { k.position.frame(in: $0, slack: half) }
            }
        }
        // Only a time past the last frame falls on none.
        if let frameSeconds, let first = frameSeconds.first, let last = frameSeconds.last {
            for (k, frame) in zip(keyframes, frames) where frame == nil {
                if case .time(let t) = k.position {
                    let length = duration.flatMap { $0 > 0 ? $0 : nil } ?? (last - first + 2 * half)
                    throw MediaError(.invalidOptions, "'--keyframe \(k)': \(t) s is past the end of '\(input)': its last frame is shown at \(String(format: "%.3f", last)) s (it lasts \(String(format: "%.2f", length)) s), and a keyframe time names the frame shown nearest it, so it must be below \(String(format: "%.3f", last + half)) s here. Give a time up to that, or the frame's number (--keyframe N=FILE).")
                }
            }
        }
        for (i, k) in keyframes.enumerated() {
            for j in 0..<i {
                let same: Bool
                if let a = frames[i], let b = frames[j] {
                    same = a == b
                } else if case .time(let t) = k.position, case .time(let u) = keyframes[j].position {
                    same = abs(t - u) < half
                } else {
                    same = false
                }
                if same {
                    let which = frames[i].map { "frame \($0)" } ?? "one frame"
                    throw MediaError(.invalidOptions, "'--keyframe \(keyframes[j])' and '--keyframe \(k)' are both for \(which) of '\(input)' (at \(String(format: "%g", frameRate)) frames a second). Give one keyframe per frame.")
                }
            }
        }
    }
}
