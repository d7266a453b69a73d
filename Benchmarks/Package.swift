// swift-tools-version:6.0
import PackageDescription

// Benchmarks live in their own package so their build and runs stay out of the test suite.
// They drive the release `vivify` binary and its peer as processes, so both pay the same
// start-up and I/O costs; the root package is built by Benchmarks/run.
let package = Package(
    name: "VivifyBenchmarks",
    targets: [
        // Shared by the benchmarks: medians and ffprobe frame counts.
        .target(name: "BenchSupport"),
        .executableTarget(name: "TranscodeRatio", dependencies: ["BenchSupport"]),
        .executableTarget(name: "EngineRatio", dependencies: ["BenchSupport"]),
        .executableTarget(name: "PipelineBench", dependencies: ["BenchSupport"]),
        .executableTarget(name: "SegmentBench", dependencies: ["BenchSupport"]),
        .executableTarget(name: "ONNXBench", dependencies: ["BenchSupport"]),
    ]
)
