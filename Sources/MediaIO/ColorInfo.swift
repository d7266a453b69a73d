import CFFmpeg

/// The colour description of a video: which primaries, transfer curve, YUV matrix and range.
/// Values are FFmpeg's (ISO/IEC 23091-4 code points), so they round-trip into containers.
public struct ColorInfo: Sendable, Hashable, CustomStringConvertible {
    /// Colour primaries code point (1 = BT.709, 5 = BT.470BG, 6 = SMPTE 170M, 2 = unspecified).
    public var primaries: Int32
    /// Transfer characteristics code point (1 = BT.709, 13 = sRGB, 2 = unspecified).
    public var transfer: Int32
    /// Matrix coefficients code point (1 = BT.709, 5 = BT.470BG, 6 = SMPTE 170M, 2 = unspecified).
    public var matrix: Int32
    /// Range: 1 = limited ("tv"), 2 = full ("pc"), 0 = unspecified.
    public var range: Int32

    /// Everything unspecified.
    public static let unspecified = ColorInfo(primaries: 2, transfer: 2, matrix: 2, range: 0)
    /// BT.709 limited range, the HD default.
    public static let bt709 = ColorInfo(primaries: 1, transfer: 1, matrix: 1, range: 1)
    /// BT.601 (SMPTE 170M) limited range, the SD default.
    public static let bt601 = ColorInfo(primaries: 6, transfer: 6, matrix: 6, range: 1)

    /// Makes a colour description from code points.
    public init(primaries: Int32, transfer: Int32, matrix: Int32, range: Int32) {
        self.primaries = primaries
        self.transfer = transfer
        self.matrix = matrix
        self.range = range
    }

    /// Whether the matrix is known.
    public var hasMatrix: Bool { matrix != 2 && matrix != 0 }
    /// Whether the range is known.
    public var hasRange: Bool { range == 1 || range == 2 }
    /// Whether this is full ("pc", "jpeg") range.
    public var isFullRange: Bool { range == 2 }

    /// FFmpeg's name of the primaries ("bt709", "smpte170m", "unknown").
    public var primariesName: String { name(av_color_primaries_name(AVColorPrimaries(UInt32(primaries)))) }
    /// FFmpeg's name of the transfer curve.
    public var transferName: String { name(av_color_transfer_name(AVColorTransferCharacteristic(UInt32(transfer)))) }
    /// FFmpeg's name of the matrix.
    public var matrixName: String { name(av_color_space_name(AVColorSpace(UInt32(matrix)))) }
    /// FFmpeg's name of the range ("tv", "pc", "unknown").
    public var rangeName: String { name(av_color_range_name(AVColorRange(UInt32(range)))) }

    private func name(_ c: UnsafePointer<CChar>?) -> String { c.map { String(cString: $0) } ?? "unknown" }

    public var description: String {
        "matrix=\(matrixName) primaries=\(primariesName) transfer=\(transferName) range=\(rangeName)"
    }

    /// Looks up a matrix by FFmpeg name ("bt709", "bt470bg", "smpte170m", "bt2020nc"…).
    public static func matrixCode(named name: String) -> Int32? {
        let code = av_color_space_from_name(name)
        return code < 0 ? nil : code
    }

    /// This description with every unknown field filled by an explicit rule, plus the list of
    /// what was assumed so the caller can say so (BT.601 vs BT.709 is never guessed silently).
    /// Rule: sources at least 720 rows high are BT.709, smaller ones BT.601 (SMPTE 170M);
    /// YUV without a range is limited range.
    public func resolved(height: Int) -> (info: ColorInfo, assumptions: [String]) {
        var out = self
        var notes: [String] = []
        let hd = height >= 720
        if !hasMatrix {
            out.matrix = hd ? 1 : 6
            notes.append("matrix \(out.matrixName) (\(hd ? "HD" : "SD") height \(height))")
        }
        if primaries == 2 || primaries == 0 { out.primaries = hd ? 1 : 6 }
        if transfer == 2 || transfer == 0 { out.transfer = hd ? 1 : 6 }
        if !hasRange {
            out.range = 1
            notes.append("limited (tv) range")
        }
        return (out, notes)
    }
}
