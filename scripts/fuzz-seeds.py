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
