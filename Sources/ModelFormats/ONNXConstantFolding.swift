import Engine
import Foundation

// Arithmetic on constant tensors, done while importing: what PyTorch's exporter writes to
// compute shapes (Shape → Gather → Unsqueeze → Concat → Reshape, sizes for Resize), and any
// other node whose inputs are all constants. Integer tensors stay exact (`ints`).

extension ONNXImporter.Constant {
    /// A constant of integers.
    init(ints: [Int64], dims: [Int]) {
        self.init(dims: dims, floats: ints.map { Float($0) }, ints: ints)
    }

    /// A constant of floats.
    init(floats: [Float], dims: [Int]) {
        self.init(dims: dims, floats: floats, ints: nil)
    }

    /// Row-major strides of `dims`.
    static func strides(_ dims: [Int]) -> [Int] {
        var s = [Int](repeating: 1, count: dims.count)
        var k = 1
        for i in dims.indices.reversed() {
            s[i] = k
            k *= dims[i]
        }
        return s
    }

    /// The same values picked by index: `pick(i)` is the source index of output element `i`.
    func gathering(_ dims: [Int], _ pick: (Int) -> Int) -> Self {
        let n = dims.reduce(1, *)
        var f = [Float](repeating: 0, count: n)
        var ints = self.ints.map { _ in [Int64](repeating: 0, count: n) }
        for i in 0..<n {
            let j = pick(i)
            f[i] = floats[j]
            if let src = self.ints { ints![i] = src[j] }
        }
        return Self(dims: dims, floats: f, ints: ints)
    }
}

/// Why folding refused (turned into a node error by the importer).
struct FoldingError: Error {
    let why: String
}

enum ConstantFolding {
    typealias Constant = ONNXImporter.Constant

    /// NumPy broadcasting of two shapes.
    static func broadcast(_ a: [Int], _ b: [Int]) throws -> [Int] {
        let n = max(a.count, b.count)
        let pa = [Int](repeating: 1, count: n - a.count) + a, pb = [Int](repeating: 1, count: n - b.count) + b
        return try zip(pa, pb).map { x, y in
            if x == y || y == 1 { return x }
            if x == 1 { return y }
            throw FoldingError(why: "cannot broadcast shapes \(a) and \(b)")
        }
    }

    /// `c` broadcast to `dims` (which `c`'s shape must broadcast to).
    static func expand(_ c: Constant, to dims: [Int]) throws -> Constant {
        guard try broadcast(c.dims, dims) == dims else { throw FoldingError(why: "cannot expand \(c.dims) to \(dims)") }
        let own = [Int](repeating: 1, count: dims.count - c.dims.count) + c.dims
        let src = Constant.strides(own), dst = Constant.strides(dims)
        return c.gathering(dims) { i in
            var j = 0
            for k in dims.indices where own[k] != 1 { j += (i / dst[k]) % dims[k] * src[k] }
            return j
        }
    }

    /// Element-wise binary op with broadcasting; integers stay integers (Div truncates).
    static func binary(_ op: String, _ a: Constant, _ b: Constant) throws -> Constant {
        let dims = try broadcast(a.dims, b.dims)
        let x = try expand(a, to: dims), y = try expand(b, to: dims)
        if let xi = x.ints, let yi = y.ints, op != "Pow" {
            let r: [Int64] = try zip(xi, yi).map { p, q in
                switch op {
                case "Add": return p &+ q
                case "Sub": return p &- q
                case "Mul": return p &* q
                case "Div":
                    guard q != 0 else { throw FoldingError(why: "divides an integer by zero") }
                    return p / q
                case "Max": return max(p, q)
                case "Min": return min(p, q)
                default: throw FoldingError(why: "has no integer form")
                }
            }
            return Constant(ints: r, dims: dims)
        }
        let r: [Float] = try zip(x.floats, y.floats).map { p, q in
            switch op {
            case "Add": return p + q
            case "Sub": return p - q
            case "Mul": return p * q
            case "Div": return p / q
            case "Max": return max(p, q)
            case "Min": return min(p, q)
            case "Pow": return Float(Foundation.pow(Double(p), Double(q)))
            default: throw FoldingError(why: "has no float form")
            }
        }
        return Constant(floats: r, dims: dims)
    }

    /// Normalises `axis` for rank `r` (negative counts from the end).
    static func axis(_ a: Int, rank r: Int) throws -> Int {
        let k = a < 0 ? a + r : a
        guard k >= 0, k < max(r, 1) else { throw FoldingError(why: "has axis \(a) for a rank-\(r) tensor") }
        return k
    }

    static func gather(_ data: Constant, _ indices: Constant, axis a: Int) throws -> Constant {
        let r = data.dims.count
        guard r > 0 else { throw FoldingError(why: "gathers from a scalar") }
        let ax = try axis(a, rank: r)
        guard let idx = indices.ints else { throw FoldingError(why: "gathers by non-integer indices") }
        let n = data.dims[ax]
        let picks = try idx.map { i -> Int in
            let k = Int(i < 0 ? i + Int64(n) : i)
            guard k >= 0, k < n else { throw FoldingError(why: "gathers index \(i) of \(n)") }
            return k
        }
        guard ModelLimits.elementCount(data.dims[..<ax]) != nil, let inner = ModelLimits.elementCount(data.dims[(ax + 1)...]) else {
            throw FoldingError(why: "gathers from a tensor of shape \(data.dims)")
        }
        let dims = Array(data.dims[..<ax]) + indices.dims + Array(data.dims[(ax + 1)...])
        let m = picks.count
        return data.gathering(dims) { i in
            let o = i / (m * inner), rest = i % (m * inner)
            return (o * n + picks[rest / inner]) * inner + rest % inner
        }
    }

    static func concat(_ parts: [Constant], axis a: Int) throws -> Constant {
        guard let first = parts.first else { throw FoldingError(why: "concatenates nothing") }
        let r = first.dims.count
        guard r > 0 else { throw FoldingError(why: "concatenates scalars") }
        let ax = try axis(a, rank: r)
        for p in parts where p.dims.count != r || zip(p.dims, first.dims).enumerated().contains(where: { $0.offset != ax && $0.element.0 != $0.element.1 }) {
            throw FoldingError(why: "concatenates shapes \(first.dims) and \(p.dims)")
        }
        guard let outer = ModelLimits.elementCount(first.dims[..<ax]), let inner = ModelLimits.elementCount(first.dims[(ax + 1)...]) else {
            throw FoldingError(why: "concatenates tensors of shape \(first.dims)")
        }
        var floats: [Float] = [], ints: [Int64]? = parts.allSatisfy({ $0.ints != nil }) ? [] : nil
        for o in 0..<outer {
            for p in parts {
                let len = p.dims[ax] * inner
                floats += p.floats[(o * len)..<((o + 1) * len)]
                if ints != nil { ints! += p.ints![(o * len)..<((o + 1) * len)] }
            }
        }
        var dims = first.dims
        dims[ax] = parts.reduce(0) { $0 + $1.dims[ax] }
        return Constant(dims: dims, floats: floats, ints: ints)
    }

    /// Reshape target dims: 0 copies the input's dimension (unless `allowZero`), −1 is inferred.
    static func reshapeDims(_ from: [Int], _ spec: [Int64], allowZero: Bool = false) throws -> [Int] {
        // Products within the tensor limit (many large dims overflowed Int and trapped).
        guard let total = ModelLimits.elementCount(from) else { throw FoldingError(why: "reshapes a tensor of shape \(from)") }
        var dims = try spec.enumerated().map { i, d -> Int in
            if d == 0 && !allowZero {
                guard i < from.count else { throw FoldingError(why: "copies dimension \(i) of a rank-\(from.count) tensor") }
                return from[i]
            }
            guard d >= -1, d <= Int64(ModelLimits.maxTensorElements) else { throw FoldingError(why: "reshapes to \(spec)") }
            return Int(d)
        }
        let unknown = dims.indices.filter { dims[$0] == -1 }
        guard unknown.count <= 1 else { throw FoldingError(why: "reshapes to \(spec) with more than one −1") }
        guard let known = ModelLimits.elementCount(dims.filter { $0 != -1 }) else {
            throw FoldingError(why: "reshapes to \(spec), beyond \(ModelLimits.maxTensorElements) values")
        }
        if let u = unknown.first {
            guard known > 0, total % known == 0 else { throw FoldingError(why: "cannot reshape \(from) to \(spec)") }
            dims[u] = total / known
        }
        guard ModelLimits.elementCount(dims) == total else { throw FoldingError(why: "cannot reshape \(from) (\(total) values) to \(spec)") }
        return dims
    }

    static func transpose(_ c: Constant, perm: [Int]?) throws -> Constant {
        let r = c.dims.count
        let p = perm ?? Array((0..<r).reversed())
        guard p.sorted() == Array(0..<r) else { throw FoldingError(why: "has permutation \(p) for rank \(r)") }
        let dims = p.map { c.dims[$0] }
        let src = Constant.strides(c.dims), dst = Constant.strides(dims)
        return c.gathering(dims) { i in
            var j = 0
            for k in 0..<r { j += (i / dst[k]) % dims[k] * src[p[k]] }
            return j
        }
    }

    /// Slice with starts, ends, axes, steps (ONNX clamping rules).
    static func slice(_ c: Constant, starts: [Int64], ends: [Int64], axes: [Int64]?, steps: [Int64]?) throws -> Constant {
        let r = c.dims.count
        guard r > 0 else { throw FoldingError(why: "slices a scalar") }
        var begin = [Int](repeating: 0, count: r), step = [Int](repeating: 1, count: r), count = c.dims
        let axisList = try (axes ?? (0..<Int64(starts.count)).map { $0 }).map { try axis(Int($0), rank: r) }
        guard starts.count == ends.count, axisList.count == starts.count, (steps?.count ?? starts.count) == starts.count else {
            throw FoldingError(why: "has \(starts.count) starts, \(ends.count) ends and \(axisList.count) axes")
        }
        for (i, ax) in axisList.enumerated() {
            let n = Int64(c.dims[ax])
            // A step beyond the axis takes at most one element, as one of the axis's length
            // does; clamping keeps the arithmetic below from overflowing.
            let st = min(max(steps?[i] ?? 1, -max(n, 1)), max(n, 1))
            guard st != 0 else { throw FoldingError(why: "slices with step 0") }
            var s = starts[i] < 0 ? starts[i] + n : starts[i]
            var e = ends[i] < 0 ? ends[i] + n : ends[i]
            if st > 0 {
                s = min(max(s, 0), n)
                e = min(max(e, 0), n)
                count[ax] = Int(max(0, (e - s + st - 1) / st))
            } else {
                s = min(max(s, 0), n - 1)
                e = min(max(e, -1), n - 1)
                count[ax] = Int(max(0, (s - e + (-st) - 1) / (-st)))
            }
            begin[ax] = Int(s)
            step[ax] = Int(st)
        }
        let src = Constant.strides(c.dims), dst = Constant.strides(count)
        return c.gathering(count) { i in
            var j = 0
            for k in 0..<r { j += (begin[k] + (i / dst[k]) % max(count[k], 1) * step[k]) * src[k] }
            return j
        }
    }
}
