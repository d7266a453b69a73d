// vivify-upsample-bench: cost of bringing the colorizer's colour back to full resolution: the guided filter (area
// shrink of L to the model's output size, the filter's coefficients there, A·L + B at full
// size with the gamut fit) against plain bilinear upsampling with the same gamut fit (the
// peer: what Vivify did before), measured in one run on the same planes. Model output 56×56
// (vivify-color at 224×224). Median of N runs, threads as the process has.
// Usage: swift build -c release --product vivify-upsample-bench
//        .build/release/vivify-upsample-bench [--runs N]
import Foundation
import ColorScience

var runs = 31
var args = CommandLine.arguments.dropFirst().makeIterator()
while let a = args.next() {
    switch a {
    case "--runs": runs = Int(args.next()!)!
    default: fatalError("unknown argument \(a)")
    }
}

@MainActor func median(_ f: () -> Void) -> Double {
    f()
    var times: [Double] = []
    for _ in 0..<runs {
        let t = DispatchTime.now().uptimeNanoseconds
        f()
        times.append(Double(DispatchTime.now().uptimeNanoseconds - t) / 1e9)
    }
    return times.sorted()[times.count / 2]
}

let sw = 56, sh = 56
var seed: UInt64 = 1
@MainActor func noise() -> Float {
    seed = seed &* 6364136223846793005 &+ 1442695040888963407
    return Float((seed >> 40) % 1000) / 1000
}
// Smooth colour fields with a little noise, as a colorizer predicts them (mostly in gamut,
// so both paths do the same gamut-fit work).
let ab = (0..<(2 * sw * sh)).map { i -> Float in
    let x = Float(i % sw), y = Float((i / sw) % sh)
    return (i < sw * sh ? 18 * sin(x / 7) : 14 * cos(y / 9)) + noise() * 4 - 2
}
for (w, h) in [(640, 360), (1920, 1080)] {
    let l = (0..<(w * h)).map { i in Float(i % w) / Float(w) * 80 + 10 + noise() * 4 }
    var lowL: [Float] = [], coefficients: [Float] = [], a: [Float] = [], b: [Float] = []
    let bilinear = median {
        Resample.bilinearModel(ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: l, a: &a, b: &b, w, h)
    }
    let guided = median {
        Resample.area(l, w, h, into: &lowL, sw, sh)
        GuidedFilter.coefficients(guide: lowL, ab: ab, sw, sh, into: &coefficients)
        Resample.linearModelAB(coefficients, sw, sh, fittedTo: l, a: &a, b: &b, w, h)
    }
    print(String(format: "%dx%d: guided %.2f ms, bilinear %.2f ms (guided / bilinear %.2f×), median of %d", w, h,
                 guided * 1000, bilinear * 1000, guided / bilinear, runs))
}
