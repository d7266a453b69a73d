import CVulkan
@testable import Engine
@testable import EngineVulkan
import XCTest

/// Memory types and plans: which type each kind of buffer takes on the memory layouts real
/// devices have (plain functions of the list, no driver), and where the staged plan puts a
/// graph's values on this machine's device.
final class VulkanMemoryTests: ValidatedVulkanTestCase {
    static let local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT.rawValue, visible = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT.rawValue
    static let coherent = VK_MEMORY_PROPERTY_HOST_COHERENT_BIT.rawValue, cached = VK_MEMORY_PROPERTY_HOST_CACHED_BIT.rawValue

    func types(_ flags: [UInt32]) -> [VkMemoryType] { flags.map { VkMemoryType(propertyFlags: $0, heapIndex: 0) } }

    func testMemoryTypeChoice() {
        let (l, v, c, k) = (Self.local, Self.visible, Self.coherent, Self.cached)
        // A discrete GPU: device memory, host memory (plain and cached), and the small
        // device-local window the host can map.
        let discrete = types([l, v | c, v | c | k, l | v | c])
        XCTAssertEqual(VulkanBuffer.memoryType(discrete, allowed: 0xF, .device), 0)
        XCTAssertEqual(VulkanBuffer.memoryType(discrete, allowed: 0xF, .staging), 2)
        XCTAssertEqual(VulkanBuffer.memoryType(discrete, allowed: 0xF, .shared), 3)
        // Only the types a buffer allows.
        XCTAssertEqual(VulkanBuffer.memoryType(discrete, allowed: 0b1010, .device), 3)
        XCTAssertEqual(VulkanBuffer.memoryType(discrete, allowed: 0b1011, .staging), 1)
        XCTAssertNil(VulkanBuffer.memoryType(discrete, allowed: 0b0001, .staging))
        // lavapipe and unified memory: one type serves every kind.
        let unified = types([l | v | c | k])
        for placement in [VulkanBuffer.Placement.device, .staging, .shared] {
            XCTAssertEqual(VulkanBuffer.memoryType(unified, allowed: 1, placement), 0, "\(placement)")
        }
        // No device-local memory at all: device buffers fall back to what there is.
        XCTAssertEqual(VulkanBuffer.memoryType(types([v | c]), allowed: 1, .device), 0)
        // Lazily allocated memory backs no storage buffer.
        XCTAssertEqual(VulkanBuffer.memoryType(types([l | VK_MEMORY_PROPERTY_LAZILY_ALLOCATED_BIT.rawValue, l]), allowed: 3, .device), 1)
    }

    /// On this device the staged plan keeps every value but those a host step touches in
    /// unmapped device-local buffers, and stages the input and output.
    func testStagedPlanPlacesValuesOnTheDevice() throws {
        let staged = try VulkanBackend(memoryPlan: .staged)
        let w = ConvolutionParameters(outChannels: 3, inChannels: 3, kernelH: 1, kernelW: 1, weights: [Float](repeating: 0.5, count: 9))
        let graph = Graph(valueNames: ["in", "a", "b"], nodes: [
            Node(name: "c", op: .convolution(w), inputs: [0], output: 1),
            Node(name: "r", op: .activation(.relu), inputs: [1], output: 2),
        ], input: 0, output: 2, source: "test")
        let prepared = try XCTUnwrap(try staged.prepare(graph, input: Shape(c: 3, h: 5, w: 7)) as? VulkanPrepared)
        XCTAssertEqual(prepared.plan, .staged)
        XCTAssertNotNil(prepared.inputStaging)
        XCTAssertNotNil(prepared.outputStaging)
        for b in prepared.buffers {
            XCTAssertEqual(b.placement, .device)
            XCTAssertNil(b.mapped)
        }
        let out = try prepared.run(Tensor(shape: Shape(c: 3, h: 5, w: 7), data: (0..<105).map { Float($0 % 7) - 3 }))
        XCTAssertEqual(out.data[0], max(0, 1.5 * -3))
        XCTAssertEqual(out.data[3], 1.5 * 0)
        XCTAssertEqual(out.data[6], 1.5 * 3)
    }
}
