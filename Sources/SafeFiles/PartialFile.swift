import Foundation

/// A file written under a temporary name beside its target and renamed into place at the end
/// (rename(2) in one folder is atomic): readers never see a half-written target, and a failed
/// write leaves an existing target untouched. Every output of vivify is written this way —
/// videos, pictures, bundles, the built-in models — and the segment files of resumable jobs.
///
///     target:     out/clip.mkv
///     temporary:  out/.clip.mkv.vivify-<host>.<pid>-<n>.partial        (or .partial.png: keepExtension)
///
/// A process killed outright (kill -9, power loss) leaves its temporary file; the next
/// `PartialFile` for the same target sweeps those of processes of this host that are gone.
public struct PartialFile: Sendable {
    /// Why the temporary file could not be put into place.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The target path.
        public let target: String
        /// The temporary path (still there when `commit` failed).
        public let temporary: String
        /// The system's reason.
        public let reason: String
        public var description: String { "cannot move '\(temporary)' into place as '\(target)': \(reason)" }
    }

    /// The file the caller wants.
    public let target: URL
    /// Where it is written until `commit()`.
    public let temporary: URL
    /// Whether `commit` may replace a file at the target. False (the rule without -y): the
    /// commit fails if a file appeared there meanwhile (another run writing the same new
    /// output), so of two runs one wins and the other says so, never replacing it silently.
    public let replacing: Bool

    private static let counter = Counter()

    /// Names a temporary file beside `target`. With `keepExtension` the temporary name ends in
    /// the target's extension (for writers that choose the format by extension).
    public init(target: URL, keepExtension: Bool = false, replacing: Bool = true) {
        self.target = target
        self.replacing = replacing
        let folder = target.deletingLastPathComponent()
        let ext = target.pathExtension
        let base = keepExtension && !ext.isEmpty ? target.deletingPathExtension().lastPathComponent : target.lastPathComponent
        let prefix = ".\(base).vivify-\(Self.host)."
        var name = "\(prefix)\(getpid())-\(Self.counter.next()).partial"
        if keepExtension && !ext.isEmpty { name += ".\(ext)" }
        temporary = folder.appendingPathComponent(name)
        Self.inFlight.add(temporary.path)
        Self.sweepStale(in: folder, prefix: prefix)
    }

    /// This host's name as it goes into temporary names (letters, digits, '-' and '_'), so a
    /// sweep never touches the temporary file of a process on another machine sharing the
    /// folder (a cluster's work directory).
    static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        let name = gethostname(&buffer, buffer.count) == 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        let kept = name.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_" }
        return kept.isEmpty ? "host" : String(String.UnicodeScalarView(kept.prefix(64)))
    }()

    /// Removes `prefix<pid>-<n>.partial…` files in `folder` whose process no longer exists.
    static func sweepStale(in folder: URL, prefix: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(prefix) && name.contains(".partial") {
            let rest = name.dropFirst(prefix.count)
            guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0, pid != getpid() else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                unlink(folder.appendingPathComponent(name).path)
            }
        }
    }

    /// Removes every temporary file this process has named and not yet committed or
    /// discarded (a command stopped by a signal leaves none behind).
    public static func discardAllInFlight() {
        for path in inFlight.all() { unlink(path) }
    }

    /// Renames the temporary file onto the target (or onto `other`, beside it). Refuses to
    /// replace anything that is not a regular file (a device, FIFO, directory or socket that
    /// appeared there meanwhile).
    public func commit(as other: URL? = nil) throws(Failure) {
        let destination = other ?? target
        var info = stat()
        if lstat(destination.path, &info) == 0 && info.st_mode & S_IFMT != S_IFREG {
            throw Failure(target: destination.path, temporary: temporary.path, reason: "it is not a regular file, so it is left as it is")
        }
        if !replacing && destination == target {
            // link(2) fails with EEXIST when the name is taken: an atomic "create, never replace".
            if link(temporary.path, destination.path) == 0 {
                unlink(temporary.path)
                Self.inFlight.remove(temporary.path)
                return
            }
            let code = errno
            if code == EEXIST {
                throw Failure(target: destination.path, temporary: temporary.path,
                              reason: "a file of that name appeared while this run was writing (another run's output?); it is left as it is. Pass -y to replace it")
            }
            // Filesystems without hard links: the same rule, checked just before the rename.
            guard code == EPERM || code == ENOTSUP || code == EOPNOTSUPP || code == EXDEV || code == EMLINK else {
                throw Failure(target: destination.path, temporary: temporary.path, reason: String(cString: strerror(code)))
            }
            if lstat(destination.path, &info) == 0 {
                throw Failure(target: destination.path, temporary: temporary.path,
                              reason: "a file of that name appeared while this run was writing (another run's output?); it is left as it is. Pass -y to replace it")
            }
        }
        if rename(temporary.path, destination.path) != 0 {
            throw Failure(target: destination.path, temporary: temporary.path, reason: String(cString: strerror(errno)))
        }
        Self.inFlight.remove(temporary.path)
    }

    /// Where a failed run keeps what it wrote, beside the target without replacing it:
    /// `clip.mkv` → `clip.incomplete.mkv`.
    public var incompleteTarget: URL {
        let ext = target.pathExtension
        let stem = target.deletingPathExtension().lastPathComponent
        return target.deletingLastPathComponent().appendingPathComponent(ext.isEmpty ? "\(stem).incomplete" : "\(stem).incomplete.\(ext)")
    }

    /// Removes the temporary file (after a failure), if it exists.
    public func discard() {
        unlink(temporary.path)
        Self.inFlight.remove(temporary.path)
    }

    /// Writes `body`'s file at `temporary`, then commits; discards it if `body` or the rename fails.
    public func write<T>(_ body: (URL) throws -> T) throws -> T {
        do {
            let result = try body(temporary)
            try commit()
            return result
        } catch {
            discard()
            throw error
        }
    }

    private static let inFlight = Registry()

    /// The temporary paths named and not yet committed or discarded.
    private final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        private var paths: Set<String> = []
        func add(_ p: String) { lock.lock(); paths.insert(p); lock.unlock() }
        func remove(_ p: String) { lock.lock(); paths.remove(p); lock.unlock() }
        func all() -> [String] { lock.lock(); defer { lock.unlock() }; return Array(paths) }
    }

    /// A process-wide sequence number, so two partial files of one process never share a name.
    private final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        func next() -> Int {
            lock.lock(); defer { lock.unlock() }
            value += 1
            return value
        }
    }
}
