@testable import Engine
import XCTest

/// The reference backend's convolutions are the yardstick every other backend is measured
/// against, so their speed-ups (row-wise accumulation, bands across threads) must not move a
/// single bit: each output is compared with `==` against the textbook loop that sums bias,
/// input channels, kernel rows and columns in that order, at 1, 2 and 3 threads.
final class ReferenceConvolutionOrderTests: XCTestCase {
    private var seed: UInt64 = 0x2545F4914F6CDD1D
    private func next() -> Float {
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        return Float(Int64(bitPattern: seed >> 11) % 20000) / 7919 - 1.26
    }

    private struct Case { var inC, outC, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, groups: Int }

    private let cases: [Case] = [
        Case(inC: 3, outC: 8, h: 7, w: 5, kh: 3, kw: 3, sh: 1, sw: 1, dh: 1, dw: 1, pt: 1, pl: 1, pb: 1, pr: 1, groups: 1),
        Case(inC: 4, outC: 6, h: 9, w: 11, kh: 3, kw: 5, sh: 2, sw: 2, dh: 1, dw: 1, pt: 0, pl: 2, pb: 1, pr: 0, groups: 2),
        Case(inC: 5, outC: 5, h: 8, w: 13, kh: 3, kw: 3, sh: 1, sw: 3, dh: 2, dw: 2, pt: 2, pl: 3, pb: 2, pr: 1, groups: 5),
        Case(inC: 2, outC: 3, h: 1, w: 1, kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1, pt: 0, pl: 0, pb: 0, pr: 0, groups: 1),
        Case(inC: 3, outC: 4, h: 4, w: 3, kh: 7, kw: 7, sh: 1, sw: 1, dh: 1, dw: 1, pt: 3, pl: 3, pb: 3, pr: 3, groups: 1),
        Case(inC: 6, outC: 4, h: 6, w: 17, kh: 2, kw: 4, sh: 2, sw: 4, dh: 1, dw: 3, pt: 0, pl: 5, pb: 0, pr: 6, groups: 2),
    ]

    func testConvolutionEqualsTheTextbookLoopAtEveryThreadCount() {
        for c in cases {
            let p = ConvolutionParameters(outChannels: c.outC, inChannels: c.inC, kernelH: c.kh, kernelW: c.kw,
                                          strideH: c.sh, strideW: c.sw, dilationH: c.dh, dilationW: c.dw,
                                          padTop: c.pt, padLeft: c.pl, padBottom: c.pb, padRight: c.pr, groups: c.groups,
                                          weights: (0..<(c.outC * c.inC / c.groups * c.kh * c.kw)).map { _ in next() },
                                          bias: (0..<c.outC).map { _ in next() }, activation: .leakyRelu(slope: 0.1))
            let s = Shape(c: c.inC, h: c.h, w: c.w)
            let o = Shape(c: c.outC, h: (c.h + c.pt + c.pb - c.dh * (c.kh - 1) - 1) / c.sh + 1,
                          w: (c.w + c.pl + c.pr - c.dw * (c.kw - 1) - 1) / c.sw + 1)
            let x = (0..<(s.c * s.h * s.w)).map { _ in next() }
            // The textbook loop, one output at a time.
            var expected = [Float](repeating: 0, count: o.c * o.h * o.w)
            let icg = c.inC / c.groups, ocg = c.outC / c.groups
            for oc in 0..<o.c {
                for oy in 0..<o.h {
                    for ox in 0..<o.w {
                        var sum = p.bias[oc]
                        for ic in 0..<icg {
                            for ky in 0..<c.kh {
                                let iy = oy * c.sh - c.pt + ky * c.dh
                                if iy < 0 || iy >= s.h { continue }
                                for kx in 0..<c.kw {
                                    let ix = ox * c.sw - c.pl + kx * c.dw
                                    if ix < 0 || ix >= s.w { continue }
                                    let input: Float = x[((oc / ocg * icg + ic) * s.h + iy) * s.w + ix]
                                    let weight: Float = p.weights[((oc * icg + ic) * c.kh + ky) * c.kw + kx]
                                    sum += input * weight
                                }
                            }
                        }
                        expected[(oc * o.h + oy) * o.w + ox] = sum > 0 ? sum : sum * 0.1
                    }
                }
            }
            for threads in [1, 2, 3] {
                var y = [Float](repeating: .nan, count: expected.count)
                x.withUnsafeBufferPointer { xp in y.withUnsafeMutableBufferPointer { Kernels.convolution(p, xp, s, $0, o, threads: threads) } }
                XCTAssertEqual(y, expected, "\(c) at \(threads) threads")
            }
        }
    }

    func testTransposedConvolutionIsTheSameAtEveryThreadCount() {
        for c in cases where c.sh == c.sw {
            let p = ConvolutionParameters(outChannels: c.outC, inChannels: c.inC, kernelH: c.kh, kernelW: c.kw,
                                          strideH: c.sh, strideW: c.sw, padTop: c.pt, padLeft: c.pl, padBottom: c.pb, padRight: c.pr,
                                          groups: c.groups, weights: (0..<(c.inC * c.outC / c.groups * c.kh * c.kw)).map { _ in next() },
                                          bias: (0..<c.outC).map { _ in next() }, activation: .relu)
            let s = Shape(c: c.inC, h: c.h, w: c.w)
            let o = Shape(c: c.outC, h: max(1, (c.h - 1) * c.sh + c.kh - c.pt - c.pb), w: max(1, (c.w - 1) * c.sw + c.kw - c.pl - c.pr))
            let x = (0..<(s.c * s.h * s.w)).map { _ in next() }
            // The scatter-add in input order, as the kernel documents it.
            var expected = [Float](repeating: 0, count: o.c * o.h * o.w)
            let icg = c.inC / c.groups, ocg = c.outC / c.groups
            for oc in 0..<o.c { for i in 0..<(o.h * o.w) { expected[oc * o.h * o.w + i] = p.bias[oc] } }
            for ic in 0..<c.inC {
                for iy in 0..<s.h {
                    for ix in 0..<s.w {
                        for ocl in 0..<ocg {
                            let oc = ic / icg * ocg + ocl
                            for ky in 0..<c.kh {
                                let oy = iy * c.sh + ky - c.pt
                                if oy < 0 || oy >= o.h { continue }
                                for kx in 0..<c.kw {
                                    let ox = ix * c.sw + kx - c.pl
                                    if ox < 0 || ox >= o.w { continue }
                                    let input: Float = x[(ic * s.h + iy) * s.w + ix]
                                    let weight: Float = p.weights[((ic * ocg + ocl) * c.kh + ky) * c.kw + kx]
                                    expected[(oc * o.h + oy) * o.w + ox] += input * weight
                                }
                            }
                        }
                    }
                }
            }
            expected = expected.map { max($0, 0) }
            for threads in [1, 2, 3] {
                var y = [Float](repeating: .nan, count: expected.count)
                x.withUnsafeBufferPointer { xp in y.withUnsafeMutableBufferPointer { Kernels.deconvolution(p, xp, s, $0, o, threads: threads) } }
                XCTAssertEqual(y, expected, "\(c) at \(threads) threads")
            }
        }
    }
}
