import ArgumentParser
import Compute
import Engine
import Foundation
import MediaIO
import SafeFiles
import ModelCatalog
import Vivify

struct FlickerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "flicker",
        abstract: "Measure colour flicker in a video: mean |Δa|+|Δb| / 2 between consecutive frames where L* is static (|ΔL*| < 1).")

    @Argument(help: "Video file.")
    var input: String

    func run() throws {
        FFmpegLog.configure(verbose: false)
        do {
            let r = try Flicker.measure(path: input)
            print(String(format: "flicker %.4f (ab units, %d frames, %d static pixel pairs)", r.value, r.frames, r.samples))
        } catch {
            throw report(error)
        }
    }
}
