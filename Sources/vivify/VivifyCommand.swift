import ArgumentParser
import Compute
import Engine
import Foundation
import MediaIO
import SafeFiles
import ModelCatalog
import Vivify

@main
struct VivifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vivify",
        abstract: "Colorize and upscale video and frame streams with neural networks.",
        discussion: "Exit codes: 0 success, 64 bad options, 65 damaged input, 66 input missing or unreadable, 69 unsupported input, model or encoder, 70 internal error, 73 output not writable (or it exists: pass -y or -n), 74 a model could not be fetched, 75 segments not finished (join), 130 interrupted (output kept, playable).",
        version: "vivify \(VivifyVersion.number) (FFmpeg \(FFmpegLog.version), oneDNN \(EngineBench.oneDNNVersion))",
        subcommands: [Run.self, PlanCommand.self, WorkCommand.self, JoinCommand.self, StatusCommand.self, ImageCommand.self, ProbeCommand.self, ModelsCommand.self, BenchCommand.self, BenchModelCommand.self, FlickerCommand.self, InferCommand.self],
        defaultSubcommand: nil
    )

    static func main() {
        // Every command: a signal exits 130 with no temporary file left, unless the command
        // stops cooperatively (run, work).
        ProcessSignals.install()
        main(OptionalModelValues.rewrite(Array(CommandLine.arguments.dropFirst())))
    }
}

/// Prints an error from any layer of the library and returns the exit code for it.
func report(_ error: Error) -> ExitCode {
    ProgressReporter.writeStderr("vivify: error: \(ErrorReport.message(for: error))\n")
    return ExitCode(ErrorReport.exitCode(for: error).rawValue)
}
