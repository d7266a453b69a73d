#!/usr/bin/env python3
"""Builds the seed corpora for scripts/fuzz: one folder per fuzz target under OUT.

Seeds are the real files (../shared/models, the test fixtures) plus small hand-made inputs
written here (y4m streams, rates, manifests, a tiny ncnn model and .wifm bundles), so each
target starts from inputs its parser accepts. Nothing here is committed; run it at fuzz time.

usage: scripts/fuzz-seeds.py OUT
"""
import io
import json
import pathlib
import struct
import sys
import zipfile

repo = pathlib.Path(__file__).resolve().parent.parent
shared = pathlib.Path(repo.parent, "shared")
out = pathlib.Path(sys.argv[1])


def put(target, name, data):
    folder = out / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


# y4m: every colour tag we read, a few header tags, two frames each.
planes = {"420jpeg": (1, 0.25, 0.25), "420mpeg2": (1, 0.25, 0.25), "422": (1, 0.5, 0.5), "444": (1, 1, 1), "mono": (1,)}
for tag, fractions in planes.items():
    w, h = 8, 6
    frame = b"".join(bytes((i * 37 + p) % 256 for i in range(int(w * h * f))) for p, f in enumerate(fractions))
    header = f"YUV4MPEG2 W{w} H{h} F30000:1001 Ip A1:1 C{tag} XCOLORRANGE=LIMITED\n".encode()
    put("y4m", f"{tag}.y4m", header + (b"FRAME\n" + frame) * 2)
put("y4m", "no-rate.y4m", b"YUV4MPEG2 W4 H2 C444\nFRAME\n" + bytes(24))
put("y4m", "frame-params.y4m", b"YUV4MPEG2 W4 H2 F25:1 C444\nFRAME Ixyz\n" + bytes(24))

# rates as the options and y4m headers spell them.
put("rate", "rates.txt", "30000/1001\n25\n24000/1001\n60/1\n0.5\n1e3\n-25/2\n")
put("rate", "headers.txt", "YUV4MPEG2 W1920 H1080 F30000:1001 It A128:117 C420mpeg2\nYUV4MPEG2 W2 H2 F0:0 A0:0\n")

# Core ML NeuralNetwork: the fixtures and the real upscalers; their bytes also seed protobuf.
coreml = sorted((repo / "Tests/ModelFormatsTests/Fixtures/coreml").glob("*.mlmodel"))
for f in coreml:
    put("coreml", f.name, f.read_bytes())
    put("protobuf", f.name, f.read_bytes())
for f in sorted((shared / "models/coreml").glob("*.mlmodel"))[:1]:
    put("coreml", f.name, f.read_bytes())

# ML Program: UInt32 length, model.mlmodel, weight.bin (FuzzTarget.mlprogram's layout).
for package in sorted((repo / "Tests/ModelFormatsTests/Fixtures/mlprogram").glob("*.mlpackage")):
    folder = package / "Data/com.apple.CoreML"
    model = (folder / "model.mlmodel").read_bytes()
    weights = folder / "weights/weight.bin"
    blob = weights.read_bytes() if weights.exists() else b""
    put("mlprogram", package.stem, struct.pack("<I", len(model)) + model + blob)
    put("protobuf", package.stem + ".mlmodel", model)

# onnx: small models written with the onnx package (when it is installed), one per op family.
try:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def onnx_model(nodes, inits, opset=13):
        g = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, "h", "w"])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, None, None, None])], inits)
        return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

    t = lambda a, n: numpy_helper.from_array(np.asarray(a), n)
    w = t(np.full((4, 3, 3, 3), 0.1, np.float32), "w")
    put("onnx", "conv-prelu-d2s.onnx", onnx_model([helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                                                   helper.make_node("PRelu", ["c", "s"], ["p"]),
                                                   helper.make_node("DepthToSpace", ["p"], ["y"], blocksize=2, mode="CRD")],
                                                  [w, t(np.full((4, 1, 1), 0.2, np.float32), "s")]))
    put("onnx", "resize-pad-slice.onnx", onnx_model([helper.make_node("Resize", ["x", "", "sc"], ["r"], mode="linear"),
                                                     helper.make_node("Pad", ["r", "pd"], ["p"], mode="reflect"),
                                                     helper.make_node("Slice", ["p", "st", "en", "ax"], ["y"])],
                                                    [t(np.array([1, 1, 2, 2], np.float32), "sc"), t(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pd"),
                                                     t(np.array([0], np.int64), "st"), t(np.array([2], np.int64), "en"), t(np.array([1], np.int64), "ax")]))
    put("onnx", "bn-pool-gemm.onnx", onnx_model([helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["n"]),
                                                 helper.make_node("GlobalAveragePool", ["n"], ["a"]),
                                                 helper.make_node("Flatten", ["a"], ["f"]),
                                                 helper.make_node("Gemm", ["f", "fw", "fb"], ["y"], transB=1)],
                                                [t(np.ones(3, np.float32), "g"), t(np.zeros(3, np.float32), "b"), t(np.zeros(3, np.float32), "m"),
                                                 t(np.ones(3, np.float32), "v"), t(np.ones((2, 3), np.float32), "fw"), t(np.zeros(2, np.float32), "fb")]))
except ImportError:
    pass
for f in sorted((repo / "Tests/FuzzRegressionTests/Crashes/onnx").glob("*.onnx")):
    put("onnx", "crash-" + f.name, f.read_bytes())

# ncnn: real .param files (weights: the target's zeros), and a tiny model with real weights.
for f in sorted((shared / "models/ncnn").glob("*/*.param")):
    put("ncnn", f.parent.name + "-" + f.name, f.read_bytes())
for f in sorted((repo / "Tests/EngineTests/Fixtures/colorizers").glob("*.param")):
    put("ncnn", f.name, f.read_bytes())
tiny_param = ("7767517\n4 4\nInput in0 0 1 in0 0=8 1=8 2=3\n"
              "Convolution conv1 1 1 in0 c1 0=4 1=3 2=1 3=1 4=1 5=1 6=108 9=2 -23310=1,0.1\n"
              "Deconvolution up 1 1 c1 u 0=3 1=4 2=1 3=2 4=1 5=1 6=192\n"
              "Sigmoid out 1 1 u out0\n")
tiny_bin = (struct.pack("<I", 0) + struct.pack("<108f", *[(i % 7 - 3) / 10 for i in range(108)]) + struct.pack("<4f", 0, 0.1, 0.2, 0.3)
            + struct.pack("<I", 0) + struct.pack("<192f", *[(i % 5 - 2) / 10 for i in range(192)]) + struct.pack("<3f", 0, 0, 0))
put("ncnn", "tiny-with-weights", tiny_param.encode() + b"\0" + tiny_bin)

# .wifm manifests and bundles.
manifest = {"version": 1, "name": "Fuzz seed 2x", "type": "ncnn",
            "subModels": {"main": {"file": "main.param", "inputName": "in0", "outputName": "out0"}},
            "dataFormat": "nchw", "inputShape": [1, 3, 8, 8], "shrinkSize": 2, "scale": 2, "alphaMode": "sameAsMain"}
coreml_manifest = dict(manifest, type="coreml", subModels={"main": {"file": "main.mlmodel", "inputName": "input", "outputName": "output"},
                                                            "alpha": {"file": "alpha.mlmodel", "inputName": "input", "outputName": "output"}},
                       alphaMode="separate")
for name, m in [("ncnn.json", manifest), ("coreml.json", coreml_manifest)]:
    put("wifm-manifest", name, json.dumps(m, indent=4))
for f in sorted((repo / "Tests").rglob("manifest.json")):
    put("wifm-manifest", f.parent.name + "-manifest.json", f.read_bytes())


def bundle(files):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buffer.getvalue()


put("wifm-archive", "ncnn.wifm", bundle({"manifest.json": json.dumps(manifest), "main.param": tiny_param,
                                          "main.bin": tiny_bin, "info.md": "# Fuzz seed\n"}))
if coreml:
    small = (repo / "Tests/ModelFormatsTests/Fixtures/coreml/conv_image_bgr.mlmodel").read_bytes()
    put("wifm-archive", "coreml.wifm", bundle({"manifest.json": json.dumps(coreml_manifest), "main.mlmodel": small, "alpha.mlmodel": small}))
print("seeds:", ", ".join(f"{d.name} {len(list(d.iterdir()))}" for d in sorted(out.iterdir())))
