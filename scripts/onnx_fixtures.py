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
    return layers, out


# --- builders ---------------------------------------------------------------------------------

class Net:
    def __init__(self, name):
        self.name = name
        self.nodes, self.inits = [], []
        self.n = 0

    def const(self, array, name=None):
        name = name or "c%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
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
                        ("synthetic-ops", lambda: synthetic(rng))):
        model, twin = build()
        path = os.path.join(a.out, name + ".onnx")
        if name == "animevideov3-x2":
            onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                            location=name + ".onnx.data", size_threshold=1024)
        else:
            onnx.save_model(model, path)
        channels = model.graph.input[0].type.tensor_type.shape.dim[1].dim_value
        x = rng.random((1, channels, h, w), dtype=np.float32)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        y = sess.run(None, {model.graph.input[0].name: x})[0].astype(np.float32)
        x.tofile(os.path.join(a.out, name + ".input.f32"))
        y.tofile(os.path.join(a.out, name + ".output.f32"))
        manifest["fixtures"][name] = {"input": list(x.shape), "output": list(y.shape), "ncnn": twin,
                                      "opset": model.opset_import[0].version, "nodes": len(model.graph.node)}
    with open(os.path.join(a.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)


if __name__ == "__main__":
    main()
