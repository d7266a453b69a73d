/// A list of models users can name. `Catalog.builtIn` is the one shipped with Vivify (see
/// `Catalog+BuiltIn.swift`); tests and tools may build their own.
public struct Catalog: Sendable {
    /// The models, in the order `vivify models list` shows them.
    public let entries: [ModelEntry]

    /// Makes a catalog of `entries`; names must be unique.
    public init(entries: [ModelEntry]) {
        precondition(Set(entries.map(\.name)).count == entries.count, "duplicate model names in catalog")
        self.entries = entries
    }

    /// The names of all models, in catalog order.
    public var names: [String] { entries.map(\.name) }

    /// The entry called `name` (exact, case-insensitive), or nil.
    public func entry(named name: String) -> ModelEntry? {
        let wanted = name.lowercased()
        return entries.first { $0.name == wanted }
    }

    /// The entry called `name`.
    ///
    /// - Throws: `CatalogError` of kind `.invalid` naming up to three close names.
    public func lookup(_ name: String) throws -> ModelEntry {
        if let e = entry(named: name) { return e }
        throw CatalogError(.invalid, "Unknown model '\(name)'.\(didYouMean(suggestions(for: name))) Run `vivify models list` to see every model name.")
    }

    /// Up to `limit` catalog names close to `name` (`closeNames`).
    public func suggestions(for name: String, limit: Int = 3) -> [String] {
        closeNames(to: name, among: names, limit: limit)
    }
}

/// " Did you mean 'a', 'b' or 'c'?" for close names (empty for none), to follow a sentence.
public func didYouMean(_ close: [String]) -> String {
    guard let last = close.last else { return "" }
    if close.count == 1 { return " Did you mean '\(last)'?" }
    return " Did you mean " + close.dropLast().map { "'\($0)'" }.joined(separator: ", ") + " or '\(last)'?"
}

/// Up to `limit` of `names` close to `name`: by edit distance, plus names that contain it or
/// that it contains, nearest first (the did-you-mean of every model name).
///
/// Complexity: O(n·m²) for n names of length m.
public func closeNames(to name: String, among names: [String], limit: Int = 3) -> [String] {
    let wanted = name.lowercased()
    guard !wanted.isEmpty else { return [] }
    let budget = max(2, wanted.count / 3)
    var scored: [(distance: Int, name: String)] = []
    for candidate in names {
        let d = editDistance(wanted, candidate)
        if d <= budget {
            scored.append((d, candidate))
        } else if candidate.contains(wanted) || (wanted.count >= 4 && wanted.contains(candidate)) {
            // A prefix like "realcugan" is far from "realcugan-2x-conservative" by edits but
            // plainly meant it; rank these after the genuine near-misses.
            scored.append((budget + 1 + abs(candidate.count - wanted.count), candidate))
        }
    }
    scored.sort { ($0.distance, $0.name) < ($1.distance, $1.name) }
    return Array(scored.prefix(limit).map(\.name))
}

/// The Levenshtein distance between `a` and `b` (insertions, deletions, substitutions of
/// Unicode scalars, each costing 1).
///
/// Complexity: O(|a|·|b|) time, O(|b|) memory.
public func editDistance(_ a: String, _ b: String) -> Int {
    let x = Array(a.unicodeScalars), y = Array(b.unicodeScalars)
    if x.isEmpty { return y.count }
    if y.isEmpty { return x.count }
    var previous = Array(0...y.count)
    var current = [Int](repeating: 0, count: y.count + 1)
    for i in 1...x.count {
        current[0] = i
        for j in 1...y.count {
            let substitution = previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[y.count]
}
