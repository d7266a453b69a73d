// vivify-gpucheck: the Vulkan backend alone (engine, Vulkan backend, model importers; no
// FFmpeg, no oneDNN), small enough to carry to a GPU machine (scripts/gpucheck-bundle). For
// every ncnn model (.param with its .bin) under a folder it prints, on the Vulkan device the
// backend opens (VIVIFY_VULKAN_DEVICE=N picks another):
//   - parity: the largest |Vulkan − reference| on one seeded tile, in each precision (fp32,
//     and fp16 storage with fp32 arithmetic), against the plain Swift reference backend;
//   - speed: milliseconds per frame at each size and precision, run in tiles as vivify runs
//     upscalers (TiledRunner, the backend's automatic tile), after one untimed warm-up frame;
//   - for a model with no integer scale (the colorizer), parity on a --parity-tile square and
//     milliseconds per whole run at each size instead (median of --runs), at the size its Input
//     layer declares where it declares one;
//   - ncnn-Vulkan's time on the same file, device and sizes (whole frames, fp32 and fp16, the
//     median of --runs after a warm-up, upload and download included) when the `ncnn` Python
//     package is importable (`python3`, or --python), and our time over ncnn's fp32 time;
//   - with --profile, where the time goes: one tile of the largest size (a whole run for the
//     colorizer) timed layer by layer with the device's timestamps, the slowest layers and
//     the time per shader.
// Exit status: 0 when every model ran and kept parity within --tolerance, 1 when one did not,
// 64 for bad arguments.
import Engine
import EngineVulkan
import Foundation
import ModelFormats

struct Options {
    var folder = ""
    var sizes: [(w: Int, h: Int)] = [(640, 360), (1920, 1080)]
    var parityTile = 64
    var runs = 1
    var tile: Int?
    var tolerance: Float = 1e-3
    var fp16Tolerance: Float = 1e-2
    var precisions: [VulkanPrecision] = [.fp32, .fp16]
    var python: String? = "python3"
    var profile = false

    static let usage = """
        usage: vivify-gpucheck MODELS_DIR [--sizes WxH,WxH] [--parity-tile N] [--runs N] [--tile N] [--tolerance E] [--fp16-tolerance E] [--precisions P,P]
          MODELS_DIR      a folder searched for ncnn models (NAME.param with NAME.bin beside it)
          --sizes         frame sizes to time (default 640x360,1920x1080)
          --parity-tile   side of the seeded tile compared with the reference backend (default 64)
          --runs          timed frames per size after one warm-up (default 1)
          --tile          tile size in input pixels (default: the backend's automatic tile)
          --tolerance     largest |Vulkan − reference| / max(1, max |reference|) accepted in fp32 (default 1e-3)
          --fp16-tolerance  the same in fp16 storage (default 1e-2)
          --precisions    the precisions checked and timed (default fp32,fp16)
          --python P      the Python that times ncnn-Vulkan beside ours (default python3)
          --no-ncnn       do not time ncnn-Vulkan
          --profile       also time one tile of the largest size layer by layer (device timestamps)
        """

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let v = rest.popFirst() else { throw UsageError("\(flag) needs a value.") }
            return v
        }
        func positive(_ flag: String) throws -> Int {
            let text = try value(flag)
            guard let n = Int(text), n > 0 else { throw UsageError("'\(flag) \(text)' is not a positive whole number.") }
            return n
        }
        while let a = rest.popFirst() {
            switch a {
            case "--sizes":
                let text = try value(a)
                sizes = try text.split(separator: ",").map { part in
                    let wh = part.split(separator: "x").compactMap { Int($0) }
                    guard wh.count == 2, wh[0] > 0, wh[1] > 0 else { throw UsageError("'--sizes \(text)': '\(part)' is not WxH, e.g. 640x360.") }
                    // As vivify's pixel limit: 8K UHD and a little more, no side past 16384.
                    guard wh[0] <= 16384, wh[1] <= 16384, wh[0] * wh[1] <= 40_000_000 else {
                        throw UsageError("'--sizes \(text)': '\(part)' is larger than this check takes (at most 40 megapixels, 16384 a side).")
                    }
                    return (wh[0], wh[1])
                }
            case "--parity-tile":
                parityTile = try positive(a)
                // The reference backend runs it: kept to what it does in seconds.
                guard parityTile <= 1024 else { throw UsageError("'--parity-tile \(parityTile)' is larger than 1024. Use a tile of at most 1024 pixels.") }
            case "--runs": runs = try positive(a)
            case "--tile":
                tile = try positive(a)
                guard let t = tile, t >= 8, t <= 4096 else { throw UsageError("'--tile \(tile ?? 0)' is out of range. Use a tile size from 8 to 4096 pixels.") }
            case "--tolerance":
                let text = try value(a)
                guard let e = Float(text), e > 0 else { throw UsageError("'--tolerance \(text)' is not a positive number.") }
                tolerance = e
            case "--fp16-tolerance":
                let text = try value(a)
                guard let e = Float(text), e > 0 else { throw UsageError("'--fp16-tolerance \(text)' is not a positive number.") }
                fp16Tolerance = e
            case "--precisions":
                let text = try value(a)
                precisions = try text.split(separator: ",").map { part in
                    guard let p = VulkanPrecision(rawValue: String(part)) else { throw UsageError("'--precisions \(text)': '\(part)' is not fp32 or fp16.") }
                    return p
                }
                guard !precisions.isEmpty else { throw UsageError("'--precisions \(text)' names no precision. Use fp32, fp16 or fp32,fp16.") }
            case "--python": python = try value(a)
            case "--no-ncnn": python = nil
            case "--profile": profile = true
            case "-h", "--help": throw UsageError("")
            default:
                guard !a.hasPrefix("-"), folder.isEmpty else { throw UsageError("Unknown argument '\(a)'.") }
                folder = a
            }
        }
        guard !folder.isEmpty else { throw UsageError("Name a folder of ncnn models.") }
    }
}

struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Seeded values in [0, 1): pictures are in that range.
struct Seeded {
    var state: UInt64
    mutating func fill(_ n: Int) -> [Float] {
        (0..<n).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Float(state >> 40) / Float(1 << 24)
        }
    }
}

/// Every NAME.param under `folder` with NAME.bin beside it, sorted.
func models(in folder: String) -> [String] {
    guard let walk = FileManager.default.enumerator(atPath: folder) else { return [] }
    var found: [String] = []
    while let item = walk.nextObject() as? String {
        guard item.hasSuffix(".param") else { continue }
        let path = (folder as NSString).appendingPathComponent(item)
        if FileManager.default.fileExists(atPath: String(path.dropLast(6)) + ".bin") { found.append(path) }
    }
    return found.sorted()
}

/// One line on standard output at once (a slow device shows progress model by model).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func check(_ path: String, backends: [VulkanBackend], options: Options) throws -> Bool {
    let backend = backends[0]
    let graph = try NCNNImporter.load(paramPath: path)
    let channels = graph.inputChannels ?? 3
    let spec: TilingSpec
    do { spec = try TilingSpec.inferred(for: graph) } catch let e as EngineError where e.kind == .unsupported {
        // Not an upscaler (the colorizer: 224×224 in, 56×56 out): run whole at each size.
        // vivify runs the colorizer at the size its Input layer declares (224×224: the frame
        // is squashed to it), at which the model's skip connections line up; frame sizes
        // that are not multiples of its stride cannot run whole.
        if let declared = declaredInput(path) {
            say("\(path): no integer scale, run whole at its declared input \(declared.w)x\(declared.h)")
            var whole = options
            whole.sizes = [declared]
            return try checkWhole(path, graph, channels: channels, backends: backends, options: whole)
        }
        say("\(path): no integer scale, run whole at each size")
        return try checkWhole(path, graph, channels: channels, backends: backends, options: options)
    }
    // A model whose output has other channels than its input (the built-in colour guide: 8
    // in, 3 out) is no upscaler for the tiler: run it whole at each size.
    let probe = 2 * spec.padding + 8
    if let out = try graph.inferShapes(input: Shape(c: channels, h: probe, w: probe))[graph.output], out.c != channels {
        say("\(path): \(channels) channels in, \(out.c) out, run whole at each size")
        return try checkWhole(path, graph, channels: channels, backends: backends, options: options)
    }
    say("\(path): scale \(spec.scale), border \(spec.padding)")
    // Parity on one tile with its border, as the tiler feeds it.
    let side = graph.needsWholeFrame ? options.parityTile : options.parityTile + 2 * spec.padding
    var seeded = Seeded(state: 7)
    let ok = try checkParity(graph, Shape(c: channels, h: side, w: side), "tile", backends: backends, options: options, seeded: &seeded)
    // Speed in tiles, as vivify runs the model; ncnn's time is set beside our fp32 time.
    var ours: [String: Double] = [:]
    for backend in backends {
        let runner = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: options.tile)
        for (w, h) in options.sizes {
            let input = seeded.fill(channels * h * w)
            var output = [Float](repeating: 0, count: channels * h * spec.scale * w * spec.scale)
            func frame() throws {
                try input.withUnsafeBufferPointer { i in
                    try output.withUnsafeMutableBufferPointer { o in try runner.run(input: i, channels: channels, height: h, width: w, output: o) }
                }
            }
            try frame()
            // The median frame, as ncnn's time is taken (one slow frame on a shared machine
            // moved a mean of three by half).
            var times: [Double] = []
            for _ in 0..<options.runs {
                let start = DispatchTime.now().uptimeNanoseconds
                try frame()
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            times.sort()
            let ms = times[times.count / 2]
            let (th, tw) = runner.tileInterior(height: h, width: w)
            let spread = times.count > 2 ? String(format: ", %.1f–%.1f", times[0], times[times.count - 1]) : ""
            say("  \(w)x\(h): \(String(format: "%.1f", ms)) ms per frame, median of \(options.runs)\(spread) (\(backend.precision), tiles of \(tw)x\(th))")
            ours["\(w)x\(h) \(backend.precision)"] = ms
        }
    }
    if let python = options.python, NCNNPeer.usable {
        NCNNPeer.time(path, channels: channels, python: python, device: backend.deviceName, options: options, ours: ours)
    }
    if options.profile, let (w, h) = options.sizes.last {
        let (th, tw) = try TiledRunner(graph: graph, spec: spec, backend: backend, tileSize: options.tile).tileInterior(height: h, width: w)
        let shape = graph.needsWholeFrame ? Shape(c: channels, h: h, w: w) : Shape(c: channels, h: th + 2 * spec.padding, w: tw + 2 * spec.padding)
        try profile(graph, shape, backends: backends, seeded: &seeded)
    }
    return ok
}

/// Each backend's time per layer on one seeded input of `shape` (prepared with profiling, run
/// once to warm up and once timed), printed as `VulkanLayerTime.summary` has it.
func profile(_ graph: Graph, _ shape: Shape, backends: [VulkanBackend], seeded: inout Seeded) throws {
    let x = Tensor(shape: shape, data: seeded.fill(shape.count))
    for backend in backends {
        guard backend.canProfile else {
            say("  profile: not timed, the device's compute queue writes no timestamps")
            return
        }
        backend.profiling = true
        defer { backend.profiling = false }
        let prepared = try backend.prepare(graph, input: shape)
        _ = try prepared.run(x)
        _ = try prepared.run(x)
        guard let times = (prepared as? VulkanProfiledGraph)?.layerTimes, !times.isEmpty else {
            say("  profile \(backend.precision): no layer times came back")
            continue
        }
        say("  profile \(backend.precision), one \(shape.w)x\(shape.h) input:")
        for line in VulkanLayerTime.summary(times, top: 12) { say("    " + line) }
    }
}

/// The width and height an ncnn model's Input layer declares (`0=W 1=H`), if it does.
func declaredInput(_ param: String) -> (w: Int, h: Int)? {
    guard let text = try? String(contentsOfFile: param, encoding: .utf8) else { return nil }
    for line in text.split(separator: "\n") {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.first == "Input" else { continue }
        var w: Int?, h: Int?
        for f in fields.dropFirst(4) {
            if f.hasPrefix("0=") { w = Int(f.dropFirst(2)) }
            if f.hasPrefix("1=") { h = Int(f.dropFirst(2)) }
        }
        if let w, let h, w > 0, h > 0 { return (w, h) }
        return nil
    }
    return nil
}

/// Each backend against the reference backend on one seeded input of `shape` (`what`: "tile"
/// or "whole"), printed; true when every one is within its precision's tolerance, relative to
/// max(1, max |reference|), with the reference's shape and only finite values.
func checkParity(_ graph: Graph, _ shape: Shape, _ what: String, backends: [VulkanBackend], options: Options, seeded: inout Seeded) throws -> Bool {
    let x = Tensor(shape: shape, data: seeded.fill(shape.count))
    let want = try ReferenceBackend(runsPasses: false).prepare(graph, input: shape).run(x)
    var ok = true
    for backend in backends {
        let got = try backend.prepare(graph, input: shape).run(x)
        let worst = zip(got.data, want.data).map { abs($0 - $1) }.max() ?? .infinity
        let scale = max(1, want.data.map(abs).max() ?? 0)
        let tolerance = backend.precision == .fp16 ? options.fp16Tolerance : options.tolerance
        let within = got.shape == want.shape && !got.data.contains { !$0.isFinite } && worst <= tolerance * scale
        ok = ok && within
        say("  parity \(backend.precision), \(shape.w)x\(shape.h) \(what) against the reference backend: max |error| \(String(format: "%.3g", worst)) "
            + "(max |value| \(String(format: "%.3g", scale))) \(within ? "ok" : "FAILED (tolerance \(tolerance) relative)")")
    }
    return ok
}

/// A model that is not an upscaler (no integer scale: the colorizer), checked and timed
/// whole: parity on a seeded --parity-tile square, then milliseconds per run at each size
/// (prepared once, one untimed warm-up; each size rounded up to what the graph can run,
/// `runnableSize`), and ncnn-Vulkan's time on the same file and sizes.
func checkWhole(_ path: String, _ graph: Graph, channels: Int, backends: [VulkanBackend], options given: Options) throws -> Bool {
    var options = given
    options.sizes = given.sizes.map { runnableSize(graph, channels: channels, $0) }
    var seeded = Seeded(state: 7)
    let ok = try checkParity(graph, Shape(c: channels, h: options.parityTile, w: options.parityTile), "whole", backends: backends, options: options, seeded: &seeded)
    var ours: [String: Double] = [:]
    for backend in backends {
        for (w, h) in options.sizes {
            let input = Tensor(shape: Shape(c: channels, h: h, w: w), data: seeded.fill(channels * h * w))
            let prepared = try backend.prepare(graph, input: input.shape)
            _ = try prepared.run(input)
            var times: [Double] = []
            for _ in 0..<options.runs {
                let start = DispatchTime.now().uptimeNanoseconds
                _ = try prepared.run(input)
                times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
            }
            let median = times.sorted()[times.count / 2]
            say("  \(w)x\(h): \(String(format: "%.1f", median)) ms per run, median of \(options.runs) (\(backend.precision), whole)")
            ours["\(w)x\(h) \(backend.precision)"] = median
        }
    }
    if let python = options.python, NCNNPeer.usable {
        NCNNPeer.time(path, channels: channels, python: python, device: backends[0].deviceName, options: options, ours: ours)
    }
    if options.profile, let (w, h) = options.sizes.last {
        try profile(graph, Shape(c: channels, h: h, w: w), backends: backends, seeded: &seeded)
    }
    return ok
}

/// `size`, or the nearest larger one whose sides are multiples of the smallest power of two
/// (up to 64) at which the graph's shapes line up: a model run whole with skip connections
/// across strided stages (the colour guide) needs sides it can halve and double back.
func runnableSize(_ graph: Graph, channels: Int, _ size: (w: Int, h: Int)) -> (w: Int, h: Int) {
    for m in [1, 2, 4, 8, 16, 32, 64] {
        let w = (size.w + m - 1) / m * m, h = (size.h + m - 1) / m * m
        if (try? graph.inferShapes(input: Shape(c: channels, h: h, w: w))) != nil { return (w, h) }
    }
    return size
}

/// ncnn-Vulkan, the peer, timed on the same model file and device through its Python package.
enum NCNNPeer {
    /// False once ncnn was found missing (said once, not per model).
    nonisolated(unsafe) static var usable = true

    /// Prints `(w)x(h) fp32|fp16 MS` per size, or exits 3 when ncnn cannot be imported and 4
    /// when it sees no device of that name. Arguments: param, device name, runs, input channels, sizes.
    static let script = """
        import sys, time, statistics
        try:
            import numpy as np, ncnn
        except Exception as e:
            print(e); sys.exit(3)
        param, device, runs, channels, sizes = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
        gpus = [ncnn.get_gpu_info(i).device_name() for i in range(ncnn.get_gpu_count())]
        if device not in gpus:
            print("ncnn-Vulkan sees " + (", ".join(gpus) or "no device")); sys.exit(4)
        lines = [l.split() for l in open(param).read().splitlines()[2:] if l.strip()]
        first = lines[0]
        inp = first[4 + int(first[2])] if first[0] == "Input" else first[1]
        last = lines[-1]
        out = last[4 + int(last[2]) + int(last[3]) - 1]
        for fp16 in (False, True):
            net = ncnn.Net()
            net.opt.use_vulkan_compute = True
            net.set_vulkan_device(gpus.index(device))
            net.opt.use_fp16_storage = net.opt.use_fp16_packed = net.opt.use_fp16_arithmetic = fp16
            net.load_param(param)
            net.load_model(param[:-6] + ".bin")
            for size in sizes:
                w, h = map(int, size.split("x"))
                x = np.random.RandomState(0).rand(channels, h, w).astype(np.float32)
                times = []
                for i in range(runs + 1):
                    t = time.perf_counter()
                    ex = net.create_extractor()
                    ex.input(inp, ncnn.Mat(x))
                    rc, y = ex.extract(out)
                    y = np.array(y)
                    times.append(time.perf_counter() - t)
                    if rc != 0:
                        print("extract failed", rc); sys.exit(5)
                print(size, "fp16" if fp16 else "fp32", "%.3f" % (1000 * statistics.median(times[1:])), flush=True)
                del ex
            net.clear()
        """

    static func time(_ param: String, channels: Int, python: String, device: String, options: Options, ours: [String: Double]) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let sizes = options.sizes.map { "\($0.w)x\($0.h)" }
        process.arguments = [python, "-c", script, param, device, String(options.runs), String(channels)] + sizes
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            say("  ncnn-Vulkan: could not run '\(python)' (\(error)); --python names another, --no-ncnn skips it")
            usable = false
            return
        }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        if process.terminationReason == .uncaughtSignal {
            say("  ncnn-Vulkan: crashed on this model (signal \(process.terminationStatus)); it does so on frames smaller than the model's own border")
            return
        }
        switch process.terminationStatus {
        case 0:
            var times: [String: [String: Double]] = [:]
            for line in text.split(separator: "\n") {
                let f = line.split(separator: " ")
                if f.count == 3, let ms = Double(f[2]) { times[String(f[0]), default: [:]][String(f[1])] = ms }
            }
            for size in sizes {
                guard let fp32 = times[size]?["fp32"], let fp16 = times[size]?["fp16"] else { continue }
                var ratio = ours["\(size) fp32"].map { String(format: "; ours %.2fx its fp32 time", $0 / fp32) } ?? ""
                if let half = ours["\(size) fp16"] { ratio += String(format: ", ours fp16 %.2fx its fp16 time", half / fp16) }
                say("  ncnn-Vulkan \(size): \(String(format: "%.1f", fp32)) ms fp32, \(String(format: "%.1f", fp16)) ms fp16 (whole frame\(ratio))")
            }
        case 3, 126, 127:
            say("  ncnn-Vulkan: not timed, the ncnn Python package is not importable by '\(python)' (pip install ncnn; --python names another Python)")
            usable = false
        case 4:
            say("  ncnn-Vulkan: not timed, \(text.trimmingCharacters(in: .whitespacesAndNewlines)), not '\(device)'")
            usable = false
        default:
            say("  ncnn-Vulkan: failed on this model (exit \(process.terminationStatus)): \(text.trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}

let options: Options
do { options = try Options(Array(CommandLine.arguments.dropFirst())) } catch let e as UsageError {
    if !e.message.isEmpty { FileHandle.standardError.write(Data("vivify-gpucheck: \(e.message)\n".utf8)) }
    FileHandle.standardError.write(Data((Options.usage + "\n").utf8))
    exit(e.message.isEmpty ? 0 : 64)
}
var isFolder: ObjCBool = false
guard FileManager.default.fileExists(atPath: options.folder, isDirectory: &isFolder), isFolder.boolValue else {
    FileHandle.standardError.write(Data("vivify-gpucheck: '\(options.folder)' is not a folder. Name a folder of ncnn models (NAME.param with NAME.bin).\n".utf8))
    exit(66)
}
let found = models(in: options.folder)
guard !found.isEmpty else {
    FileHandle.standardError.write(Data("vivify-gpucheck: no ncnn model (NAME.param with NAME.bin) under '\(options.folder)'. Name a folder that holds some.\n".utf8))
    exit(64)
}
let backends: [VulkanBackend]
do { backends = try options.precisions.map { try VulkanBackend(precision: $0) } } catch {
    // No device is no model's failure: 64 for a VIVIFY_VULKAN_DEVICE that names none, 69
    // for no driver or device (as vivify exits). The way around it that vivify adds (the CPU
    // backend, `EngineError.fallback`) is no way to check a GPU: not said here.
    let e = error as? EngineError
    FileHandle.standardError.write(Data("vivify-gpucheck: \(e?.message ?? "\(error)")\n".utf8))
    exit(e?.kind == .invalidSetting ? 64 : 69)
}
let backend = backends[0]
say("device: \(backend.deviceName) (\(backend.isCPU ? "cpu" : "gpu")), automatic tile up to \(backend.preferredTile) px")
for b in backends { if let note = b.precisionNote { say("note: \(note)") } }
var failures = 0
for path in found {
    do {
        if try !check(path, backends: backends, options: options) { failures += 1 }
    } catch {
        failures += 1
        say("  FAILED: \((error as? EngineError)?.message ?? (error as? ModelFormatError)?.message ?? "\(error)")")
    }
}
say(failures == 0 ? "all \(found.count) model(s) ok" : "\(failures) of \(found.count) model(s) failed")
exit(failures == 0 ? 0 : 1)
