import CDNNL

/// The oneDNN library this process runs.
public enum DNNLVersion {
    /// "2.6.3".
    public static var string: String {
        guard let v = dnnl_version()?.pointee else { return "unknown" }
        return "\(v.major).\(v.minor).\(v.patch)"
    }
}
