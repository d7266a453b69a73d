#!/usr/bin/env python3
"""Colorizer fixtures: the richzhang/colorization ECCV16 and SIGGRAPH17 networks as ncnn files.

Two modes.

Fixture mode (default; what Tests/EngineTests/Fixtures/colorizers/ holds):

    python3 scripts/colorizer_fixtures.py [--out Tests/EngineTests/Fixtures/colorizers]
                                          [--seed 20240917] [--divisor 16] [--min-width 8]

builds both published architectures (colorizers/eccv16.py, colorizers/siggraph17.py and
colorizers/base_color.py of github.com/richzhang/colorization, BSD-2-Clause) at reduced
width with seeded random weights, runs them in PyTorch (CPU, fp32, eval mode) on a fixed
deterministic input, and writes with this script's own ncnn writer (no pnnx / onnx2ncnn):

    eccv16-tiny.param / .bin          ncnn model, fp32 weights
    eccv16-tiny.input.f32             the graph input, raw little-endian float32, CHW
    eccv16-tiny.output.f32            PyTorch's output of the exported graph, CHW
    siggraph17-tiny.param / .bin / .input.f32 / .output.f32
    manifest.json                     blobs, shapes, normalisation, seed, versions, sizes

Full-width mode (official pretrained weights, downloaded by the user beforehand):

    python3 scripts/colorizer_fixtures.py --full --arch eccv16 \
        --weights colorization_release_v2-9b330a0b.pth --out out/colorizers [--fp16]
    python3 scripts/colorizer_fixtures.py --full --arch siggraph17 \
        --weights siggraph17-df00044c.pth --out out/colorizers [--fp16]

loads the state dict into the full-width architecture (divisor 1) and exports it with the
same writer (fp32, or fp16 weights with --fp16), plus a reference input/output pair at
--size (default 256x256) and a manifest. --arch is guessed from the file name when omitted.

What is inside the exported graph and what the caller does (both modes):

    ECCV16     graph input  in0  1 x H x W : (L - 50) / 100, L = CIE L* in [0, 100]
               graph output out0 2 x H x W : ab / 110   (caller multiplies by 110)
               inside: the whole network, softmax over the 313 bins, the 313 -> 2 expectation
               (1x1 conv, no bias) and the x4 bilinear upsampling (align_corners=False).
               The original multiplies by 110 after the upsampling; both are linear, so
               upsample(x) * 110 == upsample(x * 110).
    SIGGRAPH17 graph input  in0  4 x H x W : channel 0 (L - 50) / 100, channels 1-2 the ab
               hints / 110 (0 where there is no hint), channel 3 the mask channel exactly as
               the original forward's mask_B argument (the training code, colorization-pytorch,
               centres it: mask - 0.5, i.e. +0.5 at hinted pixels, -0.5 elsewhere)
               graph output out0 2 x H x W : ab / 110 (tanh range; caller multiplies by 110)
               inside: everything from model1 to model_out + tanh; the concatenation and the
               three input normalisations are outside (one 4-channel input blob).
    H and W must be multiples of 8 (three 2x downsamplings; the originals have the same rule).

One substitution, exact: SIGGRAPH17 subsamples with strided slicing x[:, :, ::2, ::2]. ncnn
has no strided slice and Vivify's importer no Pooling other than global average, so it is
written as a depthwise 1x1 convolution with stride 2, weight 1.0 and no bias
(ConvolutionDepthWise), which gives bit-identical values and the same ceil(H/2) size.

Verification done by this script: the exported graph function times 110 equals the
transcribed original forward (with its normalisations) to float rounding; and, when the PyPI
`ncnn` package is importable, the written .param/.bin run by ncnn itself (CPU, fp32) match
the PyTorch output (recorded in the manifest as ncnn_max_abs_diff).
"""

import argparse
import hashlib
import json
import os
import re
import struct
import sys

import numpy as np

try:
    import torch
    import torch.nn as nn
except ImportError as e:  # pragma: no cover
    sys.stderr.write("error: this script needs PyTorch (pip install torch): %s\n" % e)
    sys.exit(2)

L_CENT, L_NORM, AB_NORM = 50.0, 100.0, 110.0
URLS = {
    "eccv16": "https://colorizers.s3.us-east-2.amazonaws.com/colorization_release_v2-9b330a0b.pth",
    "siggraph17": "https://colorizers.s3.us-east-2.amazonaws.com/siggraph17-df00044c.pth",
}


# ----------------------------------------------------------------------------------------
# The architectures, transcribed from richzhang/colorization (module names and Sequential
# indices identical, so the official state dicts load with strict key matching). `w` maps an
# official channel count to the reduced one (identity for --full).
# ----------------------------------------------------------------------------------------

def conv(i, o, k=3, s=1, p=1, d=1, bias=True):
    return nn.Conv2d(i, o, kernel_size=k, stride=s, padding=p, dilation=d, bias=bias)


class ECCVGenerator(nn.Module):
    def __init__(self, w):
        super().__init__()
        c64, c128, c256, c512 = w(64), w(128), w(256), w(512)
        R = lambda: nn.ReLU(True)
        BN = nn.BatchNorm2d
        self.model1 = nn.Sequential(conv(1, c64), R(), conv(c64, c64, s=2), R(), BN(c64))
        self.model2 = nn.Sequential(conv(c64, c128), R(), conv(c128, c128, s=2), R(), BN(c128))
        self.model3 = nn.Sequential(conv(c128, c256), R(), conv(c256, c256), R(), conv(c256, c256, s=2), R(), BN(c256))
        self.model4 = nn.Sequential(conv(c256, c512), R(), conv(c512, c512), R(), conv(c512, c512), R(), BN(c512))
        self.model5 = nn.Sequential(conv(c512, c512, d=2, p=2), R(), conv(c512, c512, d=2, p=2), R(),
                                    conv(c512, c512, d=2, p=2), R(), BN(c512))
        self.model6 = nn.Sequential(conv(c512, c512, d=2, p=2), R(), conv(c512, c512, d=2, p=2), R(),
                                    conv(c512, c512, d=2, p=2), R(), BN(c512))
        self.model7 = nn.Sequential(conv(c512, c512), R(), conv(c512, c512), R(), conv(c512, c512), R(), BN(c512))
        self.model8 = nn.Sequential(nn.ConvTranspose2d(c512, c256, kernel_size=4, stride=2, padding=1, bias=True), R(),
                                    conv(c256, c256), R(), conv(c256, c256), R(),
                                    conv(c256, 313, k=1, p=0))
        self.softmax = nn.Softmax(dim=1)
        self.model_out = nn.Conv2d(313, 2, kernel_size=1, padding=0, dilation=1, stride=1, bias=False)
        self.upsample4 = nn.Upsample(scale_factor=4, mode="bilinear", align_corners=False)

    def graph(self, x):
        """The exported graph: normalised L in, ab / 110 out."""
        h = x
        for m in (self.model1, self.model2, self.model3, self.model4, self.model5, self.model6, self.model7, self.model8):
            h = m(h)
        return self.upsample4(self.model_out(self.softmax(h)))

    def original(self, input_l):
        """ECCVGenerator.forward of the original, normalisations included."""
        return self.graph((input_l - L_CENT) / L_NORM) * AB_NORM


class SIGGRAPHGenerator(nn.Module):
    def __init__(self, w, classes=529):
        super().__init__()
        c64, c128, c256, c512 = w(64), w(128), w(256), w(512)
        R = lambda: nn.ReLU(True)
        BN = nn.BatchNorm2d
        self.model1 = nn.Sequential(conv(4, c64), R(), conv(c64, c64), R(), BN(c64))
        self.model2 = nn.Sequential(conv(c64, c128), R(), conv(c128, c128), R(), BN(c128))
        self.model3 = nn.Sequential(conv(c128, c256), R(), conv(c256, c256), R(), conv(c256, c256), R(), BN(c256))
        self.model4 = nn.Sequential(conv(c256, c512), R(), conv(c512, c512), R(), conv(c512, c512), R(), BN(c512))
        self.model5 = nn.Sequential(conv(c512, c512, d=2, p=2), R(), conv(c512, c512, d=2, p=2), R(),
                                    conv(c512, c512, d=2, p=2), R(), BN(c512))
        self.model6 = nn.Sequential(conv(c512, c512, d=2, p=2), R(), conv(c512, c512, d=2, p=2), R(),
                                    conv(c512, c512, d=2, p=2), R(), BN(c512))
        self.model7 = nn.Sequential(conv(c512, c512), R(), conv(c512, c512), R(), conv(c512, c512), R(), BN(c512))
        self.model8up = nn.Sequential(nn.ConvTranspose2d(c512, c256, kernel_size=4, stride=2, padding=1, bias=True))
        self.model8 = nn.Sequential(R(), conv(c256, c256), R(), conv(c256, c256), R(), BN(c256))
        self.model9up = nn.Sequential(nn.ConvTranspose2d(c256, c128, kernel_size=4, stride=2, padding=1, bias=True))
        self.model9 = nn.Sequential(R(), conv(c128, c128), R(), BN(c128))
        self.model10up = nn.Sequential(nn.ConvTranspose2d(c128, c128, kernel_size=4, stride=2, padding=1, bias=True))
        self.model10 = nn.Sequential(R(), conv(c128, c128), nn.LeakyReLU(negative_slope=.2))
        self.model3short8 = nn.Sequential(conv(c256, c256))
        self.model2short9 = nn.Sequential(conv(c128, c128))
        self.model1short10 = nn.Sequential(conv(c64, c128))
        # Classification head: in the state dict, not used by forward (not exported).
        self.model_class = nn.Sequential(nn.Conv2d(c256, classes, kernel_size=1, padding=0, dilation=1, stride=1, bias=True))
        self.model_out = nn.Sequential(nn.Conv2d(c128, 2, kernel_size=1, padding=0, dilation=1, stride=1, bias=True), nn.Tanh())
        self.upsample4 = nn.Sequential(nn.Upsample(scale_factor=4, mode="bilinear", align_corners=False))
        self.softmax = nn.Sequential(nn.Softmax(dim=1))

    def graph(self, x):
        """The exported graph: the 4-channel concatenated, normalised input; ab / 110 out."""
        conv1_2 = self.model1(x)
        conv2_2 = self.model2(conv1_2[:, :, ::2, ::2])
        conv3_3 = self.model3(conv2_2[:, :, ::2, ::2])
        conv4_3 = self.model4(conv3_3[:, :, ::2, ::2])
        conv5_3 = self.model5(conv4_3)
        conv6_3 = self.model6(conv5_3)
        conv7_3 = self.model7(conv6_3)
        conv8_up = self.model8up(conv7_3) + self.model3short8(conv3_3)
        conv8_3 = self.model8(conv8_up)
        conv9_up = self.model9up(conv8_3) + self.model2short9(conv2_2)
        conv9_3 = self.model9(conv9_up)
        conv10_up = self.model10up(conv9_3) + self.model1short10(conv1_2)
        conv10_2 = self.model10(conv10_up)
        return self.model_out(conv10_2)

    def original(self, input_A, input_B, mask_B):
        """SIGGRAPHGenerator.forward of the original, normalisations included."""
        x = torch.cat(((input_A - L_CENT) / L_NORM, input_B / AB_NORM, mask_B), dim=1)
        return self.graph(x) * AB_NORM


def width_fn(divisor, minimum):
    if divisor == 1:
        return lambda c: c
    return lambda c: max(minimum, c // divisor)


# ----------------------------------------------------------------------------------------
# Seeded random weights (numpy PCG64, independent of the torch version).
# ----------------------------------------------------------------------------------------

def randomize(model, seed, arch):
    rng = np.random.default_rng(seed)

    def put(t, a):
        with torch.no_grad():
            t.copy_(torch.from_numpy(np.asarray(a, dtype=np.float32)).reshape(t.shape))

    for name, m in model.named_modules():
        if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
            w = m.weight
            if isinstance(m, nn.ConvTranspose2d):  # [in][out][kh][kw]; each output sums in*k*k/4 taps
                fan_in = w.shape[0] * w.shape[2] * w.shape[3] / 4
            else:
                fan_in = w.shape[1] * w.shape[2] * w.shape[3]
            std = (2.0 / fan_in) ** 0.5  # He: activations keep their scale through the ReLUs
            if arch == "eccv16" and name == "model_out":
                # The official model_out holds the ab bin centres / 110 (values in [-1, 1]):
                # the output is the expectation over the 313 bins. Same range here.
                put(w, rng.uniform(-1.0, 1.0, w.shape))
                continue
            if arch == "eccv16" and name == "model8.6":  # the 313 logits: a peaked softmax
                std *= 3.0
            put(w, rng.normal(0.0, std, w.shape))
            if m.bias is not None:
                put(m.bias, rng.normal(0.0, 0.1, m.bias.shape))
        elif isinstance(m, nn.BatchNorm2d):
            n = m.num_features
            put(m.weight, rng.uniform(0.6, 1.4, n))
            put(m.bias, rng.normal(0.0, 0.2, n))
            put(m.running_mean, rng.normal(0.3, 0.3, n))
            put(m.running_var, rng.uniform(0.4, 1.6, n))
    model.eval()


# ----------------------------------------------------------------------------------------
# The ncnn writer: text .param and .bin, written by hand.
# ----------------------------------------------------------------------------------------

def fmt_float(v):
    return "%e" % float(v)


class NCNNWriter:
    """Collects layers (type, name, bottoms, tops, params) and .bin bytes in layer order; adds
    Split layers for fan-out when writing."""

    def __init__(self, fp16=False):
        self.layers = []  # [type, name, bottoms, tops, params(list of str), weight chunks(list of bytes)]
        self.fp16 = fp16
        self.count = 0

    def name(self, prefix):
        self.count += 1
        return "%s_%d" % (prefix, self.count)

    def tagged(self, a):
        a = np.ascontiguousarray(a, dtype=np.float32).ravel()
        if self.fp16:
            raw = a.astype("<f2").tobytes()
            raw += b"\0" * ((4 - len(raw) % 4) % 4)
            return struct.pack("<I", 0x01306B47) + raw
        return struct.pack("<I", 0) + a.astype("<f4").tobytes()

    @staticmethod
    def raw(a):
        return np.ascontiguousarray(a, dtype=np.float32).ravel().astype("<f4").tobytes()

    def add(self, type_, bottoms, params=(), weights=(), top=None, name=None):
        name = name or self.name(type_.lower())
        top = top or name
        self.layers.append([type_, name, list(bottoms), [top], list(params), list(weights)])
        return top

    def input(self, c, h, w, top="in0"):
        return self.add("Input", [], ["0=%d" % w, "1=%d" % h, "2=%d" % c], top=top, name=top)

    @staticmethod
    def act_params(act):
        if act is None:
            return []
        if act == "relu":
            return ["9=1"]
        if isinstance(act, tuple) and act[0] == "leaky":
            return ["9=2", "-23310=1,%s" % fmt_float(act[1])]
        raise ValueError(act)

    def convolution(self, bottom, m, act=None, name=None):
        assert isinstance(m, nn.Conv2d) and m.groups == 1
        o, i, kh, kw = m.weight.shape
        assert kh == kw and m.stride[0] == m.stride[1] and m.padding[0] == m.padding[1] and m.dilation[0] == m.dilation[1]
        has_bias = m.bias is not None
        params = ["0=%d" % o, "1=%d" % kw, "2=%d" % m.dilation[0], "3=%d" % m.stride[0], "4=%d" % m.padding[0],
                  "5=%d" % int(has_bias), "6=%d" % m.weight.numel()] + self.act_params(act)
        weights = [self.tagged(m.weight.detach().numpy())]  # [out][in][kh][kw], as ncnn
        if has_bias:
            weights.append(self.raw(m.bias.detach().numpy()))
        return self.add("Convolution", [bottom], params, weights, name=name)

    def deconvolution(self, bottom, m, act=None, name=None):
        assert isinstance(m, nn.ConvTranspose2d) and m.groups == 1 and m.output_padding == (0, 0)
        i, o, kh, kw = m.weight.shape  # PyTorch: [in][out][kh][kw]
        has_bias = m.bias is not None
        params = ["0=%d" % o, "1=%d" % kw, "2=%d" % m.dilation[0], "3=%d" % m.stride[0], "4=%d" % m.padding[0],
                  "5=%d" % int(has_bias), "6=%d" % m.weight.numel()] + self.act_params(act)
        # ncnn: [out][in][kh][kw], scatter-add without flip (same taps as PyTorch): transpose only.
        w = m.weight.detach().numpy().transpose(1, 0, 2, 3)
        weights = [self.tagged(w)]
        if has_bias:
            weights.append(self.raw(m.bias.detach().numpy()))
        return self.add("Deconvolution", [bottom], params, weights, name=name)

    def subsample2(self, bottom, channels, name=None):
        """x[:, :, ::2, ::2] as a depthwise 1x1 stride-2 convolution with weight 1, no bias."""
        params = ["0=%d" % channels, "1=1", "2=1", "3=2", "4=0", "5=0", "6=%d" % channels, "7=%d" % channels]
        return self.add("ConvolutionDepthWise", [bottom], params, [self.tagged(np.ones(channels))], name=name)

    def batchnorm(self, bottom, m, name=None):
        n = m.num_features
        params = ["0=%d" % n, "1=%s" % fmt_float(m.eps)]
        weights = [self.raw(m.weight.detach().numpy()), self.raw(m.running_mean.numpy()),
                   self.raw(m.running_var.numpy()), self.raw(m.bias.detach().numpy())]
        return self.add("BatchNorm", [bottom], params, weights, name=name)

    def sequential(self, bottom, seq, prefix, last_top=None):
        """Conv2d / ConvTranspose2d (fusing a following ReLU or LeakyReLU), lone ReLU,
        BatchNorm2d, Tanh, Softmax over channels, bilinear Upsample. The last layer's output
        blob is named `last_top` when given."""
        mods = list(seq)
        top = bottom
        k = 0
        while k < len(mods):
            m = mods[k]
            nxt = mods[k + 1] if k + 1 < len(mods) else None
            name = "%s.%d" % (prefix, k)
            if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                act = None
                if isinstance(nxt, nn.ReLU):
                    act = "relu"
                elif isinstance(nxt, nn.LeakyReLU):
                    act = ("leaky", nxt.negative_slope)
                emit = self.convolution if isinstance(m, nn.Conv2d) else self.deconvolution
                top = emit(top, m, act, name=name)
                k += 2 if act else 1
                continue
            if isinstance(m, nn.ReLU):
                top = self.add("ReLU", [top], [], name=name)
            elif isinstance(m, nn.BatchNorm2d):
                top = self.batchnorm(top, m, name=name)
            elif isinstance(m, nn.Tanh):
                top = self.add("TanH", [top], [], name=name)
            elif isinstance(m, nn.Softmax):
                assert m.dim == 1
                top = self.add("Softmax", [top], ["0=0", "1=1"], name=name)
            elif isinstance(m, nn.Upsample):
                assert m.mode == "bilinear" and not m.align_corners
                s = float(m.scale_factor)
                top = self.add("Interp", [top], ["0=2", "1=%s" % fmt_float(s), "2=%s" % fmt_float(s)], name=name)
            else:
                raise ValueError("cannot export %s" % type(m).__name__)
            k += 1
        if last_top is not None:
            assert self.layers[-1][3] == [top]
            self.layers[-1][3] = [last_top]
            top = last_top
        return top

    def write(self, param_path, bin_path):
        # Fan-out: a blob read by several layers is split (ncnn's convention).
        readers = {}
        for L in self.layers:
            for b in L[2]:
                readers[b] = readers.get(b, 0) + 1
        out = []
        for L in self.layers:
            out.append(L)
            for top in L[3]:
                n = readers.get(top, 0)
                if n > 1:
                    copies = ["%s_splitncnn_%d" % (top, j) for j in range(n)]
                    out.append(["Split", "splitncnn_" + top, [top], copies, [], []])
                    used = 0
                    for R in self.layers:
                        for j, b in enumerate(R[2]):
                            if b == top:
                                R[2][j] = copies[used]
                                used += 1
        blobs = set()
        for L in out:
            blobs.update(L[3])
        lines = ["7767517", "%d %d" % (len(out), len(blobs))]
        for t, name, bottoms, tops, params, _ in out:
            lines.append(" ".join(["%-20s" % t, "%-24s" % name, str(len(bottoms)), str(len(tops))] + bottoms + tops + params))
        with open(param_path, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(bin_path, "wb") as f:
            for L in out:
                for chunk in L[5]:
                    f.write(chunk)
        return len(out), len(blobs)


def export_eccv16(model, h, w, fp16=False):
    wr = NCNNWriter(fp16)
    x = wr.input(1, h, w)
    for k in range(1, 9):
        x = wr.sequential(x, getattr(model, "model%d" % k), "model%d" % k)
    x = wr.add("Softmax", [x], ["0=0", "1=1"], name="softmax")
    x = wr.convolution(x, model.model_out, name="model_out")
    wr.add("Interp", [x], ["0=2", "1=%s" % fmt_float(4.0), "2=%s" % fmt_float(4.0)], top="out0", name="upsample4")
    return wr


def export_siggraph17(model, h, w, fp16=False):
    wr = NCNNWriter(fp16)
    x = wr.input(4, h, w)
    conv1_2 = wr.sequential(x, model.model1, "model1", last_top="conv1_2")
    s = wr.subsample2(conv1_2, model.model1[2].out_channels, name="subsample1")
    conv2_2 = wr.sequential(s, model.model2, "model2", last_top="conv2_2")
    s = wr.subsample2(conv2_2, model.model2[2].out_channels, name="subsample2")
    conv3_3 = wr.sequential(s, model.model3, "model3", last_top="conv3_3")
    s = wr.subsample2(conv3_3, model.model3[4].out_channels, name="subsample3")
    x = s
    for k in (4, 5, 6, 7):
        x = wr.sequential(x, getattr(model, "model%d" % k), "model%d" % k, last_top="conv%d_3" % k)
    up = wr.sequential(x, model.model8up, "model8up")
    short = wr.sequential(conv3_3, model.model3short8, "model3short8")
    x = wr.add("BinaryOp", [up, short], ["0=0"], top="conv8_up", name="add8")
    x = wr.sequential(x, model.model8, "model8", last_top="conv8_3")
    up = wr.sequential(x, model.model9up, "model9up")
    short = wr.sequential(conv2_2, model.model2short9, "model2short9")
    x = wr.add("BinaryOp", [up, short], ["0=0"], top="conv9_up", name="add9")
    x = wr.sequential(x, model.model9, "model9", last_top="conv9_3")
    up = wr.sequential(x, model.model10up, "model10up")
    short = wr.sequential(conv1_2, model.model1short10, "model1short10")
    x = wr.add("BinaryOp", [up, short], ["0=0"], top="conv10_up", name="add10")
    x = wr.sequential(x, model.model10, "model10", last_top="conv10_2")
    wr.sequential(x, model.model_out, "model_out", last_top="out0")
    return wr


# ----------------------------------------------------------------------------------------
# Inputs, checks, files.
# ----------------------------------------------------------------------------------------

def lightness(rng, h, w):
    """A deterministic CIE L* picture in [0, 100]: smooth shapes plus seeded noise."""
    yy, xx = np.meshgrid(np.arange(h, dtype=np.float64), np.arange(w, dtype=np.float64), indexing="ij")
    base = 50 + 30 * np.sin(xx / w * 2 * np.pi * 1.5) * np.cos(yy / h * 2 * np.pi) + 15 * ((xx - w / 2) ** 2 + (yy - h / 2) ** 2 < (min(h, w) / 4) ** 2)
    return np.clip(base + rng.normal(0, 6, (h, w)), 0, 100)


def hints(rng, h, w, count=6, patch=3):
    """Seeded user hints: ab values (in [-60, 60]) on a few 3x3 patches, and their mask."""
    ab = np.zeros((2, h, w))
    mask = np.zeros((1, h, w))
    for _ in range(count):
        y, x = rng.integers(0, h - patch), rng.integers(0, w - patch)
        ab[:, y:y + patch, x:x + patch] = rng.uniform(-60, 60, (2, 1, 1))
        mask[:, y:y + patch, x:x + patch] = 1
    return ab, mask


def graph_input(arch, rng, h, w):
    """(graph input CHW float32, original-forward arguments)."""
    L = lightness(rng, h, w)[None]
    if arch == "eccv16":
        x = (L - L_CENT) / L_NORM
        return x.astype(np.float32), (L,)
    ab, mask = hints(rng, h, w)
    x = np.concatenate([(L - L_CENT) / L_NORM, ab / AB_NORM, mask - 0.5])
    return x.astype(np.float32), (L, ab, mask - 0.5)


def run_ncnn(param, binf, in_blob, out_blob, x):
    """Runs the written files with the PyPI ncnn package (CPU, fp32); None when unavailable."""
    try:
        import ncnn
    except ImportError:
        return None
    net = ncnn.Net()
    opt = net.opt
    opt.use_vulkan_compute = False
    opt.num_threads = 2
    opt.use_fp16_storage = False
    opt.use_fp16_arithmetic = False
    opt.use_fp16_packed = False
    opt.use_bf16_storage = False
    opt.use_int8_inference = False
    net.opt = opt
    if net.load_param(param) != 0 or net.load_model(binf) != 0:
        raise RuntimeError("ncnn cannot load %s" % param)
    ex = net.create_extractor()
    mat_in = ncnn.Mat(np.ascontiguousarray(x))
    if ex.input(in_blob, mat_in) != 0:
        raise RuntimeError("ncnn input(%s) failed" % in_blob)
    rc, mat_out = ex.extract(out_blob)
    if rc != 0:
        raise RuntimeError("ncnn extract(%s) failed: %d" % (out_blob, rc))
    y = np.array(mat_out, dtype=np.float32, copy=True)
    # Mats and the extractor must go before the net (ncnn's pool allocator lives in it).
    del mat_out, mat_in, ex
    net.clear()
    del net
    return y


def layer_summary(wr):
    counts = {}
    for L in wr.layers:
        counts[L[0]] = counts.get(L[0], 0) + 1
    return counts


def build_and_export(arch, model, h, w, out_dir, stem, rng, fp16, extra):
    model.eval()
    if fp16:
        # The .bin stores convolution weights as fp16: the reference uses the same rounded
        # values (biases and batch-norm vectors stay fp32, as in the file).
        with torch.no_grad():
            for m in model.modules():
                if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d)):
                    m.weight.copy_(m.weight.half().float())
    x, args = graph_input(arch, rng, h, w)
    with torch.no_grad():
        y = model.graph(torch.from_numpy(x)[None])[0].numpy().astype(np.float32)
        # The graph equals the original forward (normalisations included) up to ×110.
        orig = model.original(*[torch.from_numpy(np.asarray(a, dtype=np.float32))[None] for a in args])[0].numpy()
        orig_diff = float(np.abs(orig / AB_NORM - y).max())
        # Numeric noise of fp32 itself: the same graph in float64.
        y64 = model.double().graph(torch.from_numpy(x.astype(np.float64))[None])[0].numpy()
        model.float()
    fp64_diff = float(np.abs(y64 - y).max())
    if orig_diff > 1e-5:
        raise RuntimeError("%s: graph x110 differs from the original forward by %g" % (stem, orig_diff))
    wr = (export_eccv16 if arch == "eccv16" else export_siggraph17)(model, h, w, fp16)
    param, binf = os.path.join(out_dir, stem + ".param"), os.path.join(out_dir, stem + ".bin")
    nlayers, nblobs = wr.write(param, binf)
    x.astype("<f4").tofile(os.path.join(out_dir, stem + ".input.f32"))
    y.astype("<f4").tofile(os.path.join(out_dir, stem + ".output.f32"))
    ncnn_y = run_ncnn(param, binf, "in0", "out0", x)
    ncnn_diff = None if ncnn_y is None else float(np.abs(ncnn_y.reshape(y.shape) - y).max())
    params = sum(p.numel() for n, p in model.named_parameters() if not n.startswith("model_class"))
    entry = {
        "arch": arch,
        "param": stem + ".param",
        "bin": stem + ".bin",
        "input": stem + ".input.f32",
        "output": stem + ".output.f32",
        "input_blob": "in0",
        "output_blob": "out0",
        "input_shape": list(x.shape),
        "output_shape": list(y.shape),
        "layers": nlayers,
        "blobs": nblobs,
        "layer_types": layer_summary(wr),
        "exported_parameters": int(params),
        "weights": "fp16" if fp16 else "fp32",
        "bytes": {k: os.path.getsize(os.path.join(out_dir, stem + k)) for k in (".param", ".bin", ".input.f32", ".output.f32")},
        "output_stats": {"min": float(y.min()), "max": float(y.max()), "std": float(y.std())},
        "graph_vs_original_forward_max_abs_diff": orig_diff,
        "fp32_vs_fp64_max_abs_diff": fp64_diff,
        "ncnn_max_abs_diff": ncnn_diff,
    }
    entry.update(extra)
    return entry


NORMALISATION = {
    "eccv16": {
        "outside_before": "in0 = (L - 50) / 100, L = CIE L* in [0, 100] (base_color.normalize_l)",
        "inside": "the network, softmax over 313 bins, 1x1 conv 313->2 without bias, x4 bilinear upsample (align_corners=False)",
        "outside_after": "ab = out0 * 110 (base_color.unnormalize_ab)",
    },
    "siggraph17": {
        "outside_before": "in0 = concat((L - 50) / 100, ab_hint / 110, mask_B) with mask_B = mask - 0.5 (+0.5 hinted, -0.5 not; "
                          "the centring of colorization-pytorch training; the original forward passes mask_B through unchanged)",
        "inside": "model1 .. model10, shortcuts, model_out (1x1 conv 128->2 + tanh); x[:, :, ::2, ::2] as ConvolutionDepthWise 1x1 stride 2 weight 1",
        "outside_after": "ab = out0 * 110 (base_color.unnormalize_ab)",
    },
}
LICENCE = ("Architectures from github.com/richzhang/colorization (colorizers/eccv16.py, siggraph17.py, base_color.py; "
           "BSD-2-Clause, Richard Zhang). Fixture weights are seeded random numbers made by scripts/colorizer_fixtures.py (ours).")


def fixtures(args):
    os.makedirs(args.out, exist_ok=True)
    w = width_fn(args.divisor, args.min_width)
    entries = []
    for k, (arch, h, wd) in enumerate((("eccv16", 48, 64), ("siggraph17", 64, 48))):
        model = ECCVGenerator(w) if arch == "eccv16" else SIGGRAPHGenerator(w)
        randomize(model, args.seed + k, arch)
        rng = np.random.default_rng(args.seed + 100 + k)
        entries.append(build_and_export(arch, model, h, wd, args.out, arch + "-tiny", rng, False, {
            "seed": args.seed + k, "input_seed": args.seed + 100 + k,
            "widths": {str(c): w(c) for c in (64, 128, 256, 512)} | {"313": 313},
            "normalisation": NORMALISATION[arch],
        }))
    manifest = {
        "generator": "scripts/colorizer_fixtures.py",
        "torch": torch.__version__,
        "numpy": np.__version__,
        "width_divisor": args.divisor,
        "min_width": args.min_width,
        "seed": args.seed,
        "licence": LICENCE,
        "substitutions": "SIGGRAPH17 x[:, :, ::2, ::2] -> ConvolutionDepthWise 1x1 stride 2, weight 1, no bias (exact)",
        "files_f32": "raw little-endian float32, CHW, no header",
        "models": entries,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    for e in entries:
        print("%-12s %s -> %s  %d layers, %d parameters, %d bytes .bin, ncnn diff %s, fp64 diff %.2e" % (
            e["arch"], e["input_shape"], e["output_shape"], e["layers"], e["exported_parameters"], e["bytes"][".bin"],
            "n/a" if e["ncnn_max_abs_diff"] is None else "%.2e" % e["ncnn_max_abs_diff"], e["fp32_vs_fp64_max_abs_diff"]))


def full(args):
    arch = args.arch
    base = os.path.basename(args.weights)
    if arch is None:
        arch = "siggraph17" if "siggraph" in base.lower() else "eccv16" if ("eccv" in base.lower() or "colorization_release" in base) else None
        if arch is None:
            sys.exit("error: cannot tell the architecture from '%s'; pass --arch eccv16 or --arch siggraph17" % base)
    with open(args.weights, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    m = re.search(r"-([0-9a-f]{8,})\.pth$", base)
    if m and not sha.startswith(m.group(1)):
        sys.exit("error: %s: SHA-256 %s does not start with %s (torch.hub's check); the download is damaged" % (base, sha, m.group(1)))
    state = torch.load(args.weights, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    w = width_fn(1, 1)
    model = ECCVGenerator(w) if arch == "eccv16" else SIGGRAPHGenerator(w)
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys if not k.startswith("model_class.")]
    if missing:
        sys.exit("error: %s lacks %d tensors of the %s architecture, e.g. %s" % (base, len(missing), arch, ", ".join(missing[:5])))
    if result.unexpected_keys:
        print("note: ignoring %d tensors not used by the exported graph: %s" % (len(result.unexpected_keys), ", ".join(result.unexpected_keys[:5])))
    model.eval()
    os.makedirs(args.out, exist_ok=True)
    h, wd = (int(v) for v in args.size.lower().split("x"))
    if h % 8 or wd % 8:
        sys.exit("error: --size must be a multiple of 8 in both dimensions")
    rng = np.random.default_rng(args.seed)
    entry = build_and_export(arch, model, h, wd, args.out, arch, rng, args.fp16, {
        "source_weights": base, "source_url": URLS[arch], "source_sha256": sha,
        "normalisation": NORMALISATION[arch], "input_seed": args.seed,
        "licence": "Architecture and weights: github.com/richzhang/colorization, BSD-2-Clause (Richard Zhang).",
    })
    # The colorizer description Vivify reads beside the model (README, "Colorizer description").
    description = {"input": "l" if arch == "eccv16" else "l+hints+mask", "inputSize": 256, "inputMultiple": 8,
                   "lCenter": 50, "lScale": 100, "output": "ab", "abScale": 110, "upsample": "bilinear"}
    with open(os.path.join(args.out, arch + ".json"), "w") as f:
        json.dump(description, f, indent=2)
        f.write("\n")
    path = os.path.join(args.out, "manifest.json")
    manifest = {"models": []}
    if os.path.exists(path):
        with open(path) as f:
            manifest = json.load(f)
    manifest["models"] = sorted([e for e in manifest.get("models", []) if e.get("arch") != arch] + [entry], key=lambda e: e["arch"])
    manifest["generator"] = "scripts/colorizer_fixtures.py --full"
    manifest["torch"] = torch.__version__
    with open(path, "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print("%s: wrote %s/%s.param (%d layers) and %s.bin (%d bytes, %s); reference at %dx%d; ncnn diff %s" % (
        arch, args.out, arch, entry["layers"], arch, entry["bytes"][".bin"], entry["weights"], h, wd,
        "n/a" if entry["ncnn_max_abs_diff"] is None else "%.2e" % entry["ncnn_max_abs_diff"]))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="output folder (default: Tests/EngineTests/Fixtures/colorizers; with --full: out/colorizers, git-ignored)")
    ap.add_argument("--seed", type=int, default=20240917)
    ap.add_argument("--divisor", type=int, default=16, help="channel width divisor of the fixtures (default 16)")
    ap.add_argument("--min-width", type=int, default=8, help="smallest reduced width (default 8)")
    ap.add_argument("--full", action="store_true", help="export the full-width model with --weights instead of the fixtures")
    ap.add_argument("--weights", help="official .pth state dict (with --full)")
    ap.add_argument("--arch", choices=["eccv16", "siggraph17"], help="with --full; guessed from the file name if omitted")
    ap.add_argument("--size", default="256x256", help="HxW of the reference input written with --full (default 256x256)")
    ap.add_argument("--fp16", action="store_true", help="with --full: fp16 convolution weights (half the size)")
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    if args.full:
        if not args.weights:
            ap.error("--full needs --weights FILE.pth (download URLs: %s)" % ", ".join(URLS.values()))
        args.out = args.out or os.path.join(here, "..", "out", "colorizers")
        full(args)
    else:
        args.out = args.out or os.path.join(here, "..", "Tests", "EngineTests", "Fixtures", "colorizers")
        fixtures(args)


if __name__ == "__main__":
    main()
