import ArgumentParser
import Foundation
import Vivify

struct ProbeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "probe",
        abstract: "Show INPUT's streams, codec, size, rate, frame count, duration and colour tags, or (--devices) the Vulkan devices.")

    @Argument(help: "Input video file, or '-' for standard input (y4m by default).")
    var input: String?

    @Flag(help: "List the Vulkan devices (index, name, type, driver, Vulkan version) and which one --backend vulkan and --backend auto run on, instead of probing an input.")
    var devices = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "Count frames by reading the whole file when the container does not store the count.")
    var countFrames = false

    @OptionGroup var inputOptions: InputFormatOptions

    func validate() throws {
        if devices && input != nil {
            throw ValidationError("--devices lists the Vulkan devices and probes no input. Leave out '\(input!)', or --devices.")
        }
        if !devices && input == nil {
            throw ValidationError("Missing expected argument '<input>'. Name a video file (or '-'), or pass --devices to list the Vulkan devices.")
        }
    }

    func run() throws {
        if devices {
            let report = DeviceReport.current()
            print(json ? report.json : report.text, terminator: "")
            // A VIVIFY_VULKAN_DEVICE that names no device: listed above, then the error (64).
            if let error = report.settingError { throw error }
            return
        }
        guard let input else { return }
        MediaLog.configure(verbose: false)
        var settings = InputSettings(path: input)
        inputOptions.apply(to: &settings)
        let info = try Probe.describe(settings, countFrames: countFrames)
        print(json ? Probe.json(info, name: input) : Probe.text(info, name: input), terminator: "")
    }
}
