import Foundation

// The built-in catalog: the models Vivify can fetch by name.
//
// SHA-256 and byte sizes were computed with `sha256sum` and `stat` over the project's model
// mirror (`../shared/models`, see its README); ModelCatalogTests re-checks every line against
// the mirror when it is present. Upstream URLs are raw GitHub files at the pinned commits that
// README names, so the hashes hold for users who download instead of copying from a mirror.
//
// Two Core ML entries sit beside the ncnn ones: the waifu2x photo 2× NeuralNetwork `.mlmodel`
// (mirror `coreml/`, upstream imxieyi/waifu2x-ios at a pinned commit) and PiperSR's ML Program
// `.mlpackage`, a directory inside the PyPI wheel `pipersr==1.0.3`. The wheel's SHA-256 is
// PyPI's published digest (also `sha256sum` of `python3 -m pip download --no-deps pipersr==1.0.3`);
// the package's tree digest and size come from `SHA256.treeDigest` over the unpacked folder.

/// Pinned upstream locations of the model folders and licence texts.
private enum Upstream {
    static let waifu2x = "https://raw.githubusercontent.com/nihui/waifu2x-ncnn-vulkan/64914665c45893135c9e50c1c296170a121b9f77/models/"
    static let realcugan = "https://raw.githubusercontent.com/nihui/realcugan-ncnn-vulkan/395302c5c70f1bff604c974e92e0a87e45c9f9ee/models/"
    static let video2x = "https://raw.githubusercontent.com/k4yt3x/video2x/8a9e571114a59db442c90a6eb85a9513471c1068/models/"
    // Licence texts whose bytes were checked against the mirror's copies. nihui's LICENSE files
    // and Real-ESRGAN's BSD-3 text (the repository is MIT today) have no verified pinned copy;
    // they come from the mirror only.
    static let nagadomiLicence = "https://raw.githubusercontent.com/nagadomi/waifu2x/f2f5c882eb3ebe735061f8113b184db58bd2972c/LICENSE"
    static let bilibiliLicence = "https://raw.githubusercontent.com/bilibili/ailab/680c4a26444f0ff2c7c6bae3b0712f3b478c8184/Real-CUGAN/LICENSE"
    static let realesrganNcnnLicence = "https://raw.githubusercontent.com/xinntao/Real-ESRGAN-ncnn-vulkan/cfb9d62f8e404ae8a554a1c81a8c79a4ddf70132/LICENSE"

    /// imxieyi/waifu2x-ios: the waifu2x Core ML models.
    static let waifu2xIOS = "https://raw.githubusercontent.com/imxieyi/waifu2x-ios/5676e6258e580e5940628811123f8402950013e3/"
    /// PiperSR 1.0.3's wheel on PyPI (content-addressed: the path never serves other bytes).
    static let piperSRWheel = "https://files.pythonhosted.org/packages/2f/38/24354c60670fda3e09af35e3c33ef8a6510ca718e48d5deea34085b04f5b/pipersr-1.0.3-py3-none-any.whl"

    /// The upstream folder of each ncnn family (the mirror folder name differs from upstream's).
    static func folder(_ family: ModelFamily) -> String {
        switch family {
        case .waifu2xUpconv7Photo: return waifu2x + "models-upconv_7_photo/"
        case .waifu2xUpconv7Art: return waifu2x + "models-upconv_7_anime_style_art_rgb/"
        case .waifu2xCunet: return waifu2x + "models-cunet/"
        case .realcuganSE: return realcugan + "models-se/"
        case .realesrAnimeVideoV3: return video2x + "realesrgan/"
        case .waifu2xUpconv7PhotoCoreML: return waifu2xIOS + "waifu2x/models/"
        case .piperSR: return "https://pypi.org/project/pipersr/1.0.3/"
        }
    }
}

/// A model file of `family` named `name`, published upstream in the family's folder.
private func modelFile(_ role: ModelFile.Role, _ family: ModelFamily, _ name: String, sha256: String, size: Int64) -> ModelFile {
    ModelFile(role: role, mirrorPath: "ncnn/\(family.rawValue)/\(name)", sha256: sha256, size: size,
              upstreamURL: URL(string: Upstream.folder(family) + name)!)
}

/// A licence text of `family` named `name`, published at `upstream` when a pinned copy is known.
private func licenceFile(_ family: ModelFamily, _ name: String, sha256: String, size: Int64, upstream: String?) -> ModelFile {
    ModelFile(role: .licence, mirrorPath: "ncnn/\(family.rawValue)/\(name)", sha256: sha256, size: size,
              upstreamURL: upstream.flatMap(URL.init(string:)))
}
/// The licence of a waifu2x family: nihui's ncnn port (MIT) and nagadomi's weights (MIT).
private func waifu2xLicence(_ family: ModelFamily) -> Licence {
    // The three waifu2x folders hold byte-identical licence texts.
    Licence(id: "MIT", files: [
        licenceFile(family, "LICENSE",
                    sha256: "57157b0fc6954dd1645dc674cc99bebbab4cb84c5b306b910989777e3d0d6fbd", size: 1072, upstream: nil),
        licenceFile(family, "LICENSE.upstream-nagadomi-waifu2x",
                    sha256: "6beebd9ebb8077acbefd4b8c9b50fa02a647c301c3293589f3640d7d17f2a7f0", size: 1091, upstream: Upstream.nagadomiLicence),
    ])
}

/// The licence of Real-CUGAN: nihui's ncnn port (MIT) and bilibili's weights (MIT).
private let realcuganLicence = Licence(id: "MIT", files: [
    licenceFile(.realcuganSE, "LICENSE",
                sha256: "57157b0fc6954dd1645dc674cc99bebbab4cb84c5b306b910989777e3d0d6fbd", size: 1072, upstream: nil),
    licenceFile(.realcuganSE, "LICENSE.upstream-bilibili-Real-CUGAN",
                sha256: "8cad8cfdf94baaf23519061af913770e52476ddec2a311e9510582e7bed13cba", size: 1065, upstream: Upstream.bilibiliLicence),
])

/// The licence of Real-ESRGAN animevideov3: xinntao's weights (BSD-3-Clause) and ncnn
/// conversion (MIT).
private let realesrLicence = Licence(id: "BSD-3-Clause AND MIT", files: [
    licenceFile(.realesrAnimeVideoV3, "LICENSE.upstream-xinntao-Real-ESRGAN",
                sha256: "4a699ec4863d96a91fc265948a0c90033f7e8735d515524dcf3444736406e0c2", size: 1519, upstream: nil),
    licenceFile(.realesrAnimeVideoV3, "LICENSE.upstream-xinntao-Real-ESRGAN-ncnn-vulkan",
                sha256: "5abb941454de437b0e90d78dcb72e3688f74e14bcd4e24393273cb5cd0e9c937", size: 2228, upstream: Upstream.realesrganNcnnLicence),
])

/// The licence of the waifu2x Core ML models: imxieyi's conversion (MIT) and nagadomi's
/// weights (MIT, the same text the ncnn photo family carries).
private let waifu2xCoreMLLicence = Licence(id: "MIT", files: [
    // Only the mirror's copy of imxieyi's LICENSE has been checked byte for byte.
    ModelFile(role: .licence, mirrorPath: "coreml/LICENSE",
              sha256: "6215643c15b7e65ac0cd4357ddf3665fe5b1ad897368788e85159a062e003cd6", size: 1069, upstreamURL: nil),
    licenceFile(.waifu2xUpconv7Photo, "LICENSE.upstream-nagadomi-waifu2x",
                sha256: "6beebd9ebb8077acbefd4b8c9b50fa02a647c301c3293589f3640d7d17f2a7f0", size: 1091, upstream: Upstream.nagadomiLicence),
])

/// PiperSR's wheel on PyPI, which holds the `.mlpackage`.
private let piperSRWheel = ModelArchive(
    source: .pythonWheel(package: "pipersr", version: "1.0.3"), fileName: "pipersr-1.0.3-py3-none-any.whl",
    sha256: "cade7c94dcfe189b3962febbb2b304196f434d15d768ea4821888b439b3ab272", size: 881_633,
    mirrorPath: "pypi/pipersr-1.0.3-py3-none-any.whl", upstreamURL: URL(string: Upstream.piperSRWheel)!)

/// PiperSR's licences: no text is installed (the wheel holds the AGPL text; the weights'
/// CC BY 4.0 asks for an attribution line instead).
private let piperSRLicence = Licence(
    id: "AGPL-3.0 (package) / CC BY 4.0 (weights)", files: [],
    note: "Powered by PiperSR from ModelPiper (https://modelpiper.com): CC BY 4.0 asks for this attribution wherever its output is shown. No licence file is fetched: the AGPL-3.0 text ships inside the wheel as pipersr-1.0.3.dist-info/licenses/LICENSE (https://pypi.org/project/pipersr/1.0.3/).")

extension Catalog {
    /// The models shipped with Vivify, in the order `vivify models list` shows them.
    public static let builtIn = Catalog(entries: [
        ModelEntry(
            name: "waifu2x-photo-2x", family: .waifu2xUpconv7Photo, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), no denoise; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_photo",
            files: [
                modelFile(.param, .waifu2xUpconv7Photo, "scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Photo, "scale2.0x_model.bin",
                          sha256: "25a2bb25b29e43e63179aac216cd87690791243a436328506d4ef9fca88ee962", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Photo),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-photo-2x-denoise0", family: .waifu2xUpconv7Photo, task: .upscale, scale: 2, denoiseLevel: 0,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), JPEG denoise level 0; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_photo",
            files: [
                modelFile(.param, .waifu2xUpconv7Photo, "noise0_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Photo, "noise0_scale2.0x_model.bin",
                          sha256: "fbfc8d57e4333748c9c6db2ec4d5454c98cd1c6aa53289f2989c3bdb4e84b673", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Photo),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-photo-2x-denoise1", family: .waifu2xUpconv7Photo, task: .upscale, scale: 2, denoiseLevel: 1,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), JPEG denoise level 1; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_photo",
            files: [
                modelFile(.param, .waifu2xUpconv7Photo, "noise1_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Photo, "noise1_scale2.0x_model.bin",
                          sha256: "9f8ce2c4df1ed862a7441e3b49ad965b8e34aaa6d87c1cad52a1768210fdfee6", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Photo),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-photo-2x-denoise2", family: .waifu2xUpconv7Photo, task: .upscale, scale: 2, denoiseLevel: 2,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), JPEG denoise level 2; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_photo",
            files: [
                modelFile(.param, .waifu2xUpconv7Photo, "noise2_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Photo, "noise2_scale2.0x_model.bin",
                          sha256: "432ca8f62ffc4873794a399ded70b17af23aa870b25e5ddba76f029b7ce14c2b", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Photo),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-photo-2x-denoise3", family: .waifu2xUpconv7Photo, task: .upscale, scale: 2, denoiseLevel: 3,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), JPEG denoise level 3; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_photo",
            files: [
                modelFile(.param, .waifu2xUpconv7Photo, "noise3_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Photo, "noise3_scale2.0x_model.bin",
                          sha256: "a24379eb4e954005da1804223f428e67340e3f0037e4f7b9f568f0d0f20e9f20", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Photo),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-art-2x", family: .waifu2xUpconv7Art, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "waifu2x upconv_7 2× upscale for anime and illustrations (art weights), no denoise; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_anime_style_art_rgb",
            files: [
                modelFile(.param, .waifu2xUpconv7Art, "scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Art, "scale2.0x_model.bin",
                          sha256: "27d880903ff81390a3b4a900b67af3381c465279e34297546c9a58781855f7ef", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Art),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-art-2x-denoise0", family: .waifu2xUpconv7Art, task: .upscale, scale: 2, denoiseLevel: 0,
            description: "waifu2x upconv_7 2× upscale for anime and illustrations (art weights), JPEG denoise level 0; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_anime_style_art_rgb",
            files: [
                modelFile(.param, .waifu2xUpconv7Art, "noise0_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Art, "noise0_scale2.0x_model.bin",
                          sha256: "e1d2c4d91be98e72c0d48d08626cbe7d879aa2b80f740133dcc0d860eabb4189", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Art),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-art-2x-denoise1", family: .waifu2xUpconv7Art, task: .upscale, scale: 2, denoiseLevel: 1,
            description: "waifu2x upconv_7 2× upscale for anime and illustrations (art weights), JPEG denoise level 1; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_anime_style_art_rgb",
            files: [
                modelFile(.param, .waifu2xUpconv7Art, "noise1_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Art, "noise1_scale2.0x_model.bin",
                          sha256: "536fd7070b023463d30bd105f675acf301760dce539f2fb974bd06906045514f", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Art),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-art-2x-denoise2", family: .waifu2xUpconv7Art, task: .upscale, scale: 2, denoiseLevel: 2,
            description: "waifu2x upconv_7 2× upscale for anime and illustrations (art weights), JPEG denoise level 2; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_anime_style_art_rgb",
            files: [
                modelFile(.param, .waifu2xUpconv7Art, "noise2_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Art, "noise2_scale2.0x_model.bin",
                          sha256: "435f9082425c4520d3586757411ac409b1d67e428ed37ec571feb06f823e245e", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Art),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-art-2x-denoise3", family: .waifu2xUpconv7Art, task: .upscale, scale: 2, denoiseLevel: 3,
            description: "waifu2x upconv_7 2× upscale for anime and illustrations (art weights), JPEG denoise level 3; fast.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-upconv_7_anime_style_art_rgb",
            files: [
                modelFile(.param, .waifu2xUpconv7Art, "noise3_scale2.0x_model.param",
                          sha256: "413195ffde05b4d43807792c6c020c916cecdf25dcf002ee83f5e28d5cc246c6", size: 1047),
                modelFile(.weights, .waifu2xUpconv7Art, "noise3_scale2.0x_model.bin",
                          sha256: "3e783a9117d4564fbd0cc376375b29d7eb05bd2e457f748898e82eefb1ace2f1", size: 1106248),
            ],
            licence: waifu2xLicence(.waifu2xUpconv7Art),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "waifu2x-cunet-2x", family: .waifu2xCunet, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "waifu2x CUnet 2× upscale for anime, no denoise; the sharpest waifu2x, several times slower than upconv_7.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-cunet",
            files: [
                modelFile(.param, .waifu2xCunet, "scale2.0x_model.param",
                          sha256: "ccc3b2f1c9fad829ecdda40cac8dc853fcddf14917170efba888b256fbf9074a", size: 7249),
                modelFile(.weights, .waifu2xCunet, "scale2.0x_model.bin",
                          sha256: "d82ed30207fd07e1c16726a9ca838ce44e6e25a105b0278c7ca681516ee0e18e", size: 2776400),
            ],
            licence: waifu2xLicence(.waifu2xCunet),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 18,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 18),
        ModelEntry(
            name: "waifu2x-cunet-2x-denoise0", family: .waifu2xCunet, task: .upscale, scale: 2, denoiseLevel: 0,
            description: "waifu2x CUnet 2× upscale for anime with JPEG denoise level 0.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-cunet",
            files: [
                modelFile(.param, .waifu2xCunet, "noise0_scale2.0x_model.param",
                          sha256: "ccc3b2f1c9fad829ecdda40cac8dc853fcddf14917170efba888b256fbf9074a", size: 7249),
                modelFile(.weights, .waifu2xCunet, "noise0_scale2.0x_model.bin",
                          sha256: "5329a9375c9cfb64a60a2903fd8ae6e2851d9b069556bf025dbab9d0216fb27c", size: 2776400),
            ],
            licence: waifu2xLicence(.waifu2xCunet),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 18,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 18),
        ModelEntry(
            name: "waifu2x-cunet-2x-denoise2", family: .waifu2xCunet, task: .upscale, scale: 2, denoiseLevel: 2,
            description: "waifu2x CUnet 2× upscale for anime with JPEG denoise level 2.",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-cunet",
            files: [
                modelFile(.param, .waifu2xCunet, "noise2_scale2.0x_model.param",
                          sha256: "ccc3b2f1c9fad829ecdda40cac8dc853fcddf14917170efba888b256fbf9074a", size: 7249),
                modelFile(.weights, .waifu2xCunet, "noise2_scale2.0x_model.bin",
                          sha256: "5c836e6ae022636cdd5590fbb66dbca2a5fc20bbf8e628884c3612ef72d51858", size: 2776400),
            ],
            licence: waifu2xLicence(.waifu2xCunet),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 18,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 18),
        ModelEntry(
            name: "waifu2x-cunet-1x-denoise1", family: .waifu2xCunet, task: .denoise, scale: 1, denoiseLevel: 1,
            description: "waifu2x CUnet JPEG denoise level 1 for anime at the same size (no upscale).",
            source: "nihui/waifu2x-ncnn-vulkan @64914665, models/models-cunet",
            files: [
                modelFile(.param, .waifu2xCunet, "noise1_model.param",
                          sha256: "4513ef004281bd50cdbed325df500df9aec154e8495190f578f09414c75f10f9", size: 7231),
                modelFile(.weights, .waifu2xCunet, "noise1_model.bin",
                          sha256: "3407cb87c2503cbd69f8a6703b31bc4949a72080a3e1b1e536dba8bdbfad934f", size: 2767568),
            ],
            licence: waifu2xLicence(.waifu2xCunet),
            inputBlob: "Input1", outputBlob: "Eltwise4", border: .replicate, padding: 28,
            tileMultiple: 4, hasGlobalPooling: true, tileOverlap: 28),
        ModelEntry(
            name: "realcugan-2x", family: .realcuganSE, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "Real-CUGAN 2× upscale for anime, no denoise.",
            source: "nihui/realcugan-ncnn-vulkan @395302c5, models/models-se",
            files: [
                modelFile(.param, .realcuganSE, "up2x-no-denoise.param",
                          sha256: "4b3b5c5710ad1d00503c8243417aa75f13fe497723e8b4952e8b1abfc08f9b84", size: 4761),
                modelFile(.weights, .realcuganSE, "up2x-no-denoise.bin",
                          sha256: "7f135a712830b16678cb8247b9517308c5f3858fca9b10e1c3ad5ef6e261de0c", size: 2573648),
            ],
            licence: realcuganLicence,
            inputBlob: "in0", outputBlob: "out0", border: .reflect, padding: 18,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 18),
        ModelEntry(
            name: "realcugan-2x-conservative", family: .realcuganSE, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "Real-CUGAN 2× upscale for anime, conservative: keeps more of the source texture and grain.",
            source: "nihui/realcugan-ncnn-vulkan @395302c5, models/models-se",
            files: [
                modelFile(.param, .realcuganSE, "up2x-conservative.param",
                          sha256: "4b3b5c5710ad1d00503c8243417aa75f13fe497723e8b4952e8b1abfc08f9b84", size: 4761),
                modelFile(.weights, .realcuganSE, "up2x-conservative.bin",
                          sha256: "91c72c136e7ff8556323d4449c5ceeff22d9829bf8463a01137cadb8d59b84a0", size: 2573648),
            ],
            licence: realcuganLicence,
            inputBlob: "in0", outputBlob: "out0", border: .reflect, padding: 18,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 18),
        ModelEntry(
            name: "realcugan-3x", family: .realcuganSE, task: .upscale, scale: 3, denoiseLevel: nil,
            description: "Real-CUGAN 3× upscale for anime, no denoise.",
            source: "nihui/realcugan-ncnn-vulkan @395302c5, models/models-se",
            files: [
                modelFile(.param, .realcuganSE, "up3x-no-denoise.param",
                          sha256: "4e8b144dd34e558f530231026d229bedb0eb8877233bf5d9b457bf1bfa4558c1", size: 4761),
                modelFile(.weights, .realcuganSE, "up3x-no-denoise.bin",
                          sha256: "e22e8e647b20eb0067cc46b9cf83bcb0893b2e77e83beaee0bedecf4c735f716", size: 2577104),
            ],
            licence: realcuganLicence,
            inputBlob: "in0", outputBlob: "out0", border: .reflect, padding: 14,
            tileMultiple: 4, hasGlobalPooling: true, tileOverlap: 14),
        ModelEntry(
            name: "realcugan-4x", family: .realcuganSE, task: .upscale, scale: 4, denoiseLevel: nil,
            description: "Real-CUGAN 4× upscale for anime, no denoise; the output is a residual over a nearest-neighbour 4× copy of the input.",
            source: "nihui/realcugan-ncnn-vulkan @395302c5, models/models-se",
            files: [
                modelFile(.param, .realcuganSE, "up4x-no-denoise.param",
                          sha256: "ffbcdc7ef979e13f4d0b61542d32e88ec6316e4962535f851a9ddfccc4cad4c1", size: 5018),
                modelFile(.weights, .realcuganSE, "up4x-no-denoise.bin",
                          sha256: "aa3d9bda3f46bb48f709d874ccaf67877e94a2fd6cedca7dac5ccb3bf714e066", size: 2818348),
            ],
            licence: realcuganLicence,
            inputBlob: "in0", outputBlob: "out0", border: .reflect, padding: 19,
            tileMultiple: 2, hasGlobalPooling: true, tileOverlap: 19, outputIsResidualOverNearest: true),
        ModelEntry(
            name: "realesr-animevideov3-2x", family: .realesrAnimeVideoV3, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "Real-ESRGAN animevideov3 2× upscale for anime video (the 4× network followed by a bicubic downscale to 2×; about 0.62 M parameters, fast).",
            source: "k4yt3x/video2x @8a9e5711, models/realesrgan (weights xinntao/Real-ESRGAN)",
            files: [
                modelFile(.param, .realesrAnimeVideoV3, "realesr-animevideov3-x2.param",
                          sha256: "b88ff4f00ebf019a7fdac17fdd45a7fd3665d37509efc5baf2e4da2e24420a04", size: 3173),
                modelFile(.weights, .realesrAnimeVideoV3, "realesr-animevideov3-x2.bin",
                          sha256: "548a36f9c3f4ab8da56cd3b13badf23968bee207b396dad14d04b830e5f2ab2d", size: 1247368),
            ],
            licence: realesrLicence,
            inputBlob: "data", outputBlob: "output", border: .none, padding: 0,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 10),
        ModelEntry(
            name: "realesr-animevideov3-3x", family: .realesrAnimeVideoV3, task: .upscale, scale: 3, denoiseLevel: nil,
            description: "Real-ESRGAN animevideov3 3× upscale for anime video (the 4× network followed by a bicubic downscale to 3×; about 0.62 M parameters, fast).",
            source: "k4yt3x/video2x @8a9e5711, models/realesrgan (weights xinntao/Real-ESRGAN)",
            files: [
                modelFile(.param, .realesrAnimeVideoV3, "realesr-animevideov3-x3.param",
                          sha256: "d1a5755008791d09b57e3425fc9dd0bd26b00fdf79c606210bc0e693f8230881", size: 3173),
                modelFile(.weights, .realesrAnimeVideoV3, "realesr-animevideov3-x3.bin",
                          sha256: "548a36f9c3f4ab8da56cd3b13badf23968bee207b396dad14d04b830e5f2ab2d", size: 1247368),
            ],
            licence: realesrLicence,
            inputBlob: "data", outputBlob: "output", border: .none, padding: 0,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 10),
        ModelEntry(
            name: "realesr-animevideov3-4x", family: .realesrAnimeVideoV3, task: .upscale, scale: 4, denoiseLevel: nil,
            description: "Real-ESRGAN animevideov3 4× upscale for anime video (the 4× network; about 0.62 M parameters, fast).",
            source: "k4yt3x/video2x @8a9e5711, models/realesrgan (weights xinntao/Real-ESRGAN)",
            files: [
                modelFile(.param, .realesrAnimeVideoV3, "realesr-animevideov3-x4.param",
                          sha256: "850a248e7c14c27e5bd8cf7265113a9441036a7db63963bb8aa5169d788a435e", size: 3077),
                modelFile(.weights, .realesrAnimeVideoV3, "realesr-animevideov3-x4.bin",
                          sha256: "548a36f9c3f4ab8da56cd3b13badf23968bee207b396dad14d04b830e5f2ab2d", size: 1247368),
            ],
            licence: realesrLicence,
            inputBlob: "data", outputBlob: "output", border: .none, padding: 0,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 10),
        ModelEntry(
            name: "waifu2x-photo-2x-coreml", family: .waifu2xUpconv7PhotoCoreML, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "waifu2x upconv_7 2× upscale for live-action footage (photo weights), no denoise, as a Core ML NeuralNetwork; the same network as waifu2x-photo-2x in fp32.",
            source: "imxieyi/waifu2x-ios @5676e625, waifu2x/models (weights nagadomi/waifu2x)",
            format: .coreml,
            files: [
                ModelFile(role: .model, mirrorPath: "coreml/up_photo_scale2x_model.mlmodel",
                          sha256: "85c8818ec5b6ef98630c32ce78b36d522c8283ba966e4c07409a118f45b864fb", size: 2_211_033,
                          upstreamURL: URL(string: Upstream.folder(.waifu2xUpconv7PhotoCoreML) + "up_photo_scale2x_model.mlmodel")!),
            ],
            licence: waifu2xCoreMLLicence,
            inputBlob: "input", outputBlob: "conv7", border: .replicate, padding: 7,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 7),
        ModelEntry(
            name: "pipersr-2x", family: .piperSR, task: .upscale, scale: 2, denoiseLevel: nil,
            description: "PiperSR 2× super-resolution for photos and video (ModelPiper), a Core ML ML Program in fp16: 14 3×3 convolutions, pixel shuffle.",
            source: "PyPI pipersr 1.0.3, pipersr/PiperSR_2x.mlpackage in the wheel",
            format: .mlprogram,
            files: [
                ModelFile(role: .model, directory: "pipersr/PiperSR_2x.mlpackage", in: piperSRWheel,
                          treeSHA256: "9f7cc0cbe19bc763046532a1ea710d79dac01e23c66ac743e27f70f7dccc939c", size: 928_180),
            ],
            licence: piperSRLicence,
            // 14 "same" 3×3 convolutions see 14 pixels each way: replicate that much around each
            // tile and the tiles join exactly.
            inputBlob: "input_image", outputBlob: "output_image", border: .replicate, padding: 14,
            tileMultiple: 1, hasGlobalPooling: false, tileOverlap: 14),
    ])
}
