import Foundation
import MediaIO

/// `vivify image`: one still image through the stages, written to a temporary file beside the
/// target and renamed at the end.
public enum ImageJob {
    /// Reads `input`, upscales it (colour, and alpha on a 3-channel copy) and writes `output`.
    /// Returns warnings (e.g. alpha dropped by JPEG).
    public static func run(input: String, output: String, upscale: String?, tile: Int?, backend: BackendChoice = .onednn,
                           log: (String) -> Void = { _ in }) throws -> [String] {
        try ImageIO.validateOutputPath(output)
        let url = URL(fileURLWithPath: output)
        let dir = url.deletingLastPathComponent().path
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
            throw MediaError(.outputUnwritable, "Cannot write '\(output)': the directory '\(dir)' does not exist. Create it first or choose another output path.")
        }
        let upscaler = try upscale.map { try Upscaler(model: $0, tile: tile, backend: backend, log: log) }
        var image = try ImageIO.read(path: input)
        if let upscaler {
            let started = Date()
            image.color = try upscaler.upscale(image.color)
            if let alpha = image.alpha { image.alpha = try upscaler.upscale(alpha) }
            log(String(format: "%@: %dx%d with %@ (%d× , tile %d) in %.2f s", (input as NSString).lastPathComponent,
                       image.width, image.height, upscaler.name, upscaler.scale, upscaler.tileSize, Date().timeIntervalSince(started)))
        }
        let ext = url.pathExtension
        let temp = url.deletingLastPathComponent().appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent).vivify-\(getpid()).partial.\(ext)").path
        do {
            let warnings = try ImageIO.write(image, to: temp)
            guard rename(temp, output) == 0 else {
                throw MediaError(.outputUnwritable, "Cannot move the finished image into place as '\(output)': \(String(cString: strerror(errno))).")
            }
            return warnings
        } catch {
            unlink(temp)
            throw error
        }
    }
}
