import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real HTTP/1.0 server on 127.0.0.1 that answers `GET /<path>` with the file `<root>/<path>`
/// (200) or 404, one connection at a time. It lets the download path of `ModelStore.fetch` run
/// over a real socket without the internet.
final class LocalFileServer: @unchecked Sendable {
    let root: URL
    private(set) var port: UInt16 = 0
    private let listener: Int32
    private let lock = NSLock()
    private var served: [String] = []

    /// The paths requested so far, in order.
    var requests: [String] { lock.lock(); defer { lock.unlock() }; return served }

    /// The URL of `path` on this server.
    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)/\(path)")! }

    init(root: URL) throws {
        self.root = root
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = UInt16(bigEndian: addr.sin_port)
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Stops accepting connections.
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            handle(client)
            close(client)
        }
    }

    private func handle(_ client: Int32) {
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            let n = buffer.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return }
            request += buffer[0..<n]
        }
        let line = String(decoding: request, as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = line.split(separator: " ")
        let path = parts.count >= 2 ? String(parts[1].dropFirst()) : ""
        lock.lock(); served.append(path); lock.unlock()
        let body: Data
        let status: String
        if !path.contains(".."), let data = try? Data(contentsOf: root.appendingPathComponent(path)) {
            (status, body) = ("200 OK", data)
        } else {
            (status, body) = ("404 Not Found", Data("not found\n".utf8))
        }
        let header = "HTTP/1.0 \(status)\r\nContent-Length: \(body.count)\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n"
        send(client, Data(header.utf8))
        send(client, body)
    }

    private func send(_ client: Int32, _ data: Data) {
        data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = Glibc.send(client, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                offset += n
            }
        }
    }
}
