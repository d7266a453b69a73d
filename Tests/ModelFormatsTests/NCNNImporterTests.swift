import Engine
import Foundation
import ModelFormats
import XCTest

/// The ncnn importer on hand-made files: fp16 and fp32 weights load to the same graph, and
/// malformed files fail with messages naming the layer and file.
final class NCNNImporterTests: XCTestCase {
    let param = """
    7767517
    4 4
    Input            in     0 1 data
    Convolution      conv1  1 1 data c1 0=2 1=3 4=1 5=1 6=18 9=2 -23310=1,0.2
    PReLU            prelu  1 1 c1 p1 0=2
    Deconvolution    up     1 1 p1 out 0=1 1=2 3=2 5=1 6=8
    """

    func weights(fp16: Bool) -> (Data, [Float]) {
        var data = Data()
        var all: [Float] = []
        func tagged(_ v: [Float]) {
            if fp16 {
                var tag: UInt32 = 0x0130_6B47
                data.append(Data(bytes: &tag, count: 4))
                for x in v { var h = Float16(x).bitPattern; data.append(Data(bytes: &h, count: 2)) }
                if v.count % 2 == 1 { data.append(contentsOf: [0, 0]) }
                all += v.map { Float(Float16($0)) }
            } else {
                var tag: UInt32 = 0
                data.append(Data(bytes: &tag, count: 4))
                raw(v, record: false)
                all += v
            }
        }
        func raw(_ v: [Float], record: Bool = true) {
            for x in v { var f = x; data.append(Data(bytes: &f, count: 4)) }
            if record { all += v }
        }
        tagged((0..<18).map { Float($0) * 0.05 - 0.4 })
        raw([0.1, -0.1])
        raw([0.25, 0.5])
        tagged((0..<8).map { Float($0) * 0.1 - 0.3 })
        raw([0.05])
        return (data, all)
    }

    func testFP16AndFP32LoadTheSameNetwork() throws {
        let (d16, _) = weights(fp16: true)
        let (d32, _) = weights(fp16: false)
        let g16 = try NCNNImporter.parse(param: param, weights: d16, source: "fp16.param")
        let g32 = try NCNNImporter.parse(param: param, weights: d32, source: "fp32.param")
        XCTAssertEqual(g16.nodes.count, 3)
        let shape = Shape(c: 1, h: 6, w: 7)
        let x = Tensor(shape: shape, data: (0..<42).map { Float($0) / 42 })
        let a = try ReferenceBackend().prepare(g16, input: shape).run(x)
        let b = try ReferenceBackend().prepare(g32, input: shape).run(x)
        XCTAssertEqual(a.shape, Shape(c: 1, h: 12, w: 14))
        // fp16 rounds the weights (relative error ≤ 2^-11), so the outputs agree closely.
        XCTAssertLessThanOrEqual(zip(a.data, b.data).map { abs($0 - $1) }.max()!, 1e-3)
        guard case .convolution(let p) = g16.nodes[0].op, case .convolution(let q) = g32.nodes[0].op else {
            return XCTFail("first node is not a convolution")
        }
        XCTAssertEqual(q.weights, (0..<18).map { Float($0) * 0.05 - 0.4 }, "fp32 weights are read exactly")
        XCTAssertEqual(p.weights, q.weights.map { Float(Float16($0)) }, "fp16 weights are widened exactly")
        XCTAssertEqual(p.activation, .leakyRelu(slope: 0.2))
        XCTAssertEqual(p.padTop, 1)
    }

    func testMismatchedFilesAreRefused() throws {
        let (d16, _) = weights(fp16: true)
        XCTAssertThrowsError(try NCNNImporter.parse(param: param, weights: d16.prefix(30), source: "cut.param")) { error in
            XCTAssertTrue("\(error)".contains("conv1") || "\(error)".contains("prelu"), "\(error)")
            XCTAssertTrue("\(error)".contains("cut.param"), "\(error)")
        }
        XCTAssertThrowsError(try NCNNImporter.parse(param: param, weights: d16 + Data(count: 8), source: "long.param")) { error in
            XCTAssertTrue("\(error)".contains("left over"), "\(error)")
        }
        XCTAssertThrowsError(try NCNNImporter.parse(param: "123\n", weights: Data(), source: "bad.param")) { error in
            XCTAssertTrue("\(error)".contains("magic"), "\(error)")
        }
    }
}
