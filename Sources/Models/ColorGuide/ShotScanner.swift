internal import ColorScience

/// Finds where shots start, as the colour guide does while colouring (the L* histograms of
/// consecutive frames, at the guide's fine grid), without running a model: a segmented job's
/// plan scans the whole input once, so that a segment starting mid-shot knows where its shot
/// began, and the keyframes (and the hinted first frame) of that shot apply in it as in one
/// unsegmented run.
package struct ShotScanner {
    private let lab: LabConverter
    private var fullL: [Float] = [], l224: [Float] = [], lFine: [Float] = []
    private var previous: [Float] = []

    /// A scanner for frames in order.
    package init(threads: Int) {
        lab = LabConverter(threads: threads)
    }

    /// Whether the rgb24 frame `rgb` (`width`×`height`) starts a shot: the first frame does,
    /// and one whose histogram is more than the cut threshold from the frame before.
    package mutating func startsShot(rgb: UnsafeBufferPointer<UInt8>, width: Int, height: Int) -> Bool {
        let n = width * height, s = ReferenceEncoder.inputSide, f = ColourReference.fineSide
        if fullL.count != n { fullL = [Float](repeating: 0, count: n) }
        fullL.withUnsafeMutableBufferPointer { lab.lightness(rgb: rgb, width: width, height: height, l: $0) }
        Resample.area(fullL, width, height, into: &l224, s, s)
        Resample.area(l224, s, s, into: &lFine, f, f)
        let histogram = ShotHistogram.of(lFine)
        defer { previous = histogram }
        return previous.isEmpty || ShotHistogram.distance(histogram, previous) > ShotHistogram.cutThreshold
    }
}
