import CFFmpeg
import Foundation

/// Inputs and outputs given as URLs that FFmpeg's network protocols handle (udp, rtp, srt,
/// rtmp, tcp, http(s), rtsp): no file checks apply to them, and live sources get low-delay,
/// reconnecting, timed-out defaults.
public enum NetworkURL {
    /// The protocols treated as network URLs.
    public static let schemes: Set<String> = ["udp", "rtp", "srt", "rtmp", "rtmps", "tcp", "tls", "http", "https", "rtsp", "rtsps"]

    private static let lock = NSLock()
    nonisolated(unsafe) private static var initialised = false

    /// Seconds without data after which a network input ends (or, before its first packet,
    /// fails) unless the reader is given another (`--timeout`).
    public static let defaultTimeout = 10.0

    /// The lower-case scheme of `text` when it is a network URL ("udp" for "udp://…").
    public static func scheme(_ text: String) -> String? {
        guard let range = text.range(of: "://") else { return nil }
        let scheme = text[..<range.lowerBound].lowercased()
        return schemes.contains(scheme) ? scheme : nil
    }

    /// Whether `text` is a network URL.
    public static func isNetwork(_ text: String) -> Bool { scheme(text) != nil }

    /// FFmpeg's network layer, once per process.
    static func initialise() {
        lock.withLock {
            if !initialised { avformat_network_init(); initialised = true }
        }
    }

    /// The muxer a network output is written with: MPEG-TS for datagram and stream sockets,
    /// FLV for RTMP, RTSP for RTSP.
    public static func muxer(for url: String) -> String? {
        switch scheme(url) {
        case "udp", "rtp", "srt", "tcp", "tls": return "mpegts"
        case "rtmp", "rtmps": return "flv"
        case "rtsp", "rtsps": return "rtsp"
        default: return nil
        }
    }

    /// Demuxer and protocol options for a live network input: `timeout` seconds without data,
    /// UDP buffering that survives bursts, reconnection for HTTP, and short probing.
    static func inputOptions(for url: String, timeout: Double) -> [(String, String)] {
        let micros = String(Int64(timeout * 1_000_000))
        var options: [(String, String)] = [("rw_timeout", micros), ("probesize", "1000000"), ("analyzeduration", "2000000")]
        switch scheme(url) {
        case "udp", "rtp":
            options += [("timeout", micros), ("overrun_nonfatal", "1"), ("fifo_size", "100000")]
        case "http", "https":
            options += [("reconnect", "1"), ("reconnect_streamed", "1"), ("reconnect_on_network_error", "1"), ("reconnect_delay_max", "4")]
        case "rtsp", "rtsps":
            options += [("timeout", micros)]
        case "tcp":
            options += [("timeout", micros)]
        default:
            break
        }
        return options
    }
}
