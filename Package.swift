// swift-tools-version:6.0
import Foundation
import PackageDescription

// MediaIO, ModelCatalog, Models and Vivify are optimised in debug builds too (the tests' binary), except
// under scripts/sanitize (VIVIFY_SANITIZE=1): there ThreadSanitizer, which cannot see the Swift
// runtime's reference counts, reported the decoder's copy-on-write hand-over of frame planes
// to the next stage as a race once those modules were optimised.
let optimisedInDebug: [SwiftSetting] = ProcessInfo.processInfo.environment["VIVIFY_SANITIZE"] == nil ? [.unsafeFlags(["-O"])] : []

// scripts/sanitize's AddressSanitizer build is also the fuzz build scripts/test runs: given the
// toolchain's libFuzzer without its main() (VIVIFY_FUZZER_LIB, from scripts/fuzzer-lib), that
// build passes -sanitize-coverage and -D VIVIFY_FUZZ to every module and vivify-fuzz links
// libFuzzer, so the fuzzing needs no build of its own (a release one took 285 s of CI).
let fuzzerLink: [LinkerSetting] = ProcessInfo.processInfo.environment["VIVIFY_FUZZER_LIB"].map {
    [.unsafeFlags(["-Xlinker", $0, "-Xlinker", "-lstdc++"])]
} ?? []

// Layout (see ../shared/STYLE.md):
//   C modules   CFFmpeg, CZip, CDNNL, CVulkan — system libraries from Debian, each with a shim header
//   MediaIO     demux/decode/encode/mux, y4m and raw frame streams, frames and pixel formats
//   Compute     the default thread count (all cores); runs pass theirs as values
//   Engine      graph IR, shape inference, graph passes, reference backend, tiler (no C libraries)
//   EngineDNNL  the oneDNN backend and its fast kernels (links libdnnl); importers never see it
//   EngineVulkan the Vulkan compute backend and its shaders (links libvulkan)
//   ModelFormats the importers (ncnn, Core ML, ML Program, ONNX, .wifm) onto the graph IR
//   SafeFiles   PartialFile: every output written beside its target and renamed into place
//   ModelCatalog the model catalog, our SHA-256, the model store and fetcher
//   Pipeline    stages on threads, bounded queues with named drop policies (imports none of ours)
//   Tracing     the frame-timing tracer, stats, Chrome trace and SVG plot (imports none of ours)
//   ColorScience Lab conversion (reference and fast), resampling, gamut fit, colour meters
//   Models      the model layer: resolver, built-ins, upscaler, colorizer and its colour guide,
//               stabilizer, precision and int8 plans, model digest, ComputeSettings (no jobs)
//   BuiltinModelData the built-in bundles as generated source
//   Vivify      the library face: RunConfiguration (input, stages as an ordered [StageSpec],
//               output, run, limits) and run(configuration, events:), segmented or in one
//               piece, wiring the stages (StageSpec.swift: each stage's case, processor and
//               settings); the jobs (run, segments, image, bench, infer); public only what a
//               library user needs
//   vivify      the thin command-line tool: imports only Vivify and ArgumentParser
//   FuzzTargets the parsers of untrusted bytes as fuzz entry points; vivify-fuzz drives them
//   vivify-gpucheck  the Vulkan backend alone (no FFmpeg, no oneDNN) for a GPU machine
//   vivify-lab-bench, vivify-upsample-bench  timings of ColorScience's conversion and resampling
// Debug builds (the tests' vivify binary) optimise the modules whose loops touch every pixel
// or byte (Engine, EngineDNNL, ColorScience, MediaIO, ModelCatalog's SHA-256, the Models
// colour guide and stabilizer): unoptimised, they made the end-to-end tests twice as slow.
let package = Package(
    name: "Vivify",
    products: [
        .library(name: "Vivify", targets: ["Vivify"]),
        .executable(name: "vivify", targets: ["vivify"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat libavcodec libswscale libavutil",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libswscale-dev", "libavutil-dev"])]
        ),
        .systemLibrary(name: "CZip", pkgConfig: "libzip", providers: [.apt(["libzip-dev"])]),
        .systemLibrary(name: "CDNNL", providers: [.apt(["libdnnl-dev"])]),
        .systemLibrary(name: "CVulkan", pkgConfig: "vulkan", providers: [.apt(["libvulkan-dev"])]),
        .target(name: "MediaIO", dependencies: ["CFFmpeg"], swiftSettings: optimisedInDebug),
        // Engine: the graph IR, shape inference, graph passes, the reference backend (plain
        // loops, the yardstick) and the tiler. Optimised even in debug builds and tests (the
        // reference runs whole models there), but with checks: -Ounchecked stays out of the
        // reference path.
        // Compute: the default thread count (all cores). `--threads` is no process-wide
        // setting: the count reaches the backends and the compute loops as a value.
        .target(name: "Compute"),
        .target(name: "Engine", dependencies: ["Compute"], swiftSettings: [.unsafeFlags(["-O"])]),
        // EngineDNNL: the oneDNN backend and its hand-written fast kernels (the fused upscaler
        // tail, separable bicubic), the only engine code that links libdnnl. Its loops are the
        // product: -Ounchecked, even in debug builds and tests.
        .target(name: "EngineDNNL", dependencies: ["Engine", "CDNNL", "Compute"], swiftSettings: [.unsafeFlags(["-Ounchecked"])]),
        // EngineVulkan: the GPU backend on Vulkan compute; its GLSL shaders (Shaders/) are
        // compiled by scripts/build-shaders into VulkanShaders+SPIRV.swift. Mesa's lavapipe
        // runs it on the CPU, so its parity tests run everywhere.
        .target(name: "EngineVulkan", dependencies: ["Engine", "CVulkan"], exclude: ["Shaders"]),
        .target(name: "SafeFiles"),
        .target(name: "ModelFormats", dependencies: ["Engine", "CZip", "SafeFiles"]),
        .target(name: "Pipeline"),
        .target(name: "Tracing"),
        // Models: the model layer. Every model argument resolved to a loaded model
        // (ModelResolver, BuiltinModels), the upscaler, the colorizer with its spec and colour
        // guide, the temporal stabilizer, the precision choice and int8 plans, the model digest.
        // Below Vivify, which keeps the jobs.
        .target(name: "Models", dependencies: ["Compute", "MediaIO", "Engine", "EngineDNNL", "EngineVulkan", "ModelFormats", "ModelCatalog", "ColorScience", "SafeFiles", "BuiltinModelData"], swiftSettings: optimisedInDebug),
        .target(name: "Vivify", dependencies: ["Compute", "MediaIO", "Engine", "EngineDNNL", "EngineVulkan", "ModelFormats", "ModelCatalog", "Models", "Pipeline", "Tracing", "ColorScience", "SafeFiles"], swiftSettings: optimisedInDebug),
        // BuiltinModelData: the built-in bundles as generated source (training/embed_builtin.py),
        // a target of its own so that a change to the models never recompiles 72,000 lines of base64.
        .target(name: "BuiltinModelData"),
        .target(name: "ModelCatalog", swiftSettings: optimisedInDebug),
        .target(name: "ColorScience", dependencies: ["Compute"], swiftSettings: [.unsafeFlags(["-Ounchecked"])]),
        // FuzzTargets: every parser of untrusted bytes as one entry point; vivify-fuzz drives them
        // with libFuzzer (scripts/fuzz) or, in a plain build, replays inputs.
        .target(name: "FuzzTargets", dependencies: ["Compute", "MediaIO", "ModelFormats", "Engine", "EngineDNNL", "Models", "Vivify"]),
        .executableTarget(name: "vivify-fuzz", dependencies: ["FuzzTargets"], linkerSettings: fuzzerLink),
        // vivify-gpucheck: the Vulkan backend's parity and speed on a folder of models, with no
        // FFmpeg and no oneDNN, to carry to a GPU machine (scripts/gpucheck-bundle).
        .executableTarget(name: "vivify-gpucheck", dependencies: ["Engine", "EngineVulkan", "ModelFormats"]),
        .executableTarget(name: "vivify-lab-bench", dependencies: ["ColorScience"]),
        .executableTarget(name: "vivify-upsample-bench", dependencies: ["ColorScience"]),
        .executableTarget(
            name: "vivify",
            dependencies: ["Vivify", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(name: "MediaIOTests", dependencies: ["MediaIO", "Vivify"]),
        .testTarget(name: "EngineTests", dependencies: ["Engine", "EngineDNNL", "ModelFormats", "Compute"], exclude: ["Fixtures"]),
        .testTarget(name: "EngineVulkanTests", dependencies: ["EngineVulkan", "Engine", "ModelFormats", "CVulkan"]),
        .testTarget(name: "VivifyTests", dependencies: ["Vivify", "Models", "EngineDNNL", "EngineVulkan", "ModelFormats", "MediaIO", "ModelCatalog", "Tracing"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline"]),
        .testTarget(name: "TracingTests", dependencies: ["Tracing"]),
        .testTarget(name: "SystemLibrariesTests", dependencies: ["CZip", "CDNNL", "CFFmpeg"]),
        .testTarget(name: "VivifyCLITests", dependencies: ["Vivify", "Models", "vivify", "MediaIO", "ModelCatalog", "ColorScience", "Compute"]),
        .testTarget(name: "ModelCatalogTests", dependencies: ["ModelCatalog"]),
        .testTarget(name: "ColorScienceTests", dependencies: ["ColorScience"], exclude: ["Fixtures"]),
        .testTarget(name: "ModelFormatsTests", dependencies: ["ModelFormats", "Engine", "EngineDNNL"], exclude: ["Fixtures"]),
        .testTarget(name: "SafeFilesTests", dependencies: ["SafeFiles"]),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzTargets", "MediaIO", "Vivify"], exclude: ["Crashes"]),
    ]
)
