import Engine
import Foundation
import XCTest

/// External kernels that give their geometry (`ExternalGeometry`) are placed like the
/// engine's own layers: a crop kernel like `.crop`, an upscaling one like a pixel shuffle; the
/// receptive radius counts their reach; a graph of them tiles, and gives in small tiles what
/// it gives in one; without a geometry the graph is whole-frame, as before.
final class ExternalGeometryTests: XCTestCase {
    /// A 3×3 box sum, "valid" (crop 1, radius 1), or "same" with zeros (radius 1).
    final class BoxKernel: ExternalKernel {
        let valid: Bool
        let geometry: ExternalGeometry?
        init(valid: Bool, geometry: ExternalGeometry?? = .none) {
            self.valid = valid
            self.geometry = geometry ?? ExternalGeometry(top: valid ? 1 : 0, left: valid ? 1 : 0, bottom: valid ? 1 : 0, right: valid ? 1 : 0, radius: 1)
        }
        var label: String { "a box kernel" }
        func outputShape(for s: Shape) throws -> Shape { valid ? Shape(c: s.c, h: s.h - 2, w: s.w - 2) : s }
        func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws {
            let k = valid ? 1 : 0
            for c in 0..<o.c {
                for r in 0..<o.h {
                    for q in 0..<o.w {
                        var sum: Float = 0
                        for dr in -1...1 {
                            for dq in -1...1 {
                                let (ir, iq) = (r + k + dr, q + k + dq)
                                if ir >= 0, ir < s.h, iq >= 0, iq < s.w { sum += x[(c * s.h + ir) * s.w + iq] }
                            }
                        }
                        y[(c * o.h + r) * o.w + q] = sum / 9
                    }
                }
            }
        }
    }

    /// Nearest-neighbour 2× (scale 2, pointwise).
    final class Nearest2x: ExternalKernel {
        var label: String { "a nearest 2x kernel" }
        var geometry: ExternalGeometry? { ExternalGeometry(scale: 2) }
        func outputShape(for s: Shape) throws -> Shape { Shape(c: s.c, h: 2 * s.h, w: 2 * s.w) }
        func evaluate(_ x: UnsafeBufferPointer<Float>, _ s: Shape, _ y: UnsafeMutableBufferPointer<Float>, _ o: Shape) throws {
            for i in 0..<o.count {
                let (c, r, q) = (i / (o.h * o.w), i / o.w % o.h, i % o.w)
                y[i] = x[(c * s.h + r / 2) * s.w + q / 2]
            }
        }
    }

    static func conv(_ i: Int, _ o: Int, pad: Int, seed: UInt64) -> Engine.Operation {
        .convolution(ConvolutionParameters(outChannels: o, inChannels: i, kernelH: 3, kernelW: 3, strideH: 1, strideW: 1,
                                           padTop: pad, padLeft: pad, padBottom: pad, padRight: pad,
                                           weights: InstanceNormTilingTests.values(o * i * 9, seed: seed),
                                           bias: InstanceNormTilingTests.values(o, seed: seed + 100, amplitude: 0.2)))
    }

    static func chain(_ ops: [Engine.Operation]) -> Graph {
        let nodes = ops.enumerated().map { Node(name: "n\($0.offset)", op: $0.element, inputs: [$0.offset], output: $0.offset + 1) }
        return Graph(valueNames: (0...ops.count).map { "v\($0)" }, nodes: nodes, input: 0, output: ops.count, source: "external-geometry")
    }

    func testGeometryPlacesLikeTheEnginesOwnLayers() throws {
        // A valid box kernel is a crop of 1 with a reach of 1: placed as conv 3×3 valid is.
        let external = Self.chain([Self.conv(3, 4, pad: 1, seed: 1), .external(ExternalLayer(BoxKernel(valid: true))), .external(ExternalLayer(Nearest2x()))])
        let native = Self.chain([Self.conv(3, 4, pad: 1, seed: 1), Self.conv(4, 4, pad: 0, seed: 2),
                                 .resize(.nearest, scaleH: 2, scaleW: 2, outH: 0, outW: 0, alignCorners: false)])
        let a = try XCTUnwrap(external.placements()), b = try XCTUnwrap(native.placements())
        XCTAssertEqual(a[external.output], b[native.output])
        XCTAssertEqual(a[external.output]?.rows, AxisPlacement(numerator: 2, denominator: 1, offset: -1.5))
        XCTAssertFalse(external.needsWholeFrame)
        XCTAssertEqual(external.receptiveRadius(), 2)
        // Unequal sides move the centre: a crop of 3 at the top and 1 at the bottom reaches 1 more.
        let lopsided = Self.chain([.external(ExternalLayer(BoxKernel(valid: true, geometry: ExternalGeometry(top: 3, left: 1, bottom: 1, right: 1, radius: 1))))])
        XCTAssertEqual(lopsided.receptiveRadius(), 2)
        XCTAssertEqual(lopsided.placements()?[lopsided.output]?.rows.offset, -3)
        // No geometry: whole frames, as every external kernel ran before.
        let unknown = Self.chain([.external(ExternalLayer(BoxKernel(valid: false, geometry: .some(nil))))])
        XCTAssertTrue(unknown.needsWholeFrame)
        XCTAssertNil(unknown.placements())
        XCTAssertEqual(unknown.unplacedExternalKernels, ["a box kernel"])
    }

    /// conv (same) → box (same, radius 1) → nearest 2× → conv (same): in 16-pixel tiles with
    /// the inferred border, what one tile gives (the same border rule at the picture's edge).
    func testAGraphOfPlacedKernelsTilesLikeOneTile() throws {
        let graph = Self.chain([Self.conv(3, 4, pad: 1, seed: 1), .external(ExternalLayer(BoxKernel(valid: false))),
                                .external(ExternalLayer(Nearest2x())), Self.conv(4, 3, pad: 1, seed: 3)])
        let spec = try TilingSpec.inferred(for: graph)
        XCTAssertEqual(spec.scale, 2)
        XCTAssertEqual(spec.padding, 4, "radius 1 + 1 + ½, in fours")
        let (h, w) = (37, 45)
        let input = InstanceNormTilingTests.values(3 * h * w, seed: 11)
        let tiled = try InstanceNormTilingTests.run(TiledRunner(graph: graph, spec: spec, backend: ReferenceBackend(), tileSize: 16), input, height: h, width: w)
        let one = try InstanceNormTilingTests.run(TiledRunner(graph: graph, spec: spec, backend: ReferenceBackend(), tileSize: 64), input, height: h, width: w)
        XCTAssertFalse(tiled.contains { $0.isNaN })
        XCTAssertLessThanOrEqual(InstanceNormTilingTests.maxDiff(tiled, one), 1e-5)
        // Told it reads nothing around it, the box kernel's tiles miss what it reads: the check above can fail.
        let lying = Self.chain([Self.conv(3, 4, pad: 1, seed: 1), .external(ExternalLayer(BoxKernel(valid: false, geometry: .pointwise))),
                                .external(ExternalLayer(BoxKernel(valid: false, geometry: .pointwise))), .external(ExternalLayer(BoxKernel(valid: false, geometry: .pointwise))),
                                .external(ExternalLayer(BoxKernel(valid: false, geometry: .pointwise))), Self.conv(4, 3, pad: 1, seed: 3)])
        let lyingSpec = try TilingSpec.inferred(for: lying)
        let a = try InstanceNormTilingTests.run(TiledRunner(graph: lying, spec: lyingSpec, backend: ReferenceBackend(), tileSize: 16), input, height: h, width: w)
        let b = try InstanceNormTilingTests.run(TiledRunner(graph: lying, spec: lyingSpec, backend: ReferenceBackend(), tileSize: 64), input, height: h, width: w)
        XCTAssertGreaterThan(InstanceNormTilingTests.maxDiff(a, b), 1e-3)
        print(String(format: "placed external kernels, 45x37 in 16-pixel tiles vs one tile: %.1e; told pointwise: %.1e",
                     InstanceNormTilingTests.maxDiff(tiled, one), InstanceNormTilingTests.maxDiff(a, b)))
    }
}
