import Foundation
import Models

/// One stage of a run as configuration: what to build, before any model is loaded. A run's
/// stages are an ordered list (`RunConfiguration.stages`), and the list is the only place
/// their order is decided: frames go through the stages in the list's order.
///
///     source ─▶ [to RGB] ─▶ stages[0] ─▶ stages[1] ─▶ … ─▶ [to the sink's format] ─▶ sink
///
/// The conversions at either end are the chain's own (added for what the source gives and
/// the sink takes), never listed. Everything a run, a segmented job's manifest, `--stats`,
/// `vivify image` and `vivify bench` know of a stage is answered here, case by case, so a new
/// stage is a case here, its processor, and the command-line option that lists it.
public enum StageSpec: Codable, Sendable, Equatable {
    /// A colorizer (built-in name, bundle or path) with its stabilizer, chroma multiplier
    /// (`saturation`, 1 keeps the model's colour), guidance (references, keyframes, hints),
    /// and whether shots anchor their colour (with the stabilizer).
    case colorize(model: String, stabilize: Bool = true, saturation: Float = 1, guide: ColourGuideSpec = ColourGuideSpec(),
                  anchorShots: Bool = true)
    /// An upscaler (built-in or catalog name, bundle or path) with its tile size (nil: chosen
    /// from the memory budget).
    case upscale(model: String, tile: Int? = nil)
    /// An image-to-image model (`--filter`: style transfer, denoise, deblock; any scale) with
    /// its tile size and how much of its output is kept (`strength`, the rest is the input).
    case filter(model: String, tile: Int? = nil, strength: Float = 1)
    /// Resize every frame to a fixed size (lanczos).
    case resize(size: FrameSize)

    /// The stage's name in traces and messages, before numbering ("filter" for each filter;
    /// `[StageSpec].names` numbers them "filter", "filter2", …).
    var baseName: String {
        switch self {
        case .colorize: return "colorize"
        case .upscale: return "upscale"
        case .filter: return "filter"
        case .resize: return "resize"
        }
    }

    /// Whether the stage runs a model.
    package var runsModel: Bool {
        switch self {
        case .colorize, .upscale, .filter: return true
        case .resize: return false
        }
    }

    /// The model argument (built-in or catalog name, bundle or path); nil for a stage without
    /// a model.
    package var model: String? {
        switch self {
        case .colorize(let model, _, _, _, _), .upscale(let model, _), .filter(let model, _, _): return model
        case .resize: return nil
        }
    }

    /// The colorizer's guidance; nil for every other stage.
    package var colourGuide: ColourGuideSpec? {
        if case .colorize(_, _, _, let guide, _) = self { return guide }
        return nil
    }

    /// The stage as a still picture runs it (`vivify image`): a picture has no frames before
    /// it to keep colour steady with.
    var forStills: StageSpec {
        switch self {
        case .colorize(let model, _, let saturation, let guide, let anchor):
            return .colorize(model: model, stabilize: false, saturation: saturation, guide: guide, anchorShots: anchor)
        case .upscale, .filter, .resize: return self
        }
    }

    /// The stage as a segmented job's manifest keeps it: the files it reads as absolute paths
    /// (workers may run elsewhere in the tree), `absolute` making a path absolute.
    func planned(absolute: (String) -> String) -> StageSpec {
        switch self {
        case .colorize(let model, let stabilize, let saturation, var g, let anchor):
            g.references = g.references.map(absolute)
            g.keyframes = g.keyframes.map { Keyframe(position: $0.position, file: absolute($0.file)) }
            g.hintsImage = g.hintsImage.map(absolute)
            return .colorize(model: model, stabilize: stabilize, saturation: saturation, guide: g, anchorShots: anchor)
        case .filter(let model, let tile, let strength):
            return .filter(model: FileManager.default.fileExists(atPath: model) ? absolute(model) : model, tile: tile, strength: strength)
        case .upscale, .resize:
            return self
        }
    }

    /// The settings of this stage that `--stats` records, by name.
    var statsSettings: [String: String] {
        switch self {
        case .colorize(_, let stabilize, let saturation, let guide, let anchor):
            var s = ["stabilize": String(stabilize), "anchor_shots": String(stabilize && anchor), "saturation": String(saturation)]
            if !guide.hints.isEmpty { s["hints"] = guide.hints.map(\.description).joined(separator: " ") }
            return s
        case .upscale(_, let tile), .filter(_, let tile, _):
            return tile.map { ["tile": String($0)] } ?? [:]
        case .resize(let size):
            return ["resize": size.description]
        }
    }

    /// The processor of this stage, named `name`, its model loaded on `backend` under
    /// `settings` (the run's precision, memory budget and pixel limit); `log` gets one line
    /// when a model is fetched.
    func makeProcessor(name: String, backend: BackendChoice, settings: ComputeSettings, log: (String) -> Void) throws -> FrameProcessor {
        switch self {
        case .colorize(let model, let stabilize, let saturation, let guide, let anchor):
            return ColorizeProcessor(try Colorizer(model: model, backend: backend, settings: settings, stabilize: stabilize,
                                                   saturation: saturation, guide: guide, anchorShots: anchor),
                                     precision: settings.precision)
        case .upscale(let model, let tile):
            return UpscaleProcessor(try Upscaler(model: model, tile: tile, backend: backend, settings: settings, log: log))
        case .filter(let model, let tile, let strength):
            return FilterProcessor(try Upscaler(model: model, tile: tile, backend: backend, settings: settings, allowInt8: false, role: "filter", log: log),
                                   strength: strength, name: name)
        case .resize(let size):
            return ResizeProcessor(size: size)
        }
    }
}

extension [StageSpec] {
    /// Each stage's name in order: its base name, filters numbered "filter", "filter2", ….
    package var names: [String] {
        var filters = 0
        return map { spec in
            guard case .filter = spec else { return spec.baseName }
            filters += 1
            return filters == 1 ? "filter" : "filter\(filters)"
        }
    }

    /// The stages that run a model, in order, with their names.
    package var modelStages: [(spec: StageSpec, name: String)] {
        zip(self, names).filter { $0.0.runsModel }.map { (spec: $0.0, name: $0.1) }
    }

    /// The colorizer's guidance, when a colorizer runs.
    package var colourGuide: ColourGuideSpec? { lazy.compactMap(\.colourGuide).first }

    /// Every setting of the stages that `--stats` records: each stage's own, and whether the
    /// colorizer runs after the upscaler.
    var statsSettings: [String: String] {
        var settings: [String: String] = [:]
        for spec in self { settings.merge(spec.statsSettings) { first, _ in first } }
        // Every filter's strength, in the filters' order (one setting: the stages' own keys
        // would keep only the first filter's).
        let strengths = compactMap { spec -> Float? in if case .filter(_, _, let strength) = spec { return strength } else { return nil } }
        if !strengths.isEmpty { settings["filter_strength"] = strengths.map { String($0) }.joined(separator: " ") }
        if let colorize = firstIndex(where: { $0.colourGuide != nil }) {
            settings["colorize_after"] = String(firstIndex { if case .upscale = $0 { return true } else { return false } }.map { $0 < colorize } ?? false)
        }
        return settings
    }
}

extension ColourGuideSpec {
    /// The pictures of the guidance with what each is ("reference", "keyframe 12", "hints"),
    /// for `--stats` and a segmented job's digests.
    var pictures: [(kind: String, path: String)] {
        references.map { ("reference", $0) } + keyframes.map { ("keyframe \($0.position.text)", $0.file) }
            + (hintsImage.map { [("hints", $0)] } ?? [])
    }
}

/// Makes processors from stage specs (video2x's ProcessorFactory).
package enum ProcessorFactory {
    /// Builds the processor for `spec` (named `name`, else by its base name), loading its
    /// model on `backend` under `settings`; `log` gets one line when a model is fetched.
    package static func make(_ spec: StageSpec, name: String? = nil, backend: BackendChoice, settings: ComputeSettings = ComputeSettings(),
                             log: (String) -> Void = { _ in }) throws -> FrameProcessor {
        try spec.makeProcessor(name: name ?? spec.baseName, backend: backend, settings: settings, log: log)
    }

    /// The model stages of `stages`, loaded in order.
    package static func models(of stages: [StageSpec], backend: BackendChoice, settings: ComputeSettings,
                               log: (String) -> Void = { _ in }) throws -> [FrameProcessor] {
        try stages.modelStages.map { try make($0.spec, name: $0.name, backend: backend, settings: settings, log: log) }
    }
}

/// One `--filter` of a command line: an image-to-image model, its strength, and its place
/// among the colorizer and upscaler (how the command line and the stage settings of manifests
/// before version 3 place filters; a run lists them as `StageSpec.filter`).
package struct FilterStage: Codable, Sendable, Equatable {
    /// The model: a `.wifm`, a model file of any format Vivify reads, or a catalog name.
    package var model: String
    /// Output · strength + input · (1 − strength), 0…1.
    package var strength: Float
    /// How many of the run's colorize and upscale stages (in the chain's order) come before it.
    package var after: Int

    /// Makes a filter.
    package init(model: String, strength: Float = 1, after: Int = 0) {
        self.model = model
        self.strength = strength
        self.after = after
    }

    /// The strengths a filter may have.
    package static let strengthRange: ClosedRange<Float> = 0...1

    /// `models` (the colorize and upscale stages in the chain's order) with each filter of
    /// `filters` after the first `after` of them (filters of one place in their order).
    package static func place(_ filters: [FilterStage], among models: [StageSpec], tile: Int?) -> [StageSpec] {
        var specs: [StageSpec] = []
        for slot in 0...models.count {
            for f in filters where min(max(f.after, 0), models.count) == slot {
                specs.append(.filter(model: f.model, tile: tile, strength: f.strength))
            }
            if slot < models.count { specs.append(models[slot]) }
        }
        return specs
    }
}
