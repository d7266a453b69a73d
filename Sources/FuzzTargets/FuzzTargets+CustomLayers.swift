import Engine
import Foundation
import ModelFormats

extension FuzzTarget {
    /// A small Core ML model with one custom layer, `ChannelGainLambda`, that has weights
    /// (two arrays) and numeric parameters (gain, offset, limit, border): the style fixtures'
    /// `params.mlmodel` (scripts/coreml_style_fixtures.py), 794 bytes.
    static let customLayerModel = Data(base64Encoded: "CAISIQoQCgF4GgsqCQoDAwkLEMCABFINCgNvdXQaBioEEMCABKIf8QUK9wMKBGNvbnYSAXgaAWOiBucDCAQQA1ABogECAwPyAQIBAcICAgEBmgMAsAQB0gWzAwqwAwfdC74Zquw9KUg3Pim8YD3sbP692rB6vfWhhzmEX9q9+pwxPTcRCb5qGgQ+ovOuvcmrF745dic+yz0AvlLiBj5UoMu9bGzfvWNyNr4ZhtU9SATmvS/zaD3BTx4+ZWg1PcbJAT5+yQo+ed5vPW8UBr6CixG+eU6OvIVhDz5j3+w802YyPmoQbz0lHES+BhYJvcL+ob2NAjQ+R6s7vmdR6b2rsSi9zrOUvet1LT2YgwO+k3bnPE1cN75R1Kc8o9qqPHq2m70Sr669DRZkPXSpiz1Wmdm9f9yjPbeXobygbQi+tWoPPjO2fTzeorw99NyRvZd2/706lZY8OOlzPYm8Hz3UsUS+IbNUvSDNFL59qQi+Mz4NPXWw/zwmrwa+f4TmvdjIt73nb729FgM9PGd+Cr4U5tI8BsoRPjEjHL3mlOg9OwsLPhItX7xng1Y9idE+Ppg9BD6//Ai+8VICvuQdm73PJjy+p/alvaurGT68Rim+SNrpPYWWEj7fByW+hssLvmCxirzSkuc8heVzPTsywDwrCCo+vLg6vl+0JT6lX7s98OIqPju5Br05bDM+Sog1vtoFEgoQZxPavvYNtz5rqKu+Wqgdvgr0AQoEZ2FpbhIBYxoDb3V0oh/iAVIRQ2hhbm5lbEdhaW5MYW1iZGGiARIKEAbZoD/Icds/iFGPPzxstj+iARIKEAbJ9b5Ct8O+FUHIPnJaqT7yAREKBGdhaW4SCVEAAAAAAAD8P/IBDQoGYm9yZGVyEgPwAQLyARMKBm9mZnNldBIJUQAAAAAAANC/8gESCgVsaW1pdBIJUQAAAAAAAPg/wgJTeSA9IGNsYW1wKCh4ICogdzAgKyB3MSkgKiBnYWluICsgb2Zmc2V0LCAtbGltaXQsIGxpbWl0KSwgZWRnZXMgcmVwbGljYXRlZCBieSBib3JkZXI=")!

    /// `custom-layers`: the bytes as a `NAME.layers.json` declaration beside the model, read,
    /// the model imported with it (the layer lowered onto engine operations) and the graph run
    /// on the reference backend at a few small sizes.
    static func customLayers(_ data: Data) {
        let path = write(data, "custom/params.layers.json")
        guard let declarations = try? CustomLayerDeclarations.read(path: path),
              let model = try? CoreMLImporter.parse(customLayerModel, source: "params.mlmodel", customLayers: declarations) else { return }
        let graph = model.graph
        let channels = graph.inputChannels ?? 3
        for (h, w) in [(1, 1), (5, 3), (16, 9)] {
            let shape = Shape(c: channels, h: h, w: w)
            // Values within 4 M floats each (the fuzzer's memory limit is 1 GiB).
            guard let shapes = try? graph.inferShapes(input: shape), shapes.allSatisfy({ ($0?.count ?? 0) <= 1 << 22 }),
                  let prepared = try? ReferenceBackend(threads: threads).prepare(graph, input: shape) else { continue }
            let input = Tensor(shape: shape, data: (0..<shape.count).map { Float($0 % 7) - 3 })
            _ = try? prepared.run(input)
        }
    }
}
