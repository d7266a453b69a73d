import Foundation

/// What to do when the output already exists (ffmpeg's `-y` and `-n`).
public enum ExistingOutput: String, Codable, Sendable, CaseIterable {
    /// Refuse, naming the flags (the default: an existing file is never replaced unasked).
    case refuse
    /// Replace it once the new one is complete (`-y`, `--overwrite`).
    case replace
    /// Do nothing and succeed (`-n`, `--no-overwrite`): for scripts over many files.
    case skip
}

/// Why an output may not be written, found before any work starts.
public struct OutputProblem: Error, Sendable, CustomStringConvertible {
    /// What is wrong.
    public enum Kind: String, Sendable, CaseIterable {
        /// The output's folder does not exist.
        case missingFolder
        /// The output's folder cannot be written.
        case readOnlyFolder
        /// The output exists and is a device, FIFO, directory or socket: renaming onto it
        /// would replace it.
        case notRegularFile
        /// The output is one of the inputs (the same file on disk, through any link).
        case sameAsInput
        /// The output exists and neither `-y` nor `-n` was given.
        case exists
        /// The output is a symbolic link to nothing (its target is missing, or links loop):
        /// the finished file could not be moved into place.
        case brokenLink
    }

    /// What is wrong.
    public let kind: Kind
    /// One sentence naming the output and what to do.
    public let message: String

    public var description: String { message }
}

/// The checks every command makes on its output before it reads a frame: nothing that is
/// not a regular file is ever replaced, an input is never overwritten (compared by device and
/// inode, so links and `..` cannot hide it), and an existing output is replaced only on request.
public enum OutputGuard {
    /// Whether `a` and `b` are one file on disk (device and inode: links and `..` cannot hide
    /// it); false when either cannot be read.
    public static func isSameFile(_ a: String, _ b: String) -> Bool {
        var x = stat(), y = stat()
        return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino
    }

    /// Where to write, or nothing to do.
    public enum Decision: Sendable, Equatable {
        /// Write the output at this path (symbolic links resolved: the file they name is
        /// replaced, not the link).
        case write(URL)
        /// The output exists and `existing` is `.skip`.
        case skip
    }

    /// Checks `output` against `inputs` ("-" entries are ignored), the other files the run
    /// reads (`reads`: model files, references, keyframes, a hints picture) and the
    /// existing-file rule.
    public static func check(output: String, inputs: [String], reads: [String] = [], existing: ExistingOutput) throws(OutputProblem) -> Decision {
        let url = URL(fileURLWithPath: output)
        // A link that names nothing: the finished output would be refused at the end (the
        // link is there, its target is not), after all the work.
        var link = stat(), named = stat()
        if lstat(output, &link) == 0, (link.st_mode & S_IFMT) == S_IFLNK, stat(output, &named) != 0 {
            let why = errno == ELOOP ? "a loop of symbolic links" : "a symbolic link to '\((try? FileManager.default.destinationOfSymbolicLink(atPath: output)) ?? "?")', which does not exist"
            throw OutputProblem(kind: .brokenLink, message: "Cannot write '\(output)': it is \(why). Vivify replaces the file a link names, never the link itself. Remove the link, or give a path to a file (or to an existing file the link names).")
        }
        let target = url.resolvingSymlinksInPath()
        let folder = target.deletingLastPathComponent().path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw OutputProblem(kind: .missingFolder, message: "Cannot write '\(output)': the directory '\(folder)' does not exist. Create it first or choose another output path.")
        }
        guard access(folder, W_OK) == 0 else {
            throw OutputProblem(kind: .readOnlyFolder, message: "Cannot write '\(output)': the directory '\(folder)' is not writable. Choose a writable location.")
        }
        var info = stat()
        guard stat(target.path, &info) == 0 else { return .write(target) }  // nothing there yet
        let type = info.st_mode & S_IFMT
        if type != S_IFREG {
            let what = type == S_IFCHR ? "a character device" : type == S_IFBLK ? "a block device" : type == S_IFIFO ? "a named pipe (FIFO)"
                : type == S_IFDIR ? "a directory" : type == S_IFSOCK ? "a socket" : "not a regular file"
            throw OutputProblem(kind: .notRegularFile, message: "Cannot write '\(output)': it is \(what), which vivify never replaces (outputs are written beside the target and renamed onto it). Give a regular file path, or '-' for standard output.")
        }
        // The input, or another file the run reads, by device and inode (links and `..`
        // cannot hide it).
        for (file, isInput) in inputs.map({ ($0, true) }) + reads.map({ ($0, false) }) where file != "-" {
            guard isSameFile(file, target.path) else { continue }
            throw OutputProblem(kind: .sameAsInput, message: isInput
                ? "The output '\(output)' is the input file '\(file)' (the same file on disk). Choose a different output path."
                : "The output '\(output)' is '\(file)', which this run reads (a model, reference, keyframe or hints file; the same file on disk). Choose a different output path.")
        }
        switch existing {
        case .replace: return .write(target)
        case .skip: return .skip
        case .refuse:
            throw OutputProblem(kind: .exists, message: "'\(output)' already exists. Pass -y (--overwrite) to replace it once the new one is complete, or -n (--no-overwrite) to leave existing outputs alone.")
        }
    }
}
