import Foundation
import MediaIO
import Vivify
import XCTest

/// The filter stage (`--filter`): an N× model blended with its input at any strength, and
/// the place of each filter among colorize and upscale.
final class FilterStageTests: XCTestCase {
    /// The planar float RGB picture a chain gives for `frame` through `processors`.
    func run(_ processors: [FrameProcessor], _ frame: VideoFrame) throws -> FloatPlanarImage {
        let chain = try ProcessingChain(processors, input: FrameDescription(width: frame.width, height: frame.height, frameRate: Rational(25, 1),
                                                                          layout: .packed(.rgb24)))
        guard case .planar(let p)? = try chain.process(ChainFrame(id: 0, frame: frame)).first?.pixels else {
            throw XCTSkip("no planar output")
        }
        return p
    }

    /// The built-in 2× upscaler as a filter: strength 1 is the model, 0 the input repeated
    /// 2×, 0.25 the blend of the two, pixel for pixel.
    func testStrengthBlendsAnNxModelWithItsRepeatedInput() throws {
        let frame = ColorizerTests.greyFrame(width: 40, height: 24)
        var source = FloatPlanarImage(channels: 3, width: 1, height: 1)
        source.load(from: frame)
        func filter(_ s: Float) throws -> FloatPlanarImage {
            try run([ProcessorFactory.make(.filter(model: "2", tile: nil, strength: s), backend: .reference)], frame)
        }
        let model = try filter(1), input = try filter(0), quarter = try filter(0.25)
        XCTAssertEqual([model.width, model.height], [80, 48])
        var worstInput: Float = 0, worstBlend: Float = 0, modelVsInput: Float = 0
        for c in 0..<3 {
            for y in 0..<48 {
                for x in 0..<80 {
                    let i = (c * 48 + y) * 80 + x
                    let repeated = source.data[(c * 24 + y / 2) * 40 + x / 2]
                    worstInput = max(worstInput, abs(input.data[i] - repeated))
                    worstBlend = max(worstBlend, abs(quarter.data[i] - (0.25 * model.data[i] + 0.75 * repeated)))
                    modelVsInput = max(modelVsInput, abs(model.data[i] - repeated))
                }
            }
        }
        XCTAssertEqual(worstInput, 0)
        XCTAssertLessThanOrEqual(worstBlend, 1e-6)
        XCTAssertGreaterThan(modelVsInput, 0.01, "the model changes the picture")
    }

    /// Each filter after the first `after` of the colorize/upscale stages in chain order (as
    /// the command line and manifests before version 3 place them), named in order.
    func testFiltersTakeTheirPlacesAmongTheModels() {
        let filters = [FilterStage(model: "a", after: 0), FilterStage(model: "b", strength: 0.5, after: 1), FilterStage(model: "c", after: 2),
                       FilterStage(model: "d", after: 0)]
        let colorize = StageSpec.colorize(model: "vivify-color"), upscale = StageSpec.upscale(model: "2")
        func names(_ specs: [StageSpec]) -> [String] {
            zip(specs, specs.names).map { spec, name in
                switch spec {
                case .colorize: return "colorize"
                case .upscale: return "upscale"
                case .filter(let m, _, let s): return "\(name):\(m)@\(s)"
                default: return "other"
                }
            }
        }
        XCTAssertEqual(names(FilterStage.place(filters, among: [colorize, upscale], tile: nil)),
                       ["filter:a@1.0", "filter2:d@1.0", "colorize", "filter3:b@0.5", "upscale", "filter4:c@1.0"])
        XCTAssertEqual(names(FilterStage.place(filters, among: [upscale, colorize], tile: nil)),
                       ["filter:a@1.0", "filter2:d@1.0", "upscale", "filter3:b@0.5", "colorize", "filter4:c@1.0"])
        XCTAssertEqual(names(FilterStage.place(filters, among: [upscale], tile: nil)),
                       ["filter:a@1.0", "filter2:d@1.0", "upscale", "filter3:b@0.5", "filter4:c@1.0"])
    }
}
