import Compute
import Engine
import Foundation

/// The tail of a residual 2× upscaler (the IR's `.upsampleDetail`, made by the
/// upsample-detail pass) in one pass over the output:
///
///     out = resize×2(base) + pixelShuffle×2(detail)
///
/// where `base` has C channels and `detail` has 4·C channels (a detail per colour) or 4
/// channels (one luma detail added to every colour, which changes luma by the detail and
/// keeps the chroma of the resize). Run as three graph operations this makes five passes
/// over full-size tensors (shuffle, resize, add, each reading and writing); fused it reads
/// the small inputs once and writes the output once.
///
/// The resize is bilinear or bicubic (A = −0.75) with half-pixel centres and replicated
/// edges, exactly what `Kernels.resize` / `FastKernels.separableBicubic` compute for ×2.
/// Its plain form is the reference backend's `Kernels.upsampleDetail`.
public enum UpsampleDetail {
    /// One output phase (even or odd row/column): four taps at offsets −2…1 or −1…2.
    struct Phase {
        var offset: Int
        var w: (Float, Float, Float, Float)
    }

    /// The taps of each phase; nil for a mode the kernel does not compute.
    static func phases(_ mode: ResizeMode) -> (Phase, Phase)? {
        switch mode {
        case .bicubic:
            // Even outputs sit at i − 0.25: taps i−2…i+1 at fraction 0.75; odd at i + 0.25.
            return (Phase(offset: -2, w: Kernels.cubicWeights(0.75)), Phase(offset: -1, w: Kernels.cubicWeights(0.25)))
        case .bilinear:
            return (Phase(offset: -2, w: (0, 0.25, 0.75, 0)), Phase(offset: -1, w: (0, 0.75, 0.25, 0)))
        case .nearest:
            return nil
        }
    }

    /// Whether the fused kernels compute `mode` at `factor`: bilinear and bicubic ×2 (`run`),
    /// nearest ×2 to ×4 (`runNearest`: realesr-animevideov3's ×4 tail).
    public static func supports(_ mode: ResizeMode, factor: Int = 2) -> Bool {
        mode == .nearest ? (2...4).contains(factor) : factor == 2 && phases(mode) != nil
    }

    /// The nearest tail, `y` (C×rH×rW) = each base value repeated r×r + the shuffled detail
    /// (r²·C or r² channels × H×W, in `order`), in one pass: each output row is the base row it
    /// repeats plus one detail row per column phase. Rows split over `threads` as `run` does.
    /// Run as graph operations (shuffle, resize, add) realesr-animevideov3-x4's tail took 12%
    /// of the model's time at 640×360 on one thread (162 of 1,375 ms, fp32).
    public static func runNearest(factor r: Int, base: UnsafePointer<Float>, _ s: Shape, detail: UnsafePointer<Float>,
                                  detailChannels: Int, order: ShuffleOrder, y: UnsafeMutablePointer<Float>,
                                  threads: Int = ComputeThreads.allCores) {
        precondition(detailChannels == r * r || detailChannels == r * r * s.c, "detail must have r² or r²·C channels")
        let plane = s.h * s.w, ow = r * s.w
        let shared = detailChannels == r * r
        let bands = max(1, min(s.h, 2 * max(1, threads)))
        let rowsPerBand = (s.h + bands - 1) / bands
        nonisolated(unsafe) let base = base, detail = detail, y = y
        DispatchQueue.concurrentPerform(iterations: s.c * bands) { item in
            let c = item / bands, band = item % bands
            let first = band * rowsPerBand, last = min(s.h, first + rowsPerBand)
            if first >= last { return }
            let dc = shared ? 0 : c
            for iy in first..<last {
                let b = base + c * plane + iy * s.w
                for dy in 0..<r {
                    let out = y + c * r * r * plane + (r * iy + dy) * ow
                    for dx in 0..<r {
                        let phase = dy * r + dx
                        let ic = order == .crd ? dc * r * r + phase : phase * (shared ? 1 : s.c) + dc
                        let d = detail + ic * plane + iy * s.w
                        for ix in 0..<s.w { out[r * ix + dx] = b[ix] + d[ix] }
                    }
                }
            }
        }
    }

    /// Computes `y` (C×2H×2W) from `base` (C×H×W) and `detail` (4C or 4 channels × H×W, in
    /// `order`), splitting rows over `threads` (the backend's `--threads`; each worker writes
    /// its own rows, so the split does not change a bit).
    public static func run(_ mode: ResizeMode, base: UnsafePointer<Float>, _ s: Shape, detail: UnsafePointer<Float>,
                           detailChannels: Int, order: ShuffleOrder, y: UnsafeMutablePointer<Float>, threads: Int = ComputeThreads.allCores) {
        precondition(detailChannels == 4 || detailChannels == 4 * s.c, "detail must have 4 or 4·C channels")
        guard let (p0, p1) = phases(mode) else { preconditionFailure("the fused kernel does not compute \(mode) resizes") }
        let plane = s.h * s.w
        let ow = 2 * s.w
        let shared = detailChannels == 4
        let outC = s.c
        // Work items: (channel, band of input rows).
        let bands = max(1, min(s.h, 2 * max(1, threads)))
        let rowsPerBand = (s.h + bands - 1) / bands
        // The pointers cross into the worker closures; each worker writes its own rows.
        nonisolated(unsafe) let base = base, detail = detail, y = y
        DispatchQueue.concurrentPerform(iterations: outC * bands) { item in
            let c = item / bands, band = item % bands
            let first = band * rowsPerBand, last = min(s.h, first + rowsPerBand)
            if first >= last { return }
            // One vertically filtered row, padded by two replicated samples on each side.
            let padded = UnsafeMutablePointer<Float>.allocate(capacity: s.w + 4)
            defer { padded.deallocate() }
            let src = base + c * plane
            for iy in first..<last {
                for (dy, pv) in [(0, p0), (1, p1)] {
                    let r0 = src + min(max(iy + pv.offset, 0), s.h - 1) * s.w
                    let r1 = src + min(max(iy + pv.offset + 1, 0), s.h - 1) * s.w
                    let r2 = src + min(max(iy + pv.offset + 2, 0), s.h - 1) * s.w
                    let r3 = src + min(max(iy + pv.offset + 3, 0), s.h - 1) * s.w
                    let (a, b, cc, d) = pv.w
                    let v = padded + 2
                    for ix in 0..<s.w { v[ix] = a * r0[ix] + b * r1[ix] + cc * r2[ix] + d * r3[ix] }
                    v[-2] = v[0]; v[-1] = v[0]; v[s.w] = v[s.w - 1]; v[s.w + 1] = v[s.w - 1]
                    // Detail channels of this colour for (dy, dx = 0) and (dy, dx = 1).
                    let dc = shared ? 0 : c
                    func channel(_ dx: Int) -> Int { order == .crd ? dc * 4 + dy * 2 + dx : (dy * 2 + dx) * (shared ? 1 : outC) + dc }
                    let de = detail + channel(0) * plane + iy * s.w
                    let dd = detail + channel(1) * plane + iy * s.w
                    let out = y + c * 4 * plane + (2 * iy + dy) * ow
                    let (e0, e1, e2, e3) = p0.w, (o0, o1, o2, o3) = p1.w
                    // v[ix − 2 + k] for even outputs, v[ix − 1 + k] for odd ones.
                    let ve = v - 2, vo = v - 1
                    for ix in 0..<s.w {
                        let even = e0 * ve[ix] + e1 * ve[ix + 1] + e2 * ve[ix + 2] + e3 * ve[ix + 3] + de[ix]
                        let odd = o0 * vo[ix] + o1 * vo[ix + 1] + o2 * vo[ix + 2] + o3 * vo[ix + 3] + dd[ix]
                        out[2 * ix] = even
                        out[2 * ix + 1] = odd
                    }
                }
            }
        }
    }
}
