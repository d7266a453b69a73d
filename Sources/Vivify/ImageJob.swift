import Foundation
import MediaIO

/// `vivify image`: one still image through the stages, written to a temporary file beside the
/// target and renamed at the end.
public enum ImageJob {
    /// Colorizes a still picture (grey or colour: colour is re-colorized from its L) through
    /// 8-bit RGB, as video frames are.
    static func colorizeImage(_ image: FloatPlanarImage, _ colorizer: Colorizer) throws -> FloatPlanarImage {
        let rgb = image.expandedToRGB()
        var frame = VideoFrame(format: .rgb24, width: 1, height: 1)
        rgb.store(into: &frame)
        var out = VideoFrame(format: .rgb24, width: 1, height: 1)
        try colorizer.colorize(frame, into: &out)
        var result = FloatPlanarImage(channels: 3, width: 1, height: 1)
        result.load(from: out)
        return result
    }

    /// Reads `input`, upscales it (colour, and alpha on a 3-channel copy) and writes `output`.
    /// Returns warnings (e.g. alpha dropped by JPEG).
    public static func run(input: String, output: String, upscale: String?, tile: Int?, backend: BackendChoice = .onednn,
                           colorize: String? = nil, colorizeAfter: Bool = false, saturation: Float = 1,
                           log: (String) -> Void = { _ in }) throws -> [String] {
        try ImageIO.validateOutputPath(output)
        let url = URL(fileURLWithPath: output)
        let dir = url.deletingLastPathComponent().path
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: dir, isDirectory: &isDir), isDir.boolValue else {
            throw MediaError(.outputUnwritable, "Cannot write '\(output)': the directory '\(dir)' does not exist. Create it first or choose another output path.")
        }
        let upscaler = try upscale.map { try Upscaler(model: $0, tile: tile, backend: backend, log: log) }
        let colorizer = try colorize.map { try Colorizer(model: $0, backend: backend, stabilize: false, saturation: saturation) }
        var image = try ImageIO.read(path: input)
        if let colorizer, !colorizeAfter { image.color = try colorizeImage(image.color, colorizer) }
        if let upscaler {
            let started = Date()
            image.color = try upscaler.upscale(image.color)
            if let alpha = image.alpha { image.alpha = try upscaler.upscaleAlpha(alpha) }
            log(String(format: "%@: %dx%d with %@ (%d× , tile %d) in %.2f s", (input as NSString).lastPathComponent,
                       image.width, image.height, upscaler.name, upscaler.scale, upscaler.tileSize, Date().timeIntervalSince(started)))
        }
        if let colorizer, colorizeAfter { image.color = try colorizeImage(image.color, colorizer) }
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
