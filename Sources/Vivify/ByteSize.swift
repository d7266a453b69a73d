import Foundation

/// Sizes as people write them on a command line: `512M`, `1.5G`, `800MiB`, `2GB`, `1048576`
/// (binary units: K = 1024).
package enum ByteSize {
    /// Bytes, or nil when `text` is not a size.
    package static func parse(_ text: String) -> Int? {
        let t = text.trimmingCharacters(in: .whitespaces).uppercased()
        let number = t.prefix { $0.isNumber || $0 == "." }
        guard !number.isEmpty, let value = Double(number), value.isFinite, value > 0 else { return nil }
        var unit = String(t.dropFirst(number.count)).trimmingCharacters(in: .whitespaces)
        if unit.hasSuffix("IB") { unit.removeLast(2) } else if unit.hasSuffix("B") { unit.removeLast() }
        let factor: Double
        switch unit {
        case "": factor = 1
        case "K": factor = 1024
        case "M": factor = 1024 * 1024
        case "G": factor = 1024 * 1024 * 1024
        case "T": factor = 1024 * 1024 * 1024 * 1024
        default: return nil
        }
        let bytes = value * factor
        guard bytes < Double(Int.max) / 2 else { return nil }
        return Int(bytes)
    }

    /// `bytes` in the largest binary unit that keeps it above 1 ("1.5 GiB").
    package static func text(_ bytes: Int) -> String {
        let units = ["bytes", "KiB", "MiB", "GiB", "TiB"]
        var v = Double(bytes), i = 0
        while v >= 1024 && i < units.count - 1 { v /= 1024; i += 1 }
        return i == 0 ? "\(bytes) bytes" : String(format: v == v.rounded() ? "%.0f %@" : "%.1f %@", v, units[i])
    }
}
