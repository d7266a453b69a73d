import ArgumentParser
import Foundation
import Vivify

@main
struct VivifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vivify",
        abstract: "Colorize and upscale video and frame streams with neural networks.",
        discussion: VivifyExitCode.helpText,
        version: VivifyVersion.text,
        subcommands: [Run.self, PlanCommand.self, WorkCommand.self, JoinCommand.self, StatusCommand.self, ImageCommand.self, ProbeCommand.self, ModelsCommand.self, BenchCommand.self, BenchModelCommand.self, FlickerCommand.self, InferCommand.self],
        defaultSubcommand: nil
    )

    static func main() {
        // Every command: a signal exits 130 with no temporary file left, unless the command
        // stops cooperatively (run, work).
        ProcessSignals.install()
        // ArgumentParser's `main(_:)`, with one addition: whatever a command's `run` throws is
        // reported here, the one place errors become a sentence and an exit code.
        do {
            var command = try parseAsRoot(OptionalModelValues.rewrite(Array(CommandLine.arguments.dropFirst())))
            do {
                try command.run()
            } catch {
                // ArgumentParser's own commands (`help`) end as ArgumentParser has them end.
                exit(withError: isOurs(command) ? reported(error) : error)
            }
        } catch {
            // An option other tools spell so (`--live`, `-o`): say what vivify calls it.
            if let message = ArgumentSlips.message(for: fullMessage(for: error)) {
                ProgressReporter.writeStderr(message + (message.hasSuffix("\n") ? "" : "\n"))
                Foundation.exit(exitCode(for: error).rawValue)
            }
            exit(withError: error)
        }
    }

    /// Whether `command` is one of vivify's (the tree under `VivifyCommand`), not one that
    /// ArgumentParser adds.
    static func isOurs(_ command: ParsableCommand) -> Bool {
        func tree(_ type: ParsableCommand.Type) -> [ParsableCommand.Type] {
            [type] + type.configuration.subcommands.flatMap(tree)
        }
        return tree(VivifyCommand.self).contains { ObjectIdentifier($0) == ObjectIdentifier(Swift.type(of: command)) }
    }

    /// `error` as the process ends with it: ArgumentParser's own (a clean exit, a validation
    /// error with its usage text) as they are; a failure the command already told
    /// (`ReportedFailure`) as its code alone; any other, from any layer of the library, printed
    /// as one sentence (`vivify: error: …`) and exited with its documented code (`ErrorReport`).
    static func reported(_ error: Error) -> Error {
        switch error {
        case is ExitCode, is CleanExit, is ValidationError:
            return error
        case let failure as ReportedFailure:
            return ExitCode(failure.code.rawValue)
        default:
            ProgressReporter.writeStderr("vivify: error: \(ErrorReport.message(for: error))\n")
            return ExitCode(ErrorReport.exitCode(for: error).rawValue)
        }
    }
}
