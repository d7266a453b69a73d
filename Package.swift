// swift-tools-version:6.0
import PackageDescription

// Layout (see ../shared/STYLE.md):
//   C modules   CFFmpeg, CZip, CDNNL  — system libraries from Debian, each with a shim header
//   MediaIO     demux/decode/encode/mux, y4m and raw frame streams, frames and pixel formats
//   SafeFiles   PartialFile: every output written beside its target and renamed into place
//   Vivify      the library face: Configuration + the job runner wiring the stages
//   vivify      the thin command-line tool
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
        .target(name: "MediaIO", dependencies: ["CFFmpeg"]),
        // The engine's loops are the product: optimise them even in debug builds and tests.
        .target(name: "Engine", dependencies: ["CDNNL"], swiftSettings: [.unsafeFlags(["-Ounchecked"])]),
        .target(name: "SafeFiles"),
        .target(name: "ModelFormats", dependencies: ["Engine", "CZip", "SafeFiles"]),
        .target(name: "Pipeline"),
        .target(name: "Tracing"),
        .target(name: "Vivify", dependencies: ["MediaIO", "Engine", "ModelFormats", "ModelCatalog", "Pipeline", "Tracing", "ColorScience", "SafeFiles"]),
        .target(name: "ModelCatalog"),
        .target(name: "ColorScience", swiftSettings: [.unsafeFlags(["-Ounchecked"])]),
        .executableTarget(name: "vivify-lab-bench", dependencies: ["ColorScience"]),
        .executableTarget(name: "vivify-upsample-bench", dependencies: ["ColorScience"]),
        .executableTarget(
            name: "vivify",
            dependencies: ["Vivify", "MediaIO", "ModelCatalog", "SafeFiles", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(name: "MediaIOTests", dependencies: ["MediaIO", "Vivify"]),
        .testTarget(name: "EngineTests", dependencies: ["Engine", "ModelFormats"], exclude: ["Fixtures"]),
        .testTarget(name: "VivifyTests", dependencies: ["Vivify", "ModelFormats", "MediaIO", "ModelCatalog", "Tracing"]),
        .testTarget(name: "PipelineTests", dependencies: ["Pipeline"]),
        .testTarget(name: "TracingTests", dependencies: ["Tracing"]),
        .testTarget(name: "SystemLibrariesTests", dependencies: ["CZip", "CDNNL", "CFFmpeg"]),
        .testTarget(name: "VivifyCLITests", dependencies: ["Vivify", "vivify", "MediaIO", "ModelCatalog"]),
        .testTarget(name: "ModelCatalogTests", dependencies: ["ModelCatalog"]),
        .testTarget(name: "ColorScienceTests", dependencies: ["ColorScience"], exclude: ["Fixtures"]),
        .testTarget(name: "WifmTests", dependencies: ["ModelFormats"]),
        .testTarget(name: "SafeFilesTests", dependencies: ["SafeFiles"]),
    ]
)
