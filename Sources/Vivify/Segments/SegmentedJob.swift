#if canImport(Glibc)
import Glibc
#endif
import Foundation
internal import ModelCatalog
internal import ModelFormats
internal import MediaIO
internal import SafeFiles
import Models

/// A file job cut into segments that are processed and encoded one by one (or by many
/// workers at once) into a work directory, then joined as packets into the output:
///
///     vivify run IN OUT …      plan (or resume) ─▶ work 0, 1, … ─▶ join ─▶ OUT
///     vivify plan IN OUT … --work DIR ─▶ vivify work DIR --index I (any order, any machine) ─▶ vivify join DIR
///
/// The work directory (`.OUT.vivify-work/` beside the output unless named) holds
/// `manifest.json` (`SegmentManifest`) and one `segment-NNNN.nut` per finished segment, each
/// written under a temporary name and renamed, so a crash never leaves a half-written segment
/// under its name. Updates of the manifest are serialised by `flock` on `manifest.lock`, so
/// workers on one machine or on a shared file system can record their segments concurrently.
public final class SegmentedJob {
    /// The manifest's file name in the work directory.
    package static let manifestName = "manifest.json"
    /// What `vivify join` leaves in a planned job's work directory once the output is written
    /// (the segments and the manifest removed): the output, its identity and frame count, so
    /// that a second join (a retried pod, two at once) says the job is done instead of failing.
    package static let joinedName = "joined.json"

    /// A finished join (`joinedName`).
    package struct JoinedRecord: Codable, Sendable, Equatable {
        package var output: String
        package var frames: Int
        package var identity: SegmentManifest.OutputIdentity?
    }

    /// The record a finished join left in `directory`, when it holds one and no manifest (a
    /// job planned again in the same folder is that job).
    package static func joinedRecord(at directory: URL) -> JoinedRecord? {
        guard !FileManager.default.fileExists(atPath: directory.appendingPathComponent(manifestName).path),
              let data = FileManager.default.contents(atPath: directory.appendingPathComponent(joinedName).path) else { return nil }
        return try? JSONDecoder().decode(JoinedRecord.self, from: data)
    }

    /// The join already done in `directory`, when there is one and its output is still the
    /// file it wrote; nil when none was done.
    /// - Throws: `MediaError` `.inputUnreadable` (66) when the output has been moved, changed
    ///   or removed since.
    package static func finishedJoin(at directory: URL) throws -> JoinedRecord? {
        guard let done = joinedRecord(at: directory) else { return nil }
        guard let identity = done.identity, SegmentManifest.OutputIdentity.of(done.output) == identity else {
            throw MediaError(.inputUnreadable, "The job in '\(directory.path)' was joined into '\(done.output)' (\(done.frames) frames), which has been moved, changed or removed since. Plan the job again to make it anew.")
        }
        return done
    }

    /// The file `vivify join` locks (kept beside `joinedName`).
    package static let joinLockName = "join.lock"

    /// Runs `body` holding the work directory's join lock (`flock` on `joinLockName`, a
    /// regular file: a directory cannot be locked on every network filesystem): two joins of
    /// one job run one after the other, and the second finds the first's record rather than
    /// segments being removed under it.
    /// - Throws: `MediaError` `.outputUnwritable` (73) when the lock cannot be taken (a
    ///   filesystem without locks): joining unlocked could remove segments under another join.
    package static func withJoinLock<T>(_ directory: URL, _ body: () throws -> T) throws -> T {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return try body()  // no folder: `body` says so
        }
        let path = directory.appendingPathComponent(joinLockName).path
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard fd >= 0 else {
            throw MediaError(.outputUnwritable, "Cannot open '\(path)' to lock the join: \(String(cString: strerror(errno))). The work directory must be writable.")
        }
        defer { close(fd) }
        var r: Int32
        repeat { r = flock(fd, LOCK_EX) } while r != 0 && errno == EINTR
        guard r == 0 else {
            throw MediaError(.outputUnwritable, "Cannot lock '\(path)' (\(String(cString: strerror(errno)))): its filesystem takes no locks, and two joins at once would remove segments under each other. Put the work directory on a filesystem with locks (NFSv4, local disk).")
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }
    /// The default segment length, seconds.
    public static let defaultSegmentSeconds = 30.0

    /// The work directory.
    package let directory: URL
    /// The manifest as last read or written.
    package private(set) var manifest: SegmentManifest

    /// What working a segment tells: warnings (a model being fetched among them), the frames
    /// the segment being worked on has written after each frame, and whether to stop (SIGINT,
    /// SIGTERM), asked before each frame.
    package var events = RunEvents()

    /// The work directory of `output` when none is named: `.NAME.vivify-work` beside it.
    package static func defaultDirectory(forOutput output: String) -> URL {
        let url = URL(fileURLWithPath: output).standardizedFileURL
        return url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).vivify-work")
    }

    /// Whether `c` is a job that can be segmented: a media file in, a media file out, offline.
    package static func canSegment(_ c: RunConfiguration) -> Bool {
        guard c.input.synthetic == nil, !c.output.discard, c.run.mode == .offline, !c.run.realtime else { return false }
        let input = c.input.path, output = c.output.path
        guard input != "-", output != "-", !NetworkURL.isNetwork(input), !NetworkURL.isNetwork(output) else { return false }
        guard c.input.effectiveFormat == nil, c.output.effectiveFormat == nil else { return false }
        var st = stat()
        return stat(input, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG
    }

    /// Plans `c` into segments of about `segmentSeconds` in a new work directory at `directory`
    /// (`vivify plan`), the models loaded to measure the plan and recorded by digest; nil when
    /// the output exists and `c.output.existing` says leave it.
    package static func plan(_ c: RunConfiguration, segmentSeconds: Double, at directory: URL, events: RunEvents = RunEvents()) throws -> SegmentedJob? {
        try c.checkRun()
        guard canSegment(c) else {
            throw MediaError(.invalidOptions, "Only a media file into a media file can be planned into segments ('\(c.input.path)' → '\(c.output.path)'). Use `vivify run` for pipes, y4m and raw frames.")
        }
        if case .skip = try OutputGuard.check(output: c.output.path, inputs: [c.input.path], reads: c.readFiles, existing: c.output.existing) { return nil }
        try MediaWriter.validate(targetName: c.output.path, settings: c.output.encoder)
        let models = try loadModels(c, log: events.info)
        var manifest = try plan(c, segmentSeconds: segmentSeconds, models: models, warn: events.warning)
        // Recorded for `status`; a manifest never grants the join an overwrite: `join -y` does.
        manifest.settings.replaceExistingOutput = c.output.existing == .replace
        return try create(at: directory, manifest: manifest)
    }

    /// Loads the models of `c`, in the stages' order, under `c.limits`.
    package static func loadModels(_ c: RunConfiguration, log: (String) -> Void = { _ in }) throws -> [FrameProcessor] {
        return try ProcessorFactory.models(of: c.stages, backend: c.run.backend, settings: c.modelCompute, log: log)
    }

    /// SHA-256 of every model's files, by task and name (built-in models by name and version),
    /// of the guidance pictures of `c`'s stages, and of the custom layer library it names.
    static func modelDigests(_ models: [FrameProcessor], of c: RunConfiguration) throws -> [String: String] {
        var out: [String: String] = [:]
        for case let p as ModelStage in models {
            out["\(p.name) \(p.modelName)"] = try ModelDigest.of(files: p.modelFiles).hex
        }
        // References, keyframes and the hints picture by content, so that every worker
        // colours alike and a file changed after `plan` is refused.
        for (kind, file) in c.stages.compactMap(\.colourGuide).flatMap(\.pictures) {
            out["\(kind) \(URL(fileURLWithPath: file).standardizedFileURL.path)"] = try SHA256.hash(fileAt: URL(fileURLWithPath: file)).hex
        }
        // The compiled custom layer library by content: every worker runs the same code.
        if let library = c.limits.customLayers {
            out["custom layers"] = try SHA256.hash(fileAt: URL(fileURLWithPath: library)).hex
        }
        return out
    }

    /// Plans `c`'s input into segments of about `segmentSeconds`, preferring keyframes: a cut
    /// moves to a keyframe within a quarter of a segment of its even place, else it stays at
    /// the frame there (its worker then decodes from the keyframe before and discards frames).
    /// The manifest records `c.limits` as the limits every worker runs under.
    /// `warn` hears what reading the input loses (a 10-bit or alpha source), said once here
    /// for every segment.
    package static func plan(_ c: RunConfiguration, segmentSeconds: Double, models: [FrameProcessor], warn: (String) -> Void = { _ in }) throws -> SegmentManifest {
        guard segmentSeconds > 0, segmentSeconds.isFinite else {
            throw MediaError(.invalidOptions, "'--segment-seconds \(segmentSeconds)' must be above 0.")
        }
        try c.checkRun()
        // Opened as an unsegmented run opens it first, so bad input (not media, no video
        // stream, no decoder, beyond the pixel limit) gets the same error and exit code.
        let source = try Job.openSource(c.input, copyStreams: false, maxPixels: c.limits.pixelLimit)
        if let lost = (source as? MediaReader)?.reduction { warn(lost) }
        let fingerprint = try SegmentManifest.Fingerprint.of(c.input.path)
        let index = try VideoIndex.read(path: c.input.path)
        // What an unsegmented run refuses before any work, refused before any segment: a
        // keyframe past the end of the whole video, a keyframe of another aspect, a hint
        // outside the first frame (each worker would fail, or colour without it, exit 0).
        let video = source.info.video
        if let guide = c.stages.colourGuide {
            let last = index.timestamps.last.map { index.seconds($0 + max(index.lastDuration, 0) - (index.timestamps.first ?? 0)) }
            let origin = index.timestamps.first ?? 0
            try guide.checkKeyframes(frameCount: index.timestamps.count, duration: video.duration ?? last,
                                     frameRate: video.frameRate.doubleValue, input: c.input.path,
                                     frameSeconds: index.timestamps.map { index.seconds($0 - origin) })
        }
        _ = try Job.chain(c, video: video, models: models)
        models.forEach { $0.reset() }
        var stamps = index.timestamps
        if let n = c.run.maxFrames { stamps = Array(stamps.prefix(n)) }
        guard !stamps.isEmpty else {
            throw MediaError(.corruptInput, "'\(c.input.path)' has a video stream with no frames; nothing to do. Check the source.")
        }
        let tb = index.timeBase
        // The chain's warm-up: the most any stateful stage needs (the stabilizer's 64 frames).
        let warmUp = models.map(\.warmUpFrames).max() ?? 0
        let total = stamps.count
        let lastEnd = stamps[total - 1] + max(index.lastDuration, 0)
        let span = index.seconds(lastEnd - stamps[0])
        let count = max(1, min(total, Int((span / segmentSeconds).rounded())))
        var cuts: [Int] = [0]
        let keySet = Set(index.keyframes)
        let keyPositions = stamps.indices.filter { keySet.contains(stamps[$0]) }
        for k in 1..<max(count, 1) {
            let target = Double(stamps[0]) + Double(k) * Double(lastEnd - stamps[0]) / Double(count)
            // The frame nearest the even place…
            var position = stamps.firstIndex { Double($0) >= target } ?? total - 1
            // …or the nearest keyframe within a quarter segment of it.
            let tolerance = 0.25 * Double(lastEnd - stamps[0]) / Double(count)
            if let key = keyPositions.min(by: { abs(Double(stamps[$0]) - target) < abs(Double(stamps[$1]) - target) }),
               abs(Double(stamps[key]) - target) <= tolerance {
                position = key
            }
            if position > cuts.last! && position < total { cuts.append(position) }
        }
        // Keyframes and the hinted first frame carry through their shot, before and after
        // them: the input is scanned once for where shots start (as the guide finds them, and
        // as an unsegmented run does), and every worker gets the list. The scan stops at the
        // first cut after the last keyframe (after frame 0 with hints only): no keyframe lies
        // beyond it, so a later segment needs no earlier shot start.
        let guide = c.stages.colourGuide
        var shotStarts: [Int] = []
        var shotStartTimes: [Double]?
        if let guide, guide.carriesThroughShots {
            let relative = stamps.map { index.seconds($0 - stamps[0]) }
            let last = min(guide.lastKeyframe(frameSeconds: relative, frameRate: video.frameRate.doubleValue).frame, total - 1)
            let scanned = try scanShotStarts(c, frames: total, throughFrame: last)
            shotStarts = scanned.map(\.index)
            shotStartTimes = scanned.map(\.seconds)
            // The hints colour frame 0, and that colour carries through the first shot, which
            // only a segment holding frame 0 can give: no segment starts within that shot.
            if guide.hasHints {
                let firstShotEnd = shotStarts.count > 1 ? shotStarts[1] : total
                cuts = cuts.filter { $0 == 0 || $0 >= firstShotEnd }
            }
        }
        var segments: [SegmentManifest.Segment] = []
        for (i, first) in cuts.enumerated() {
            let next = i + 1 < cuts.count ? cuts[i + 1] : total
            let warmFirst = i == 0 ? first : max(0, first - warmUp)
            let shotStart = shotStarts.last { $0 <= warmFirst }
            let warmPTS = stamps[warmFirst]
            // Keyframes at or before the warm-up, latest first; none for the first segment (read from the start).
            var candidates: [Int64] = []
            if warmFirst > 0 {
                candidates = index.keyframes.filter { $0 <= warmPTS }.reversed()
                if candidates.count > 8 { candidates = Array(candidates.prefix(7)) + [candidates.last!] }
            }
            let endPTS: Int64? = next < index.timestamps.count ? index.timestamps[next] : nil
            let end = next < total ? stamps[next] : lastEnd
            segments.append(SegmentManifest.Segment(
                index: i, file: SegmentManifest.segmentFileName(i), firstFrame: first, frames: next - first,
                startPTS: stamps[first], endPTS: endPTS, warmUpPTS: warmPTS, seekCandidates: candidates,
                startSeconds: index.seconds(stamps[first]), endSeconds: index.seconds(end), done: nil, failed: nil))
            if let shotStart, !shotStarts.isEmpty {
                segments[i].shotStartFrame = shotStart
                segments[i].shotStartSeconds = index.seconds(stamps[shotStart] - stamps[0])
            }
        }
        var settings = SegmentManifest.Settings(c, models: try modelDigests(models, of: c))
        if (try? c.run.backend.resolved()) == .onednn, let upscaler = models.lazy.compactMap({ ($0 as? UpscaleProcessor)?.upscaler }).first {
            // What the upscaler computes in (`auto` decides per model) is what every worker forces.
            if upscaler.quantisesToInt8 {
                settings.int8Calibration = try int8Calibration(upscaler, c)
            }
            settings.configuration.limits.precision = PrecisionChoice(rawValue: upscaler.computePrecision) ?? .fp32
        }
        return SegmentManifest(input: fingerprint, settings: settings, segmentSeconds: segmentSeconds,
                               timeBase: "\(tb.num)/\(tb.den)", totalFrames: total, warmUpFrames: warmUp,
                               tags: try tags(c), videoSpan: c.run.maxFrames != nil ? [index.seconds(stamps[0]), index.seconds(lastEnd)] : nil,
                               segments: segments, interruptedOutput: nil, shotStarts: shotStartTimes)
    }

    /// The int8 calibration `upscaler` uses: its stored one, or one taken on the input's first
    /// frame with detail (`Upscaler.canCalibrate`; the last of the first 300 frames if none has).
    static func int8Calibration(_ upscaler: Upscaler, _ c: RunConfiguration) throws -> String? {
        if let json = upscaler.int8CalibrationJSON { return json }
        let source = try Job.openSource(c.input, copyStreams: false, decodeTo: .rgb24, maxPixels: c.limits.pixelLimit)
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var image: FloatPlanarImage?
        var frames = 0
        reading: while frames < 300 {
            switch try source.read(into: &frame) {
            case .frame:
                frames += 1
                var decoded = FloatPlanarImage(channels: 3, width: 1, height: 1)
                decoded.load(from: frame)
                image = decoded
                if Upscaler.canCalibrate(decoded) { break reading }
            case .packet:
                continue
            case .end:
                break reading
            }
        }
        guard let image else { return nil }
        try upscaler.calibrateInt8(on: [image])
        return upscaler.int8CalibrationJSON
    }

    /// Writes a new work directory for `manifest` at `directory` (which must not exist, be
    /// empty, or be an earlier work directory, whose files are replaced).
    package static func create(at directory: URL, manifest: SegmentManifest) throws -> SegmentedJob {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        if fm.fileExists(atPath: directory.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw MediaError(.outputUnwritable, "'\(directory.path)' exists and is not a directory. Name another work directory.")
            }
            // A finished join's record and lock are vivify's own too: the job may be planned
            // again in its folder (the messages after a join say to).
            let contents = ((try? fm.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0 != joinedName && $0 != joinLockName }
            if !contents.isEmpty && !contents.contains(manifestName) {
                throw MediaError(.outputUnwritable, "'\(directory.path)' is not empty and holds no \(manifestName); vivify only writes into an empty or its own work directory. Name another one.")
            }
            // Another job's work (another input or output) is never discarded by a plan.
            if let other = try? read(directory), other.settings.input != manifest.settings.input || other.settings.output != manifest.settings.output {
                let done = other.segments.filter { $0.done != nil }.count
                throw MediaError(.outputUnwritable, "'\(directory.path)' holds another job ('\(other.settings.input)' → '\(other.settings.output)', \(done) of \(other.segments.count) segments done). Join it or remove it first, or name another work directory.")
            }
            removeContents(of: directory)
        } else {
            do {
                try fm.createDirectory(at: directory, withIntermediateDirectories: true)
            } catch {
                throw MediaError(.outputUnwritable, "Cannot create the work directory '\(directory.path)': \(failureReason(error)). Choose a writable location.")
            }
        }
        let job = SegmentedJob(directory: directory, manifest: manifest)
        try job.save(manifest)
        return job
    }

    private init(directory: URL, manifest: SegmentManifest) {
        self.directory = directory
        self.manifest = manifest
    }

    /// Opens the work directory at `directory`.
    package init(directory: URL) throws {
        self.directory = directory
        manifest = try Self.read(directory)
    }

    static func read(_ directory: URL) throws -> SegmentManifest {
        let url = directory.appendingPathComponent(manifestName)
        guard let data = FileManager.default.contents(atPath: url.path) else {
            if let joined = joinedRecord(at: directory) {
                throw MediaError(.inputUnreadable, "The job in '\(directory.path)' was joined into '\(joined.output)' (\(joined.frames) frames); its segments are gone. Plan it again with `vivify plan INPUT OUTPUT … --work \(directory.path)` to make it anew.")
            }
            throw MediaError(.inputUnreadable, "'\(directory.path)' holds no \(manifestName). Make one with `vivify plan INPUT OUTPUT … --work \(directory.path)`.")
        }
        do {
            var m = try JSONDecoder().decode(SegmentManifest.self, from: data)
            guard m.format == "vivify-segments", (1...SegmentManifest.currentVersion).contains(m.version) else { throw MediaError(.corruptInput, "") }
            // Read into this version's layout, which the next update writes.
            m.version = SegmentManifest.currentVersion
            if let problem = m.segmentProblem {
                throw MediaError(.corruptInput, "'\(url.path)' is damaged or was edited: \(problem). Plan the job again.")
            }
            return m
        } catch let e as MediaError where !e.message.isEmpty {
            throw e
        } catch {
            throw MediaError(.corruptInput, "'\(url.path)' is not a vivify segment manifest this version reads. Plan the job again (or run it with --no-resume).")
        }
    }

    private func save(_ m: SegmentManifest) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(m)
        let partial = PartialFile(target: directory.appendingPathComponent(Self.manifestName))
        do {
            try partial.write { url in try data.write(to: url) }
        } catch {
            throw MediaError(.outputUnwritable, "Cannot write '\(partial.target.path)': \(failureReason(error)).")
        }
        manifest = m
    }

    /// Reads the manifest under the lock, lets `body` change it, writes it back.
    @discardableResult
    func update<T>(_ body: (inout SegmentManifest) throws -> T) throws -> T {
        let lockPath = directory.appendingPathComponent("manifest.lock").path
        let fd = open(lockPath, O_CREAT | O_RDWR | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw MediaError(.outputUnwritable, "Cannot lock '\(lockPath)': \(String(cString: strerror(errno))). Check the work directory's permissions.")
        }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            if errno != EINTR { throw MediaError(.outputUnwritable, "Cannot lock '\(lockPath)': \(String(cString: strerror(errno))).") }
        }
        defer { flock(fd, LOCK_UN) }
        var m = try Self.read(directory)
        let result = try body(&m)
        try save(m)
        return result
    }

    /// Re-reads the manifest (other workers may have finished segments).
    package func reload() throws { manifest = try Self.read(directory) }

    /// The file of `segment`.
    /// A segment's file: the name its index gives, inside the work directory (a manifest's
    /// `file` is checked against it when read, never used as a path).
    package func file(_ segment: SegmentManifest.Segment) -> URL {
        directory.appendingPathComponent(SegmentManifest.segmentFileName(segment.index))
    }

    /// Whether something other than a regular file (a symbolic link, a FIFO, a folder) sits
    /// where a segment's file goes: it is neither read nor written through.
    func isForeign(_ url: URL) -> Bool {
        var st = stat()
        guard lstat(url.path, &st) == 0 else { return false }
        return st.st_mode & S_IFMT != S_IFREG
    }

    /// Whether `segment` is finished and its file is what was recorded (size and SHA-256).
    package func isVerified(_ segment: SegmentManifest.Segment) -> Bool {
        guard let done = segment.done else { return false }
        let url = file(segment)
        guard !isForeign(url) else { return false }
        guard let id = SegmentManifest.OutputIdentity.of(url.path), id.size == done.bytes else { return false }
        return (try? SHA256.hash(fileAt: url).hex) == done.sha256
    }

    /// A frame that starts a shot: its number (0-based) and time (seconds from the first frame).
    package struct ShotStart: Equatable, Sendable {
        package var index: Int
        package var seconds: Double
    }

    /// Where shots start in the first `frames` frames of the input, as the colour guide finds
    /// them (on the source's frames: a stage before the colorizer is not run), up to the first
    /// after frame `throughFrame` and `throughSeconds`: every frame decoded once, nothing run.
    /// A signal (`stop()` true) ends the scan: it throws `.interrupted` before the next frame
    /// (a long input took minutes, and Ctrl-C waited for all of them).
    package static func scanShotStarts(_ c: RunConfiguration, frames: Int = .max, throughFrame: Int, throughSeconds: Double = 0,
                                       stop given: (() -> Bool)? = nil) throws -> [ShotStart] {
        let stop = given ?? { InputCancellation.isCancelled }
        let source = try Job.openSource(c.input, copyStreams: false, decodeTo: .rgb24, maxPixels: c.limits.pixelLimit)
        var scanner = ShotScanner(threads: c.limits.compute.threads)
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        var starts: [ShotStart] = [], n = 0
        var firstPTS: Int64?
        // Half a frame past the last keyframe's time: its own frame is still before the end.
        let rate = source.info.video.frameRate.doubleValue
        let slack = rate > 0 ? 0.5 / rate : 0
        reading: while n < frames {
            if stop() {
                throw MediaError(.interrupted, "Interrupted while finding where the shots of \(c.input.displayName) start (frame \(n)\(frames == .max ? "" : " of \(frames)")); nothing was planned or written.")
            }
            switch try source.read(into: &frame) {
            case .frame:
                let cut = frame.planes[0].withUnsafeBufferPointer { scanner.startsShot(rgb: $0, width: frame.width, height: frame.height) }
                if n == 0 { firstPTS = frame.pts }
                if cut {
                    let seconds: Double
                    if let p = frame.pts, let f = firstPTS {
                        seconds = Double(p - f) * frame.timeBase.doubleValue
                    } else {
                        seconds = rate > 0 ? Double(n) / rate : Double(n)
                    }
                    starts.append(ShotStart(index: n, seconds: seconds))
                    if n > throughFrame && seconds > throughSeconds + slack { break reading }
                }
                n += 1
            case .packet: continue
            case .end: break reading
            }
        }
        return starts
    }

    /// The segment's window of the input.
    func window(_ s: SegmentManifest.Segment) -> SegmentWindow {
        var w = SegmentWindow(warmUpPTS: s.warmUpPTS, startPTS: s.startPTS, endPTS: s.endPTS, seekCandidates: s.seekCandidates,
                              finalOutput: manifest.settings.output)
        // As planned: the first segment has no warm-up, the others up to `warmUpFrames` frames.
        w.firstFrameIndex = s.index == 0 ? s.firstFrame : max(0, s.firstFrame - manifest.warmUpFrames)
        w.shotStartSeconds = s.shotStartSeconds
        w.shotStarts = manifest.shotStarts
        w.frames = s.frames
        w.originPTS = manifest.segments.first?.startPTS
        return w
    }

    /// Checks that the input is still the one planned.
    package func checkInput() throws {
        let now = try SegmentManifest.Fingerprint.of(manifest.settings.input)
        if let why = manifest.input.difference(to: now) {
            throw MediaError(.invalidOptions, "The segments in '\(directory.path)' were planned for another input: \(why). Plan the job again.")
        }
    }

    /// The segment a worker processes: `given` (`--index`), else the batch engine's index in
    /// `environment` (Slurm's SLURM_ARRAY_TASK_ID, a Kubernetes Indexed Job's
    /// JOB_COMPLETION_INDEX).
    package static func segmentIndex(given: Int?, environment: [String: String]) throws -> Int {
        if given == nil {
            // A variable that is set but not a number is a broken batch script: named as such.
            for name in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
                if let value = environment[name], Int(value) == nil {
                    throw MediaError(.invalidOptions, "\(name) is '\(value)', not a segment number. Set it to a number from 0 (the batch engine does), or pass --index I.")
                }
            }
        }
        let chosen = given ?? ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"].lazy.compactMap { environment[$0].flatMap { Int($0) } }.first
        guard let chosen else {
            throw MediaError(.invalidOptions, "No segment named: pass --index I, or run under Slurm (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX).")
        }
        return chosen
    }

    /// What `work` did.
    package enum WorkOutcome: Sendable, Equatable {
        /// The segment was already finished and verified.
        case alreadyDone(frames: Int)
        /// It was processed now.
        case done(frames: Int)
        /// Stopped by a signal after this many frames (kept beside as segment-NNNN.incomplete.nut).
        case interrupted(frames: Int)
    }

    /// Processes segment `index` (idempotent: a verified finished segment is left alone).
    /// `models` are loaded ones to reuse; nil loads them. `threads` is the worker's own
    /// (`--threads`; nil: all cores); every other limit is the plan's.
    package func work(index: Int, models: [FrameProcessor]? = nil, threads: Int? = nil) throws -> WorkOutcome {
        try reload()
        guard manifest.segments.indices.contains(index) else {
            throw MediaError(.invalidOptions, "There is no segment \(index) in '\(directory.path)': it has \(manifest.segments.count) (0–\(manifest.segments.count - 1)).")
        }
        let segment = manifest.segments[index]
        if isVerified(segment) { return .alreadyDone(frames: segment.done!.frames) }
        do {
            return try process(segment, models: models, threads: threads)
        } catch {
            // Every failure is recorded, a refusal before any frame (the plan's files changed
            // since) as well as one mid-run, so that `status` lists it and `join` can tell a
            // segment still to come from one that cannot be done as planned. A signal is not a
            // failure.
            if !events.shouldStop() {
                let message = ErrorReport.message(for: error)
                let code = ErrorReport.exitCode(for: error)
                if code != .interrupted {
                    try? update {
                        $0.segments[index].failed = message
                        $0.segments[index].failedExit = code.rawValue
                    }
                }
            }
            throw error
        }
    }

    /// `work`'s processing of one unfinished segment.
    private func process(_ segment: SegmentManifest.Segment, models: [FrameProcessor]?, threads: Int?) throws -> WorkOutcome {
        let index = segment.index
        if isForeign(file(segment)) {
            throw MediaError(.outputUnwritable, "'\(file(segment).path)' is a symbolic link or not a regular file; a segment is written only as a plain file inside the work directory. Remove it, or plan the job again.")
        }
        // Every segment runs the planned configuration, every setting and limit of it, into
        // its own file (video only, every frame of its window).
        var c = manifest.settings.configuration
        c.output.path = file(segment).path
        c.output.existing = .replace
        c.output.copyAudioAndSubtitles = false
        c.run.maxFrames = nil
        c.limits.threads = threads
        let loaded = try models ?? Self.loadModels(c, log: events.warning)
        if models == nil {
            // The models found now must be the planned ones.
            let digests = try Self.modelDigests(loaded, of: c)
            if digests != manifest.settings.models {
                // Only what changed, by the name the plan gave it ("colorize vivify-color",
                // "reference /path/r.png"): the models, the guide's pictures, the custom layers.
                let planned = manifest.settings.models
                let changed = Set(planned.keys).union(digests.keys).sorted().filter { planned[$0] != digests[$0] }.map { key -> String in
                    planned[key] == nil ? "\(key) (not in the plan)" : digests[key] == nil ? "\(key) (gone)" : key
                }
                throw MediaError(.invalidOptions, "What the job was planned with has changed since: \(changed.joined(separator: ", ")). Plan the job again to use them, or restore the planned files (workers read exactly what the plan recorded, by SHA-256).")
            }
        }
        if let json = manifest.settings.int8Calibration {
            for case let upscale as UpscaleProcessor in loaded { try upscale.upscaler.useInt8Calibration(json: json) }
        }
        let job = Job(configuration: c)
        job.segment = window(segment)
        job.preloadedModels = loaded
        job.events.warning = events.warning
        job.events.progress = events.progress
        job.events.shouldStop = events.shouldStop
        let result = try job.run()
        // `Job` decides what a signal interrupted: not a segment whose every frame was written.
        if result.interrupted {
            return .interrupted(frames: result.framesOut)
        }
        let url = file(segment)
        let digest = try SHA256.hash(fileAt: url).hex
        let bytes = SegmentManifest.OutputIdentity.of(url.path)?.size ?? 0
        try update {
            $0.segments[index].done = SegmentManifest.Done(frames: result.framesOut, sha256: digest, bytes: bytes)
            $0.segments[index].failed = nil
            $0.segments[index].failedExit = nil
        }
        unlink(incompleteFile(segment).path)
        return .done(frames: result.framesOut)
    }

    /// `text` without its closing full stop, to go inside another sentence.
    static func sentence(_ text: String) -> String {
        text.hasSuffix(".") ? String(text.dropLast()) : text
    }

    /// The error kind of a worker's exit code when it is one running the worker again does not
    /// change (64, 65, 66, 69: the exit codes of these kinds); nil for the others.
    static func lastingKind(exit code: Int32?) -> MediaError.Kind? {
        let lasting: [MediaError.Kind] = [.invalidOptions, .corruptInput, .inputUnreadable, .unsupported]
        return lasting.first { VivifyExitCode($0).rawValue == code }
    }

    /// Where an interrupted segment's frames are kept.
    func incompleteFile(_ s: SegmentManifest.Segment) -> URL {
        PartialFile(target: file(s)).incompleteTarget
    }

    /// The state of each segment.
    package struct SegmentState: Sendable, Codable, Equatable {
        /// "done", "missing" (not done yet), "damaged" (done, but its file is gone, not
        /// vivify's own or not what was recorded) or "failed".
        package var state: String
        /// The segment's index.
        package var index: Int
        /// Frames written (done) or planned.
        package var frames: Int
        /// Start and end, seconds.
        package var start: Double
        package var end: Double
        /// The failure, for failed segments, or what is wrong with a damaged one's file.
        package var error: String?
        /// The exit code of the worker that failed (failed segments, when recorded).
        package var exit: Int32? = nil
    }

    /// Every segment's state; `verify` hashes the finished files (else the record is trusted).
    package func status(verify: Bool = true) throws -> [SegmentState] {
        try reload()
        return manifest.segments.map { s in
            let ok = verify ? isVerified(s) : s.done != nil
            let damage = ok || s.done == nil ? nil : damage(s)
            let state = ok ? "done" : damage != nil ? "damaged" : s.failed != nil ? "failed" : "missing"
            return SegmentState(state: state, index: s.index, frames: ok ? s.done!.frames : s.frames,
                                start: s.startSeconds, end: s.endSeconds, error: ok ? nil : damage ?? s.failed,
                                exit: state == "failed" ? s.failedExit : nil)
        }
    }

    /// What is wrong with a finished segment's file that fails verification.
    private func damage(_ s: SegmentManifest.Segment) -> String {
        let url = file(s)
        if isForeign(url) {
            return "'\(url.lastPathComponent)' is a link or not a regular file, which vivify never reads or replaces: remove it, then `vivify work \(directory.path) --index \(s.index)` redoes the segment"
        }
        if SegmentManifest.OutputIdentity.of(url.path) == nil {
            return "'\(url.lastPathComponent)' is gone: `vivify work \(directory.path) --index \(s.index)` redoes the segment"
        }
        return "'\(url.lastPathComponent)' does not match the size and SHA-256 recorded when it was done (damaged or replaced): `vivify work \(directory.path) --index \(s.index)` redoes the segment"
    }

    /// The tags the unsegmented writer gives the video stream (from the source's description).
    static func tags(_ c: RunConfiguration) throws -> SegmentManifest.Tags {
        guard let reader = try Job.openSource(c.input, copyStreams: false, maxPixels: c.limits.pixelLimit) as? MediaReader else {
            throw MediaError(.invalidOptions, "Only media files can be cut into segments; '\(c.input.path)' is a frame stream. Pass --segment-seconds 0.")
        }
        let video = reader.info.video
        var resolved = video.color.resolved(height: video.height)
        if let name = c.input.assumeMatrix, let code = ColorInfo.matrixCode(named: name) { resolved.info.matrix = code }
        let col = resolved.info
        // The one the unsegmented writer gives the stream.
        let tb = MediaWriter.streamTimeBase(source: video.timeBase, frameRate: video.frameRate, encoder: c.output.encoder.encoderName,
                                            output: c.output.path)
        return SegmentManifest.Tags(frameRate: [Int(video.frameRate.num), Int(video.frameRate.den)],
                                    sampleAspectRatio: [Int(video.sampleAspectRatio.num), Int(video.sampleAspectRatio.den)],
                                    color: [col.primaries, col.transfer, col.matrix, col.range], displayMatrix: video.displayMatrix,
                                    timeBase: [Int(tb.num), Int(tb.den)])
    }

    /// What `join` did.
    package struct JoinOutcome: Sendable {
        /// Frames in the output.
        package var frames: Int
        /// Where it is.
        package var output: String
        /// Warnings from the muxer set-up.
        package var warnings: [String]
        /// Whether `output` is NAME.incomplete.EXT beside a file that was there before the run
        /// (an interrupted run's frames; the file is left as it was).
        package var besideExisting = false
    }

    /// Verifies every segment and writes the output (temporary file, renamed), then removes
    /// the work directory. `existing` is the rule for an output that exists (an interrupted
    /// run's own output is always replaced).
    /// `leaveRecord`: write `joinedName` before removing the work files (`vivify join`).
    package func join(existing: ExistingOutput, removeDirectory: Bool = true, leaveRecord: Bool = false) throws -> JoinOutcome {
        try reload()
        try checkInput()
        let states = try status(verify: true)
        let unfinished = states.filter { $0.state != "done" }
        if !unfinished.isEmpty {
            let failed = unfinished.filter { $0.state == "failed" }
            var text = "\(unfinished.count) of \(states.count) segments in '\(directory.path)' are not finished (\(unfinished.map { String($0.index) }.joined(separator: ", ")))"
            if let f = failed.first { text += "; segment \(f.index) failed: \(f.error ?? "")" }
            // A worker that failed in a way running it again does not change (the plan's files
            // changed since, a damaged or missing input, an unsupported model) will fail the
            // same way every time: reported with its own code, not 75 (a join that waits on it
            // would wait forever).
            if let f = failed.first(where: { Self.lastingKind(exit: manifest.segments[$0.index].failedExit) != nil }),
               let kind = Self.lastingKind(exit: manifest.segments[f.index].failedExit) {
                let rest = unfinished.count > 1 ? " (\(unfinished.count) of \(states.count) segments are not finished: \(unfinished.map { String($0.index) }.joined(separator: ", ")))" : ""
                throw MediaError(kind, "Segment \(f.index) in '\(directory.path)' cannot be done as planned: \(Self.sentence(f.error ?? ""))\(rest). Fix that, then run `vivify work \(directory.path) --index \(f.index)` and join again.")
            }
            if let d = unfinished.first(where: { $0.state == "damaged" }) {
                // Not "not finished yet" (75: a join that waits would wait forever, its workers
                // having finished): damaged data (65), with the fix.
                text += "; segment \(d.index) is damaged: \(d.error ?? "")"
                throw MediaError(.corruptInput, text + ".")
            }
            throw MediaError(.unfinished, text + ". Run `vivify work \(directory.path) --index I` for each, then join again.")
        }
        let output = manifest.settings.output
        var rule = existing
        if let own = manifest.interruptedOutput, SegmentManifest.OutputIdentity.of(output) == own { rule = .replace }
        let target: URL
        switch try OutputGuard.check(output: output, inputs: [manifest.settings.input], existing: rule) {
        case .write(let url): target = url
        case .skip: return JoinOutcome(frames: 0, output: output, warnings: ["'\(output)' exists; not joined (-n)."])
        }
        let c = manifest.settings.configuration
        let partial = PartialFile(target: target, replacing: rule == .replace)
        let expected = manifest.framesDone
        let result: SegmentJoiner.Result
        do {
            result = try SegmentJoiner.join(segments: manifest.segments.map { file($0).path }, source: c.input.path,
                                            path: partial.temporary.path, targetName: output, tags: manifest.tags.joinerTags,
                                            copyStreams: c.output.copyAudioAndSubtitles, window: manifest.videoSpan.map { $0[0]...$0[1] },
                                            strict: c.input.strict)
            // The segment files were verified by size and SHA-256, so a count that differs is
            // the manifest's: damaged or edited data (65), not an internal failure.
            if result.videoPackets != expected {
                throw MediaError(.corruptInput, "'\(directory.appendingPathComponent(Self.manifestName).path)' records \(expected) frames in its finished segments, but their files hold \(result.videoPackets): the manifest is damaged or was edited. Plan the job again (or run it with --no-resume).")
            }
            try partial.commit()
        } catch {
            partial.discard()
            throw error
        }
        // The frames an interrupted run kept beside the output are superseded by the complete
        // output: removed, if that file is still the one it wrote (never another).
        var warnings = result.warnings
        if let beside = manifest.besideOutput, SegmentManifest.OutputIdentity.of(partial.incompleteTarget.path) == beside {
            if unlink(partial.incompleteTarget.path) == 0 {
                warnings.append("Removed '\(partial.incompleteTarget.path)', the frames an interrupted run kept beside the output: the job is complete.")
            }
        }
        if leaveRecord {
            let record = JoinedRecord(output: output, frames: result.videoPackets, identity: SegmentManifest.OutputIdentity.of(output))
            let url = directory.appendingPathComponent(Self.joinedName)
            try? JSONEncoder().encode(record).write(to: url, options: .atomic)
        }
        if removeDirectory {
            // The record (and the lock a second join waits on) stay when left.
            if leaveRecord { Self.removeContents(of: directory, keeping: [Self.joinedName, Self.joinLockName]) } else { Self.removeWorkDirectory(directory) }
        }
        return JoinOutcome(frames: result.videoPackets, output: output, warnings: warnings)
    }

    /// After an interruption: joins the finished segments from the start and the interrupted
    /// one's frames into a playable output (audio trimmed to them), and remembers it so that
    /// the resumed run may replace it. Nil when no frame was finished.
    package func joinInterrupted(existing: ExistingOutput) throws -> JoinOutcome? {
        try reload()
        var files: [String] = []
        var frames = 0
        var end: Double?
        var start: Double?
        for s in manifest.segments {
            if isVerified(s) {
                files.append(file(s).path)
                frames += s.done!.frames
                start = start ?? s.startSeconds
                end = s.endSeconds
                continue
            }
            let incomplete = incompleteFile(s)
            if let index = try? VideoIndex.read(path: incomplete.path), let last = index.timestamps.last {
                files.append(incomplete.path)
                frames += index.timestamps.count
                start = start ?? s.startSeconds
                end = index.seconds(last + max(index.lastDuration, 0))
            }
            break
        }
        guard !files.isEmpty, let start, let end else { return nil }
        let output = manifest.settings.output
        var rule = existing
        var ownOutput = false
        if let own = manifest.interruptedOutput, SegmentManifest.OutputIdentity.of(output) == own {
            rule = .replace
            ownOutput = true
        }
        // A file at the output that is not this job's own interrupted output was there before
        // the run: `-y` replaces it with a complete output only, so these frames go beside it.
        let beside = !ownOutput && FileManager.default.fileExists(atPath: output)
        guard case .write(let target) = try OutputGuard.check(output: output, inputs: [manifest.settings.input], existing: beside ? .replace : rule) else { return nil }
        let c = manifest.settings.configuration
        let partial = PartialFile(target: target, replacing: rule == .replace)
        do {
            let r = try SegmentJoiner.join(segments: files, source: c.input.path, path: partial.temporary.path, targetName: output,
                                           tags: manifest.tags.joinerTags, copyStreams: c.output.copyAudioAndSubtitles, window: start...end,
                                           strict: c.input.strict)
            if beside {
                try partial.commit(as: partial.incompleteTarget)
                try update { $0.besideOutput = SegmentManifest.OutputIdentity.of(partial.incompleteTarget.path) }
                return JoinOutcome(frames: r.videoPackets, output: partial.incompleteTarget.path, warnings: r.warnings, besideExisting: true)
            }
            try partial.commit()
            try update { $0.interruptedOutput = SegmentManifest.OutputIdentity.of(output) }
            return JoinOutcome(frames: r.videoPackets, output: output, warnings: r.warnings)
        } catch {
            partial.discard()
            throw error
        }
    }

    /// Removes vivify's files from a work directory, then the directory if nothing else is in it.
    package static func removeWorkDirectory(_ directory: URL) {
        removeContents(of: directory)
        rmdir(directory.path)
    }

    private static func removeContents(of directory: URL, keeping kept: Set<String> = []) {
        let fm = FileManager.default
        for name in (try? fm.contentsOfDirectory(atPath: directory.path)) ?? [] where !kept.contains(name) {
            let ours = name == manifestName || name == "manifest.lock" || name == joinedName || name == joinLockName
                || name.hasPrefix("segment-") || name.hasPrefix(".segment-")
                || name.hasPrefix(".\(manifestName)")
            if ours { unlink(directory.appendingPathComponent(name).path) }
        }
    }
}
