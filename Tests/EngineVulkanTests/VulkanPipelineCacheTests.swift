import CVulkan
@testable import Engine
@testable import EngineVulkan
import Foundation
import XCTest

/// The pipeline cache on disk: saved by one preparation and loaded by the next, one file per
/// device and driver, written whole (temporary file and rename); a corrupt, truncated or
/// mismatched file ignored without a crash and replaced at the next save.
final class VulkanPipelineCacheTests: ValidatedVulkanTestCase {
    var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("vivify-pipeline-cache-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
        super.tearDown()
    }

    /// A cache of this device's key in the test's directory, with `shaders` built through it.
    func open(_ context: VulkanContext, building shaders: [String] = []) throws -> VulkanPipelineCache {
        var props = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(context.physical, &props)
        let cache = try VulkanPipelineCache(device: context.device, key: VulkanPipelineCache.Key(props), directory: directory)
        for name in shaders { vkDestroyPipeline(context.device, try context.makePipeline(name, cache: cache.handle), nil) }
        return cache
    }

    func testASecondPreparationLoadsTheCacheAndABadFileIsIgnored() throws {
        let context = try VulkanTesting.backend().context
        // First: no file, an empty cache; after building, a file named by device and driver.
        let first = try open(context, building: ["convolution_pixels", "activation"])
        XCTAssertEqual(first.loadedBytes, 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: first.url.path))
        XCTAssertTrue(first.save())
        XCTAssertTrue(first.url.lastPathComponent.hasPrefix("pipelines-"))
        let saved = try Data(contentsOf: first.url)
        // Our header and at least Vulkan's (lavapipe in Mesa 22.3 keeps no pipelines in its
        // cache data: the header alone, 56 bytes in all; GPU drivers add the compiled code).
        XCTAssertGreaterThanOrEqual(saved.count, VulkanPipelineCache.headerSize + 32)
        // No temporary file left beside it.
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: directory.path), [first.url.lastPathComponent])

        // Second: found and loaded.
        let second = try open(context, building: ["convolution_pixels"])
        XCTAssertEqual(second.loadedBytes, saved.count - VulkanPipelineCache.headerSize)

        // Damaged files: ignored, no crash, and replaced by the next save.
        var flipped = [UInt8](saved)
        flipped[flipped.count - 1] ^= 0xFF
        var otherVendor = [UInt8](saved[VulkanPipelineCache.headerSize...])
        otherVendor[8] ^= 0x01
        let damaged: [(String, Data)] = [
            ("garbage", Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 131) })),
            ("empty", Data()),
            ("truncated", saved.prefix(saved.count / 2)),
            ("a flipped byte", Data(flipped)),
            // Whole and checksummed, but the driver data says another vendor.
            ("another device's data", VulkanPipelineCache.file(payload: Data(otherVendor))),
        ]
        for (what, bytes) in damaged {
            try bytes.write(to: first.url)
            let cache = try open(context, building: ["activation"])
            XCTAssertEqual(cache.loadedBytes, 0, what)
            XCTAssertTrue(cache.save(), what)
            XCTAssertGreaterThan(try open(context).loadedBytes, 0, "\(what): not replaced by the next save")
        }
    }

    /// The directory: VIVIFY_CACHE_DIR, else $XDG_CACHE_HOME/vivify (absolute only), else
    /// ~/.cache/vivify; and a preparation on the backend saves the process's cache there.
    func testDirectoryAndSaveOnPrepare() throws {
        XCTAssertEqual(VulkanPipelineCache.directory(environment: ["VIVIFY_CACHE_DIR": "/tmp/x", "XDG_CACHE_HOME": "/c", "HOME": "/h"]).path, "/tmp/x")
        XCTAssertEqual(VulkanPipelineCache.directory(environment: ["XDG_CACHE_HOME": "/c", "HOME": "/h"]).path, "/c/vivify")
        XCTAssertEqual(VulkanPipelineCache.directory(environment: ["XDG_CACHE_HOME": "relative", "HOME": "/h"]).path, "/h/.cache/vivify")
        XCTAssertEqual(VulkanPipelineCache.directory(environment: ["HOME": "/h"]).path, "/h/.cache/vivify")
        let backend = try VulkanTesting.backend()
        let cache = try XCTUnwrap(backend.context.pipelineCache)
        // This preparation, or an earlier one in this process, built pipelines and saved them.
        let graph = Graph(valueNames: ["in", "out"], nodes: [Node(name: "s", op: .spaceToDepth(factor: 2), inputs: [0], output: 1)],
                          input: 0, output: 1, source: "test")
        _ = try backend.prepare(graph, input: Shape(c: 1, h: 4, w: 4))
        let file = try Data(contentsOf: cache.url)
        var props = VkPhysicalDeviceProperties()
        vkGetPhysicalDeviceProperties(backend.context.physical, &props)
        XCTAssertNotNil(VulkanPipelineCache.payload(of: file, for: VulkanPipelineCache.Key(props)))
    }
}
