import ArgumentParser
import Compute
import Engine
import Foundation
import MediaIO
import SafeFiles
import ModelCatalog
import Vivify

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show INPUT's streams, codec, size, rate, frame count, duration and colour tags.")

    @Argument(help: "Input video file, or '-' for standard input (y4m by default).")
    var input: String

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "Count frames by reading the whole file when the container does not store the count.")
    var countFrames = false

    @OptionGroup var inputOptions: InputFormatOptions

    func run() throws {
        FFmpegLog.configure(verbose: false)
        var c = RunConfiguration(input: input, output: "-")
        inputOptions.apply(to: &c)
        let info = try Probe.describe(c, countFrames: countFrames)
        print(json ? Probe.json(info, name: input) : Probe.text(info, name: input), terminator: "")
    }
}
