// The chapter's two custom layers (see style_layers.c) in Swift, exported with @_cdecl: the
// same C ABI (vivify_custom_layer.h, version 2: with each layer's geometry, so the network
// runs in tiles), no C compiler needed.
// Build: scripts/build-custom-layer-examples OUTDIR (swiftc -emit-library -parse-as-library -O).

#if canImport(Glibc)
import Glibc
#endif

/// One layer: the class and its crop.
final class StyleLayer {
    let rescale: Bool
    let crop: Int

    init(rescale: Bool, crop: Int) {
        self.rescale = rescale
        self.crop = crop
    }
}

/// Copies `text` into the caller's error buffer, NUL-terminated.
func report(_ text: String, _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let error, size > 0 else { return 1 }
    let bytes = Array(text.utf8.prefix(size - 1))
    for (i, b) in bytes.enumerated() { error[i] = CChar(bitPattern: b) }
    error[bytes.count] = 0
    return 1
}

@_cdecl("vivify_custom_layer_abi_version")
public func abiVersion() -> Int32 { 2 }

@_cdecl("vivify_custom_layer_supports")
public func supports(_ name: UnsafePointer<CChar>?) -> Int32 {
    guard let name else { return 0 }
    return ["ResCropBlockLambda", "RescaleOutputLambda"].contains(String(cString: name)) ? 1 : 0
}

@_cdecl("vivify_custom_layer_create")
public func create(_ name: UnsafePointer<CChar>?, _ names: UnsafePointer<UnsafePointer<CChar>?>?, _ values: UnsafePointer<Double>?,
                   _ count: Int32, _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> UnsafeMutableRawPointer? {
    guard let name else { return nil }
    var crop = 2
    for i in 0..<Int(count) where names?[i].map({ String(cString: $0) }) == "crop" { crop = Int(values?[i] ?? 2) }
    guard crop >= 0 else {
        _ = report("crop \(crop) is negative", error, size)
        return nil
    }
    return Unmanaged.passRetained(StyleLayer(rescale: String(cString: name) == "RescaleOutputLambda", crop: crop)).toOpaque()
}

@_cdecl("vivify_custom_layer_set_weights")
public func setWeights(_ layer: UnsafeMutableRawPointer?, _ index: Int32, _ values: UnsafePointer<Float>?, _ count: Int64,
                       _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    report("these layers take no weights (weights[\(index)] given)", error, size)
}

@_cdecl("vivify_custom_layer_output_shape")
public func outputShape(_ layer: UnsafeMutableRawPointer?, _ input: UnsafePointer<Int64>?, _ output: UnsafeMutablePointer<Int64>?,
                        _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let layer, let input, let output else { return report("missing argument", error, size) }
    let l = Unmanaged<StyleLayer>.fromOpaque(layer).takeUnretainedValue()
    let k = Int64(l.rescale ? 0 : l.crop)
    guard input[1] > 2 * k, input[2] > 2 * k else { return report("a \(input[2])x\(input[1]) picture is too small to crop \(k)", error, size) }
    output[0] = input[0]
    output[1] = input[1] - 2 * k
    output[2] = input[2] - 2 * k
    return 0
}

@_cdecl("vivify_custom_layer_evaluate")
public func evaluate(_ layer: UnsafeMutableRawPointer?, _ x: UnsafePointer<Float>?, _ s: UnsafePointer<Int64>?,
                     _ y: UnsafeMutablePointer<Float>?, _ o: UnsafePointer<Int64>?,
                     _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let layer, let x, let s, let y, let o else { return report("missing argument", error, size) }
    let l = Unmanaged<StyleLayer>.fromOpaque(layer).takeUnretainedValue()
    if l.rescale {
        for i in 0..<Int(s[0] * s[1] * s[2]) { y[i] = (x[i] + 1) * 127.5 }
        return 0
    }
    let (c, h, w, ih, iw, k) = (Int(o[0]), Int(o[1]), Int(o[2]), Int(s[1]), Int(s[2]), l.crop)
    for ch in 0..<c {
        for r in 0..<h {
            for col in 0..<w { y[(ch * h + r) * w + col] = x[(ch * ih + r + k) * iw + col + k] }
        }
    }
    return 0
}

/// vivify_layer_geometry is seven int32_t: local, scale, top, left, bottom, right, radius.
@_cdecl("vivify_custom_layer_geometry")
public func geometry(_ layer: UnsafeMutableRawPointer?, _ geometry: UnsafeMutablePointer<Int32>?,
                     _ error: UnsafeMutablePointer<CChar>?, _ size: Int) -> Int32 {
    guard let layer, let geometry else { return report("missing argument", error, size) }
    let l = Unmanaged<StyleLayer>.fromOpaque(layer).takeUnretainedValue()
    // The crop removes its amount from every side and reads only the position it copies; the
    // rescale is pointwise.
    let k = Int32(l.rescale ? 0 : l.crop)
    for (i, v) in [1, 1, k, k, k, k, 0].enumerated() { geometry[i] = v }
    return 0
}

@_cdecl("vivify_custom_layer_destroy")
public func destroy(_ layer: UnsafeMutableRawPointer?) {
    guard let layer else { return }
    Unmanaged<StyleLayer>.fromOpaque(layer).release()
}
