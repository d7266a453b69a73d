import Engine
import Glibc
import Synchronization

/// Post-training int8 quantisation for the oneDNN backend.
///
/// Calibration runs a model in fp32 on real pictures with an `Int8Observer` attached to the
/// backend: before every convolution it records the range the layer's input spans. Each
/// quantised layer then reads its input as u8 with a scale and a zero point covering that
/// range (asymmetric: a leaky ReLU's output is mostly positive, and a symmetric s8 range would
/// waste half its steps), and its weights as s8 with one scale per output channel,
/// `127 / max |w[oc]|`. oneDNN accumulates in s32 (u8·s8 is VNNI's native product) and writes
/// fp32, or u8 straight to the next quantised layer, through its output scales.

/// The range one layer's input spans on the calibration pictures, channel by channel.
public struct InputRange: Sendable, Equatable, Codable {
    public var lo: [Float]
    public var hi: [Float]

    public init(lo: [Float], hi: [Float]) {
        self.lo = lo
        self.hi = hi
    }

    /// The most channels a recorded range may have (no layer of a model Vivify runs has more).
    public static let maxChannels = 65_536

    /// Whether the range is usable: as many `hi` as `lo` values, at most `maxChannels`, all finite.
    public var isWellFormed: Bool {
        lo.count == hi.count && lo.count <= Self.maxChannels && lo.allSatisfy(\.isFinite) && hi.allSatisfy(\.isFinite)
    }

    /// Decodes and checks a range read from a file (the model store, a segment manifest): a
    /// `hi` shorter than `lo` would have the quantiser read past it.
    public init(from decoder: Decoder) throws {
        enum Keys: String, CodingKey { case lo, hi }
        let c = try decoder.container(keyedBy: Keys.self)
        lo = try c.decode([Float].self, forKey: .lo)
        hi = try c.decode([Float].self, forKey: .hi)
        guard isWellFormed else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                debugDescription: "an input range needs as many finite 'hi' as 'lo' values (at most \(Self.maxChannels)); it has \(lo.count) and \(hi.count)"))
        }
    }

    /// The range over all channels.
    var whole: (lo: Float, hi: Float) { (lo.min() ?? 0, hi.max() ?? 0) }

    /// The widest channel's magnitude over the median channel's: how many of one shared u8
    /// scale's steps the typical channel loses.
    var spread: Float {
        let m = zip(lo, hi).map { max(-$0, $1) }.sorted()
        guard let top = m.last else { return 1 }
        return top / max(m[m.count / 2], top * 1e-6, .leastNormalMagnitude)
    }
}

/// The int8 path's settings, chosen on Set5/Set14 against fp32 with twelve BSD200 photos for
/// calibration (`PrecisionTests`), over every catalog upscaler.
enum Int8Tuning {
    /// Equalisation strength (`equalizedForInt8`): 0.5 beat 0.3, 0.7 and 1.0 on waifu2x,
    /// Real-CUGAN and Real-ESRGAN alike.
    static let alpha: Float = 0.5
    /// Room beyond the calibrated range, for pictures brighter or busier than the calibration
    /// set: clipping costs far more than the coarser step (Real-CUGAN fell to 27 dB with ranges
    /// cut by a quarter).
    static let headroom: Float = 1.1
    /// Layers whose input channels still differ more than this (`InputRange.spread`) after
    /// equalisation stay fp32: Real-CUGAN's layers after its skip adds and excitation products,
    /// which equalisation cannot reach; 4 lifted its worst photo from 39 to 41–43 dB.
    static let maxSpread: Float = 4
    /// A run whose worst int8 layer has more than this share of its sampled u8 activations at
    /// 255 (clipped) is run again in fp32 (`DNNLPrepared.run`).
    static let maxClipped: Double = 0.001
}

/// Thrown by a clip check to stop an int8 run at the first layer past `Int8Tuning.maxClipped`.
struct Int8Clipped: Error {}

/// Whether an int8 graph's recent runs in a picture clipped, and so whether the next tile
/// should try int8 at all: after 3 of the last 4 tried runs clipped, the next 12 go straight to
/// fp32, then int8 is tried again. Neighbouring tiles look alike, so a busy stretch that clips
/// costs fp32's time plus one int8 try in 13, and a calm one returns to int8 within 13 tiles.
/// Each picture starts afresh (`DNNLBackend.beginPicture`), so its result is its own.
struct ClipHistory {
    /// The last tried runs, newest in bit 0: 1 where the run clipped.
    private(set) var recent: UInt8 = 0
    private(set) var tried = 0
    /// Runs still to go straight to fp32.
    private(set) var skipping = 0

    static let window = 4, clippedToSkip = 3, skipRuns = 12

    /// Whether to try int8 for this run (counts a skipped one).
    mutating func tryInt8() -> Bool {
        if skipping > 0 {
            skipping -= 1
            return false
        }
        return true
    }

    mutating func record(clipped: Bool) {
        recent = (recent << 1) | (clipped ? 1 : 0)
        tried += 1
        let mask = UInt8((1 << Self.window) - 1)
        if tried >= Self.clippedToSkip, (recent & mask).nonzeroBitCount >= Self.clippedToSkip {
            skipping = Self.skipRuns
            recent = 0
            tried = 0
        }
    }
}

/// The worst share of clipped u8 activations seen in a run (`DNNLPrepared`'s checks).
final class ClipMeter: @unchecked Sendable {
    var worst: Double = 0

    /// The share of bytes equal to 255 in every eighth 64-byte line of `bytes` bytes at `p`.
    static func saturatedShare(_ p: UnsafeRawPointer, bytes: Int) -> Double {
        let lines = bytes / 64
        guard lines > 0 else { return 0 }
        let words = p.assumingMemoryBound(to: UInt64.self)
        var hits = 0, samples = 0
        var line = 0
        while line < lines {
            for k in 0..<8 {
                // A byte is 255 when its low seven bits carry into bit 7 and bit 7 is set.
                let w = words[line * 8 + k]
                hits += (((w & 0x7F7F_7F7F_7F7F_7F7F) &+ 0x0101_0101_0101_0101) & w & 0x8080_8080_8080_8080).nonzeroBitCount
            }
            samples += 64
            line += 8
        }
        return Double(hits) / Double(samples)
    }
}

/// What calibration found: the input range of each convolution, by layer name.
public struct Int8Calibration: Sendable, Equatable, Codable {
    /// Layer name → the range its input spans.
    public var inputRanges: [String: InputRange]

    public init(inputRanges: [String: InputRange] = [:]) {
        self.inputRanges = inputRanges
    }
}

/// u8 = round(x · scale) + zeroPoint, saturated: [lo, hi] (widened to hold 0) onto 0...255.
struct U8Quantizer: Equatable {
    var scale: Float
    var zeroPoint: Int32

    init?(lo: Float, hi: Float) {
        let lo = min(lo, 0), hi = max(hi, 0)
        guard hi > lo, lo.isFinite, hi.isFinite else { return nil }
        scale = 255 / (hi - lo)
        zeroPoint = Int32(max(0, min(255, (-lo * scale).rounded())))
    }
}

/// Collects `Int8Calibration` while an fp32 backend runs (attach with `DNNLBackend(observer:)`).
public final class Int8Observer: Sendable {
    private let ranges = Mutex<[String: InputRange]>([:])

    public init() {}

    func record(_ name: String, _ range: InputRange) {
        ranges.withLock { all in
            if let r = all[name], r.lo.count == range.lo.count {
                all[name] = InputRange(lo: zip(r.lo, range.lo).map { min($0, $1) }, hi: zip(r.hi, range.hi).map { max($0, $1) })
            } else {
                all[name] = range
            }
        }
    }

    /// Everything seen so far.
    public var calibration: Int8Calibration { Int8Calibration(inputRanges: ranges.withLock { $0 }) }
}

/// Weights quantised to s8 with one scale per output channel.
struct QuantizedWeights {
    var values: [Int8]
    /// 127 / max |w| of each output channel (1 for an all-zero channel).
    var scales: [Float]

    init(_ weights: [Float], outChannels: Int) {
        let per = weights.count / outChannels
        var values = [Int8](repeating: 0, count: weights.count)
        var scales = [Float](repeating: 1, count: outChannels)
        for oc in 0..<outChannels {
            let range = oc * per..<(oc + 1) * per
            let m = weights[range].reduce(Float(0)) { max($0, abs($1)) }
            let s: Float = m > 0 ? 127 / m : 1
            scales[oc] = s
            for i in range { values[i] = Int8(max(-127, min(127, (weights[i] * s).rounded()))) }
        }
        self.values = values
        self.scales = scales
    }
}

/// The range of the finite values of each of `channels` planes of `plane` floats (NCHW).
func channelRanges(_ p: UnsafePointer<Float>, channels: Int, plane: Int) -> InputRange {
    var lo = [Float](repeating: 0, count: channels), hi = lo
    for c in 0..<channels {
        var l: Float = 0, h: Float = 0
        for v in UnsafeBufferPointer(start: p + c * plane, count: plane) where v.isFinite {
            l = min(l, v)
            h = max(h, v)
        }
        lo[c] = l
        hi[c] = h
    }
    return InputRange(lo: lo, hi: hi)
}

/// Channel equalisation before int8 (after Nagel et al., "Data-Free Quantization", 2019, with
/// calibrated activation ranges as in SmoothQuant): where a convolution A (with an activation
/// that commutes with a positive per-channel scale) feeds only convolutions B, A's output
/// channel c is multiplied by 1/s_c and B's weights reading it by s_c, which leaves the result
/// unchanged. With s_c = (r_c / r_max)^α, r_c the channel's calibrated magnitude, narrow
/// channels are widened toward the widest, so one u8 scale for the whole tensor resolves them
/// all finer. Returns the graph and each B's input range after the change.
func equalizedForInt8(_ graph: Graph, _ calibration: Int8Calibration, alpha: Float) -> (Graph, [String: InputRange]) {
    var g = graph
    var ranges = calibration.inputRanges
    var readers: [Int: [Int]] = [:]
    for (k, node) in g.nodes.enumerated() { for i in Set(node.inputs) { readers[i, default: []].append(k) } }
    func commutes(_ a: Activation) -> Bool {
        switch a {
        case .identity, .relu, .leakyRelu, .prelu: return true
        default: return false
        }
    }
    for a in g.nodes.indices {
        guard case .convolution(var pa) = g.nodes[a].op, pa.groups == 1, commutes(pa.activation) else { continue }
        var value = g.nodes[a].output
        var readerIndices = readers[value] ?? []
        // A separate activation node between them (one reader) is stepped over.
        if readerIndices.count == 1, case .activation(let act) = g.nodes[readerIndices[0]].op, commutes(act), act != .identity {
            value = g.nodes[readerIndices[0]].output
            readerIndices = readers[value] ?? []
        }
        let channels = pa.outChannels
        guard value != g.output, g.nodes[a].output != g.output, !readerIndices.isEmpty else { continue }
        var ok = true
        var r = [Float](repeating: 0, count: channels)
        for b in readerIndices {
            guard case .convolution(let pb) = g.nodes[b].op, pb.groups == 1, pb.inChannels == channels,
                  let range = ranges[g.nodes[b].name], range.lo.count == channels, range.hi.count == channels else { ok = false; break }
            for c in 0..<channels { r[c] = max(r[c], max(-range.lo[c], range.hi[c])) }
        }
        guard ok, let rmax = r.max(), rmax > 0 else { continue }
        let scales = r.map { $0 > 0 ? Float(pow(Double($0 / rmax), Double(alpha))) : 1 }
        let per = pa.weights.count / channels
        for c in 0..<channels {
            for i in c * per..<(c + 1) * per { pa.weights[i] /= scales[c] }
            if !pa.bias.isEmpty { pa.bias[c] /= scales[c] }
        }
        g.nodes[a].op = .convolution(pa)
        for b in readerIndices {
            guard case .convolution(var pb) = g.nodes[b].op else { continue }
            let k = pb.kernelH * pb.kernelW
            for o in 0..<pb.outChannels {
                for c in 0..<channels {
                    let base = (o * channels + c) * k
                    for i in base..<base + k { pb.weights[i] *= scales[c] }
                }
            }
            g.nodes[b].op = .convolution(pb)
            if var range = ranges[g.nodes[b].name], range.lo.count == channels, range.hi.count == channels {
                for c in 0..<channels {
                    range.lo[c] /= scales[c]
                    range.hi[c] /= scales[c]
                }
                ranges[g.nodes[b].name] = range
            }
        }
    }
    return (g, ranges)
}
