import CVulkan
import Engine
import Foundation

/// The driver's compiled pipelines kept on disk between runs, so a second process skips
/// compiling the shaders (seconds on some drivers, every time `vivify` starts).
///
///     open:  file for this device and driver ─▶ our header checked (magic, length, checksum)
///            ─▶ Vulkan's own header checked (vendor, device, pipelineCacheUUID)
///            ─▶ VkPipelineCache made from it; anything wrong: an empty one, nothing said
///     save:  vkGetPipelineCacheData ─▶ temporary file beside it ─▶ rename over it
///
/// One file per device and driver, named by vendorID, deviceID, driverVersion and
/// pipelineCacheUUID, in `directory(environment:)`. A corrupt, truncated or mismatched file is
/// ignored (and replaced at the next save): drivers are not all robust against bad cache data,
/// so it is checked before the driver sees it.
final class VulkanPipelineCache {
    /// What the driver's cache data is valid for.
    struct Key: Equatable {
        var vendorID: UInt32
        var deviceID: UInt32
        var driverVersion: UInt32
        var uuid: [UInt8]

        /// The key of a device, from its properties.
        init(_ p: VkPhysicalDeviceProperties) {
            var props = p
            vendorID = p.vendorID
            deviceID = p.deviceID
            driverVersion = p.driverVersion
            uuid = withUnsafeBytes(of: &props.pipelineCacheUUID) { Array($0) }
        }

        init(vendorID: UInt32, deviceID: UInt32, driverVersion: UInt32, uuid: [UInt8]) {
            (self.vendorID, self.deviceID, self.driverVersion, self.uuid) = (vendorID, deviceID, driverVersion, uuid)
        }

        /// e.g. "pipelines-10005-0-1-0f3a….bin".
        var fileName: String {
            let hex = uuid.map { String(format: "%02x", $0) }.joined()
            return "pipelines-\(String(vendorID, radix: 16))-\(String(deviceID, radix: 16))-\(String(driverVersion, radix: 16))-\(hex).bin"
        }
    }

    /// The environment variable naming the cache directory (tests point it at a temporary one).
    static let directoryVariable = "VIVIFY_CACHE_DIR"

    /// `$VIVIFY_CACHE_DIR`, else `$XDG_CACHE_HOME/vivify` (an absolute path only, as the XDG
    /// Base Directory specification says), else `~/.cache/vivify`.
    static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> URL {
        if let dir = environment[directoryVariable], !dir.isEmpty { return URL(fileURLWithPath: dir) }
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") { return URL(fileURLWithPath: xdg).appendingPathComponent("vivify") }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/vivify")
    }

    let device: VkDevice
    let key: Key
    /// The file this cache loads from and saves to.
    let url: URL
    let handle: VkPipelineCache
    /// The bytes of driver data loaded from the file (0: none, or the file was ignored).
    let loadedBytes: Int

    /// Opens the cache of `key` in `directory`: from its file when that is sound and for this
    /// device and driver, else empty.
    init(device: VkDevice, key: Key, directory: URL) throws {
        self.device = device
        self.key = key
        url = directory.appendingPathComponent(key.fileName)
        let data = (try? Data(contentsOf: url)).flatMap { Self.payload(of: $0, for: key) }
        var made: VkPipelineCache?
        var used = 0
        if let data, !data.isEmpty {
            let r = data.withUnsafeBytes { raw -> VkResult in
                var info = VkPipelineCacheCreateInfo()
                info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
                info.initialDataSize = raw.count
                info.pInitialData = raw.baseAddress
                return vkCreatePipelineCache(device, &info, nil, &made)
            }
            if r == VK_SUCCESS { used = data.count } else { made = nil }
        }
        if made == nil {
            var info = VkPipelineCacheCreateInfo()
            info.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO
            try VulkanContext.check(vkCreatePipelineCache(device, &info, nil, &made), "creating a pipeline cache")
        }
        handle = made!
        loadedBytes = used
    }

    deinit {
        vkDestroyPipelineCache(device, handle, nil)
    }

    /// Writes the driver's data to the file: a temporary file beside it, renamed over it, so a
    /// reader never sees half a file. Failures (a read-only home, a full disk) are not errors:
    /// the next run compiles again.
    @discardableResult
    func save() -> Bool {
        var size = 0
        guard vkGetPipelineCacheData(device, handle, &size, nil) == VK_SUCCESS, size > 0 else { return false }
        var bytes = [UInt8](repeating: 0, count: size)
        guard vkGetPipelineCacheData(device, handle, &size, &bytes) == VK_SUCCESS else { return false }
        let file = Self.file(payload: Data(bytes.prefix(size)))
        let dir = url.deletingLastPathComponent()
        let temporary = dir.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        do {
            try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
            try file.write(to: temporary)
            guard rename(temporary.path, url.path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                return false
            }
            return true
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            return false
        }
    }

    // MARK: the file

    /// "VVPC", version 1, payload length (8 bytes), FNV-1a 64 of the payload, the payload.
    private static let magic: [UInt8] = Array("VVPC".utf8)
    private static let version: UInt32 = 1
    static let headerSize = 24

    /// The file holding `payload`.
    static func file(payload: Data) -> Data {
        var out = Data(magic)
        withUnsafeBytes(of: version.littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: UInt64(payload.count).littleEndian) { out.append(contentsOf: $0) }
        withUnsafeBytes(of: fnv1a(payload).littleEndian) { out.append(contentsOf: $0) }
        out.append(payload)
        return out
    }

    /// The driver data in `file` when it is whole and made for `key`'s device; nil otherwise.
    static func payload(of file: Data, for key: Key) -> Data? {
        let bytes = [UInt8](file)
        guard bytes.count >= headerSize, Array(bytes[0..<4]) == magic, read32(bytes, 4) == version else { return nil }
        guard read64(bytes, 8) == UInt64(bytes.count - headerSize) else { return nil }
        let payload = Data(bytes[headerSize...])
        guard read64(bytes, 16) == fnv1a(payload) else { return nil }
        // Vulkan's header (VkPipelineCacheHeaderVersionOne): length, version 1, vendor, device,
        // pipelineCacheUUID.
        let p = [UInt8](payload)
        guard p.count >= 32, read32(p, 0) >= 32, read32(p, 4) == 1, read32(p, 8) == key.vendorID, read32(p, 12) == key.deviceID,
              Array(p[16..<32]) == key.uuid else { return nil }
        return payload
    }

    private static func read32(_ b: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(b[at + $1]) << (8 * UInt32($1)) }
    }

    private static func read64(_ b: [UInt8], _ at: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[at + $1]) << (8 * UInt64($1)) }
    }

    static func fnv1a(_ data: Data) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data {
            h ^= UInt64(byte)
            h = h &* 0x0000_0100_0000_01b3
        }
        return h
    }
}
