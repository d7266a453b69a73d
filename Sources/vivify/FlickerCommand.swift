import ArgumentParser
import Foundation
import Vivify

struct FlickerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flicker",
        abstract: "Measure colour flicker and drift in a video.",
        discussion: "Flicker: mean |Δa|+|Δb| / 2 between consecutive frames where L* is static (|ΔL*| < 1). Drift: regions followed through each shot by block matching on L*, the mean distance (ab units) of a region's colour from its own colour where its track began. Read both against the same figures of the colour original.")

    @Argument(help: "Video file.")
    var input: String

    @Option(help: "The colour original of a clip colorized from its grey: its drift over the same regions is measured too, and the drift of the difference.")
    var truth: String?

    func run() throws {
        MediaLog.configure(verbose: false)
        let r = try Flicker.measure(path: input, truth: truth)
        print(String(format: "flicker %.4f (ab units, %d frames, %d static pixel pairs); drift %.4f (ab units, %d regions followed)",
                     r.value, r.frames, r.samples, r.drift, r.tracks))
        if let t = r.truthDrift, let d = r.differenceDrift {
            print(String(format: "truth drift %.4f over the same regions; drift of the difference %.4f", t, d))
        }
    }
}
