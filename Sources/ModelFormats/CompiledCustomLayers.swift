import Engine
import Foundation
import Synchronization

/// Core ML custom layers compiled into a shared library (`--custom-layers LIB.so`): the Linux
/// counterpart of the `MLCustomLayer` classes an app ships on Apple's systems, for layers no
/// declaration can express. Loaded only from that explicit flag, never from a bundle.
///
/// The library exports a versioned C ABI (`Examples/CustomLayers/vivify_custom_layer.h`;
/// version 2, version 1 still loaded; shapes are three `int64_t` C, H, W; every call but
/// `destroy` returns 0 on success, else writes a message into `error` (`error_size` bytes)
/// and returns non-zero):
///
///     int32_t vivify_custom_layer_abi_version(void);                     // 2 (or 1)
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
///     // Version 2, optional: how the layer treats positions (`ExternalGeometry`).
///     typedef struct { int32_t local, scale, top, left, bottom, right, radius; } vivify_layer_geometry;
///     int32_t vivify_custom_layer_geometry(void *layer, vivify_layer_geometry *geometry,
///                                          char *error, size_t error_size);
///
/// A layer whose library gives its geometry (`local` 1) is placed through it like the
/// engine's own layers: a graph holding it runs in tiles (with statistics passes for instance
/// normalisation). Without one (a version-1 library, no `geometry` function, or `local` 0) it
/// may look anywhere, and its graph runs on whole frames, as the log says.
///
/// The library's answers are checked, not trusted: shapes within the engine's limits (and
/// ones that fit the next layer, as any layer's), the output pre-filled with NaN and scanned
/// after `evaluate` (a value left unwritten or computed as NaN or infinity is an error naming
/// the class, the library and the first bad value), error returns reported with the
/// library's message. A geometry is checked too: its amounts within the engine's limits, every
/// output shape the library answers against the one the geometry gives, and, once per channel
/// count, the layer's own values: a pulse added to one input position may change only the
/// outputs the geometry says can see it. Layers run on the engine's reference path (the plain
/// loops), one call at a time per layer.
public final class CompiledCustomLayers: @unchecked Sendable {
    // @unchecked: every stored property is immutable after init; the C functions are
    // called by the layers, each under its own lock.
    /// The ABI version this build speaks.
    public static let abiVersion: Int32 = 2
    /// The versions it loads: 1 (no geometry: whole frames) and `abiVersion`.
    public static let loadedVersions: ClosedRange<Int32> = 1...abiVersion

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
    /// The geometry as seven `int32_t`: local, scale, top, left, bottom, right, radius (the C
    /// struct `vivify_layer_geometry`, no padding between its fields).
    typealias GeometryFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<Int32>?,
                                                 UnsafeMutablePointer<CChar>?, Int) -> Int32

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
    /// Version 2's optional `vivify_custom_layer_geometry`; nil: every layer runs whole.
    let geometryFunction: GeometryFunction?
    /// The ABI version the library speaks.
    public let version: Int32

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
        guard Self.loadedVersions.contains(version) else {
            dlclose(handle)
            throw ModelFormatError(.unsupported, "The custom layer library '\(path)' speaks ABI version \(version); this Vivify speaks versions \(Self.loadedVersions.lowerBound)–\(Self.abiVersion). Rebuild it against this Vivify's vivify_custom_layer.h (version \(Self.abiVersion)).")
        }
        self.version = version
        // Version 1 had no geometry: a function of that name in such a library is not ours.
        geometryFunction = version >= 2 ? dlsym(handle, "vivify_custom_layer_geometry").map { unsafeBitCast($0, to: GeometryFunction.self) } : nil
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
        let text = String(decoding: b.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
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
        made.geometry = try geometry(of: instance, className: className, layer: layer)
        return made
    }

    /// The geometry the library gives a layer, checked; nil when it gives none.
    func geometry(of instance: UnsafeMutableRawPointer, className: String, layer: String) throws -> ExternalGeometry? {
        guard let geometryFunction else { return nil }
        var error = [CChar](repeating: 0, count: 512)
        // local, scale, top, left, bottom, right, radius; -7 marks a field the library left.
        var g = [Int32](repeating: -7, count: 7)
        let about = "layer '\(layer)' (class '\(className)') of the custom layer library '\(path)'"
        guard geometryFunction(instance, &g, &error, error.count) == 0 else {
            throw ModelFormatError(.unsupported, "The geometry of \(about) failed: \(Self.message(error)).")
        }
        guard g[0] == 1 else {
            guard g[0] == 0 else {
                throw ModelFormatError(.unsupported, "The custom layer library '\(path)' gives layer '\(layer)' (class '\(className)') a geometry with local = \(g[0]), neither 1 (the rest describes the layer) nor 0 (it may look anywhere). Fix the library's vivify_custom_layer_geometry.")
            }
            return nil
        }
        let (scale, sides, radius) = (Int(g[1]), g[2...5].map(Int.init), Int(g[6]))
        let pad = ModelLimits.maxPad
        var wrong: [String] = []
        if !(1...ModelLimits.maxScale).contains(scale) { wrong.append("scale \(scale) (1–\(ModelLimits.maxScale))") }
        for (name, v) in zip(["top", "left", "bottom", "right"], sides) where !(-pad...pad).contains(v) { wrong.append("\(name) \(v) (−\(pad)–\(pad))") }
        if !(0...pad).contains(radius) { wrong.append("radius \(radius) (0–\(pad))") }
        guard wrong.isEmpty else {
            throw ModelFormatError(.unsupported, "The custom layer library '\(path)' gives layer '\(layer)' (class '\(className)') a geometry with \(wrong.joined(separator: ", ")) outside the ranges in brackets. Fix the library's vivify_custom_layer_geometry.")
        }
        return ExternalGeometry(scale: scale, top: sides[0], left: sides[1], bottom: sides[2], right: sides[3], radius: radius)
    }

    /// Whether a geometry is checked against the layer's values (`CompiledCustomLayer`'s
    /// pulse): off only in a test that shows what a wrong geometry the check refuses would do
    /// to tiles.
    static let checksGeometryValues = Atomic<Bool>(true)

    // MARK: the library named by --custom-layers

    /// The libraries opened so far, by path: a shared library stays loaded in the process
    /// once opened, so each is opened once (a cache, not a setting: which library a model
    /// uses is its importer's `library` argument).
    private static let opened = Mutex<[String: CompiledCustomLayers]>([:])

    /// The library at `path` (`--custom-layers`, given to the importer by the run that loads
    /// the model, never named by a model or bundle), opened on first use.
    public static func open(_ path: String) throws -> CompiledCustomLayers {
        try opened.withLock { libraries in
            if let loaded = libraries[path] { return loaded }
            let library = try CompiledCustomLayers(path: path)
            libraries[path] = library
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
    /// How the layer treats positions, as its library says (checked); nil: whole frames.
    /// Set once, before the layer is shared.
    public internal(set) var geometry: ExternalGeometry?
    /// Channel counts whose values were checked against the geometry (under `lock`).
    private var checkedChannels: Set<Int> = []

    init(library: CompiledCustomLayers, instance: UnsafeMutableRawPointer, className: String) {
        self.library = library
        self.instance = instance
        self.className = className
    }

    deinit { library.destroy(instance) }

    public var label: String { "class '\(className)' of the custom layer library '\(library.path)'" }

    public func outputShape(for input: Shape) throws -> Shape {
        let shape = try libraryShape(for: input)
        if let geometry {
            let (h, w) = geometry.outputSize(height: input.h, width: input.w)
            guard shape.h == h, shape.w == w else { throw contradiction(geometry, input, shape) }
            try checkValues(geometry, channels: input.c)
        }
        return shape
    }

    /// A geometry that gives another output size than the library's output_shape.
    private func contradiction(_ g: ExternalGeometry, _ input: Shape, _ answered: Shape) -> EngineError {
        let (h, w) = g.outputSize(height: input.h, width: input.w)
        return EngineError(.invalidGraph, "\(label) describes the layer as \(g), which makes a \(w)x\(h) output from a \(input.w)x\(input.h) input, but its output_shape answers \(answered.w)x\(answered.h): the library contradicts itself. Fix its vivify_custom_layer_geometry or its output_shape")
    }

    /// The library's output shape for `input`, within the engine's limits.
    private func libraryShape(for input: Shape) throws -> Shape {
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

    /// Checks the geometry against the layer's values once per channel count: the layer on a
    /// seeded picture, and again with one position raised in every channel, may differ only
    /// where the geometry says that position is seen (its placement, ± the radius). A layer
    /// that looks farther, or puts its values elsewhere (a crop off by one), is refused:
    /// tiles would silently differ from the whole frame.
    func checkValues(_ g: ExternalGeometry, channels: Int) throws {
        guard CompiledCustomLayers.checksGeometryValues.load(ordering: .relaxed),
              lock.withLock({ !checkedChannels.contains(channels) }) else { return }
        // A picture wide enough that the pulse's reach stays inside it and inside the output.
        let reach = max(0, [g.top, g.left, g.bottom, g.right].max()!)
        // 64 more, so that a layer that reads up to some 30 positions farther than it says is
        // caught too (beyond the few spare positions of a tile's border, that breaks tiles).
        let n = 4 * g.radius + 2 * ((reach + g.scale - 1) / g.scale) + 64, p = n / 2
        let input = Shape(c: channels, h: n, w: n)
        // Too large to probe cheaply (a very wide geometry, thousands of channels): shapes only.
        guard input.count <= 1 << 22 else { return }
        let output = try libraryShape(for: input)
        let (oh, ow) = g.outputSize(height: n, width: n)
        guard output.h == oh, output.w == ow else { throw contradiction(g, input, output) }
        guard output.count <= 1 << 24 else { return }
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        var x = (0..<input.count).map { _ -> Float in
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Float(seed >> 40) / Float(1 << 24) * 2 - 1
        }
        var a = [Float](repeating: 0, count: output.count), b = a
        try x.withUnsafeBufferPointer { xs in try a.withUnsafeMutableBufferPointer { try evaluate(xs, input, $0, output) } }
        for c in 0..<channels { x[(c * n + p) * n + p] += 1 }
        try x.withUnsafeBufferPointer { xs in try b.withUnsafeMutableBufferPointer { try evaluate(xs, input, $0, output) } }
        // The outputs that may see input position p along an axis: within s·radius + (s − 1)/2
        // of where p lies (a half-open range of positions).
        func seeing(_ before: Int) -> ClosedRange<Double> {
            let centre = Double(g.scale * p) + Double(g.scale - 1) / 2 - Double(before)
            let r = Double(g.scale * g.radius) + Double(g.scale - 1) / 2
            return (centre - r)...(centre + r)
        }
        let rows = seeing(g.top), columns = seeing(g.left)
        let largest = zip(a, b).map { abs($0 - $1) }.max() ?? 0
        for i in a.indices {
            let d = abs(a[i] - b[i])
            guard d > 1e-6 * max(1, largest) else { continue }
            let (c, r, k) = (i / (output.h * output.w), i / output.w % output.h, i % output.w)
            if !rows.contains(Double(r)) || !columns.contains(Double(k)) {
                throw EngineError(.invalidGraph, "\(label) describes the layer as \(g), but its output at channel \(c), row \(r), column \(k) of a \(output) output changes (by \(d)) when only row \(p), column \(p) of its \(input) input does, outside rows \(Int(rows.lowerBound.rounded(.up)))–\(Int(rows.upperBound)) and columns \(Int(columns.lowerBound.rounded(.up)))–\(Int(columns.upperBound)), where that geometry puts what sees it: the library's geometry is wrong (its crop amounts, scale or radius), and tiles would differ from the whole frame. Fix its vivify_custom_layer_geometry, or give local = 0 to run the layer on whole frames")
            }
        }
        lock.withLock { _ = checkedChannels.insert(channels) }
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
