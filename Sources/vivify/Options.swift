import ArgumentParser
import Foundation
import Vivify

/// `--colorize` and `--upscale` take an optional MODEL: given alone (followed by another
/// option, by a media path or by nothing) they mean the built-in models, so
/// `vivify run old.mp4 new.mp4 --colorize --upscale` works out of the box. The argument
/// parser has no optional option values, so the default is written in before parsing.
enum OptionalModelValues {
    static let defaults = ["--colorize": BuiltinModels.color, "--upscale": "2"]

    /// A value that starts with '-' and a digit (a negative number, frame or coordinate)
    /// after a long option: the parser would take `--keyframe -1=k.png` or `--index -1` for an
    /// option ("Missing value"); joined as `--index=-1`, the value reaches our own check,
    /// which names the fix.
    static func takesSignedValue(_ option: String) -> Bool {
        option.hasPrefix("--") && option.count > 2 && !option.contains("=")
    }

    static func rewrite(_ arguments: [String]) -> [String] {
        var out: [String] = []
        var skip = false
        for (i, a) in arguments.enumerated() {
            if skip { skip = false; continue }
            if a == "--" {
                out += arguments[i...]
                break
            }
            if takesSignedValue(a), i + 1 < arguments.count, startsNegativeNumber(arguments[i + 1]) {
                out.append(a + "=" + arguments[i + 1])
                skip = true
                continue
            }
            out.append(a)
            if let value = defaults[a], i + 1 == arguments.count || !isModel(arguments[i + 1], for: a) {
                out.append(value)
            }
        }
        return out
    }

    /// "-1=k.png", "-5,3=#ff0000", "-.5s=k.png": a value, not an option.
    static func startsNegativeNumber(_ value: String) -> Bool {
        guard value.hasPrefix("-"), let next = value.dropFirst().first else { return false }
        return next.isNumber || next == "."
    }

    /// Whether `value` after `option` names a model (rather than being the next argument).
    static func isModel(_ value: String, for option: String) -> Bool {
        if value.hasPrefix("-") { return false }  // another option, or "-" (standard input)
        if ModelTools.looksLikeModelFile(value) { return true }
        if option == "--upscale", Int(value) != nil { return true }
        if ModelListing.isKnownName(value) { return true }
        // A bare word that is no file (a misspelt model name) is still meant as the model, so
        // its error can suggest the right name; media paths have extensions or exist.
        return !value.contains("/") && (value as NSString).pathExtension.isEmpty && !FileManager.default.fileExists(atPath: value)
    }
}

/// What to do with an output that already exists (ffmpeg's -y and -n).
struct OverwriteOptions: ParsableArguments {
    @Flag(name: [.customShort("y"), .customLong("overwrite")], help: "Replace an existing output once the new one is complete.")
    var overwrite = false

    @Flag(name: [.customShort("n"), .customLong("no-overwrite")], help: "Leave an existing output alone and do nothing (exit 0).")
    var noOverwrite = false

    func validate() throws {
        if overwrite && noOverwrite { throw ValidationError("Pass -y (replace) or -n (skip), not both.") }
    }

    /// The rule: refuse unless -y or -n.
    var existing: ExistingOutput { overwrite ? .replace : noOverwrite ? .skip : .refuse }
}

/// The pixels-per-frame limit (`RunLimits.maxPixels`): inputs beyond it are refused from their headers,
/// and a chain whose stages would make larger frames is refused before any work.
struct LimitOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Largest frame, in pixels, to read or make (default \(RunLimits.defaultMaxPixels): 8K UHD fits).",
                               valueName: "N"))
    var maxPixels: Int?

    func validate() throws {
        if let maxPixels, maxPixels < 1 { throw ValidationError("'--max-pixels \(maxPixels)' must be at least 1.") }
    }
}

/// Network inputs (udp://, rtmp://, http://, …).
struct NetworkOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Seconds without data after which a network input ends (before its first packet: fails, exit 66).", valueName: "SECONDS"))
    var timeout: Double = 10

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("'--timeout \(timeout)' must be above 0 and at most 86400 seconds.") }
    }
}

/// Options shared by commands that read raw or y4m frames.
struct InputFormatOptions: ParsableArguments {
    @Option(help: "Input frame layout when it is not a media file: y4m, rgb24 or gray (default: y4m for '-' and .y4m).")
    var inputFormat: StreamFormat?

    @Option(help: "Frame size of raw input, as WxH (e.g. 640x360).")
    var size: String?

    @Option(help: "Frame rate of raw input, as 30, 29.97 or 30000/1001.")
    var rate: String?

    @Option(help: "YUV matrix to assume for untagged input: bt709, smpte170m (BT.601), bt470bg or bt2020nc.")
    var assumeMatrix: String?

    func validate() throws {
        if let size { _ = try frameSizeOption(size, "--size") }
        if let rate, !(Rational(parsing: rate).map(InputSettings.isPlausible(frameRate:)) ?? false) {
            throw ValidationError("'--rate \(rate)' is not a frame rate from 1/1000 to 1000 fps. Write it as 30, 29.97 or 30000/1001.")
        }
    }

    func apply(to input: inout InputSettings) {
        input.format = inputFormat
        input.rawSize = size.flatMap(FrameSize.init(parsing:))
        input.rawRate = rate.flatMap(Rational.init(parsing:))
        input.assumeMatrix = assumeMatrix
    }
}

extension StreamFormat: ExpressibleByArgument {}
extension BackendChoice: ExpressibleByArgument {}
extension PrecisionChoice: ExpressibleByArgument {}
extension RunMode: ExpressibleByArgument {}
extension LiveOutput: ExpressibleByArgument {}

/// Options of the frame-timing tracer.
struct TimingOptions: ParsableArguments {
    @Option(help: "Frame rate the budget is computed from (budget = 1000/target ms); default: the source's rate (30 for bench).")
    var targetFps: Double?

    @Option(help: "Write the frame-timing statistics as JSON to FILE (schema in the README).")
    var stats: String?

    @Option(help: "Write a Chrome trace-event file (opens in Perfetto or chrome://tracing).")
    var trace: String?

    @Option(help: "Write an SVG plot of per-frame end-to-end latency against the budget.")
    var plot: String?

    @Flag(help: "Print the frame-timing summary on stderr (always printed in live mode unless --quiet).")
    var summary = false

    func validate() throws {
        // (Written so that NaN, which every comparison refuses, is refused too.)
        if let targetFps, !(targetFps > 0 && targetFps <= 1000) {
            throw ValidationError("'--target-fps \(targetFps)' is out of range. Use a rate above 0 and up to 1000.")
        }
    }

    var outputs: TraceOutputs { TraceOutputs(stats: stats, trace: trace, plot: plot) }

    /// Whether the run is timed: a report asked for, or the summary.
    var timed: Bool { !outputs.isEmpty || summary }
}

/// `--threads N` of every command that runs a model.
struct ThreadOptions: ParsableArguments {
    @Option(help: "Threads for the models and the per-frame compute (default: all cores).")
    var threads: Int?

    func validate() throws {
        guard let threads else { return }
        guard (1...1024).contains(threads) else {
            throw ValidationError("'--threads \(threads)' is out of range. Use 1 to 1024 (default: all \(ProcessInfo.processInfo.activeProcessorCount) cores).")
        }
    }

    /// The limits of a command whose only limit is `--threads`.
    var limits: RunLimits { RunLimits(threads: self) }
}

/// `--precision` of the commands that run models.
struct PrecisionOptions: ParsableArguments {
    @Option(help: "Number format of the models' convolutions: auto (default: int8 for the upscalers whose int8 quality is measured, with their shipped calibrations, on CPUs with AVX-512 VNNI or AMX; fp32 for everything else; on --backend vulkan: fp16 storage for those upscalers on a GPU, fp32 for everything else), fp32, bf16 (CPUs with AVX-512 BF16 or AMX), fp16 (--backend vulkan: values and weights stored as half floats, arithmetic in fp32) or int8 (CPUs with AVX-512 VNNI or AMX; a calibration kept by `vivify models calibrate`, else the shipped one, else one taken on the first picture the model upscales). int8 tiles that clip are run again in fp32. An explicit choice the CPU lacks runs fp32 with a note.")
    var precision: PrecisionChoice = .auto
}

/// `--max-memory SIZE` of every command that tiles a model.
struct MemoryOptions: ParsableArguments {
    @Option(name: .customLong("max-memory"), help: ArgumentHelp("Memory the model's tiles may use, e.g. 512M or 2G (default: \(ByteSize.text(RunLimits.standardMemoryBudget)), a quarter of a discrete GPU's memory on --backend vulkan, at most 16G); smaller tiles under a smaller cap.", valueName: "SIZE"))
    var maxMemory: String?

    func validate() throws {
        if let pooling, !["tile", "whole"].contains(pooling) {
            throw ValidationError("'--pooling \(pooling)' is not a pooling. Use tile (each tile its own part, the default) or whole (the whole picture's averages).")
        }
        guard let maxMemory else { return }
        _ = try Self.bytes(maxMemory)
    }

    @Option(help: ArgumentHelp("How a model's global average poolings (squeeze-excitation: Real-CUGAN, cunet) see a picture run in tiles: tile (default: each tile its own part, as the ncnn tools; about 1.2-1.6 levels of 255 from the whole frame) or whole (the whole picture's averages, in a pass per pooling: the whole frame's result, about 3x the work).", valueName: "tile|whole"))
    var pooling: String?

    /// `--max-memory` in bytes (checked by `validate`).
    var bytes: Int? { maxMemory.flatMap(ByteSize.parse) }

    /// `--pooling whole`; nil for the default (`tile` written out too, so that a resumed job
    /// does not see a changed setting).
    var wholePicturePooling: Bool? { pooling == "whole" ? true : nil }

    /// `--max-memory`'s value in bytes, at least 64 MiB (every command that takes it).
    static func bytes(_ text: String) throws -> Int {
        guard let bytes = ByteSize.parse(text), bytes >= 64 << 20 else {
            throw ValidationError("'--max-memory \(text)' is not a size of at least 64M. Write it as 512M, 1.5G or 2G.")
        }
        return bytes
    }
}

/// Options of commands that run a model.
struct ModelOptions: ParsableArguments {
    @OptionGroup var threadOptions: ThreadOptions
    @OptionGroup var memoryOptions: MemoryOptions
    @OptionGroup var precisionOptions: PrecisionOptions

    @Option(help: "Upscale with MODEL: alone (or 2), the built-in vivify-fast-2x; else a catalog name (see `vivify models list`; fetched on first use), a .wifm bundle, or a path to an ncnn .param file with its .bin beside it.")
    var upscale: String?

    @Option(help: "Tile size in input pixels for the model (default: at most 192, the fastest measured, and within --max-memory).")
    var tile: Int?

    @Option(help: "Backend running the models: auto (default: vulkan on a discrete or integrated GPU when there is one, never lavapipe; else onednn), onednn (fast on CPUs), vulkan (Vulkan compute: a GPU, or the CPU through Mesa's lavapipe; fp32, or fp16 storage with --precision fp16 or, on a GPU, auto for the catalog upscalers; VIVIFY_VULKAN_DEVICE=N picks the device, see `vivify probe --devices`) or reference (plain Swift, slow).")
    var backend: BackendChoice = .auto

    @Option(help: "Colorize with MODEL: alone, the built-in vivify-color; else a .wifm bundle, or an ncnn .param with its .bin and .json description beside it.")
    var colorize: String?

    @Flag(help: "Upscale first, then colorize at the upscaled size (default: colorize at the source size, then upscale).")
    var colorizeAfter = false

    // Unconditional: `--saturation -1` is a value (refused by range below), not a flag.
    @Option(parsing: .unconditional, help: "Multiply the colorizer's chroma by S (default 1; 0 is grey, 1.3 more vivid); colours stay within the RGB gamut.")
    var saturation: Float = 1

    @OptionGroup var guideOptions: GuideOptions
    @OptionGroup var filterOptions: FilterOptions

    @Option(name: .customLong("custom-layers"), help: ArgumentHelp("Run Core ML custom layers that no declaration covers in this shared library (C ABI of Examples/CustomLayers/vivify_custom_layer.h, version 2 or 1), on the reference path; in tiles where the library gives each layer its geometry (version 2), else on whole frames. Only from this flag; never loaded from a model or bundle.", valueName: "LIB.so"))
    var customLayers: String?

    func validate() throws {
        _ = try filters
        if let tile, tile < 16 || tile > 4096 {
            throw ValidationError("'--tile \(tile)' is out of range. Use a tile size from 16 to 4096 pixels.")
        }
        if !Colorizer.saturationRange.contains(saturation) {
            throw ValidationError(Colorizer.saturationError(saturation))
        }
        // Said, not silently ignored.
        if saturation != 1 && colorize == nil {
            throw ValidationError("'--saturation \(saturation)' changes the colorizer's colour, but no colorizer runs. Add --colorize (or leave --saturation out).")
        }
        if !guide.isEmpty && colorize == nil {
            throw ValidationError("\(guideOptions.given) guide\(guideOptions.givenCount == 1 ? "s" : "") the colorizer, but no colorizer runs. Add --colorize.")
        }
        if colorizeAfter && (colorize == nil || upscale == nil) {
            throw ValidationError("--colorize-after orders the colorizer after the upscaler, but \(colorize == nil && upscale == nil ? "neither runs" : colorize == nil ? "no colorizer runs" : "no upscaler runs"). Give both --colorize and --upscale (or leave --colorize-after out).")
        }
        // fp16 where it cannot run is said, as PrecisionOptions says a CPU's missing
        // instructions (a bad VIVIFY_VULKAN_DEVICE is the run's to report).
        if let note = (try? backend.precisionNote(precisionOptions.precision)) ?? nil {
            Notes.once(note)
        }
    }

    /// The colorizer's guidance from these options.
    var guide: ColourGuideSpec { guideOptions.spec }

    /// The filters, placed among colorize and upscale as the command line orders them.
    var filters: [FilterStage] {
        get throws { try filterOptions.stages(colorize: colorize != nil, upscale: upscale != nil, colorizeAfter: colorizeAfter) }
    }

    /// The limits of a command with these options (threads, memory and precision) and the
    /// pixel limit.
    func limits(pixels: LimitOptions?) -> RunLimits {
        var limits = RunLimits(threads: threadOptions, memory: memoryOptions, precision: precisionOptions, pixels: pixels)
        limits.customLayers = customLayers
        return limits
    }

    /// The stages these options describe, in the order they run: colorize then upscale (the
    /// reverse with --colorize-after), each filter where it stands among them on the command
    /// line, then `resize`. A job's own options give the stabilizer, shot anchors, keyframes
    /// and resize; a picture takes the defaults.
    func stages(stabilize: Bool = true, anchorShots: Bool = true, keyframes: [Keyframe] = [], resize: FrameSize? = nil) -> [StageSpec] {
        var models: [StageSpec] = []
        if let colorize {
            var guide = guide
            guide.keyframes = keyframes
            models.append(.colorize(model: colorize, stabilize: stabilize, saturation: saturation, guide: guide, anchorShots: anchorShots))
        }
        if let upscale {
            let step = StageSpec.upscale(model: upscale, tile: tile)
            if colorizeAfter { models.insert(step, at: 0) } else { models.append(step) }
        }
        // Checked in validate().
        var stages = FilterStage.place((try? filters) ?? [], among: models, tile: tile)
        if let resize { stages.append(.resize(size: resize)) }
        return stages
    }
}

/// `--filter MODEL` (repeatable) and `--filter-strength S`: image-to-image models as stages
/// (`run`, `image`, `bench`, `plan`).
struct FilterOptions: ParsableArguments {
    @Option(name: .customLong("filter"), help: ArgumentHelp("Run the image-to-image MODEL as a stage (style transfer, denoise, deblock; 1× or N×): a .wifm, or a model file of any format Vivify reads (a Core ML model's custom layers declared in NAME.layers.json beside it). Repeatable; each filter runs where it stands among --colorize and --upscale on the command line.", valueName: "MODEL"))
    var filter: [String] = []

    @Option(name: .customLong("filter-strength"), help: ArgumentHelp("Blend each filter's output with its input: from 0 (the input) to 1 (the model's output, the default). One value for every filter, or one per --filter in order.", valueName: "S"))
    var filterStrength: [Float] = []

    /// The filters with their strengths and places. A filter's place is the number of
    /// `--colorize`/`--upscale` options before it on the command line (`arguments`), which
    /// must then name them in the chain's order.
    func stages(colorize: Bool, upscale: Bool, colorizeAfter: Bool, arguments: [String] = CommandLine.arguments) throws -> [FilterStage] {
        if filter.isEmpty {
            if !filterStrength.isEmpty { throw ValidationError("--filter-strength blends a filter's output, but no filter runs. Add --filter MODEL (or leave --filter-strength out).") }
            return []
        }
        guard filterStrength.count <= 1 || filterStrength.count == filter.count else {
            throw ValidationError("\(filterStrength.count) values of --filter-strength for \(filter.count) filters. Give one value for all, or one per --filter.")
        }
        for s in filterStrength where !FilterStage.strengthRange.contains(s) {
            throw ValidationError("'--filter-strength \(s)' is out of range. Use a value from 0 (the input) to 1 (the filter's output).")
        }
        // The model options in command-line order (up to "--").
        var order: [String] = []
        for a in arguments.dropFirst() {
            if a == "--" { break }
            let name = a.split(separator: "=", maxSplits: 1).first.map(String.init) ?? a
            if ["--filter", "--colorize", "--upscale"].contains(name) { order.append(name) }
        }
        var places: [Int]
        if order.filter({ $0 == "--filter" }).count == filter.count {
            let chain = colorize && upscale ? (colorizeAfter ? ["--upscale", "--colorize"] : ["--colorize", "--upscale"]) : []
            let named = order.filter { $0 != "--filter" }
            if !chain.isEmpty, named != chain {
                throw ValidationError("With --filter, give --colorize and --upscale in the order they run (\(chain.joined(separator: " then "))\(colorizeAfter ? ", as --colorize-after asks" : "")), so that each filter's place among them is clear; or pass --colorize-after to upscale first.")
            }
            places = []
            var seen = 0
            for name in order {
                if name == "--filter" { places.append(seen) } else { seen += 1 }
            }
        } else {
            // Not from this process's command line (a test): every filter after the models.
            places = [Int](repeating: 2, count: filter.count)
        }
        return filter.enumerated().map { k, model in
            FilterStage(model: model, strength: filterStrength.isEmpty ? 1 : filterStrength[filterStrength.count == 1 ? 0 : k], after: places[k])
        }
    }
}

/// References and hints for the colorizer (`run`, `image`, `bench`).
struct GuideOptions: ParsableArguments {
    @Option(help: ArgumentHelp("A colour photo whose colours the output takes where its content corresponds (matched by meaning, not position); repeatable. Needs --colorize.", valueName: "FILE"))
    var reference: [String] = []

    @Option(help: ArgumentHelp("A colour user hint on the first frame or picture, X,Y=#RRGGBB in pixels; spread along lightness edges; repeatable. Needs --colorize.", valueName: "X,Y=#RRGGBB"))
    var hint: [String] = []

    @Option(help: ArgumentHelp("An RGBA PNG of the first frame's size whose opaque pixels are colour hints. Needs --colorize.", valueName: "FILE.png"))
    var hints: String?

    func validate() throws {
        for h in hint where ColourHint(parsing: h) == nil { throw ValidationError(ColourHint.parseError(h)) }
    }

    /// The guidance options given, named for a message ("--reference and --hints").
    var given: String {
        let names = (reference.isEmpty ? [] : ["--reference"]) + (hint.isEmpty ? [] : ["--hint"]) + (hints == nil ? [] : ["--hints"])
        return names.count <= 1 ? names.first ?? "" : names.dropLast().joined(separator: ", ") + " and " + names.last!
    }

    /// How many kinds of guidance `given` names.
    var givenCount: Int { (reference.isEmpty ? 0 : 1) + (hint.isEmpty ? 0 : 1) + (hints == nil ? 0 : 1) }

    var spec: ColourGuideSpec {
        ColourGuideSpec(references: reference, hints: hint.compactMap(ColourHint.init(parsing:)), hintsImage: hints)
    }
}

/// The stage and encoder options of a file job, shared by `run` and `plan`.
struct JobOptions: ParsableArguments {
    @OptionGroup var overwriteOptions: OverwriteOptions
    @OptionGroup var limitOptions: LimitOptions

    @Option(help: "Resize every frame to WxH with a lanczos filter.")
    var resize: String?

    @Option(help: "Video encoder: libx264, libx265, libvpx-vp9, libsvtav1, ffv1 or mpeg4 (default: libvpx-vp9 for .webm, libx264 otherwise).")
    var codec: String?

    @Option(help: "Quality as a constant rate factor (lower is better; for mpeg4 the quantiser 1-31).")
    var crf: Double?

    @Option(help: "Encoder speed preset (x264/x265: ultrafast…veryslow; SVT-AV1: 0-13; VP9: cpu-used 0-8).")
    var preset: String?

    @Option(help: "Output pixel format, e.g. yuv420p, yuv444p (default: yuv420p; ffv1 keeps the source's).")
    var pixFmt: String?

    @Option(help: "Output frame layout when it is not a media file: y4m, rgb24 or gray (default: y4m for '-' and .y4m).")
    var outputFormat: StreamFormat?

    @Flag(help: "Drop audio and subtitle streams.")
    var noAudio = false

    @Flag(help: "Treat damaged input packets as an error instead of skipping them.")
    var strict = false

    @Flag(inversion: .prefixedNo, help: "Keep predicted colour steady across frames (on by default for video).")
    var stabilize = true

    @Flag(inversion: .prefixedNo, help: "With the stabilizer, anchor each shot's colour to its own earlier frames so that it does not drift (on by default).")
    var anchor = true

    @Option(help: "Stop after N input frames.")
    var maxFrames: Int?

    @Option(help: ArgumentHelp("A colour version of one frame, N=FILE (0-based frame number) or 12.5s=FILE (seconds from the first frame): frames of its shot take its colours; repeatable. Needs --colorize.", valueName: "N=FILE"))
    var keyframe: [String] = []

    @OptionGroup var inputOptions: InputFormatOptions
    @OptionGroup var modelOptions: ModelOptions

    func validate() throws {
        if let resize { _ = try frameSizeOption(resize, "--resize", example: "1280x720") }
        if let crf, !(crf >= 0 && crf <= 63) {
            throw ValidationError("'--crf \(crf)' is out of range. Use a value from 0 to 63 (x264 default 23).")
        }
        for k in keyframe where Keyframe(parsing: k) == nil { throw ValidationError(Keyframe.parseError(k)) }
        if !keyframe.isEmpty && modelOptions.colorize == nil {
            throw ValidationError("--keyframe\(modelOptions.guide.isEmpty ? "" : " (with " + modelOptions.guideOptions.given + ")") guides the colorizer, but no colorizer runs. Add --colorize.")
        }
    }

    /// The configuration of a job from `input` to `output` with these options (and `network`'s
    /// timeout, for commands that read network inputs).
    func configuration(input: String, output: String, network: NetworkOptions? = nil) -> RunConfiguration {
        var c = RunConfiguration(input: input, output: output)
        inputOptions.apply(to: &c.input)
        c.input.strict = strict
        c.input.networkTimeout = network?.timeout
        c.stages = modelOptions.stages(stabilize: stabilize, anchorShots: anchor, keyframes: keyframe.compactMap(Keyframe.init(parsing:)),
                                       resize: resize.flatMap(FrameSize.init(parsing:)))
        c.output.format = outputFormat
        c.output.encoder = EncoderSettings(codec: codec ?? EncoderSettings.defaultCodec(forOutput: output), crf: crf, preset: preset, pixelFormat: pixFmt)
        // A picture (a frame taken out as a keyframe) holds no audio: nothing to warn about.
        c.output.copyAudioAndSubtitles = !noAudio && !EncoderSettings.isPicture(output: output)
        c.output.existing = overwriteOptions.existing
        c.run.backend = modelOptions.backend
        c.run.maxFrames = maxFrames
        c.limits = modelOptions.limits(pixels: limitOptions)
        return c
    }
}

extension RunLimits {
    /// The limits the option groups of a command set (a group the command lacks: nil): the
    /// groups only check their values, and the library reads the limits from this value.
    init(threads: ThreadOptions? = nil, memory: MemoryOptions? = nil, precision: PrecisionOptions? = nil, pixels: LimitOptions? = nil) {
        self.init(threads: threads?.threads, maxPixels: pixels?.maxPixels, maxMemory: memory?.bytes, precision: precision?.precision)
        wholePicturePooling = memory?.wholePicturePooling
    }
}

/// How a file job is cut into resumable segments.
struct SegmentOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Cut a file job into segments of about SECONDS (default \(Int(SegmentedJob.defaultSegmentSeconds))), each kept in .OUTPUT.vivify-work/ until the join, so a re-run resumes; 0 processes it in one piece.", valueName: "SECONDS"))
    var segmentSeconds: Double = SegmentedJob.defaultSegmentSeconds

    func validate() throws {
        guard segmentSeconds >= 0, segmentSeconds.isFinite, segmentSeconds <= 86_400 else {
            throw ValidationError("'--segment-seconds \(segmentSeconds)' must be from 0 (no segments) to 86400.")
        }
    }
}

/// Options users guess from other tools (ffmpeg, the ncnn CLIs, video2x) that vivify spells
/// otherwise: the parser's own "did you mean" picks the closest spelling (`--live` → `--size`);
/// for these the error names what the user meant.
enum ArgumentSlips {
    /// The commands that run frames through models, where the run/image advice applies.
    static let framed: Set<String> = ["run", "image", "plan", "bench"]
    /// The commands that take --backend.
    static let backends: Set<String> = ["run", "image", "plan", "bench", "bench-model", "infer"]

    /// Option → (the fix, the commands it is meant for; nil: every command).
    static let table: [String: (fix: String, commands: Set<String>?)] = [
        "--live": ("Use --mode live (the newest frame wins; see `vivify run --help`).", ["run", "bench"]),
        "--offline": ("Use --mode offline (the default for files).", ["run", "bench"]),
        "--gpu": ("Use --backend vulkan (or --backend auto, the default, which takes a GPU when there is one).", backends),
        "--vulkan": ("Use --backend vulkan.", backends),
        "--cpu": ("Use --backend onednn.", backends),
        "-o": ("The output is the second argument: vivify run INPUT OUTPUT (vivify image INPUT OUTPUT).", ["run", "image", "plan"]),
        "--output": ("The output is the second argument: vivify run INPUT OUTPUT (vivify image INPUT OUTPUT).", ["run", "image", "plan"]),
        "-i": ("The input is the first argument: vivify run INPUT OUTPUT.", ["run", "image", "plan"]),
        "--model": ("Use --upscale MODEL or --colorize MODEL.", framed),
        "--scale": ("Use --upscale 2 (or 3, 4: the built-in upscalers) or --upscale MODEL.", framed),
        "-s": ("Use --upscale 2 (or 3, 4) for the scale; --size WxH is the frame size of raw input.", framed),
        "--quiet": ("This command has no --quiet: it prints only what it is asked for (run, image and work take --quiet).", nil),
    ]

    /// ArgumentParser's message for an error, rewritten when it is an unknown option of the
    /// table given to a command it is meant for; nil otherwise.
    static func message(for fullMessage: String) -> String? {
        guard let start = fullMessage.range(of: "Unknown option '") else { return nil }
        let rest = fullMessage[start.upperBound...]
        guard let end = rest.firstIndex(of: "'") else { return nil }
        let option = String(rest[..<end])
        guard let (fix, commands) = table[option] else { return nil }
        let lines = fullMessage.split(separator: "\n", omittingEmptySubsequences: false)
        if let commands {
            // The command, from the usage line: "Usage: vivify models verify <model> …".
            guard let usage = lines.first(where: { $0.hasPrefix("Usage: vivify ") }) else { return nil }
            let words = usage.dropFirst("Usage: vivify ".count).split(separator: " ").prefix { !$0.hasPrefix("[") && !$0.hasPrefix("<") && !$0.hasPrefix("-") }
            guard commands.contains(words.joined(separator: " ")) else { return nil }
        }
        // The first line (with the parser's guess) replaced; its usage lines kept.
        let usage = lines.dropFirst().joined(separator: "\n")
        return "Error: Unknown option '\(option)'. \(fix)" + (usage.isEmpty ? "" : "\n" + usage)
    }
}

/// Notes on standard error, each once per run: a segmented run executes itself again
/// (`OpenMPWaitPolicy.preferPassive`) and validates its options again there, and a note said
/// twice reads as two problems. The notes said travel in the environment to the new image.
enum Notes {
    /// The variable that holds the notes said, separated by U+001F.
    static let variable = "VIVIFY_NOTES_SAID"
    private static let lock = NSLock()

    static func once(_ note: String) {
        lock.lock()
        defer { lock.unlock() }
        let said = getenv(variable).map { String(cString: $0).components(separatedBy: "\u{1F}") } ?? []
        guard !said.contains(note) else { return }
        setenv(variable, (said + [note]).joined(separator: "\u{1F}"), 1)
        FileHandle.standardError.write(Data("vivify: note: \(note)\n".utf8))
    }
}

/// A WxH option read for the command line: the size, or a ValidationError that says what is
/// wrong with it (not WxH, a side of 0, a side past the largest frame) and how to write it.
func frameSizeOption(_ text: String, _ option: String, example: String = "640x360") throws -> FrameSize {
    if let size = FrameSize(parsing: text) { return size }
    let parts = text.lowercased().split(separator: "x", omittingEmptySubsequences: false)
    if parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) {
        if w < 1 || h < 1 {
            throw ValidationError("'\(option) \(text)' has a side of \(min(w, h)): a frame is at least 1 pixel a side. Write it as WxH, e.g. \(option) \(example).")
        }
        throw ValidationError("'\(option) \(text)' is larger than Vivify's largest frame, 16384 pixels a side. Give a size up to 16384x16384, e.g. \(option) \(example).")
    }
    throw ValidationError("'\(option) \(text)' is not a frame size. Write it as WxH with positive integers, e.g. \(option) \(example).")
}
