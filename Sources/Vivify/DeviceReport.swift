internal import Engine
internal import EngineVulkan
import Foundation

/// The Vulkan devices of this machine and what each backend choice runs on
/// (`vivify probe --devices`).
package struct DeviceReport: Sendable {
    /// One device as the driver lists it.
    package struct Device: Sendable {
        /// Its index (`VIVIFY_VULKAN_DEVICE=N`).
        package var index: Int
        package var name: String
        /// discrete, integrated, virtual, cpu or other.
        package var type: String
        package var driver: String
        package var apiVersion: String
    }

    /// The devices, in the driver's order (empty when no driver answers).
    package var devices: [Device]
    /// Why there are none, when no driver answered.
    package var driverProblem: String?
    /// The device `--backend vulkan` opens (nil: none).
    package var vulkanDevice: Int?
    /// What `--backend auto` runs on: "vulkan" or "onednn".
    package var auto: String
    /// The device `auto` runs on (nil: oneDNN on the CPU).
    package var autoDevice: Int?
    /// A `VIVIFY_VULKAN_DEVICE` that names no device: the error to end with (exit 64).
    package var settingError: Error?

    /// Lists the devices and applies the choice rules (`VulkanDevices`) to them.
    package static func current() -> DeviceReport {
        var report = DeviceReport(devices: [], driverProblem: nil, vulkanDevice: nil, auto: "onednn", autoDevice: nil, settingError: nil)
        var infos: [VulkanDeviceInfo] = []
        do { infos = try VulkanDevices.list() } catch { report.driverProblem = ErrorReport.message(for: error) }
        report.devices = infos.map { Device(index: $0.index, name: $0.name, type: $0.kind.rawValue, driver: $0.driver, apiVersion: $0.apiVersion) }
        do {
            report.vulkanDevice = try VulkanDevices.backendChoice(infos)
            // What a run decides: the same rule, looking at the devices only when the machine
            // shows a GPU (or VIVIFY_VULKAN_DEVICE is set); otherwise oneDNN.
            let looks = !(ProcessInfo.processInfo.environment[VulkanDevices.deviceVariable] ?? "").isEmpty || VulkanDevices.gpuNodePresent
            report.autoDevice = looks ? try VulkanDevices.autoChoice(infos) : nil
            report.auto = report.autoDevice == nil ? "onednn" : "vulkan"
        } catch {
            report.settingError = error
        }
        return report
    }

    /// The report as text: one line per device, then the choices.
    package var text: String {
        var out = "Vulkan devices (VIVIFY_VULKAN_DEVICE=N picks one):\n"
        if devices.isEmpty { out += "  none\(driverProblem.map { ": \($0)" } ?? "")\n" }
        for d in devices {
            out += "  \(d.index)  \(d.name)  type: \(d.type)  driver: \(d.driver)  Vulkan \(d.apiVersion)\n"
        }
        if settingError != nil {
            // The error itself follows on standard error (`probe` throws it): said once.
            out += "--backend vulkan and auto: none chosen (\(VulkanDevices.deviceVariable) names no device listed)\n"
            return out
        }
        let name = { (i: Int?) in i.map { "device \($0) (\(devices[$0].name))" } ?? "none" }
        out += "--backend vulkan: \(name(vulkanDevice))\n"
        if let autoDevice {
            out += "--backend auto: vulkan on \(name(autoDevice))\n"
        } else {
            out += "--backend auto: onednn (no discrete or integrated GPU; CPU devices such as lavapipe are never chosen)\n"
        }
        return out
    }

    /// The report as JSON (`devices` with `index`, `name`, `type`, `driver`, `api_version`;
    /// `vulkan_device`, `auto`, `auto_device`).
    package var json: String {
        let list: [[String: Any]] = devices.map {
            ["index": $0.index, "name": $0.name, "type": $0.type, "driver": $0.driver, "api_version": $0.apiVersion]
        }
        let object: [String: Any] = [
            "devices": list, "vulkan_device": vulkanDevice as Any? ?? NSNull(), "auto": auto,
            "auto_device": autoDevice as Any? ?? NSNull(), "driver_problem": driverProblem as Any? ?? NSNull(),
        ]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
