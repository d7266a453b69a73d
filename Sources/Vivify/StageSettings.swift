package import MediaIO
import Models

/// The stages of a job as settings: which models run, how, and in which order; then resize.
/// `vivify run`, `plan`, `image` and `bench` map their flags onto one (`RunConfiguration.stages`,
/// the `stages:` parameter of the image and bench entry points), and `modelStages` is the one
/// place their order is decided.
public struct StageSettings: Codable, Sendable, Equatable {
    /// Colorizing model (built-in name, bundle or path); nil for none.
    public var colorize: String?
    /// Upscaling model (built-in or catalog name, bundle or path); nil for none.
    public var upscale: String?
    /// Interior tile size for the models; nil chooses from a memory budget.
    public var tile: Int?
    /// Upscale first, then colorize at the upscaled size (default: colorize, then upscale).
    public var colorizeAfter = false
    /// Keep colour steady across frames (temporal stabilization of ab).
    public var stabilize = true
    /// With the stabilizer: anchor each shot's colour to its own earlier frames.
    public var anchorShots = true
    /// Chroma multiplier for the colorizer (1 keeps the model's colour; gamut-safe).
    public var saturation: Float = 1
    /// References, keyframes and hints that guide the colorizer.
    public var colourGuide = ColourGuideSpec()
    /// Image-to-image models (`--filter`) placed among colorize and upscale, in order.
    public var filters: [FilterStage] = []
    /// Resize every frame to this size (lanczos), after the models.
    public var resize: FrameSize?

    /// Stages with defaults: no model, no resize.
    public init(colorize: String? = nil, upscale: String? = nil, tile: Int? = nil) {
        self.colorize = colorize
        self.upscale = upscale
        self.tile = tile
    }

    /// The model stages in order: colorize then upscale, or the reverse with `colorizeAfter`,
    /// with each filter after the first `after` of them (filters of one place in their order).
    package var modelStages: [StageSpec] {
        var base: [StageSpec] = []
        if let colorize { base.append(.colorize(model: colorize, stabilize: stabilize, saturation: saturation, guide: colourGuide, anchor: anchorShots)) }
        if let upscale {
            let step = StageSpec.upscale(model: upscale, tile: tile)
            if colorizeAfter { base.insert(step, at: 0) } else { base.append(step) }
        }
        var specs: [StageSpec] = []
        var named = 0
        for slot in 0...base.count {
            for f in filters where min(max(f.after, 0), base.count) == slot {
                named += 1
                specs.append(.filter(model: f.model, tile: tile, strength: f.strength, name: named == 1 ? "filter" : "filter\(named)"))
            }
            if slot < base.count { specs.append(base[slot]) }
        }
        return specs
    }

    /// Every stage for frames that arrive as `sourceFormat`, in order: to RGB (when a model
    /// needs it), the models, then resize. The final conversion is added once the sink says
    /// what it takes.
    package func stageSpecs(sourceFormat: PixelFormat) -> [StageSpec] {
        let models = modelStages
        var specs: [StageSpec] = []
        if !models.isEmpty && sourceFormat != .rgb24 { specs.append(.toRGB) }
        specs += models
        if let resize { specs.append(.resize(resize)) }
        return specs
    }
}

/// One `--filter` of a run: an image-to-image model, its strength, and its place among the
/// colorizer and upscaler.
public struct FilterStage: Codable, Sendable, Equatable {
    /// The model: a `.wifm`, a model file of any format Vivify reads, or a catalog name.
    public var model: String
    /// Output · strength + input · (1 − strength), 0…1.
    public var strength: Float
    /// How many of the run's colorize and upscale stages (in the chain's order) come before it.
    public var after: Int

    /// Makes a filter.
    public init(model: String, strength: Float = 1, after: Int = 0) {
        self.model = model
        self.strength = strength
        self.after = after
    }

    /// The strengths a filter may have.
    public static let strengthRange: ClosedRange<Float> = 0...1
}
