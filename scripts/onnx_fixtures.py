#!/usr/bin/env python3
"""ONNX fixtures for Vivify's ONNX importer (Tests/ModelFormatsTests/ONNXImporterTests).

    pip install onnx onnxruntime numpy
    python3 scripts/onnx_fixtures.py --models-dir ../shared/models/ncnn --out DIR [--seed 11]

Builds ONNX files, with the `onnx` package's helpers, of real architectures from the real
weights in ../shared/models (read from the ncnn .param/.bin pairs by this script's own reader)
and of small synthetic nets, written the way PyTorch's exporter writes them (DepthToSpace for
pixel_shuffle, Resize with scales and `asymmetric`/`floor` for nearest interpolation and
`pytorch_half_pixel` for bicubic, explicit pads, PRelu slopes shaped C×1×1, an opset-11 Clip
with min/max inputs, BatchNormalization). Nothing from ../shared is committed: the tests run
this at test time. Writes, per fixture NAME:

    NAME.onnx           the model
    NAME.input.f32      the input (1×C×H×W, raw little-endian float32)
    NAME.output.f32     ONNX Runtime's output (CPU execution provider), float32
    manifest.json       shapes, the ncnn twin (for the real models), versions

Fixtures:
    animevideov3-x2     realesr-animevideov3-x2 (SRVGGNetCompact: 16 conv + PRelu, DepthToSpace,
                        nearest ×4 of the input added, bicubic ×0.5), opset 17; external data
                        (the weights in NAME.onnx.data beside it, as large exports are saved)
    upconv7-photo       waifu2x upconv_7 photo scale2x (conv + LeakyRelu 0.1, ConvTranspose
                        4×4 stride 2 pads 3), opset 11
    synthetic-ops       BatchNormalization, Clip (opset 11 inputs), Sigmoid/Tanh, Mul/Add by
                        scalars and per-channel constants, Concat, Slice of channels, Pad
                        (reflect), bilinear Resize (half_pixel), HardSigmoid, Softmax over
                        channels, GlobalAveragePool + Flatten + Gemm, opset 13
    style-transfer      the fast style-transfer net (Johnson et al.; the architecture of the Core ML
                        chapter in ../shared/specs): reflection pads, 9x9 and strided convs each with
                        InstanceNormalization + Relu, two residual blocks, nearest upsampling whose
                        sizes PyTorch computes from the input (Shape, Gather, Cast, Mul, Concat →
                        Resize sizes), Tanh, then x150 + 127.5; opset 13, seeded random weights
    eccv16-colorizer    a scaled-down ECCV16 colorizer (Zhang et al.): L normalised ((L − 50)/100),
                        conv + Relu + BatchNorm blocks, strided and dilated convs, a 4x4 stride-2
                        ConvTranspose, 1x1 conv to 64 colour bins, Softmax over channels (as
                        PyTorch writes it below opset 13: Transpose, Softmax(-1), Transpose), 1x1
                        conv to ab, x110, Resize x4 bilinear back to the input size; opset 11
    eccv16-tiny         the repository's ncnn test colorizer (Tests/EngineTests/Fixtures/colorizers)
                        as ONNX, layer for layer (opset 11): `--colorize` takes either
    shuffle-opset9      a PyTorch-at-opset-9 upscaler: pixel shuffle written as Reshape →
                        Transpose → Reshape with sizes from Shape/Gather/Unsqueeze/Concat, Elu,
                        MaxPool, Split + Concat, SpaceToDepth, Upsample; outputs also at a second
                        size (NAME.input2.f32/NAME.output2.f32) to check the per-size remake
"""
import argparse
import json
import os
import struct

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


# --- ncnn reader ------------------------------------------------------------------------------

def read_param(path):
    """[(type, name, inputs, outputs, {key: value})] of an ncnn text .param."""
    layers = []
    with open(path) as f:
        assert f.readline().strip() == "7767517"
        f.readline()
        for line in f:
            parts = line.split()
            if not parts:
                continue
            kind, name, nin, nout = parts[0], parts[1], int(parts[2]), int(parts[3])
            ins, outs = parts[4:4 + nin], parts[4 + nin:4 + nin + nout]
            params = {}
            for kv in parts[4 + nin + nout:]:
                k, v = kv.split("=", 1)
                params[int(k)] = v
            layers.append((kind, name, ins, outs, params))
    return layers


class BinReader:
    def __init__(self, path):
        self.data = open(path, "rb").read()
        self.at = 0

    def tagged(self, count):
        tag = struct.unpack_from("<I", self.data, self.at)[0]
        self.at += 4
        if tag == 0x01306B47:
            v = np.frombuffer(self.data, dtype="<f2", count=count, offset=self.at).astype(np.float32)
            self.at += 2 * count
            self.at = (self.at + 3) // 4 * 4
        elif tag in (0, 0x0002C056):
            v = np.frombuffer(self.data, dtype="<f4", count=count, offset=self.at).copy()
            self.at += 4 * count
        else:
            raise ValueError("unsupported ncnn weight tag %x" % tag)
        return v

    def raw(self, count):
        v = np.frombuffer(self.data, dtype="<f4", count=count, offset=self.at).copy()
        self.at += 4 * count
        return v


def ncnn_weights(param, binpath):
    """{layer name: {"w": array, "b": array or None, "slopes": array}} in file order."""
    layers = read_param(param)
    rd = BinReader(binpath)
    out = {}
    for kind, name, ins, outs, p in layers:
        if kind in ("Convolution", "Deconvolution"):
            outc, k = int(p[0]), int(p.get(1, 1))
            count = int(p[6])
            w = rd.tagged(count)
            b = rd.raw(outc) if int(p.get(5, 0)) else None
            inc = count // (outc * k * k)
            if kind == "Convolution":
                w = w.reshape(outc, inc, k, k)
            else:
                # ncnn keeps deconvolution weights [out][in][k][k]; ONNX wants [in][out][k][k], flipped? no:
                # ncnn's deconvolution scatters with the kernel as stored, ONNX's ConvTranspose too.
                w = w.reshape(outc, inc, k, k).transpose(1, 0, 2, 3)
            out[name] = {"w": np.ascontiguousarray(w), "b": b, "params": p}
        elif kind == "PReLU":
            out[name] = {"slopes": rd.raw(int(p[0]))}
        elif kind == "BatchNorm":
            c = int(p[0])
            out[name] = {k: rd.raw(c) for k in ("slope", "mean", "var", "bias")}
    return layers, out


# --- builders ---------------------------------------------------------------------------------

class Net:
    def __init__(self, name):
        self.name = name
        self.nodes, self.inits = [], []
        self.n = 0

    def const(self, array, name=None):
        name = name or "c%d" % len(self.inits)
        array = np.asarray(array)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def node(self, op, inputs, **attrs):
        self.n += 1
        out = "%s_%d" % (op.lower(), self.n)
        self.nodes.append(helper.make_node(op, inputs, [out], name="%s_%d" % (op, self.n), **attrs))
        return out

    def model(self, x, y, channels, opset, out_channels):
        g = helper.make_graph(self.nodes, self.name, [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, channels, "height", "width"])],
                              [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, out_channels, None, None])], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="vivify-onnx-fixtures")
        m.ir_version = 8
        onnx.checker.check_model(m)
        return m


def animevideov3(models_dir):
    param = os.path.join(models_dir, "realesr-animevideov3", "realesr-animevideov3-x2.param")
    layers, w = ncnn_weights(param, param[:-6] + ".bin")
    net = Net("animevideov3-x2")
    x = "input"
    h = x
    for kind, name, ins, outs, p in layers:
        if kind == "Convolution":
            args = [h, net.const(w[name]["w"]), net.const(w[name]["b"])]
            h = net.node("Conv", args, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1], group=1)
        elif kind == "PReLU":
            h = net.node("PRelu", [h, net.const(w[name]["slopes"].reshape(-1, 1, 1))])
    h = net.node("DepthToSpace", [h], blocksize=4, mode="CRD")
    empty = net.const(np.zeros(0, np.float32), "roi_empty")
    up = net.node("Resize", [x, empty, net.const(np.array([1, 1, 4, 4], np.float32))], mode="nearest",
                  coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    h = net.node("Add", [h, up])
    y = net.node("Resize", [h, empty, net.const(np.array([1, 1, 0.5, 0.5], np.float32))], mode="cubic",
                 coordinate_transformation_mode="pytorch_half_pixel", cubic_coeff_a=-0.75)
    return net.model(x, y, 3, 17, 3), "realesr-animevideov3/realesr-animevideov3-x2.param"


def upconv7(models_dir):
    param = os.path.join(models_dir, "waifu2x-upconv7-photo", "scale2.0x_model.param")
    layers, w = ncnn_weights(param, param[:-6] + ".bin")
    net = Net("upconv7-photo")
    x = "input"
    h = x
    for kind, name, ins, outs, p in layers:
        if kind == "Convolution":
            h = net.node("Conv", [h, net.const(w[name]["w"]), net.const(w[name]["b"])], kernel_shape=[3, 3], pads=[0, 0, 0, 0])
            h = net.node("LeakyRelu", [h], alpha=0.1)
        elif kind == "Deconvolution":
            h = net.node("ConvTranspose", [h, net.const(w[name]["w"]), net.const(w[name]["b"])], kernel_shape=[4, 4], strides=[2, 2], pads=[3, 3, 3, 3])
    return net.model(x, h, 3, 11, 3), "waifu2x-upconv7-photo/scale2.0x_model.param"


def synthetic(rng):
    net = Net("synthetic-ops")
    x = "input"
    c = 4
    r = lambda *s: rng.standard_normal(s).astype(np.float32)
    h = net.node("Conv", [x, net.const(r(8, c, 3, 3) * 0.3), net.const(r(8) * 0.1)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = net.node("BatchNormalization", [h, net.const(r(8) * 0.5 + 1), net.const(r(8) * 0.1), net.const(r(8) * 0.1),
                                        net.const(np.abs(r(8)) + 0.5)], epsilon=1e-5)
    h = net.node("Clip", [h, net.const(np.array(-1.5, np.float32)), net.const(np.array(2.0, np.float32))])
    a = net.node("Sigmoid", [h])
    b = net.node("Tanh", [h])
    b = net.node("Mul", [b, net.const(np.array(0.5, np.float32))])
    b = net.node("Add", [net.const(r(1, 8, 1, 1)), b])
    h = net.node("Concat", [a, b], axis=1)
    h = net.node("Slice", [h, net.const(np.array([2], np.int64)), net.const(np.array([14], np.int64)), net.const(np.array([1], np.int64))])
    h = net.node("Pad", [h, net.const(np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64))], mode="reflect")
    h = net.node("Conv", [h, net.const(r(6, 12, 1, 1) * 0.3)], kernel_shape=[1, 1])
    h = net.node("HardSigmoid", [h], alpha=0.3, beta=0.4)
    h = net.node("Sub", [h, net.const(r(6, 1, 1) * 0.2)])
    h = net.node("Div", [h, net.const(np.array(0.7, np.float32))])
    h = net.node("Resize", [h, "", net.const(np.array([1, 1, 2, 2], np.float32))], mode="linear", coordinate_transformation_mode="half_pixel")
    s = net.node("Softmax", [h], axis=1)
    g = net.node("GlobalAveragePool", [s])
    g = net.node("Flatten", [g], axis=1)
    g = net.node("Gemm", [g, net.const(r(6, 6) * 0.5), net.const(r(6) * 0.1)], transB=1)
    g = net.node("Sigmoid", [g])
    g = net.node("Reshape", [g, net.const(np.array([1, 6, 1, 1], np.int64))])
    y = net.node("Mul", [s, g])
    return net.model(x, y, c, 13, 6), None


def eccv16_tiny(colorizers_dir):
    """The repository's ncnn test colorizer (Tests/EngineTests/Fixtures/colorizers/eccv16-tiny) as
    ONNX, layer for layer, softmax written as PyTorch does below opset 13."""
    param = os.path.join(colorizers_dir, "eccv16-tiny.param")
    layers, w = ncnn_weights(param, param[:-6] + ".bin")
    net = Net("eccv16-tiny")
    h = "input"
    for kind, name, ins, outs, p in layers:
        if kind in ("Convolution", "Deconvolution"):
            k, d, st, pad = int(p.get(1, 1)), int(p.get(2, 1)), int(p.get(3, 1)), int(p.get(4, 0))
            args = [h, net.const(w[name]["w"])] + ([net.const(w[name]["b"])] if w[name]["b"] is not None else [])
            op = "Conv" if kind == "Convolution" else "ConvTranspose"
            h = net.node(op, args, kernel_shape=[k, k], strides=[st, st], dilations=[d, d], pads=[pad] * 4)
            if int(p.get(9, 0)) == 1:
                h = net.node("Relu", [h])
        elif kind == "BatchNorm":
            b = w[name]
            h = net.node("BatchNormalization", [h, net.const(b["slope"]), net.const(b["bias"]), net.const(b["mean"]), net.const(b["var"])],
                         epsilon=float(p.get(1, "0")))
        elif kind == "Softmax":
            h = net.node("Transpose", [h], perm=[0, 2, 3, 1])
            h = net.node("Softmax", [h], axis=3)
            h = net.node("Transpose", [h], perm=[0, 3, 1, 2])
        elif kind == "Interp":
            assert int(p[0]) == 2
            h = net.node("Resize", [h, net.const(np.array([], np.float32)), net.const(np.array([1, 1, float(p[1]), float(p[2])], np.float32))],
                         mode="linear", coordinate_transformation_mode="half_pixel")
    return net.model("input", h, 1, 11, 2), "eccv16-tiny.param (Tests/EngineTests/Fixtures/colorizers)"


def shape_sizes(net, x, factor):
    """Resize sizes as PyTorch's exporter writes them for interpolate(scale_factor=factor):
    Shape → Gather(2, 3) → Cast float → Mul → Cast int64 → Concat with the first two dims."""
    shape = net.node("Shape", [x])
    hw = net.node("Slice", [shape, net.const(np.array([2], np.int64)), net.const(np.array([4], np.int64)), net.const(np.array([0], np.int64))])
    hw = net.node("Cast", [hw], to=TensorProto.FLOAT)
    hw = net.node("Mul", [hw, net.const(np.array([factor, factor], np.float32))])
    hw = net.node("Cast", [hw], to=TensorProto.INT64)
    nc = net.node("Slice", [shape, net.const(np.array([0], np.int64)), net.const(np.array([2], np.int64)), net.const(np.array([0], np.int64))])
    return net.node("Concat", [nc, hw], axis=0)


def style_transfer(rng):
    net = Net("style-transfer")
    r = lambda *s: rng.standard_normal(s).astype(np.float32)

    def conv_in_relu(x, cin, cout, k, stride=1, relu=True):
        p = k // 2
        x = net.node("Pad", [x, net.const(np.array([0, 0, p, p, 0, 0, p, p], np.int64))], mode="reflect")
        x = net.node("Conv", [x, net.const(r(cout, cin, k, k) * (1.0 / np.sqrt(cin * k * k))), net.const(r(cout) * 0.1)],
                     kernel_shape=[k, k], strides=[stride, stride])
        x = net.node("InstanceNormalization", [x, net.const(r(cout) * 0.2 + 1), net.const(r(cout) * 0.1)], epsilon=1e-5)
        return net.node("Relu", [x]) if relu else x

    h = conv_in_relu("input", 3, 8, 9)
    h = conv_in_relu(h, 8, 16, 3, stride=2)
    for _ in range(2):
        b = conv_in_relu(h, 16, 16, 3)
        b = conv_in_relu(b, 16, 16, 3, relu=False)
        h = net.node("Add", [h, b])
    h = net.node("Resize", [h, "", "", shape_sizes(net, h, 2.0)], mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    h = conv_in_relu(h, 16, 8, 3)
    h = net.node("Pad", [h, net.const(np.array([0, 0, 4, 4, 0, 0, 4, 4], np.int64))], mode="reflect")
    h = net.node("Conv", [h, net.const(r(3, 8, 9, 9) * 0.05), net.const(r(3) * 0.1)], kernel_shape=[9, 9])
    h = net.node("Tanh", [h])
    h = net.node("Mul", [h, net.const(np.array(150, np.float32))])
    y = net.node("Add", [h, net.const(np.array(127.5, np.float32))])
    return net.model("input", y, 3, 13, 3), None


def eccv16(rng):
    net = Net("eccv16-colorizer")
    r = lambda *s: rng.standard_normal(s).astype(np.float32)

    def conv(x, cin, cout, k=3, stride=1, dilation=1, relu=True):
        p = dilation * (k // 2)
        x = net.node("Conv", [x, net.const(r(cout, cin, k, k) * np.sqrt(2.0 / (cin * k * k))), net.const(r(cout) * 0.05)],
                     kernel_shape=[k, k], strides=[stride, stride], dilations=[dilation, dilation], pads=[p, p, p, p])
        return net.node("Relu", [x]) if relu else x

    def bn(x, c):
        return net.node("BatchNormalization", [x, net.const(r(c) * 0.1 + 1), net.const(r(c) * 0.1), net.const(r(c) * 0.1),
                                               net.const(np.abs(r(c)) * 0.2 + 0.8)], epsilon=1e-5)

    h = net.node("Sub", ["input", net.const(np.array(50, np.float32))])
    h = net.node("Div", [h, net.const(np.array(100, np.float32))])
    h = bn(conv(conv(h, 1, 8), 8, 8, stride=2), 8)
    h = bn(conv(conv(h, 8, 16), 16, 16, stride=2), 16)
    h = bn(conv(conv(h, 16, 16, dilation=2), 16, 16, dilation=2), 16)
    h = bn(conv(conv(h, 16, 16), 16, 16), 16)
    h = net.node("ConvTranspose", [h, net.const(r(16, 16, 4, 4) * 0.1), net.const(r(16) * 0.05)], kernel_shape=[4, 4], strides=[2, 2], pads=[1, 1, 1, 1])
    h = net.node("Relu", [h])
    h = conv(h, 16, 64, k=1, relu=False)
    # PyTorch below opset 13 moves the channels last for a softmax over them.
    h = net.node("Transpose", [h], perm=[0, 2, 3, 1])
    h = net.node("Softmax", [h], axis=3)
    h = net.node("Transpose", [h], perm=[0, 3, 1, 2])
    h = net.node("Conv", [h, net.const(r(2, 64, 1, 1) * 0.5)], kernel_shape=[1, 1])
    h = net.node("Mul", [h, net.const(np.array(110, np.float32))])
    # Opset 11's Resize takes an roi input before the scales.
    y = net.node("Resize", [h, net.const(np.array([], np.float32)), net.const(np.array([1, 1, 2, 2], np.float32))], mode="linear",
                 coordinate_transformation_mode="half_pixel")
    return net.model("input", y, 1, 11, 2), None


def shuffle_opset9(rng):
    net = Net("shuffle-opset9")
    r = lambda *s: rng.standard_normal(s).astype(np.float32)
    c = 3
    h = net.node("Conv", ["input", net.const(r(8, c, 3, 3) * 0.3), net.const(r(8) * 0.1)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = net.node("Elu", [h], alpha=0.8)
    a, b = "split_a", "split_b"
    net.nodes.append(helper.make_node("Split", [h], [a, b], name="Split_x", axis=1, split=[3, 5]))
    m = net.node("MaxPool", [b], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1])
    h = net.node("Concat", [m, a], axis=1)
    h = net.node("Conv", [h, net.const(r(12, 8, 3, 3) * 0.2)], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    # pixel_shuffle(2) as PyTorch exports it below opset 11, sizes from the input's shape.
    shape = net.node("Shape", [h])
    dim = lambda i: net.node("Unsqueeze", [net.node("Gather", [shape, net.const(np.array(i, np.int64))], axis=0)], axes=[0])
    H, W = dim(2), dim(3)
    six = net.node("Concat", [net.const(np.array([1, 3, 2, 2], np.int64)), H, W], axis=0)
    h = net.node("Reshape", [h, six])
    h = net.node("Transpose", [h], perm=[0, 1, 4, 2, 5, 3])
    H2 = net.node("Mul", [H, net.const(np.array([2], np.int64))])
    W2 = net.node("Mul", [W, net.const(np.array([2], np.int64))])
    four = net.node("Concat", [net.const(np.array([1, 3], np.int64)), H2, W2], axis=0)
    h = net.node("Reshape", [h, four])
    base = net.node("Upsample", ["input", net.const(np.array([1, 1, 2, 2], np.float32))], mode="nearest")
    h = net.node("Add", [h, base])
    d = net.node("SpaceToDepth", [h], blocksize=2)
    d = net.node("Conv", [d, net.const(r(12, 12, 1, 1) * 0.2)], kernel_shape=[1, 1])
    d = net.node("DepthToSpace", [d], blocksize=2)
    y = net.node("Add", [h, d])
    return net.model("input", y, c, 9, 3), None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--size", default="40x32", help="WxH of the inputs")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rng = np.random.default_rng(a.seed)
    w, h = (int(v) for v in a.size.split("x"))
    manifest = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "seed": a.seed, "fixtures": {}}
    for name, build in (("animevideov3-x2", lambda: animevideov3(a.models_dir)), ("upconv7-photo", lambda: upconv7(a.models_dir)),
                        ("synthetic-ops", lambda: synthetic(rng)), ("style-transfer", lambda: style_transfer(rng)),
                        ("eccv16-colorizer", lambda: eccv16(rng)), ("shuffle-opset9", lambda: shuffle_opset9(rng)),
                        ("eccv16-tiny", lambda: eccv16_tiny(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "EngineTests", "Fixtures", "colorizers")))):
        model, twin = build()
        path = os.path.join(a.out, name + ".onnx")
        if name == "animevideov3-x2":
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=name + ".onnx.data", size_threshold=1024)
        else:
            onnx.save_model(model, path)
        channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        x = rng.random((1, channels, h, w), dtype=np.float32)
        if name == "eccv16-colorizer":
            x *= 100  # CIE L
        if name == "eccv16-tiny":
            x = x * 2 - 1  # (L - 50) / 100, as the colorizer feeds it
        if name == "style-transfer":
            x *= 255
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        y = sess.run(None, {model.graph.input[0].name: x})[0].astype(np.float32)
        x.tofile(os.path.join(a.out, name + ".input.f32"))
        y.tofile(os.path.join(a.out, name + ".output.f32"))
        if name == "shuffle-opset9":
            # A second size: the shape arithmetic must be worked out again for it.
            x2 = rng.random((1, channels, 24, 36), dtype=np.float32)
            sess.run(None, {model.graph.input[0].name: x2})[0].astype(np.float32).tofile(os.path.join(a.out, name + ".output2.f32"))
            x2.tofile(os.path.join(a.out, name + ".input2.f32"))
        manifest["fixtures"][name] = {"input": list(x.shape), "output": list(y.shape), "ncnn": twin,
                                      "opset": model.opset_import[0].version, "nodes": len(model.graph.node)}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
