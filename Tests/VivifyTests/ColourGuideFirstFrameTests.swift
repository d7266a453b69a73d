import ColorScience
@testable import Models
@testable import Vivify
import Foundation
import XCTest

/// A keyframe before the first frame the guide sees (live mode dropped frame 0 on a loaded
/// machine; a segment starts mid-video) still colours that frame's shot when the frame holds
/// the keyframe's content, and does not when it shows something else.
final class ColourGuideFirstFrameTests: XCTestCase {
    /// A w×h picture: a horizontal gradient of lightness with a coloured square; `shift` moves
    /// the content (a later frame of the same shot), `other` makes a different scene.
    static func picture(_ w: Int, _ h: Int, shift: Int = 0, other: Bool = false) -> (l: [Float], a: [Float], b: [Float]) {
        var l = [Float](repeating: 0, count: w * h), a = l, b = l
        for y in 0..<h {
            for x in 0..<w {
                let i = y * w + x
                l[i] = other ? 85 + 10 * Float(y) / Float(h) : 20 + 60 * Float((x + shift) % w) / Float(w)
                let inSquare = (x + shift) % w > w / 4 && (x + shift) % w < w / 2 && y > h / 4 && y < h / 2
                a[i] = inSquare ? 60 : -10
                b[i] = inSquare ? 40 : 20
            }
        }
        return (l, a, b)
    }

    func outcome(first: (l: [Float], a: [Float], b: [Float]), keyframe: String, w: Int, h: Int) throws -> ColourGuide.Outcome {
        let guide = try ColourGuide(spec: ColourGuideSpec(keyframes: [Keyframe(position: .frame(0), file: keyframe)]))
        try guide.configure(width: w, height: h, frameRate: 24)
        let auto = [Float](repeating: 0, count: 2 * 56 * 56)
        // Frame 0 never reaches the guide: its first frame is frame 3.
        return try guide.colour(position: FramePosition(index: 3, seconds: 3.0 / 24), l: first.l, width: w, height: h, autoAB: auto, 56, 56)
    }

    func testKeyframeBeforeTheFirstFrameSeen() throws {
        let (w, h) = (96, 64)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("guide-first-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let key = Self.picture(w, h)
        let path = dir.appendingPathComponent("key.png").path
        let raw = dir.appendingPathComponent("key.rgb")
        try Data(LabConverter().rgb(l: key.l, a: key.a, b: key.b, width: w, height: h)).write(to: raw)
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", "\(w)x\(h)", "-i", raw.path, path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        XCTAssertEqual(ffmpeg.terminationStatus, 0)
        switch try outcome(first: Self.picture(w, h, shift: 2), keyframe: path, w: w, h: h) {
        case .fine: break
        case .automatic, .exact: XCTFail("the same shot, frame 0 not seen: the keyframe should apply; the model's colour was kept")
        }
        switch try outcome(first: Self.picture(w, h, other: true), keyframe: path, w: w, h: h) {
        case .automatic: break
        case .fine, .exact: XCTFail("another scene (a bright picture): the keyframe should not apply, but it did")
        }
    }
}
