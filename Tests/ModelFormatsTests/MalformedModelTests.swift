import Engine
import Foundation
import ModelFormats
import XCTest

/// The malformed model files of the red-team report (issue 14) and the fuzzer's finds, each
/// now a clear error naming the problem instead of a trap, SIGFPE or allocation abort.
final class MalformedModelTests: XCTestCase {
    /// A one-convolution ncnn model with `conv` as the convolution's parameters and fp32
    /// weights for `weights` values (plus 1 bias).
    func ncnn(_ conv: String, weights: Int = 27, extraLine: String = "") -> (String, Data) {
        let param = """
        7767517
        \(extraLine.isEmpty ? 2 : 3) \(extraLine.isEmpty ? 2 : 3)
        Input in 0 1 data
        Convolution conv 1 1 data out \(conv)
        \(extraLine)
        """
        var data = Data(count: 4)
        data.append(Data(count: 4 * max(weights, 0) + 4))
        return (param, data)
    }

    func assertMalformed(_ param: String, _ weights: Data, mentions: [String], file: StaticString = #filePath, line: UInt = #line) {
        do {
            let graph = try NCNNImporter.parse(param: param, weights: weights, source: "bad.param")
            _ = try graph.inferShapes(input: Shape(c: 3, h: 16, w: 16))
            XCTFail("accepted", file: file, line: line)
        } catch let e as ModelFormatError {
            for m in mentions { XCTAssertTrue(e.message.contains(m), "'\(m)' missing from: \(e.message)", file: file, line: line) }
        } catch let e as EngineError {
            for m in mentions { XCTAssertTrue(e.message.contains(m), "'\(m)' missing from: \(e.message)", file: file, line: line) }
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
        }
    }

    func testTheWellFormedBaseLoads() throws {
        let (param, data) = ncnn("0=1 1=3 4=1 5=1 6=27")
        let graph = try NCNNImporter.parse(param: param, weights: data, source: "ok.param")
        XCTAssertEqual(try graph.inferShapes(input: Shape(c: 3, h: 16, w: 16))[graph.output], Shape(c: 1, h: 16, w: 16))
    }

    func testStrideZeroIsRefusedNotADivisionByZero() {
        let (param, data) = ncnn("0=1 1=3 3=0 4=1 5=1 6=27")
        assertMalformed(param, data, mentions: ["conv", "stride 0x0", "1–64"])
    }

    func testNegativeWeightCountIsRefused() {
        let (param, data) = ncnn("0=1 1=3 4=1 5=1 6=-27")
        assertMalformed(param, data, mentions: ["conv", "-27"])
    }

    func testNegativeOutputCountOfALayerIsAParseError() {
        let param = "7767517\n2 2\nInput in 0 1 data\nConvolution conv 1 -1 data 0=1 1=3 6=27\n"
        assertMalformed(param, Data(count: 200), mentions: ["layer line 4", "cannot parse"])
    }

    func testNonFiniteAndHugeFloatParametersAreRefused() {
        for value in ["nan", "inf", "-inf", "1e30"] {
            let (param, data) = ncnn("0=1 1=\(value) 4=1 5=1 6=27")
            assertMalformed(param, data, mentions: ["conv", "kernel"])
        }
    }

    func testWeightCountBeyondTheFileIsRefusedBeforeAllocating() {
        // 2^40 weights claimed, 112 bytes present: refused from the file size, no 4 TB buffer.
        let (param, data) = ncnn("0=1024 1=1 4=0 5=1 6=1099511627776")
        assertMalformed(param, data, mentions: ["conv"])
    }

    func testHugeArrayKeyAndShortEltwiseCoefficientsAreRefused() {
        let (param, data) = ncnn("0=1 1=3 4=1 5=1 6=27 -9223372036854775808=1,1")
        assertMalformed(param, data, mentions: ["out of range"])
        let eltwise = "Eltwise sum 2 1 out out sum 0=1 -23301=1,2.0"
        let (p2, d2) = ncnn("0=1 1=3 4=1 5=1 6=27", extraLine: eltwise)
        assertMalformed(p2, d2, mentions: ["sum", "coefficients"])
    }

    func testProtobufLengthNearTwoToTheSixtyThreeIsAnError() {
        // Field 1, wire type 2, length varint 0x7FFF_FFFF_FFFF_FFF0.
        var bytes: [UInt8] = [0x0A]
        var v: UInt64 = 0x7FFF_FFFF_FFFF_FFF0
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
        XCTAssertThrowsError(try ProtobufReader(Data(bytes)).fields()) { error in
            XCTAssertTrue("\(error)".contains("claims"), "\(error)")
        }
        XCTAssertThrowsError(try CoreMLImporter.parse(Data(bytes), source: "bad.mlmodel"))
    }

    func testCoreMLNetworkFieldOfTheWrongWireTypeIsAnError() {
        // Version 4, an empty description, then field 500 (the NeuralNetwork) as a number.
        let bytes: [UInt8] = [0x08, 0x04, 0x12, 0x00, 0xA0, 0x1F, 0x01]
        XCTAssertThrowsError(try CoreMLImporter.parse(Data(bytes), source: "wire.mlmodel")) { error in
            XCTAssertTrue(error is ModelFormatError, "\(error)")
        }
    }

    func testManifestScaleBeyondTheLimitIsRefused() {
        func manifest(_ scale: Int) -> Data {
            Data("""
            { "version": 1, "name": "Scale test model", "type": "ncnn", "subModels": { "main": { "file": "m.param", "inputName": "a", "outputName": "b" } },
              "dataFormat": "chw", "inputShape": [3, 64, 64], "shrinkSize": 7, "scale": \(scale), "alphaMode": "sameAsMain" }
            """.utf8)
        }
        XCTAssertEqual(try WifmManifest.read(json: manifest(16), entries: nil).manifest.scale, 16)
        for scale in [40_000, 1_000_000, 17] {
            XCTAssertThrowsError(try WifmManifest.read(json: manifest(scale), entries: nil)) { error in
                XCTAssertTrue("\(error)".contains("scale") && "\(error)".contains("16"), "\(error)")
            }
        }
    }

    func testEngineRefusesOutOfRangeParametersFromAnyImporter() {
        var p = ConvolutionParameters(outChannels: 1, inChannels: 3, kernelH: 3, kernelW: 3, strideH: 0, strideW: 1,
                                      dilationH: 1, dilationW: 1, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1,
                                      outputPadH: 0, outputPadW: 0, groups: 1, weights: [Float](repeating: 0, count: 27),
                                      bias: [0], activation: .identity)
        func shapes(_ op: Engine.Operation) throws {
            let graph = Graph(valueNames: ["in", "out"], nodes: [Node(name: "layer", op: op, inputs: [0], output: 1)],
                              input: 0, output: 1, source: "m")
            _ = try graph.inferShapes(input: Shape(c: 3, h: 8, w: 8))
        }
        XCTAssertThrowsError(try shapes(.convolution(p))) { XCTAssertTrue("\($0)".contains("stride"), "\($0)") }
        p.strideH = 1
        p.groups = 0
        XCTAssertThrowsError(try shapes(.convolution(p))) { XCTAssertTrue("\($0)".contains("groups"), "\($0)") }
        XCTAssertThrowsError(try shapes(.resize(.nearest, scaleH: .nan, scaleW: 2, outH: 0, outW: 0, alignCorners: false)))
        XCTAssertThrowsError(try shapes(.resize(.nearest, scaleH: 1000, scaleW: 1000, outH: 0, outW: 0, alignCorners: false)))
        XCTAssertThrowsError(try shapes(.pixelShuffle(factor: 1 << 33, order: .crd)))
        XCTAssertThrowsError(try shapes(.pad(top: Int.max, left: 0, bottom: Int.max, right: 0, mode: .constant(0))))
        XCTAssertThrowsError(try shapes(.crop(top: Int.max, left: 0, bottom: Int.max, right: 0)))
    }
}
