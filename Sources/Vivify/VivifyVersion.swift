internal import MediaIO

/// This build of vivify.
public enum VivifyVersion {
    /// The release this source is.
    public static let number = "0.13.0"

    /// The line `vivify --version` prints: the release and the FFmpeg and oneDNN it runs on.
    package static var text: String {
        "vivify \(number) (FFmpeg \(FFmpegLog.version), oneDNN \(EngineBench.oneDNNVersion))"
    }
}
