import Engine
import Foundation
import Synchronization

/// Core ML custom layers compiled into a shared library (`--custom-layers LIB.so`): the Linux
/// counterpart of the `MLCustomLayer` classes an app ships on Apple's systems, for layers no
/// declaration can express. Loaded only from that explicit flag, never from a bundle.
///
/// The library exports a versioned C ABI (`Examples/CustomLayers/vivify_custom_layer.h`;
/// version 1; shapes are three `int64_t` C, H, W; every call but `destroy` returns 0 on
/// success, else writes a message into `error` (`error_size` bytes) and returns non-zero):
///
///     int32_t vivify_custom_layer_abi_version(void);                     // 1
///     int32_t vivify_custom_layer_supports(const char *class_name);      // 1: implemented
///     void   *vivify_custom_layer_create(const char *class_name, const char *const *parameter_names,
///                                        const double *parameter_values, int32_t parameter_count,
///                                        char *error, size_t error_size);   // NULL: failed
///     int32_t vivify_custom_layer_set_weights(void *layer, int32_t index, const float *values, int64_t count,
///                                             char *error, size_t error_size);
///     int32_t vivify_custom_layer_output_shape(void *layer, const int64_t input[3], int64_t output[3],
///                                              char *error, size_t error_size);
///     int32_t vivify_custom_layer_evaluate(void *layer, const float *input, const int64_t input_shape[3],
///                                          float *output, const int64_t output_shape[3],
///                                          char *error, size_t error_size);
///     void    vivify_custom_layer_destroy(void *layer);
///
/// The library's answers are checked, not trusted: shapes within the engine's limits (and
/// ones that fit the next layer, as any layer's), the output pre-filled with NaN and scanned
/// after `evaluate` (a value left unwritten or computed as NaN or infinity is an error naming
/// the class, the library and the first bad value), error returns reported with the
/// library's message. Layers run on the engine's reference path (the plain loops), one call
/// at a time per layer.
public final class CompiledCustomLayers: @unchecked Sendable {
    // @unchecked: every stored property is immutable after init; the C functions are
    // called by the layers, each under its own lock.
    /// The ABI version this build speaks.
    public static let abiVersion: Int32 = 1

    typealias VersionFunction = @convention(c) () -> Int32
    typealias SupportsFunction = @convention(c) (UnsafePointer<CChar>?) -> Int32
    typealias CreateFunction = @convention(c) (UnsafePointer<CChar>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Double>?, Int32,
                                               UnsafeMutablePointer<CChar>?, Int) -> UnsafeMutableRawPointer?
    typealias SetWeightsFunction = @convention(c) (UnsafeMutableRawPointer?, Int32, UnsafePointer<Float>?, Int64,
                                                   UnsafeMutablePointer<CChar>?, Int) -> Int32
    typealias OutputShapeFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<Int64>?, UnsafeMutablePointer<Int64>?,
                                                    UnsafeMutablePointer<CChar>?, Int) -> Int32
    typealias EvaluateFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<Float>?, UnsafePointer<Int64>?,
                                                 UnsafeMutablePointer<Float>?, UnsafePointer<Int64>?, UnsafeMutablePointer<CChar>?, Int) -> Int32
    typealias DestroyFunction = @convention(c) (UnsafeMutableRawPointer?) -> Void

    /// The library's path, for messages.
    public let path: String
    /// The `dlopen` handle, kept open as long as this object (and every layer made from it).
    nonisolated(unsafe) private let handle: UnsafeMutableRawPointer
    let supportsFunction: SupportsFunction
    let create: CreateFunction
    let setWeights: SetWeightsFunction
    let outputShape: OutputShapeFunction
    let evaluate: EvaluateFunction
    let destroy: DestroyFunction

    /// Opens the library at `path` and checks its ABI.
    public init(path: String) throws {
        self.path = path
        guard FileManager.default.fileExists(atPath: path) else {
            throw ModelFormatError(.unreadable, "Cannot open the custom layer library '\(path)': no such file. Build it (see README, \"Compiled custom layers\") and pass its path to --custom-layers.")
        }
        // A path with a slash, so dlopen never searches the library path for it.
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard let handle = dlopen(absolute, RTLD_NOW | RTLD_LOCAL) else {
            let why = dlerror().map { String(cString: $0) } ?? "unknown reason"
            throw ModelFormatError(.unreadable, "Cannot load the custom layer library '\(path)': \(why). Pass a shared library built for this machine (cc -shared -fPIC).")
        }
        func symbol<T>(_ name: String, as: T.Type) throws -> T {
            guard let s = dlsym(handle, name) else {
                dlclose(handle)
                throw ModelFormatError(.unsupported, "'\(path)' is not a Vivify custom layer library: it does not export \(name). Export the functions of vivify_custom_layer.h (ABI version \(Self.abiVersion)).")
            }
            return unsafeBitCast(s, to: T.self)
        }
        let version = try symbol("vivify_custom_layer_abi_version", as: VersionFunction.self)()
        guard version == Self.abiVersion else {
            dlclose(handle)
            throw ModelFormatError(.unsupported, "The custom layer library '\(path)' speaks ABI version \(version); this Vivify speaks version \(Self.abiVersion). Rebuild it against this Vivify's vivify_custom_layer.h.")
        }
        supportsFunction = try symbol("vivify_custom_layer_supports", as: SupportsFunction.self)
        create = try symbol("vivify_custom_layer_create", as: CreateFunction.self)
        setWeights = try symbol("vivify_custom_layer_set_weights", as: SetWeightsFunction.self)
        outputShape = try symbol("vivify_custom_layer_output_shape", as: OutputShapeFunction.self)
        evaluate = try symbol("vivify_custom_layer_evaluate", as: EvaluateFunction.self)
        destroy = try symbol("vivify_custom_layer_destroy", as: DestroyFunction.self)
        self.handle = handle
    }

    deinit { dlclose(handle) }

    /// Whether the library implements `className`.
    public func supports(_ className: String) -> Bool { supportsFunction(className) == 1 }

    /// The library's error text from a buffer it wrote (bounded, NUL forced).
    static func message(_ buffer: [CChar]) -> String {
        var b = buffer
        b[b.count - 1] = 0
        let text = String(cString: b).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "no message" : String(text.prefix(300))
    }

    /// One layer of class `className` with its parameters and weights.
    public func instantiate(className: String, layer: String, parameters: [String: Double], weights: [[Float]]) throws -> CompiledCustomLayer {
        var error = [CChar](repeating: 0, count: 512)
        let names = parameters.keys.sorted()
        let values = names.map { parameters[$0]! }
        let cNames = names.map { strdup($0) }
        defer { cNames.forEach { free($0) } }
        let pointers: [UnsafePointer<CChar>?] = cNames.map { UnsafePointer($0) }
        let instance = pointers.withUnsafeBufferPointer { p in
            values.withUnsafeBufferPointer { v in create(className, p.baseAddress, v.baseAddress, Int32(names.count), &error, error.count) }
        }
        guard let instance else {
            throw ModelFormatError(.unsupported, "The custom layer library '\(path)' could not make layer '\(layer)' of class '\(className)': \(Self.message(error)).")
        }
        let made = CompiledCustomLayer(library: self, instance: instance, className: className)
        for (k, w) in weights.enumerated() {
            let rc = w.withUnsafeBufferPointer { setWeights(instance, Int32(k), $0.baseAddress, Int64(w.count), &error, error.count) }
            guard rc == 0 else {
                throw ModelFormatError(.unsupported, "The custom layer library '\(path)' refused weights[\(k)] (\(w.count) values) of layer '\(layer)' (class '\(className)'): \(Self.message(error)).")
            }
        }
        return made
    }

    // MARK: the library named by --custom-layers

    private static let chosen = Mutex<(path: String?, loaded: CompiledCustomLayers?)>((nil, nil))

    /// The library `--custom-layers` names, for the models loaded from now on (nil: none).
    /// Set only from that flag (through `RunLimits`), never from a model or bundle.
    public static var libraryPath: String? {
        get { chosen.withLock { $0.path } }
        set { chosen.withLock { if $0.path != newValue { $0 = (newValue, nil) } } }
    }

    /// The library `libraryPath` names, opened on first use; nil when none is named.
    public static func active() throws -> CompiledCustomLayers? {
        try chosen.withLock { state in
            guard let path = state.path else { return nil }
            if let loaded = state.loaded { return loaded }
            let library = try CompiledCustomLayers(path: path)
            state.loaded = library
            return library
        }
    }
}

/// One layer made by a custom layer library: the engine's external kernel for it.
public final class CompiledCustomLayer: ExternalKernel, @unchecked Sendable {
    // @unchecked: the C instance is only touched under `lock`, one call at a time.
    let library: CompiledCustomLayers
    nonisolated(unsafe) let instance: UnsafeMutableRawPointer
    let className: String
    private let lock = NSLock()

    init(library: CompiledCustomLayers, instance: UnsafeMutableRawPointer, className: String) {
        self.library = library
        self.instance = instance
        self.className = className
    }

    deinit { library.destroy(instance) }

    public var label: String { "class '\(className)' of the custom layer library '\(library.path)'" }

    public func outputShape(for input: Shape) throws -> Shape {
        var error = [CChar](repeating: 0, count: 512)
        let i: [Int64] = [Int64(input.c), Int64(input.h), Int64(input.w)]
        var o: [Int64] = [-1, -1, -1]
        let rc = lock.withLock { library.outputShape(instance, i, &o, &error, error.count) }
        guard rc == 0 else {
            throw EngineError(.invalidGraph, "\(label) gives no output shape for input \(input): \(CompiledCustomLayers.message(error))")
        }
        let limit = Int64(ModelLimits.maxDimension)
        guard o.allSatisfy({ $0 > 0 && $0 <= limit }) else {
            throw EngineError(.invalidGraph, "\(label) answers output shape \(o.map(String.init).joined(separator: "x")) for input \(input), not a shape of 1 to \(limit) in each dimension; the library's output_shape is wrong")
        }
        return Shape(c: Int(o[0]), h: Int(o[1]), w: Int(o[2]))
    }

    public func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws {
        // NaN everywhere first: a value the library leaves unwritten is found below.
        y.update(repeating: .nan)
        var error = [CChar](repeating: 0, count: 512)
        let si: [Int64] = [Int64(s.c), Int64(s.h), Int64(s.w)], so: [Int64] = [Int64(o.c), Int64(o.h), Int64(o.w)]
        let rc = lock.withLock { library.evaluate(instance, x.baseAddress, si, y.baseAddress, so, &error, error.count) }
        guard rc == 0 else {
            throw EngineError(.invalidGraph, "\(label) failed on a \(s) input: \(CompiledCustomLayers.message(error)).")
        }
        if let bad = firstNonFinite(UnsafeBufferPointer(y)) {
            let (c, r) = (bad / (o.h * o.w), bad % (o.h * o.w))
            throw EngineError(.nonFiniteOutput, "\(label) gave \(y[bad]) at channel \(c), row \(r / o.w), column \(r % o.w) of its \(o) output (a value it computed as NaN or infinity, or left unwritten). Fix the library's evaluate.")
        }
    }
}
