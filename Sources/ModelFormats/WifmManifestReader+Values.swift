import Engine
import Foundation

/// The manifest reader's typed access to JSON values and its messages: every refusal names
/// the key, the value found and the fix (split from WifmManifestReader.swift).
extension WifmManifestReader {
    // MARK: Typed access, each refusal naming its key

    func object(_ value: Any, key: String) throws -> [String: Any] {
        guard let o = value as? [String: Any] else { throw wrongType(key, value, expected: "an object") }
        return o
    }

    func string(_ o: Object, _ key: String, required: Bool) throws -> String? {
        guard let value = o[key] else {
            if required {
                throw BundleError(.missingKey, key: o.key(key),
                                  "manifest.json has no `\(o.key(key))`, which the spec requires; add it (keys are case sensitive).")
            }
            return nil
        }
        guard let s = value as? String else { throw wrongType(o.key(key), value, expected: "a string") }
        return s
    }

    func nonEmptyString(_ o: Object, _ key: String, what: String) throws -> String {
        let s = try string(o, key, required: true)!
        guard !s.isEmpty else {
            throw BundleError(.missingKey, key: o.key(key),
                              "manifest.json key `\(o.key(key))` is empty, but it must give \(what); fill it in.")
        }
        return s
    }

    /// An integer key; a number with a fraction is refused with `kind` (`scale` 2.5 is an
    /// invalid scale, not a wrong type), a non-number with `.wrongType`.
    func integer(_ o: Object, _ key: String, required: Bool, kind: BundleError.Kind, rule: String, fix: String) throws -> Int? {
        guard let value = o[key] else {
            if required {
                throw BundleError(.missingKey, key: o.key(key),
                                  "manifest.json has no `\(o.key(key))`, which the spec requires; add it (keys are case sensitive).")
            }
            return nil
        }
        guard Self.numberValue(value) != nil else { throw wrongType(o.key(key), value, expected: "a number") }
        guard let n = Self.integerValue(value) else { throw failure(kind, o.key(key), value, rule, fix) }
        return n
    }

    /// A JSON number as a Double; nil for anything else, booleans included.
    static func numberValue(_ value: Any) -> Double? {
        guard let n = value as? NSNumber, !(value is String) else { return nil }
        // JSONSerialization gives true/false as NSNumber with the C type `char`; no JSON number is one.
        if String(cString: n.objCType) == "c" { return nil }
        return n.doubleValue
    }

    /// A JSON number with no fraction (2 and 2.0) as an Int; nil otherwise.
    static func integerValue(_ value: Any) -> Int? {
        guard let d = numberValue(value), d.isFinite, d.rounded() == d, abs(d) < 9.0e15 else { return nil }
        return Int(d)
    }

    // MARK: Messages

    func failure(_ kind: BundleError.Kind, _ key: String, _ value: Any, _ rule: String, _ fix: String) -> BundleError {
        BundleError(kind, key: key, "manifest.json key `\(key)` is \(Self.show(value)), but \(rule); \(fix).")
    }

    func wrongType(_ key: String, _ value: Any, expected: String) -> BundleError {
        let fix: String
        switch expected {
        case "a string": fix = "put the value in double quotes"
        case "a number": fix = "write a plain number, without quotes"
        case "an array": fix = "write it as [ … ]"
        default: fix = "write it as { … }"
        }
        return BundleError(.wrongType, key: key,
                           "manifest.json key `\(key)` is \(Self.show(value)) (\(Self.jsonKind(value))), but it must be \(expected); \(fix).")
    }

    /// What kind of JSON value this is, for messages.
    static func jsonKind(_ value: Any) -> String {
        if value is NSNull { return "null" }
        if value is String { return "a string" }
        if value is [Any] { return "an array" }
        if value is [String: Any] { return "an object" }
        if let n = value as? NSNumber { return String(cString: n.objCType) == "c" ? "a boolean" : "a number" }
        return "an unknown value"
    }

    /// A value as JSON, shortened, for messages.
    static func show(_ value: Any) -> String {
        let text: String
        switch value {
        case is NSNull: text = "null"
        case let s as String: text = "\"\(s)\""
        case let n as NSNumber where String(cString: n.objCType) == "c": text = n.boolValue ? "true" : "false"
        case let n as NSNumber:
            let d = n.doubleValue
            text = d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        case let i as Int: text = String(i)
        default:
            if let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]),
               let s = String(data: data, encoding: .utf8) {
                text = s.replacingOccurrences(of: ",", with: ", ")
            } else {
                text = "\(value)"
            }
        }
        return text.count > 80 ? String(text.prefix(77)) + "…" : text
    }

    /// Line and column (1-based) of the "character N" offset that Foundation's parser reports.
    static func lineAndColumn(of detail: String, in bytes: [UInt8]) -> (Int, Int)? {
        guard let range = detail.range(of: "character "),
              let offset = Int(detail[range.upperBound...].prefix(while: \.isNumber)), offset <= bytes.count else { return nil }
        var line = 1, column = 1
        for b in bytes[..<offset] {
            if b == UInt8(ascii: "\n") { line += 1; column = 1 } else if b & 0xC0 != 0x80 { column += 1 }
        }
        return (line, column)
    }

    /// Replaces each comma that only whitespace separates from a following `}` or `]` with a
    /// space (so the parser's character offsets stay right) and returns the 1-based lines of
    /// those commas. Commas inside strings are left alone.
    static func blankTrailingCommas(_ bytes: inout [UInt8]) -> [Int] {
        var lines: [Int] = []
        var line = 1, inString = false, escaped = false
        for i in bytes.indices {
            let c = bytes[i]
            if c == UInt8(ascii: "\n") { line += 1 }
            if inString {
                if escaped { escaped = false } else if c == UInt8(ascii: "\\") { escaped = true } else if c == UInt8(ascii: "\"") { inString = false }
            } else if c == UInt8(ascii: "\"") {
                inString = true
            } else if c == UInt8(ascii: ",") {
                var j = i + 1
                while j < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[j]) { j += 1 }
                if j < bytes.count, bytes[j] == UInt8(ascii: "}") || bytes[j] == UInt8(ascii: "]") {
                    bytes[i] = 0x20
                    lines.append(line)
                }
            }
        }
        return lines
    }
}
