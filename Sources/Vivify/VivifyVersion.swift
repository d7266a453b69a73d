/// This build of vivify.
public enum VivifyVersion {
    /// The release this source is.
    public static let number = "0.13.0"
}
