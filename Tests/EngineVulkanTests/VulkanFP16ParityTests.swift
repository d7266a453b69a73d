@testable import Engine
@testable import EngineVulkan
import Foundation
import XCTest

/// Every test of VulkanParityTests again with fp16 storage (values, weights, biases and slopes
/// stored as half floats, the arithmetic in fp32), against the fp32 reference on the same
/// seeded inputs: max |a − b| ≤ 2e-3 · max(1, max |b|) for single operations (worst measured
/// on lavapipe: 1.2e-3, a convolution with tanh), 5e-3 for the real models (worst measured:
/// realcugan-2x 2.5e-3, realesr-animevideov3-2x 1.7e-3, waifu2x 8e-4). Every output must be a
/// half float and differ from the reference where that is not one, so a test fails if fp32
/// ran instead. The quality of the catalog models at fp16 on photos is
/// VulkanFP16QualityTests' (VivifyTests).
final class VulkanFP16ParityTests: VulkanParityTests {
    override var precision: VulkanPrecision { .fp16 }
    override var tolerance: Float { 2e-3 }
    override var modelTolerance: Float { 5e-3 }

    /// lavapipe (and nearly every GPU) has 16-bit storage buffers: fp16 runs, no note.
    func testFP16StorageIsAvailable() throws {
        let b = try backend()
        XCTAssertEqual(b.precision, .fp16, b.precisionNote ?? "")
        XCTAssertNil(b.precisionNote)
        XCTAssertTrue(b.context.hasFP16Storage)
    }

    /// Values stored as half floats: rounded to the nearest half (11 significant bits), and read
    /// back as the same floats; a buffer's size is two bytes a value.
    func testHalfFloatBuffersRoundTrip() throws {
        let context = try backend().context
        let values: [Float] = [0, 1, -2.5, 1.0 / 3, 65504, 1e-3, -7.25e-5]
        let buffer = try VulkanBuffer(context, values: values, placement: .shared, storage: .fp16)
        XCTAssertEqual(VulkanBuffer.bytes(values.count, .fp16), VkDeviceSizeForTests(values.count * 2))
        var back = [Float](repeating: .nan, count: values.count)
        back.withUnsafeMutableBufferPointer { buffer.read(into: $0) }
        XCTAssertEqual(back, values.map { Float(Float16($0)) })
        XCTAssertNotEqual(back[3], values[3])
    }
}

/// VkDeviceSize without importing CVulkan here.
private func VkDeviceSizeForTests(_ n: Int) -> UInt64 { UInt64(n) }
