internal import ColorScience
import Foundation

/// Spreads colour hints along lightness edges: a geodesic distance from the hints, where a
/// step costs its length plus `edgeCost` times the change of L* it crosses, so a hint fills
/// the region it sits in and stops at edges; each pixel takes the nearest hint's colour with
/// weight exp(−distance / reach), over the colour it had.
///
/// Computed on a grid whose long side is at most `gridSide` (raster passes in both
/// directions, repeated), then brought to full resolution bilinearly; the hint's own pixel
/// gets its colour exactly.
struct HintSpreader {
    /// A hint: pixel and colour.
    struct Seed: Sendable, Equatable {
        var x: Int, y: Int
        var red: UInt8, green: UInt8, blue: UInt8
        /// From a hints picture (its coordinates are in that picture's pixels).
        var fromImage = false
    }

    /// Long side of the grid the distances are computed on.
    var gridSide = 256
    /// Cost of one L* unit crossed, in grid steps.
    var edgeCost: Float = 3
    /// Distance (as a fraction of the grid's long side) at which a hint's weight falls to 1/e.
    var reach: Float = 0.08
    /// Raster pass pairs.
    var passes = 3

    /// Applies `seeds` to the planes `a` and `b` of a `width`×`height` picture with lightness `l`.
    func apply(_ seeds: [Seed], l: [Float], a: inout [Float], b: inout [Float], width w: Int, height h: Int) {
        guard !seeds.isEmpty, w > 0, h > 0 else { return }
        let scale = min(1, Float(gridSide) / Float(max(w, h)))
        let gw = max(1, Int((Float(w) * scale).rounded())), gh = max(1, Int((Float(h) * scale).rounded()))
        var gl = [Float](repeating: 0, count: gw * gh)
        Resample.area(l, w, h, into: &gl, gw, gh)
        let n = gw * gh
        var dist = [Float](repeating: .infinity, count: n)
        var label = [Int32](repeating: -1, count: n)
        let colours: [(a: Float, b: Float)] = seeds.map {
            let c = LabReference.rgbToLab(Double($0.red) / 255, Double($0.green) / 255, Double($0.blue) / 255)
            return (Float(c.a), Float(c.b))
        }
        for (k, s) in seeds.enumerated() {
            let gx = min(Int(Float(s.x) * Float(gw) / Float(w)), gw - 1), gy = min(Int(Float(s.y) * Float(gh) / Float(h)), gh - 1)
            dist[gy * gw + gx] = 0
            label[gy * gw + gx] = Int32(k)
        }
        let diagonal = Float(2).squareRoot()
        let forward: [(dx: Int, dy: Int, len: Float)] = [(-1, 0, 1), (-1, -1, diagonal), (0, -1, 1), (1, -1, diagonal)]
        func relax(_ x: Int, _ y: Int, _ offsets: [(dx: Int, dy: Int, len: Float)], _ sign: Int) {
            let i = y * gw + x
            for o in offsets {
                let nx = x + sign * o.dx, ny = y + sign * o.dy
                guard nx >= 0, nx < gw, ny >= 0, ny < gh else { continue }
                let j = ny * gw + nx
                guard label[j] >= 0 else { continue }
                let d = dist[j] + o.len + edgeCost * abs(gl[i] - gl[j])
                if d < dist[i] { dist[i] = d; label[i] = label[j] }
            }
        }
        for _ in 0..<passes {
            for y in 0..<gh { for x in 0..<gw { relax(x, y, forward, 1) } }
            for y in stride(from: gh - 1, through: 0, by: -1) { for x in stride(from: gw - 1, through: 0, by: -1) { relax(x, y, forward, -1) } }
        }
        // Weight and colour planes on the grid, then to full size.
        let spread = reach * Float(max(gw, gh))
        var weight = [Float](repeating: 0, count: n), ha = weight, hb = weight
        for i in 0..<n where label[i] >= 0 {
            weight[i] = exp(-dist[i] / spread)
            ha[i] = colours[Int(label[i])].a
            hb[i] = colours[Int(label[i])].b
        }
        var fw = [Float](repeating: 0, count: w * h), fa = fw, fb = fw
        Resample.bilinear(weight, gw, gh, into: &fw, w, h)
        Resample.bilinear(ha, gw, gh, into: &fa, w, h)
        Resample.bilinear(hb, gw, gh, into: &fb, w, h)
        for (k, s) in seeds.enumerated() where s.x < w && s.y < h {
            let i = s.y * w + s.x
            fw[i] = 1; fa[i] = colours[k].a; fb[i] = colours[k].b
        }
        for i in 0..<(w * h) where fw[i] > 0 {
            var va = fw[i] * fa[i] + (1 - fw[i]) * a[i], vb = fw[i] * fb[i] + (1 - fw[i]) * b[i]
            GamutFit.fit(l: l[i], a: &va, b: &vb)
            a[i] = va
            b[i] = vb
        }
    }
}
