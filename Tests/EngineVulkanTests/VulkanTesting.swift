import CVulkan
import Engine
@testable import EngineVulkan
import Foundation
import XCTest

/// What every in-process Vulkan test shares: the Khronos validation layer with
/// synchronization validation turned on before the device is first opened (once per process),
/// a test that fails on anything the layer says, and the rule for a machine without Vulkan: a
/// skip, or a failure when `VIVIFY_REQUIRE_VULKAN=1` (CI sets it in `.ci/run`).
enum VulkanTesting {
    /// Whether a missing Vulkan device (or validation layer) fails the tests.
    static var required: Bool { ProcessInfo.processInfo.environment["VIVIFY_REQUIRE_VULKAN"] == "1" }

    /// Asks for the validation layer; call before the first `VulkanBackend()` of the process.
    /// Also keeps the pipeline cache of the tests' process out of the user's ~/.cache (unless
    /// VIVIFY_CACHE_DIR is set already).
    static func enableValidation() {
        setenv(VulkanValidation.variable, "1", 1)
        setenv(VulkanPipelineCache.directoryVariable, NSTemporaryDirectory() + "vivify-test-cache", 0)
    }

    /// The backend, validated; a skip without a device unless `required`.
    static func backend(precision: VulkanPrecision = .fp32, file: StaticString = #filePath, line: UInt = #line) throws -> VulkanBackend {
        let b: VulkanBackend
        do { b = try VulkanBackend(precision: precision) } catch {
            // What the layer said while the instance failed to come up is about the missing
            // driver, which the error reports.
            VulkanValidation.clear()
            if required {
                XCTFail("No Vulkan device (VIVIFY_REQUIRE_VULKAN=1): \(error). Install mesa-vulkan-drivers and vulkan-validationlayers (scripts/install-deps).",
                        file: file, line: line)
                throw error
            }
            throw XCTSkip("No Vulkan device or validation layer: \(error). scripts/install-deps installs both; VIVIFY_REQUIRE_VULKAN=1 makes this a failure.")
        }
        XCTAssertTrue(b.isValidated, "the device was opened before the validation layer was asked for", file: file, line: line)
        return b
    }

    /// Fails on every message the layer gave since the last call, and forgets them.
    static func assertSilent(file: StaticString = #filePath, line: UInt = #line) {
        let said = VulkanValidation.messages
        XCTAssertEqual(said.count, 0, "the Khronos validation layer said \(said.count) thing(s), first: \(said.prefix(3).joined(separator: " | "))",
                       file: file, line: line)
        VulkanValidation.clear()
    }
}

/// A test case whose every test runs under the Khronos validation layer (synchronization
/// validation on) and must leave it silent.
class ValidatedVulkanTestCase: XCTestCase {
    override class func setUp() {
        super.setUp()
        VulkanTesting.enableValidation()
    }

    override func tearDown() {
        VulkanTesting.assertSilent()
        super.tearDown()
    }
}

/// The validation layer is really on, synchronization validation included, and its messages
/// really reach `VulkanValidation.messages`: deliberate misuse on the backend's own device is
/// reported (so the silence the other tests assert is the layer's, not a deaf messenger's).
final class VulkanValidationTests: XCTestCase {
    override class func setUp() {
        super.setUp()
        VulkanTesting.enableValidation()
    }

    func testMisuseIsReported() throws {
        let context = try VulkanTesting.backend().context
        VulkanTesting.assertSilent()
        let device = context.device
        // A buffer of size 0 is invalid (VUID-VkBufferCreateInfo-size-00912).
        var info = VkBufferCreateInfo()
        info.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO
        info.size = 0
        info.usage = VkBufferUsageFlags(VK_BUFFER_USAGE_STORAGE_BUFFER_BIT.rawValue)
        var invalid: VkBuffer?
        _ = vkCreateBuffer(device, &info, nil, &invalid)
        if let invalid { vkDestroyBuffer(device, invalid, nil) }
        XCTAssertTrue(VulkanValidation.messages.contains { $0.contains("00912") }, "no message for a buffer of size 0: \(VulkanValidation.messages)")
        VulkanValidation.clear()

        // Two writes to one buffer with no barrier between: a write-after-write hazard that
        // only synchronization validation sees.
        info.size = 256
        info.usage = VkBufferUsageFlags(VK_BUFFER_USAGE_TRANSFER_DST_BIT.rawValue)
        var buffer: VkBuffer?
        XCTAssertEqual(vkCreateBuffer(device, &info, nil, &buffer), VK_SUCCESS)
        defer { vkDestroyBuffer(device, buffer, nil) }
        var needs = VkMemoryRequirements()
        vkGetBufferMemoryRequirements(device, buffer, &needs)
        var alloc = VkMemoryAllocateInfo()
        alloc.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO
        alloc.allocationSize = needs.size
        alloc.memoryTypeIndex = context.hostMemoryType
        var memory: VkDeviceMemory?
        XCTAssertEqual(vkAllocateMemory(device, &alloc, nil, &memory), VK_SUCCESS)
        defer { vkFreeMemory(device, memory, nil) }
        XCTAssertEqual(vkBindBufferMemory(device, buffer, memory, 0), VK_SUCCESS)
        var poolInfo = VkCommandPoolCreateInfo()
        poolInfo.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO
        poolInfo.queueFamilyIndex = context.queueFamily
        var pool: VkCommandPool?
        XCTAssertEqual(vkCreateCommandPool(device, &poolInfo, nil, &pool), VK_SUCCESS)
        defer { vkDestroyCommandPool(device, pool, nil) }
        var allocate = VkCommandBufferAllocateInfo()
        allocate.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO
        allocate.commandPool = pool
        allocate.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY
        allocate.commandBufferCount = 1
        var commands: VkCommandBuffer?
        XCTAssertEqual(vkAllocateCommandBuffers(device, &allocate, &commands), VK_SUCCESS)
        var begin = VkCommandBufferBeginInfo()
        begin.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO
        XCTAssertEqual(vkBeginCommandBuffer(commands, &begin), VK_SUCCESS)
        vkCmdFillBuffer(commands, buffer, 0, VkDeviceSize(VK_WHOLE_SIZE), 1)
        vkCmdFillBuffer(commands, buffer, 0, VkDeviceSize(VK_WHOLE_SIZE), 2)
        XCTAssertEqual(vkEndCommandBuffer(commands), VK_SUCCESS)
        XCTAssertTrue(VulkanValidation.messages.contains { $0.contains("SYNC-HAZARD-WRITE") },
                      "synchronization validation is off: no hazard reported for two unordered writes: \(VulkanValidation.messages)")
        VulkanValidation.clear()
    }
}

/// The choice rules on device lists of every shape (no driver involved: the rules are plain
/// functions of the list and VIVIFY_VULKAN_DEVICE; the listing itself is tested through the
/// binary in BackendChoiceCLITests).
final class VulkanDeviceChoiceTests: XCTestCase {
    func device(_ index: Int, _ kind: VulkanDeviceInfo.Kind) -> VulkanDeviceInfo {
        VulkanDeviceInfo(index: index, name: "d\(index)", kind: kind, driver: "x", apiVersion: "1.3.0")
    }

    func testAutoRunsAGPUAndNeverTheCPU() throws {
        let none: [String: String] = [:]
        let lavapipe = device(0, .cpu)
        XCTAssertNil(try VulkanDevices.autoChoice([lavapipe], environment: none))
        XCTAssertEqual(try VulkanDevices.backendChoice([lavapipe], environment: none), 0)
        XCTAssertNil(try VulkanDevices.autoChoice([], environment: none))
        XCTAssertNil(try VulkanDevices.backendChoice([], environment: none))
        XCTAssertNil(try VulkanDevices.autoChoice([lavapipe, device(1, .virtual)], environment: none))
        XCTAssertEqual(try VulkanDevices.autoChoice([lavapipe, device(1, .integrated)], environment: none), 1)
        XCTAssertEqual(try VulkanDevices.autoChoice([lavapipe, device(1, .integrated), device(2, .discrete)], environment: none), 2)
        // VIVIFY_VULKAN_DEVICE picks the backend's device; auto runs it only when it is a GPU.
        let list = [device(0, .discrete), device(1, .integrated), device(2, .cpu)]
        XCTAssertEqual(try VulkanDevices.autoChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": "1"]), 1)
        XCTAssertNil(try VulkanDevices.autoChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": "2"]))
        XCTAssertEqual(try VulkanDevices.backendChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": "2"]), 2)
        // Empty is unset, as for the kernel switches; digits only otherwise.
        XCTAssertEqual(try VulkanDevices.backendChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": ""]), try VulkanDevices.backendChoice(list, environment: none))
        XCTAssertEqual(try VulkanDevices.autoChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": ""]), try VulkanDevices.autoChoice(list, environment: none))
        // An empty one does not make auto look at the devices of a machine with no GPU node.
        XCTAssertNil(try VulkanDevices.autoDevice(gpuNode: false, listing: { list }, environment: ["VIVIFY_VULKAN_DEVICE": ""]))
        for bad in ["3", "-1", "one", " 0", "+0", "0 ", "١"] {
            XCTAssertThrowsError(try VulkanDevices.autoChoice(list, environment: ["VIVIFY_VULKAN_DEVICE": bad]), bad) { error in
                XCTAssertEqual((error as? EngineError)?.kind, .invalidSetting, bad)
            }
        }
        // Discrete beats integrated wherever each is listed.
        XCTAssertEqual(try VulkanDevices.autoChoice([device(0, .integrated), device(1, .cpu), device(2, .discrete)], environment: none), 2)
        XCTAssertEqual(try VulkanDevices.autoChoice([device(0, .discrete), device(1, .integrated)], environment: none), 0)
    }

    /// The whole `auto` rule on made-up machines: a discrete GPU is chosen by itself (it no
    /// longer needs VIVIFY_VULKAN_DEVICE: every operation has a shader and its buffers are
    /// device-local); no GPU node means oneDNN without loading the drivers; lavapipe alone, or
    /// a driver that does not answer, means oneDNN.
    func testAutoDeviceOnMadeUpMachines() throws {
        let none: [String: String] = [:]
        var listed = 0
        func listing(_ devices: [VulkanDeviceInfo]) -> () throws -> [VulkanDeviceInfo] { { listed += 1; return devices } }
        let gpuMachine = [device(0, .cpu), device(1, .integrated), device(2, .discrete)]
        XCTAssertEqual(try VulkanDevices.autoDevice(gpuNode: true, listing: listing(gpuMachine), environment: none)?.index, 2)
        XCTAssertEqual(try VulkanDevices.autoDevice(gpuNode: true, listing: listing([device(0, .discrete)]), environment: none)?.index, 0)
        XCTAssertEqual(try VulkanDevices.autoDevice(gpuNode: true, listing: listing([device(0, .integrated), device(1, .cpu)]), environment: none)?.index, 0)
        XCTAssertNil(try VulkanDevices.autoDevice(gpuNode: true, listing: listing([device(0, .cpu)]), environment: none))
        XCTAssertEqual(listed, 4)
        // No GPU node (this CI machine): oneDNN, the driver never asked.
        XCTAssertNil(try VulkanDevices.autoDevice(gpuNode: false, listing: listing(gpuMachine), environment: none))
        XCTAssertEqual(listed, 4)
        // VIVIFY_VULKAN_DEVICE looks even without a node, and names the device.
        XCTAssertEqual(try VulkanDevices.autoDevice(gpuNode: false, listing: listing(gpuMachine), environment: ["VIVIFY_VULKAN_DEVICE": "1"])?.index, 1)
        XCTAssertNil(try VulkanDevices.autoDevice(gpuNode: false, listing: listing(gpuMachine), environment: ["VIVIFY_VULKAN_DEVICE": "0"]))
        // No driver: oneDNN, and a bad VIVIFY_VULKAN_DEVICE is still said.
        let noDriver: () throws -> [VulkanDeviceInfo] = { throw EngineError(.unsupported, "no driver") }
        XCTAssertNil(try VulkanDevices.autoDevice(gpuNode: true, listing: noDriver, environment: none))
        XCTAssertThrowsError(try VulkanDevices.autoDevice(gpuNode: true, listing: noDriver, environment: ["VIVIFY_VULKAN_DEVICE": "0"]))
    }
}
