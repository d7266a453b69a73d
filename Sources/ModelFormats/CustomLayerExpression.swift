import Foundation

/// An element-wise function of a custom layer's input `x`, as a declaration writes it:
/// `(x + 1) * 127.5`, `clamp(x * gain, 0, 255)`, `max(x, 0) + 0.2 * min(x, 0)`.
///
/// Grammar (precedence climbing; identifiers other than `x` and the functions are numeric
/// parameters of the layer):
///
///     expression := term (('+' | '-') term)*
///     term       := unary (('*' | '/') unary)*
///     unary      := '-' unary | primary
///     primary    := NUMBER | 'x' | NAME | NAME '(' expression (',' expression)* ')' | '(' expression ')'
///
/// The text is untrusted: its length, nesting and size are bounded, and a syntax error says
/// where it is.
public indirect enum CustomLayerExpression: Sendable, Equatable {
    /// The layer's input.
    case x
    case number(Double)
    /// A numeric parameter of the layer, by name.
    case parameter(String)
    case negate(CustomLayerExpression)
    /// `+`, `-`, `*` or `/`.
    case binary(Character, CustomLayerExpression, CustomLayerExpression)
    /// One of `functions`.
    case call(String, [CustomLayerExpression])

    /// The functions and how many arguments each takes.
    public static let functions: [String: Int] = [
        "relu": 1, "sigmoid": 1, "tanh": 1, "silu": 1, "sqrt": 1, "abs": 1,
        "min": 2, "max": 2, "pow": 2, "leakyRelu": 2, "elu": 2, "clamp": 3,
    ]

    /// The functions as the declaration help lists them.
    static var functionList: String {
        "relu(e), sigmoid(e), tanh(e), silu(e), sqrt(e), abs(e), min(a, b), max(a, b), pow(e, p), leakyRelu(e, slope), elu(e, alpha), clamp(e, lo, hi)"
    }

    /// The longest text, deepest nesting and most nodes an expression may have.
    static let maxLength = 1_000, maxDepth = 32, maxNodes = 256

    /// A syntax error: what is wrong and at which character (1-based).
    public struct SyntaxError: Error, Sendable {
        public let message: String
    }

    /// Parses `text`.
    public init(parsing text: String) throws {
        guard text.count <= Self.maxLength else { throw SyntaxError(message: "it is \(text.count) characters long, over \(Self.maxLength)") }
        var parser = Parser(chars: Array(text))
        let e = try parser.expression(depth: 0)
        parser.skipSpace()
        guard parser.at == parser.chars.count else { throw parser.error("unexpected '\(parser.chars[parser.at])'") }
        guard parser.nodes <= Self.maxNodes else { throw SyntaxError(message: "it has \(parser.nodes) terms, over \(Self.maxNodes)") }
        self = e
    }

    /// The parameter names it reads.
    public var parameters: Set<String> {
        switch self {
        case .x, .number: return []
        case .parameter(let p): return [p]
        case .negate(let e): return e.parameters
        case .binary(_, let a, let b): return a.parameters.union(b.parameters)
        case .call(_, let args): return args.reduce(into: Set<String>()) { $0.formUnion($1.parameters) }
        }
    }

    private struct Parser {
        let chars: [Character]
        var at = 0
        var nodes = 0

        func error(_ why: String) -> SyntaxError {
            SyntaxError(message: at < chars.count ? "\(why) at character \(at + 1)" : "\(why) at the end")
        }

        mutating func skipSpace() {
            while at < chars.count, chars[at].isWhitespace { at += 1 }
        }

        mutating func take(_ c: Character) -> Bool {
            skipSpace()
            guard at < chars.count, chars[at] == c else { return false }
            at += 1
            return true
        }

        mutating func expression(depth: Int) throws -> CustomLayerExpression {
            guard depth < CustomLayerExpression.maxDepth else { throw error("nesting deeper than \(CustomLayerExpression.maxDepth)") }
            var e = try term(depth: depth)
            while true {
                if take("+") { e = .binary("+", e, try term(depth: depth)) } else if take("-") { e = .binary("-", e, try term(depth: depth)) } else { return e }
                nodes += 1
            }
        }

        mutating func term(depth: Int) throws -> CustomLayerExpression {
            var e = try unary(depth: depth)
            while true {
                if take("*") { e = .binary("*", e, try unary(depth: depth)) } else if take("/") { e = .binary("/", e, try unary(depth: depth)) } else { return e }
                nodes += 1
            }
        }

        mutating func unary(depth: Int) throws -> CustomLayerExpression {
            guard depth < CustomLayerExpression.maxDepth else { throw error("nesting deeper than \(CustomLayerExpression.maxDepth)") }
            if take("-") {
                nodes += 1
                return .negate(try unary(depth: depth + 1))
            }
            return try primary(depth: depth)
        }

        mutating func primary(depth: Int) throws -> CustomLayerExpression {
            skipSpace()
            nodes += 1
            guard at < chars.count else { throw error("a value is missing") }
            if take("(") {
                let e = try expression(depth: depth + 1)
                guard take(")") else { throw error("')' expected") }
                return e
            }
            let c = chars[at]
            if c.isNumber || c == "." {
                let start = at
                while at < chars.count, chars[at].isNumber || chars[at] == "." { at += 1 }
                if at < chars.count, chars[at] == "e" || chars[at] == "E" {
                    at += 1
                    if at < chars.count, chars[at] == "+" || chars[at] == "-" { at += 1 }
                    while at < chars.count, chars[at].isNumber { at += 1 }
                }
                let text = String(chars[start..<at])
                guard let v = Double(text), v.isFinite, abs(v) <= 1e30 else {
                    at = start
                    throw error("'\(text)' is not a finite number")
                }
                return .number(v)
            }
            guard c.isLetter || c == "_" else { throw error("unexpected '\(c)'") }
            let start = at
            while at < chars.count, chars[at].isLetter || chars[at].isNumber || chars[at] == "_" { at += 1 }
            let name = String(chars[start..<at])
            if name == "x" { return .x }
            if take("(") {
                guard let arity = CustomLayerExpression.functions[name] else {
                    at = start
                    throw error("'\(name)' is not a function")
                }
                var args = [try expression(depth: depth + 1)]
                while take(",") { args.append(try expression(depth: depth + 1)) }
                guard take(")") else { throw error("')' expected after the arguments of \(name)") }
                guard args.count == arity else {
                    at = start
                    throw error("\(name) takes \(arity) argument\(arity == 1 ? "" : "s"), not \(args.count)")
                }
                return .call(name, args)
            }
            if CustomLayerExpression.functions[name] != nil {
                at = start
                throw error("'\(name)' is a function: write \(name)(…)")
            }
            return .parameter(name)
        }
    }
}
