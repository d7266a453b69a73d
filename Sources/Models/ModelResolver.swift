package import Engine
import Foundation
internal import MediaIO
package import ModelCatalog
package import ModelFormats

/// A model read from any supported form (ncnn `.param`, Core ML `.mlmodel`, ML Program
/// `.mlpackage`, or a `.wifm` bundle of any of them), with its graph adapted to take the
/// engine's frames: RGB in [0, 1] in, RGB in [0, 1] out for upscalers.
package struct LoadedModel {
    package var name: String
    package var graph: Graph
    /// How to tile it (upscalers): from the catalog, the bundle, or learnt from its shapes.
    package var spec: TilingSpec?
    /// The bundle's alpha submodel (`alphaMode` `separateModel`).
    package var alphaGraph: Graph?
    /// The bundle's colorizer keys (`task` `colorize`).
    package var colorizer: ColorizerSpec?
    /// Keeps a bundle's private extraction directory alive as long as the model.
    package var bundle: ModelBundle?
    /// Warnings from reading it (tolerated bundle mistakes).
    package var warnings: [String] = []
    /// The files it was read from (for the stats' hashes).
    package var files: [String] = []

    package init(name: String, graph: Graph, spec: TilingSpec? = nil, bundle: ModelBundle? = nil, warnings: [String] = []) {
        self.name = name
        self.graph = graph
        self.spec = spec
        self.bundle = bundle
        self.warnings = warnings
    }
}

/// Turns any model argument into a loaded model for a task: one place for every kind of name.
///
///     argument ─▶ built-in name ("2", vivify-fast-2x, vivify-color) ─▶ its embedded .wifm
///              ─▶ path (has a '/', exists, or ends in a table extension) ─▶ ModelFileFormat by extension
///              ─▶ catalog name ─▶ fetched on first use, its files, its tiling rules
///              ─▶ none of these: "no such model", with the close names of every kind
///
/// The graph comes back adapted to the engine's frames (upscalers: RGB in [0, 1] in and out)
/// with the tiling rules an upscaler needs, or the description a colorizer needs.
package enum ModelResolver {
    /// Resolves and loads `argument` for `task`; `log` gets one line when a model is fetched;
    /// `library`: the compiled custom layer library (`--custom-layers`) for Core ML custom
    /// layers nothing declares.
    /// `role`: what messages call the model ("filter"; default: "upscaler" or "colorizer").
    package static func resolve(_ argument: String, task: WifmManifest.Task, store: ModelStore = ModelStore(),
                        library: String? = nil, role: String? = nil, log: (String) -> Void = { _ in }) throws -> LoadedModel {
        let what = role ?? (task == .upscale ? "upscaler" : "colorizer")
        // Built-in names.
        if let builtin = BuiltinModels.name(for: argument, task: task) ?? (BuiltinModels.names.contains(argument) ? argument : nil),
           let path = try BuiltinModels.path(for: builtin, store: store) {
            var loaded = try loadBundle(path, name: builtin, task: task, library: library)
            loaded.name = builtin
            loaded.files = [path]
            return loaded
        }
        // Paths.
        let format = ModelFileFormat.forPath(argument)
        if argument.contains("/") || format != nil || FileManager.default.fileExists(atPath: argument) {
            guard FileManager.default.fileExists(atPath: argument) else {
                let hint = argument.contains("/") ? "" : didYouMean(Array(closeNames(to: argument, among: names(for: task, store: store)).prefix(1)))
                throw MediaError(.inputUnreadable, "Cannot open the \(what) '\(argument)': no such file.\(hint) Check the path, or run `vivify models list` for model names.")
            }
            guard let format else {
                let ext = (argument as NSString).pathExtension
                throw MediaError(.unsupported, "Cannot read the \(what) '\(argument)': \(ext.isEmpty ? "a file without an extension" : "'.\(ext)'") is not a model format Vivify reads. Use \(ModelFileFormat.extensionList).")
            }
            var loaded = try load(argument, format: format, task: task, store: store, library: library)
            // Every file the model was read from, so that a resumed or planned job notices a
            // change in any (their SHA-256 in the manifest and --stats): the weights beside an
            // ncnn .param, a Core ML model's custom layer declarations (NAME.layers.json) and a
            // colorizer's description (NAME.json).
            let sides = [CustomLayerDeclarations.besidePath(for: argument)] + (task == .colorize ? [(argument as NSString).deletingPathExtension + ".json"] : [])
            loaded.files = [argument] + [ModelFileFormat.weightsFile(beside: argument)].compactMap { $0 }
                + sides.filter { FileManager.default.fileExists(atPath: $0) }
            return loaded
        }
        // Catalog names (upscalers and denoisers).
        if let entry = store.catalog.entry(named: argument) {
            guard task == .upscale else {
                throw MediaError(.invalidOptions, "'\(argument)' is an upscaling model from the catalog; use it with --upscale. --colorize takes \(BuiltinModels.color), a colorize .wifm, or a model file with its .json description.")
            }
            return try loadCatalog(entry, store: store, log: log)
        }
        let hint = didYouMean(closeNames(to: argument, among: names(for: task, store: store)))
        throw MediaError(.invalidOptions, "There is no \(what) named '\(argument)'.\(hint) Run `vivify models list` for every model name, or give a path to \(ModelFileFormat.extensionList) file.")
    }

    /// Names a user may give for `task`: the built-ins of that task, and catalog names for upscaling.
    package static func names(for task: WifmManifest.Task, store: ModelStore) -> [String] {
        let builtins = BuiltinModels.names.filter { BuiltinModels.task(of: $0) == task }
        return builtins + (task == .upscale ? store.catalog.names : [])
    }

    /// A model file of a known format.
    package static func load(_ path: String, format: ModelFileFormat, task: WifmManifest.Task, store: ModelStore,
                             library: String? = nil) throws -> LoadedModel {
        let name = ((path as NSString).lastPathComponent as NSString).deletingPathExtension
        guard let importer = format.importer else { return try loadBundle(path, name: name, task: task, library: library) }
        if task == .colorize {
            // A bare colorizer graph needs its description beside it.
            let spec = try ColorizerSpec.beside(param: path)
            var loaded = LoadedModel(name: name, graph: try importer(path, nil, nil, library).graph)
            loaded.colorizer = spec
            return loaded
        }
        if format.kind == .ncnn, let bin = ModelFileFormat.weightsFile(beside: path) {
            // ncnn models take and give [0, 1] RGB; a file that is byte for byte a catalog
            // model gets that model's blob names and tiling rules.
            guard FileManager.default.fileExists(atPath: bin) else {
                throw MediaError(.inputUnreadable, "The ncnn model '\(path)' has no weights beside it: '\(bin)' is missing. Put the .bin file next to the .param file with the same name.")
            }
            let entry = catalogEntry(matching: URL(fileURLWithPath: path), store: store)
            let graph = try NCNNImporter.load(paramPath: path, binPath: bin, inputName: entry?.inputBlob, outputName: entry?.outputBlob)
            var loaded = LoadedModel(name: name, graph: graph)
            loaded.spec = try entry.map { try tiling(for: $0, graph: graph) } ?? inferTiling(graph)
            return loaded
        }
        let imported = try importer(path, nil, nil, library)
        var g = imported.graph
        // Image inputs take 0–255 pixels; the output range is measured on a grey tile.
        if imported.inputIsImage { g = g.prependingAffine(scale: [255], bias: [0]) }
        g = try normalisedOutput(g)
        var loaded = LoadedModel(name: name, graph: g)
        loaded.spec = try inferTiling(g)
        return loaded
    }

    /// A catalog model, fetched on first use.
    package static func loadCatalog(_ entry: ModelEntry, store: ModelStore, log: (String) -> Void) throws -> LoadedModel {
        // Catalog errors go up typed: a failed first-use download is an I/O error (74) here as
        // in `vivify models fetch`.
        if !store.isInstalled(entry) {
            let report = try store.fetch(entry)
            log("fetched model \(entry.name) into \(store.modelDirectory(for: entry).path) (\(report.files.count) files, SHA-256 verified)")
        } else {
            // Verified at fetch; checked again before use (once per process).
            try store.verifyBeforeUse(entry)
        }
        let r = try store.resolve(entry.name)
        var loaded: LoadedModel
        switch r.format {
        case .ncnn:
            guard let param = r.paramURL, let bin = r.binURL else {
                throw CatalogError(.invalid, "Catalog entry '\(entry.name)' names no .param/.bin pair; it cannot be loaded.")
            }
            loaded = LoadedModel(name: entry.name, graph: try NCNNImporter.load(paramPath: param.path, binPath: bin.path,
                                                                                inputName: entry.inputBlob, outputName: entry.outputBlob))
        case .coreml, .mlprogram:
            guard let url = r.modelURL, let format = ModelFileFormat.forPath(url.path) else {
                throw CatalogError(.invalid, "Catalog entry '\(entry.name)' names no Core ML model file; it cannot be loaded.")
            }
            loaded = try load(url.path, format: format, task: .upscale, store: store)
            loaded.name = entry.name
        }
        loaded.spec = try tiling(for: entry, graph: loaded.graph)
        loaded.files = [r.paramURL, r.binURL, r.modelURL].compactMap { $0?.path }
        return loaded
    }

    /// A user's `.param` that is byte for byte a catalog model's.
    package static func catalogEntry(matching param: URL, store: ModelStore) -> ModelEntry? {
        guard let digest = try? SHA256.hash(fileAt: param).hex else { return nil }
        return store.catalog.entries.first { $0.paramFile?.sha256 == digest }
    }

    /// The tiling rules of a catalog model.
    package static func tiling(for e: ModelEntry, graph: Graph) throws -> TilingSpec {
        switch e.border {
        case .none:
            // "Same"-padded network: overlap tiles by its receptive field so tiles are exact.
            return TilingSpec(scale: e.scale, padding: max(e.tileOverlap, graph.receptiveRadius()), border: .reflect,
                              multiple: e.tileMultiple, addNearestInput: e.outputIsResidualOverNearest)
        case .replicate:
            return TilingSpec(scale: e.scale, padding: e.padding, border: .replicate, multiple: e.tileMultiple,
                              addNearestInput: e.outputIsResidualOverNearest)
        case .reflect:
            return TilingSpec(scale: e.scale, padding: e.padding, border: .reflect, multiple: e.tileMultiple,
                              addNearestInput: e.outputIsResidualOverNearest)
        }
    }

    /// Learns scale and border loss of an unknown model from its shapes (`TilingSpec.inferred`).
    package static func inferTiling(_ graph: Graph) throws -> TilingSpec { try TilingSpec.inferred(for: graph) }

    /// Scales a graph's output to [0, 1] when it produces 0–255: a mid-grey tile must come
    /// back mid-grey from any upscaler.
    package static func normalisedOutput(_ graph: Graph) throws -> Graph {
        let side = 48
        let c = graph.inputChannels ?? 3
        let prepared = try ReferenceBackend().prepare(graph, input: Shape(c: c, h: side, w: side))
        let out = try prepared.run(Tensor(shape: prepared.inputShape, data: [Float](repeating: 0.5, count: prepared.inputShape.count)))
        let mean = out.data.reduce(0, +) / Float(max(out.data.count, 1))
        return mean > 8 ? graph.appendingAffine(scale: [1 / 255], bias: [0]) : graph
    }

    /// A manifest must name the tensors its model has: a wrong name would otherwise run the
    /// model with another output (or none) silently.
    package static func checkTensorNames(_ sub: WifmManifest.SubModel, of graph: Graph, bundle path: String) throws {
        let model = (sub.declaredFile as NSString).lastPathComponent
        let role = sub.role.rawValue
        let inputs = [graph.valueNames[graph.input]]
        let output = graph.valueNames[graph.output]
        if !inputs.contains(sub.inputName) {
            throw ModelFormatError(.malformed, "The bundle '\(path)': manifest.json names the input tensor '\(sub.inputName)' (`subModels.\(role).inputName`), but the model '\(model)' has no such input; its input is '\(inputs[0])'. Set `inputName` to \"\(inputs[0])\".")
        }
        if sub.outputName != output, !graph.valueNames.contains(sub.outputName) {
            throw ModelFormatError(.malformed, "The bundle '\(path)': manifest.json names the output tensor '\(sub.outputName)' (`subModels.\(role).outputName`), but the model '\(model)' has no such tensor; its output is '\(output)'. Set `outputName` to \"\(output)\".")
        }
        if sub.outputName != output {
            throw ModelFormatError(.unsupported, "The bundle '\(path)': manifest.json names '\(sub.outputName)' as the output of '\(model)' (`subModels.\(role).outputName`), an inner tensor; Vivify runs a model to its output '\(output)'. Set `outputName` to \"\(output)\" or export the model with that output.")
        }
    }

    package static func loadBundle(_ path: String, name: String, task: WifmManifest.Task, library: String? = nil) throws -> LoadedModel {
        let bundle = try ModelBundle.open(path: path)
        let m = bundle.manifest
        guard m.task == task else {
            throw MediaError(.invalidOptions, "The bundle '\(path)' is a \(m.task.rawValue) model; use it with --\(m.task == .upscale ? "upscale" : "colorize").")
        }
        func adapted(_ sub: WifmManifest.SubModel) throws -> Graph {
            let file = bundle.url(for: sub).path
            guard let importer = ModelFileFormat.forPath(file)?.importer else {
                throw MediaError(.unsupported, "The bundle '\(path)' holds '\((file as NSString).lastPathComponent)', which is not a model format Vivify reads. Use \(ModelFileFormat.extensionList) inside.")
            }
            let imported = try importer(file, bundle.weightsURL(for: sub)?.path, m.customLayers, library)
            var (raw, isImage) = (imported.graph, imported.inputIsImage)
            // Messages name the bundle the user gave, not its private extraction folder.
            raw.source = "\(path) (\((sub.declaredFile as NSString).lastPathComponent))"
            try checkTensorNames(sub, of: raw, bundle: path)
            guard task == .upscale else { return raw }
            var g = raw
            let input = m.inputs.contains(where: { $0.name == sub.inputName }) ? m.input(for: sub) : nil
            // Tensor/IO: model input = scale · pixel + bias, pixel = 255 · x. A Core ML image
            // input takes pixels itself (its scaler is in the graph).
            let n = input?.normalize ?? (isImage ? .none : .zeroToOne)
            g = g.prependingAffine(scale: [255 * n.scale], bias: [n.redBias, n.greenBias, n.blueBias])
            if let out = m.outputs.first(where: { $0.name == sub.outputName }), let d = out.denormalize {
                // Tensor/IO: pixel = (y + bias) · scale; x = pixel / 255.
                let k = d.scale / 255
                g = g.appendingAffine(scale: [k], bias: [d.redBias * k, d.greenBias * k, d.blueBias * k])
            } else {
                g = try normalisedOutput(g)
            }
            return g
        }
        var loaded = LoadedModel(name: m.name, graph: try adapted(m.main), bundle: bundle, warnings: bundle.warnings)
        if task == .upscale {
            // Tiles on the model's own stride grid: a U-Net (two stride-2 layers) given a side
            // that is not a multiple of 4 made an output of another size (exit 65).
            loaded.spec = TilingSpec(scale: m.scale, padding: m.shrinkSize, border: .replicate, multiple: TilingSpec.strideGrid(for: loaded.graph))
            if m.alphaMode == .separateModel, let alpha = m.alpha { loaded.alphaGraph = try adapted(alpha) }
        } else if let c = m.colorizer {
            let channels = m.inputShape?.first ?? 1
            loaded.colorizer = ColorizerSpec(input: channels == 4 ? .lHintsMask : .l, inputSize: c.inputSize, inputMultiple: c.inputMultiple,
                                             lCenter: c.lCenter, lScale: c.lScale, output: m.output(for: m.main).role == .rgb ? .rgb : .ab,
                                             abScale: c.abScale, upsample: ColorizerSpec.Upsample(rawValue: c.upsample) ?? .bilinear)
        }
        return loaded
    }
}
