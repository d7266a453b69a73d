#!/usr/bin/env python3
"""Builds the seed corpora for scripts/fuzz: one folder per fuzz target under OUT.

Seeds are the real files (../shared/models, the test fixtures, the shipped int8 calibrations,
a segment manifest planned by the vivify binary when one is built) plus small hand-made inputs
written here (y4m and raw streams down to 1x1, rates, manifests, colorizer descriptions,
calibrations, .npy tensors, a tiny ncnn model and .wifm bundles), so each target starts from
inputs its parser accepts. Nothing here is committed; run it at fuzz time.

usage: scripts/fuzz-seeds.py OUT
       scripts/fuzz-seeds.py --embed-mlprograms   (rewrites Sources/FuzzTargets/MLProgramModels.swift)
"""
import base64
import io
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys
import tempfile
import zipfile

repo = pathlib.Path(__file__).resolve().parent.parent
shared = pathlib.Path(repo.parent, "shared")
mlprogram_fixtures = repo / "Tests/ModelFormatsTests/Fixtures/mlprogram"
# The programs the mlprogram-weights target pairs with a fuzzed weight file (byte 0 picks one),
# in this order; --embed-mlprograms writes them into the target's source.
weight_programs = ["conv_fp32", "fp16", "affine_quantized", "blockwise_ios18", "lut_palettized",
                   "norm_resize_fp32", "elementwise_fp32", "deconv_same_shape_fp32"]
if sys.argv[1:] == ["--embed-mlprograms"]:
    lines = ["// Generated from Tests/ModelFormatsTests/Fixtures/mlprogram/*.mlpackage by scripts/fuzz-seeds.py --embed-mlprograms;",
             "// do not edit. The ML Program protobufs the `mlprogram-weights` target pairs with a fuzzed weight.bin",
             "// (the fixtures' own weight files are its seeds).", "", "extension FuzzTarget {",
             "    /// (fixture name, base64 of its model.mlmodel), in the order the target's first byte picks them.",
             "    static let mlprogramModels: [(name: String, base64: String)] = ["]
    for name in weight_programs:
        model = (mlprogram_fixtures / f"{name}.mlpackage/Data/com.apple.CoreML/model.mlmodel").read_bytes()
        lines.append(f'        ("{name}", "{base64.b64encode(model).decode()}"),')
    (repo / "Sources/FuzzTargets/MLProgramModels.swift").write_text("\n".join(lines + ["    ]", "}", ""]))
    sys.exit(0)
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

# y4m-frames and raw-frames: tiny and odd sizes (1x1, 1xN, Nx1, odd widths) in every format the
# readers take, each seed a few frames.
def pattern(n, salt):
    return bytes((i * 29 + salt * 71) % 256 for i in range(n))


def frame_bytes(fmt, w, h):
    cw, ch = (w + 1) // 2, (h + 1) // 2
    return {"420jpeg": w * h + 2 * cw * ch, "420mpeg2": w * h + 2 * cw * ch, "420paldv": w * h + 2 * cw * ch,
            "422": w * h + 2 * cw * h, "444": 3 * w * h, "mono": w * h, "rgb24": 3 * w * h, "gray": w * h}[fmt]


sizes = [(1, 1), (1, 2), (1, 9), (9, 1), (2, 2), (3, 3), (3, 8), (4, 8), (5, 7), (17, 3), (33, 2), (64, 1)]
for tag in ["420jpeg", "420mpeg2", "420paldv", "422", "444", "mono"]:
    for w, h in sizes:
        rng = "FULL" if (w + h) % 2 else "LIMITED"
        header = f"YUV4MPEG2 W{w} H{h} F25:1 Ip A1:1 C{tag} XCOLORRANGE={rng}\n".encode()
        put("y4m-frames", f"{tag}-{w}x{h}.y4m", header + b"".join(b"FRAME\n" + pattern(frame_bytes(tag, w, h), k) for k in range(2)))
put("y4m-frames", "no-colour-tag-3x1.y4m", b"YUV4MPEG2 W3 H1 F30000:1001\nFRAME\n" + pattern(frame_bytes("420jpeg", 3, 1), 0))
# raw-frames: byte 0 (bit 0: gray; bit 1: leave the body uncut), width - 1, height - 1, resize
# (low nibble: width in quarters, high nibble: height), then the frames.
for fmt, bit in [("rgb24", 0), ("gray", 1)]:
    for w, h in sizes:
        for resize in [0x44, 0x21, 0x18]:
            frames = b"".join(pattern(frame_bytes(fmt, w, h), k) for k in range(2))
            put("raw-frames", f"{fmt}-{w}x{h}-{resize:02x}", bytes([bit, w - 1, h - 1, resize]) + frames)
    put("raw-frames", f"{fmt}-truncated-5x3", bytes([bit | 2, 4, 2, 0x44]) + pattern(frame_bytes(fmt, 5, 3) + 4, 1))

# colorizer-description: the fixtures' descriptions, every key and value the reader takes, and
# the limits' edges.
for f in sorted((repo / "Tests/EngineTests/Fixtures/colorizers").glob("*.json")):
    if f.name != "manifest.json":
        put("colorizer-description", f.name, f.read_bytes())
descriptions = {
    "default": {},
    "eccv16": {"input": "l", "inputSize": 256, "inputMultiple": 8, "lCenter": 50, "lScale": 100, "output": "ab", "abScale": 110, "upsample": "bilinear"},
    "siggraph17-guided": {"input": "l+hints+mask", "inputSize": 64, "inputMultiple": 8, "output": "ab", "abScale": 110, "upsample": "guided"},
    "rgb-frame-size": {"input": "l", "inputSize": None, "inputMultiple": 4, "output": "rgb", "upsample": "guided"},
    "tiny": {"inputSize": 1, "inputMultiple": 1, "lCenter": 0, "lScale": 1e-30, "abScale": -1e30},
    "edges": {"inputSize": 2048, "inputMultiple": 1024, "lScale": 3.4e38, "abScale": 1e-45},
}
for name, d in descriptions.items():
    put("colorizer-description", name + ".json", json.dumps(d, indent=2))

# calibration: ranges for the target's layers c1…c4 (3, 8, 8, 8 input channels), and the
# shipped calibrations of the catalog models (their layer names do not match: parsing only).
def ranges(n, k):
    return {"lo": [round(-0.1 * ((i + k) % 3), 4) for i in range(n)], "hi": [round(0.5 + 0.3 * ((i * k) % 5), 4) for i in range(n)]}


put("calibration", "tiny.json", json.dumps({"inputRanges": {"c1": ranges(3, 1), "c2": ranges(8, 2), "c3": ranges(8, 3), "c4": ranges(8, 4)}}))
put("calibration", "wide-spread.json", json.dumps({"inputRanges": {"c2": {"lo": [0] * 8, "hi": [1e-6, 1, 2, 3, 4, 5, 6, 1e6]},
                                                                    "c3": {"lo": [-1] * 8, "hi": [0] * 8}}}))
put("calibration", "empty.json", json.dumps({"inputRanges": {}}))
shipped = (repo / "Sources/Models/ShippedCalibrations+Data.swift").read_text()
for i, m in enumerate(re.finditer(r'\("([^"]+)", #"(.*?)"#\)', shipped)):
    if i < 3:
        put("calibration", f"shipped-{m.group(1)}.json", m.group(2))

# segment-manifest: one planned by the vivify binary on a real clip (when a build is there),
# and a hand-made one with two segments, one of them done.
manifest_seed = {
    "format": "vivify-segments", "version": 1,
    "input": {"path": "/tmp/in.mkv", "size": 1000, "mtime": 1700000000.5, "headSHA256": "0" * 64, "tailSHA256": "1" * 64},
    "settings": {"vivifyVersion": "0.1.0", "input": "/tmp/in.mkv", "output": "/tmp/out.mkv", "upscale": "realesr-animevideov3-2x",
                 "tile": 128, "backend": "onednn", "precision": "int8",
                 "int8Calibration": json.dumps({"inputRanges": {"c2": ranges(8, 2)}}), "colorize": "vivify-color",
                 "colorizeAfter": False, "stabilize": True, "saturation": 1.0, "resize": "640x360", "codec": "libx264", "crf": 18.0,
                 "preset": "medium", "pixelFormat": "yuv420p", "copyAudioAndSubtitles": True, "strict": False,
                 "assumeMatrix": "bt709", "maxFrames": 60, "maxPixels": 33177600, "models": {"upscale realesr-animevideov3-2x": "ab" * 32},
                 "replaceExistingOutput": False},
    "segmentSeconds": 1.0, "timeBase": "1/25", "totalFrames": 50, "warmUpFrames": 3,
    "tags": {"frameRate": [25, 1], "sampleAspectRatio": [1, 1], "color": [1, 1, 1, 1], "displayMatrix": [0, 65536, 0, -65536, 0, 0, 0, 0, 1073741824],
             "timeBase": [1, 25]},
    "videoSpan": [0.0, 2.0],
    "segments": [
        {"index": 0, "file": "segment-0000.nut", "firstFrame": 0, "frames": 25, "startPTS": 0, "endPTS": 25, "warmUpPTS": 0,
         "seekCandidates": [0], "startSeconds": 0.0, "endSeconds": 1.0, "done": {"frames": 25, "sha256": "c" * 64, "bytes": 4096}},
        {"index": 1, "file": "segment-0001.nut", "firstFrame": 25, "frames": 25, "startPTS": 25, "warmUpPTS": 22,
         "seekCandidates": [0], "startSeconds": 1.0, "endSeconds": 2.0, "failed": "interrupted"},
    ],
    "interruptedOutput": {"size": 10, "mtime": 1.0, "inode": 42},
}
put("segment-manifest", "hand-made.json", json.dumps(manifest_seed, indent=2, sort_keys=True))
vivify = next((b for b in [repo / ".build/debug/vivify", repo / ".build/release/vivify"] if b.exists()), None)
clip = shared / "media/videos/bw_davis_goat_90f.mp4"
if vivify and clip.exists():
    with tempfile.TemporaryDirectory() as t:
        for i, extra in enumerate([[], ["--colorize", "vivify-color", "--max-frames", "12"]]):
            work = pathlib.Path(t, f"work{i}")
            r = subprocess.run([str(vivify), "plan", str(clip), str(pathlib.Path(t, f"out{i}.mkv")), "--work", str(work),
                                "--segment-seconds", "1"] + extra, capture_output=True, timeout=120)
            if r.returncode == 0 and (work / "manifest.json").exists():
                put("segment-manifest", f"planned-{i}.json", (work / "manifest.json").read_bytes())

# npy: every dtype and byte order the reader takes, versions 1 to 3, shapes as infer takes them.
def npy(shape, descr="<f4", version=1, values=None):
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = f"{{'descr': '{descr}', 'fortran_order': False, 'shape': ({dims}), }}"
    lead = 10 if version == 1 else 12
    header += " " * ((64 - (lead + len(header) + 1) % 64) % 64) + "\n"
    length = struct.pack("<H", len(header)) if version == 1 else struct.pack("<I", len(header))
    n = math.prod(shape)
    values = values if values is not None else [math.sin(i) for i in range(n)]
    code = {"f4": "f", "f2": "e", "f8": "d"}[descr[1:]]
    return b"\x93NUMPY" + bytes([version, 0]) + length + header.encode() + struct.pack(descr[0] + code * n, *values)


for name, shape, descr, version in [("chw", (3, 4, 5), "<f4", 1), ("nchw", (1, 3, 2, 2), "<f4", 1), ("f16", (3, 3, 3), "<f2", 1),
                                     ("f64-big-endian", (3, 2, 3), ">f8", 2), ("f4-big-endian-v3", (1, 3, 1, 1), ">f4", 3),
                                     ("one-channel", (1, 4, 4), "<f4", 1), ("rank1", (6,), "<f4", 1), ("scalar", (), "<f4", 1)]:
    put("npy", name + ".npy", npy(shape, descr, version))

# mlprogram-weights: byte 0 picks the program (FuzzTarget.mlprogramModels), then its weight file.
for i, name in enumerate(weight_programs):
    weights = mlprogram_fixtures / f"{name}.mlpackage/Data/com.apple.CoreML/weights/weight.bin"
    if weights.exists():
        put("mlprogram-weights", name, bytes([i]) + weights.read_bytes())

# custom-layers: every declaration beside the Core ML fixtures, and one of each operation for the
# target's ChannelGainLambda (its parameters gain, offset, limit, border and two weight arrays).
for f in sorted((repo / "Tests/ModelFormatsTests/Fixtures/coreml").rglob("*.layers.json")):
    put("custom-layers", f.name, f.read_bytes())
for i, op in enumerate([{"op": "crop", "all": 1}, {"op": "pad", "top": 1, "left": {"param": "border"}, "mode": "reflect"},
                        {"op": "expression", "expression": "(x + 1) * 127.5"}, {"op": "clamp", "min": -1, "max": {"param": "limit"}},
                        {"op": "activation", "function": "leakyRelu", "slope": 0.1}, {"op": "scaleBias", "scale": [1, 2, 3], "bias": 0.5},
                        {"op": "resize", "scale": 2, "mode": "bilinear"}, {"op": "pixelShuffle", "factor": 1, "order": "crd"}]):
    put("custom-layers", f"op-{i}-{op['op']}.json", json.dumps({"customLayers": {"ChannelGainLambda": {"ops": [op]}}}))

# image: small pictures of every format and layout the reader takes, made by ffmpeg.
with tempfile.TemporaryDirectory() as t:
    for name, args in [("rgb.png", ["-pix_fmt", "rgb24"]), ("rgba16.png", ["-pix_fmt", "rgba64be"]), ("grey.png", ["-pix_fmt", "gray"]),
                       ("pal.png", ["-pix_fmt", "pal8"]), ("yuv420.jpg", ["-pix_fmt", "yuvj420p"]), ("grey.jpg", ["-pix_fmt", "gray"]),
                       ("rgb.bmp", ["-pix_fmt", "bgr24"]), ("rgba.bmp", ["-pix_fmt", "bgra"]), ("pal.bmp", ["-pix_fmt", "pal8"]),
                       ("rgb.tif", ["-pix_fmt", "rgb24"]), ("rgb16.tif", ["-pix_fmt", "rgb48le"]), ("grey.tif", ["-pix_fmt", "gray"]),
                       ("lossless.webp", ["-c:v", "libwebp", "-lossless", "1"]), ("lossy.webp", ["-c:v", "libwebp", "-quality", "50"])]:
        target = pathlib.Path(t, name)
        r = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=12x8", "-frames:v", "1", *args, str(target)],
                           capture_output=True)
        if r.returncode == 0 and target.exists():
            put("image", name, target.read_bytes())

print("seeds:", ", ".join(f"{d.name} {len(list(d.iterdir()))}" for d in sorted(out.iterdir())))
