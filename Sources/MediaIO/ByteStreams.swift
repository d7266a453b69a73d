#if canImport(Glibc)
import Glibc
#endif

/// Reads bytes from a file descriptor (a file or standard input) through one reused buffer.
public final class ByteReader {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8]
    private var start = 0
    private var end = 0
    /// Where the bytes come from, for messages ("standard input", "'clip.y4m'").
    public let name: String
    /// Total bytes handed out so far.
    public private(set) var consumed = 0

    /// Opens `path` for reading, or standard input when `path` is "-".
    public init(path: String) throws {
        if path == "-" {
            fd = 0
            ownsDescriptor = false
            name = "standard input"
        } else {
            // A FIFO with no writer yet is awaited where a signal can end the wait.
            fd = try InputWait.open(path, name: "'\(path)'")
            ownsDescriptor = true
            name = "'\(path)'"
        }
        buffer = [UInt8](repeating: 0, count: 1 << 20)
    }

    deinit { if ownsDescriptor { close(fd) } }

    /// Size of the underlying file when it is a regular file, else nil (pipes).
    public var regularFileSize: Int? {
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
        return Int(st.st_size)
    }

    private func refill() throws -> Bool {
        if start > 0 && start < end {
            buffer.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress!
                memmove(base, base + start, end - start)
            }
        }
        end -= start
        start = 0
        if end == buffer.count { return true }
        while true {
            // An idle pipe or terminal is waited on in steps a signal can end: then the input
            // ends here, and the job keeps the frames it has.
            do {
                try InputWait.waitReadable(fd, name: name)
            } catch {
                return false
            }
            let n = buffer.withUnsafeMutableBytes { raw in read(fd, raw.baseAddress! + end, raw.count - end) }
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw MediaError(.inputUnreadable, "Cannot read \(name): \(reason).")
            }
            end += n
            return n > 0
        }
    }

    /// Reads up to and excluding the next `\n` (at most `limit` bytes). Returns nil at a clean
    /// end of input (no bytes at all); throws if the input ends inside the line.
    public func readLine(limit: Int) throws -> [UInt8]? {
        while true {
            if let nl = buffer[start..<end].firstIndex(of: 0x0A) {
                let line = Array(buffer[start..<nl])
                consumed += nl + 1 - start
                start = nl + 1
                return line
            }
            if end - start > limit {
                throw MediaError(.corruptInput, "\(name): a header line is longer than \(limit) bytes; this is not the expected format.")
            }
            if try !refill() {
                if end == start { return nil }
                throw MediaError(.corruptInput, "\(name) ends in the middle of a header line.")
            }
        }
    }

    /// Fills `destination` completely; returns how many bytes it got (less only at end of input).
    public func readFully(into destination: UnsafeMutableRawBufferPointer) throws -> Int {
        var filled = 0
        while filled < destination.count {
            if start == end {
                if try !refill() { break }
                continue
            }
            let n = min(end - start, destination.count - filled)
            buffer.withUnsafeBytes { src in
                (destination.baseAddress! + filled).copyMemory(from: src.baseAddress! + start, byteCount: n)
            }
            start += n
            filled += n
        }
        consumed += filled
        return filled
    }
}

/// Writes bytes to a file descriptor (a file or standard output) through one reused buffer.
public final class ByteWriter {
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    /// Where the bytes go, for messages.
    public let name: String

    /// Creates (truncating) `path`, or writes to standard output when `path` is "-".
    public init(path: String) throws {
        if path == "-" {
            fd = 1
            ownsDescriptor = false
            name = "standard output"
        } else {
            fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            if fd < 0 {
                let reason = String(cString: strerror(errno))
                throw MediaError(.outputUnwritable, "Cannot create '\(path)': \(reason). Choose a writable location.")
            }
            ownsDescriptor = true
            name = "'\(path)'"
        }
        buffer.reserveCapacity(1 << 20)
    }

    deinit {
        try? flush()
        if ownsDescriptor { close(fd) }
    }

    /// Queues `bytes` for writing.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > (1 << 20) { try flush() }
        if bytes.count >= (1 << 20) {
            try writeAll(bytes)
        } else {
            buffer.append(contentsOf: bytes)
        }
    }

    /// Queues the UTF-8 bytes of `text`.
    public func write(_ text: String) throws {
        var copy = text
        try copy.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    /// Writes everything queued.
    public func flush() throws {
        if buffer.isEmpty { return }
        try buffer.withUnsafeBytes { try writeAll($0) }
        buffer.removeAll(keepingCapacity: true)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var done = 0
        while done < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
            if n < 0 {
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw MediaError(.outputUnwritable, "Cannot write to \(name): \(reason).")
            }
            done += n
        }
    }
}
