import CFFmpeg

/// Resampling filter used when sizes change.
public enum ResizeFilter: String, Sendable, CaseIterable {
    /// Lanczos (3 lobes): sharp, the high-quality default.
    case lanczos
    /// Bicubic.
    case bicubic
    /// Bilinear.
    case bilinear

    var swsFlag: Int32 {
        switch self {
        case .lanczos: return SWS_LANCZOS
        case .bicubic: return SWS_BICUBIC
        case .bilinear: return SWS_BILINEAR
        }
    }
}

/// Plane pointers and strides of one picture, as swscale wants them.
struct PlaneRefs {
    var data: (UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt8>?) = (nil, nil, nil, nil)
    var stride: (Int32, Int32, Int32, Int32) = (0, 0, 0, 0)

    mutating func set(_ i: Int, _ p: UnsafeMutablePointer<UInt8>?, _ s: Int) {
        switch i {
        case 0: data.0 = p; stride.0 = Int32(s)
        case 1: data.1 = p; stride.1 = Int32(s)
        case 2: data.2 = p; stride.2 = Int32(s)
        default: data.3 = p; stride.3 = Int32(s)
        }
    }
}

/// One swscale context, reused across frames and rebuilt only when the geometry or format
/// changes (no allocation per frame). Colour matrices and ranges are always set explicitly.
final class SwsScaler {
    private var context: OpaquePointer?
    private var key: [Int32] = []
    /// swscale's SIMD paths read and write whole vectors past the end of a row (and of the
    /// last row): a tightly packed plane of a narrow picture (4×8 RGB) is overrun. Frames'
    /// planes are tight, so they go through these buffers, whose rows start 64-byte aligned
    /// with slack after each row and after the last.
    private let source = PaddedPlanes(), destination = PaddedPlanes()

    deinit { sws_freeContext(context) }

    /// `frame`'s planes copied where swscale may over-read them.
    func paddedSource(_ frame: VideoFrame) -> PlaneRefs {
        source.load(frame)
    }

    /// Planes for a `format` picture of `width`×`height` that swscale may over-write; copy
    /// them out with `storeDestination`.
    func paddedDestination(format: PixelFormat, width: Int, height: Int) -> PlaneRefs {
        destination.prepare(format: format, width: width, height: height)
    }

    /// Copies the padded destination's rows into `frame` (its format and size as prepared).
    func storeDestination(into frame: inout VideoFrame) {
        destination.store(into: &frame)
    }

    /// Converts `src` planes into `dst` planes.
    func scale(srcFormat: AVPixelFormat, srcWidth: Int, srcHeight: Int, srcColor: ColorInfo, src: PlaneRefs,
               dstFormat: AVPixelFormat, dstWidth: Int, dstHeight: Int, dstColor: ColorInfo, dst: PlaneRefs,
               filter: ResizeFilter) throws {
        let flags = filter.swsFlag | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT | SWS_FULL_CHR_H_INP
        let newKey: [Int32] = [Int32(srcFormat.rawValue), Int32(srcWidth), Int32(srcHeight), Int32(dstFormat.rawValue),
                               Int32(dstWidth), Int32(dstHeight), flags, srcColor.matrix, srcColor.range,
                               dstColor.matrix, dstColor.range]
        if newKey != key {
            context = sws_getCachedContext(context, Int32(srcWidth), Int32(srcHeight), srcFormat,
                                           Int32(dstWidth), Int32(dstHeight), dstFormat, flags, nil, nil, nil)
            guard context != nil else {
                throw MediaError(.internalFailure, "Cannot convert \(avPixelFormatName(srcFormat)) \(srcWidth)x\(srcHeight) to \(avPixelFormatName(dstFormat)) \(dstWidth)x\(dstHeight): swscale refused the conversion.")
            }
            // Matrices only matter where YUV meets RGB; ranges matter for YUV and grey.
            let srcCoefficients = sws_getCoefficients(srcColor.hasMatrix ? srcColor.matrix : 5)
            let dstCoefficients = sws_getCoefficients(dstColor.hasMatrix ? dstColor.matrix : 5)
            let srcFull: Int32 = Self.isFullRange(srcFormat, srcColor) ? 1 : 0
            let dstFull: Int32 = Self.isFullRange(dstFormat, dstColor) ? 1 : 0
            _ = sws_setColorspaceDetails(context, srcCoefficients, srcFull, dstCoefficients, dstFull, 0, 1 << 16, 1 << 16)
            key = newKey
        }
        var s = src
        var d = dst
        let rows = withUnsafePointer(to: &s.data) { sp in
            withUnsafePointer(to: &s.stride) { ss in
                withUnsafePointer(to: &d.data) { dp in
                    withUnsafePointer(to: &d.stride) { ds in
                        sp.withMemoryRebound(to: UnsafePointer<UInt8>?.self, capacity: 4) { spp in
                            ss.withMemoryRebound(to: Int32.self, capacity: 4) { ssp in
                                dp.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 4) { dpp in
                                    ds.withMemoryRebound(to: Int32.self, capacity: 4) { dsp in
                                        sws_scale(context, spp, ssp, 0, Int32(srcHeight), dpp, dsp)
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        if rows <= 0 {
            throw MediaError(.internalFailure, "swscale failed converting \(avPixelFormatName(srcFormat)) to \(avPixelFormatName(dstFormat)).")
        }
    }

    /// RGB is always full range; grey is full range unless tagged limited; YUV is limited
    /// unless tagged full (or a JPEG "J" format).
    private static func isFullRange(_ format: AVPixelFormat, _ color: ColorInfo) -> Bool {
        guard let desc = av_pix_fmt_desc_get(format) else { return false }
        if desc.pointee.flags & UInt64(AV_PIX_FMT_FLAG_RGB) != 0 { return true }
        if format == AV_PIX_FMT_YUVJ420P || format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P { return true }
        if desc.pointee.nb_components <= 2 { return color.range != 1 }
        return color.isFullRange
    }
}

/// Plane buffers laid out as swscale wants them: each row on a 64-byte-aligned stride with at
/// least 64 bytes of slack, two slack rows after the last. Reused while the layout stays.
final class PaddedPlanes {
    private var buffers: [UnsafeMutableRawPointer] = []
    private var sizes: [Int] = []
    private(set) var strides: [Int] = []
    private var layout: (format: PixelFormat, width: Int, height: Int)?

    deinit { buffers.forEach { $0.deallocate() } }

    static func stride(rowBytes: Int) -> Int { (rowBytes + 63) / 64 * 64 + 64 }

    // swscale is not instrumented by AddressSanitizer, so a write past a buffer would go
    // unseen: fuzz builds (scripts/fuzz) put a guard band after each buffer and check it when
    // the planes are copied out. Plain builds allocate no band.
    #if VIVIFY_FUZZ
    static let guardBytes = 256
    #else
    static let guardBytes = 0
    #endif
    static let guardByte: UInt8 = 0xA5

    /// Traps when something wrote into a guard band (fuzz builds only; a no-op otherwise).
    func checkGuards() {
        for (b, size) in zip(buffers, sizes) {
            let band = UnsafeRawBufferPointer(start: b + size, count: Self.guardBytes)
            if let i = band.firstIndex(where: { $0 != Self.guardByte }) {
                fatalError("swscale wrote past a plane buffer of \(layout.map { "\($0.format.rawValue) \($0.width)x\($0.height)" } ?? "?") (\(size) bytes; guard byte \(i) changed)")
            }
        }
    }

    /// Sizes the buffers for a `format` picture and returns swscale's view of them.
    func prepare(format: PixelFormat, width: Int, height: Int) -> PlaneRefs {
        if layout.map({ $0.format != format || $0.width != width || $0.height != height }) ?? true {
            var newSizes: [Int] = [], newStrides: [Int] = []
            for p in 0..<format.planeCount {
                let stride = Self.stride(rowBytes: format.rowBytes(plane: p, width: width))
                newStrides.append(stride)
                newSizes.append(stride * (format.rows(plane: p, height: height) + 2))
            }
            if newSizes != sizes {
                buffers.forEach { $0.deallocate() }
                buffers = newSizes.map {
                    let b = UnsafeMutableRawPointer.allocate(byteCount: $0 + Self.guardBytes, alignment: 64)
                    b.initializeMemory(as: UInt8.self, repeating: 0, count: $0)
                    (b + $0).initializeMemory(as: UInt8.self, repeating: Self.guardByte, count: Self.guardBytes)
                    return b
                }
                sizes = newSizes
            }
            strides = newStrides
            layout = (format, width, height)
        }
        var refs = PlaneRefs()
        for (i, b) in buffers.enumerated() { refs.set(i, b.assumingMemoryBound(to: UInt8.self), strides[i]) }
        return refs
    }

    /// Copies `frame`'s planes in and returns swscale's view of them.
    func load(_ frame: VideoFrame) -> PlaneRefs {
        let refs = prepare(format: frame.format, width: frame.width, height: frame.height)
        for p in 0..<frame.format.planeCount {
            let rowBytes = frame.format.rowBytes(plane: p, width: frame.width), rows = frame.format.rows(plane: p, height: frame.height)
            let dst = buffers[p].assumingMemoryBound(to: UInt8.self), stride = strides[p]
            frame.planes[p].withUnsafeBufferPointer { src in
                guard let base = src.baseAddress, src.count >= rowBytes * rows else { return }
                for y in 0..<rows { (dst + y * stride).update(from: base + y * rowBytes, count: rowBytes) }
            }
        }
        return refs
    }

    /// Copies the planes out into `frame` (tightly packed, the layout prepared).
    func store(into frame: inout VideoFrame) {
        guard let layout else { return }
        if Self.guardBytes > 0 { checkGuards() }
        frame.reshape(format: layout.format, width: layout.width, height: layout.height)
        for p in 0..<layout.format.planeCount {
            let rowBytes = layout.format.rowBytes(plane: p, width: layout.width), rows = layout.format.rows(plane: p, height: layout.height)
            let src = buffers[p].assumingMemoryBound(to: UInt8.self), stride = strides[p]
            frame.planes[p].withUnsafeMutableBufferPointer { dst in
                guard let base = dst.baseAddress, dst.count >= rowBytes * rows else { return }
                for y in 0..<rows { (base + y * rowBytes).update(from: src + y * stride, count: rowBytes) }
            }
        }
    }
}

/// Converts frames between pixel formats and sizes through one reused swscale context.
public final class FrameConverter {
    private let scaler = SwsScaler()
    /// Filter used when the size changes.
    public var filter: ResizeFilter

    /// Makes a converter that resizes with `filter`.
    public init(filter: ResizeFilter = .lanczos) { self.filter = filter }

    /// Converts `source` into `destination`, whose format and size say what is wanted. Same
    /// format and size is a plain copy, so pass-through stays bit-exact. `destination` takes
    /// the source's timing; its colour is the source's with `matrix`/`range` as it already had
    /// them when it goes to or from RGB. `color`, when given, is the destination's colour as it
    /// is (an encoder's resolved description), used for the conversion's matrix and range.
    public func convert(_ source: VideoFrame, into destination: inout VideoFrame, color: ColorInfo? = nil) throws {
        destination.pts = source.pts
        destination.duration = source.duration
        destination.timeBase = source.timeBase
        destination.sampleAspectRatio = source.sampleAspectRatio
        if source.format == destination.format && source.width == destination.width && source.height == destination.height {
            destination.planes = source.planes
            destination.color = source.color
            return
        }
        // RGB is full range by definition; YUV and grey take the matrix and range the caller put
        // on `destination`, else the source's (RGB sources fall back to limited-range YUV).
        var dstColor = source.color
        if let color {
            dstColor = color
        } else if destination.format == .rgb24 {
            dstColor.range = 2
        } else {
            if destination.color.hasMatrix { dstColor.matrix = destination.color.matrix }
            if destination.color.hasRange { dstColor.range = destination.color.range }
            else if source.format == .rgb24 { dstColor.range = 1 }
        }
        let (dstFormat, dstWidth, dstHeight) = (destination.format, destination.width, destination.height)
        let src = scaler.paddedSource(source)
        let dst = scaler.paddedDestination(format: dstFormat, width: dstWidth, height: dstHeight)
        try scaler.scale(srcFormat: source.format.av, srcWidth: source.width, srcHeight: source.height,
                         srcColor: source.color, src: src,
                         dstFormat: dstFormat.av, dstWidth: dstWidth, dstHeight: dstHeight,
                         dstColor: dstColor, dst: dst, filter: filter)
        scaler.storeDestination(into: &destination)
        destination.color = dstColor
    }
}

#if VIVIFY_FUZZ
extension PaddedPlanes {
    /// The proof that fuzz builds see an overrun: one byte written just past a plane buffer,
    /// where an overrunning swscale would write, then the planes copied out as after every
    /// conversion. That copy must trap; `scripts/fuzz` runs this before fuzzing and stops if
    /// it returns.
    static func overrunOneByteAndStore(format: PixelFormat, width: Int, height: Int) {
        let planes = PaddedPlanes()
        _ = planes.prepare(format: format, width: width, height: height)
        let last = planes.buffers.count - 1
        (planes.buffers[last] + planes.sizes[last]).storeBytes(of: 0, as: UInt8.self)
        var frame = VideoFrame(format: format, width: 1, height: 1)
        planes.store(into: &frame)
    }
}

/// Fuzz builds' guard-band self-check (see `PaddedPlanes.overrunOneByteAndStore`).
package enum GuardBandCheck {
    package static func overrunOneByteAndStore(format: PixelFormat, width: Int, height: Int) {
        PaddedPlanes.overrunOneByteAndStore(format: format, width: width, height: height)
    }
}
#endif
