#!/usr/bin/env python3
"""Makes the ML Program (.mlpackage) fixtures of Tests/EngineTests/CoreMLProgramTests.swift.

Each fixture is a small seeded-random MIL program built with coremltools' MIL builder and
saved with ct.convert(..., convert_to="mlprogram") (which works on Linux: only predictions
need macOS). The graph passes are switched off (PassPipeline.EMPTY) so every op reaches the
file as written. Reference outputs come from plain numpy implementations of each op below
(float64 arithmetic, fp16/quantized parameters widened exactly as the importer does); where
PyTorch is installed, the numpy convolutions, resizes, paddings and pixel shuffle are checked
against it first.

Writes into Tests/ModelFormatsTests/Fixtures/mlprogram/:
  <name>.mlpackage        the model
  <name>.input.f32        the input, float32 little-endian NCHW
  <name>.expected.f32     the numpy reference output, float32 little-endian NCHW
  fixtures.json           name, shapes and op types of every fixture

Usage: pip install coremltools numpy; python3 scripts/mlprogram_fixtures.py
"""

import json
import os
import shutil
import sys

import numpy as np

import coremltools as ct
from coremltools.converters.mil.mil import Builder as mb
from coremltools.converters.mil.mil import get_new_symbol, types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "Tests", "ModelFormatsTests", "Fixtures", "mlprogram")


# --- numpy references (NCHW, batch 1) -------------------------------------------------------

def f64(a):
    return np.asarray(a, dtype=np.float64)


def conv2d(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1):
    """pads = (top, bottom, left, right)."""
    x = f64(x)[0]
    w = f64(w)
    xp = np.pad(x, ((0, 0), (pads[0], pads[1]), (pads[2], pads[3])))
    O, ig, kh, kw = w.shape
    oh = (xp.shape[1] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (xp.shape[2] - dil[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((O, oh, ow))
    og = O // groups
    for o in range(O):
        g = o // og
        for i in range(ig):
            for ky in range(kh):
                for kx in range(kw):
                    y0, x0 = ky * dil[0], kx * dil[1]
                    patch = xp[g * ig + i, y0:y0 + stride[0] * (oh - 1) + 1:stride[0], x0:x0 + stride[1] * (ow - 1) + 1:stride[1]]
                    out[o] += w[o, i, ky, kx] * patch
        if b is not None:
            out[o] += f64(b)[o]
    return out[None]


def conv_transpose2d(x, w, b=None, stride=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1), groups=1, out_pad=(0, 0)):
    """Scatter-add of every input pixel; `pads` (top, bottom, left, right) are cropped from the
    full output, `out_pad` rows/columns are added at the bottom/right."""
    x = f64(x)[0]
    w = f64(w)
    cin, H, W = x.shape
    _, og, kh, kw = w.shape
    ig = cin // groups
    fh = (H - 1) * stride[0] + dil[0] * (kh - 1) + 1
    fw = (W - 1) * stride[1] + dil[1] * (kw - 1) + 1
    full = np.zeros((og * groups, fh + out_pad[0], fw + out_pad[1]))
    for ci in range(cin):
        g = ci // ig
        for ol in range(og):
            oc = g * og + ol
            for ky in range(kh):
                for kx in range(kw):
                    y0, x0 = ky * dil[0], kx * dil[1]
                    full[oc, y0:y0 + stride[0] * (H - 1) + 1:stride[0], x0:x0 + stride[1] * (W - 1) + 1:stride[1]] += x[ci] * w[ci, ol, ky, kx]
    oh = fh - pads[0] - pads[1] + out_pad[0]
    ow = fw - pads[2] - pads[3] + out_pad[1]
    out = full[:, pads[0]:pads[0] + oh, pads[2]:pads[2] + ow]
    if b is not None:
        out = out + f64(b)[:, None, None]
    return out[None]


def same_pads(size, k, s, d, lower=False):
    ke = d * (k - 1) + 1
    total = max((-(-size // s) - 1) * s + ke - size, 0)
    small, big = total // 2, total - total // 2
    return (big, small) if lower else (small, big)


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def resize_bilinear(x, oh, ow, align):
    x = f64(x)[0]
    C, H, W = x.shape

    def coords(n_out, n_in):
        d = np.arange(n_out, dtype=np.float64)
        if align:
            src = d * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
        else:
            src = (d + 0.5) * n_in / n_out - 0.5
        src = np.clip(src, 0, n_in - 1)
        i0 = np.floor(src).astype(int)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, src - i0

    y0, y1, ty = coords(oh, H)
    x0, x1, tx = coords(ow, W)
    top = x[:, y0][:, :, x0] * (1 - tx) + x[:, y0][:, :, x1] * tx
    bottom = x[:, y1][:, :, x0] * (1 - tx) + x[:, y1][:, :, x1] * tx
    return (top * (1 - ty)[:, None] + bottom * ty[:, None])[None]


def resize_nearest(x, oh, ow):
    x = f64(x)[0]
    H, W = x.shape[1:]
    ys = np.minimum((np.arange(oh) * H // oh), H - 1)
    xs = np.minimum((np.arange(ow) * W // ow), W - 1)
    return x[:, ys][:, :, xs][None]


def pixel_shuffle(x, r):
    n, c, h, w = x.shape
    return f64(x).reshape(n, c // (r * r), r, r, h, w).transpose(0, 1, 4, 2, 5, 3).reshape(n, c // (r * r), h * r, w * r)


def pad_ref(x, t, b, l, r, mode, value=0.0):
    widths = ((0, 0), (0, 0), (t, b), (l, r))
    if mode == "constant":
        return np.pad(f64(x), widths, constant_values=value)
    return np.pad(f64(x), widths, mode={"reflect": "reflect", "replicate": "edge"}[mode])


def softmax_channels(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def torch_checks():
    """Checks the numpy references against PyTorch (skipped when torch is not installed)."""
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("PyTorch not installed: numpy references not cross-checked")
        return
    rng = np.random.default_rng(99)
    x = rng.standard_normal((1, 4, 9, 11))
    t = torch.from_numpy(x)

    def close(a, b, what):
        err = np.abs(np.asarray(a) - b.numpy()).max()
        assert err < 1e-9, f"{what}: numpy reference differs from PyTorch by {err}"

    w = rng.standard_normal((6, 2, 3, 2))
    bias = rng.standard_normal(6)
    close(conv2d(x, w, bias, (2, 1), (1, 0, 2, 1), (1, 2), 2),
          F.conv2d(F.pad(t, (2, 1, 1, 0)), torch.from_numpy(w), torch.from_numpy(bias), (2, 1), 0, (1, 2), 2), "conv2d")
    wt = rng.standard_normal((4, 3, 3, 4))
    full = F.conv_transpose2d(t, torch.from_numpy(wt), torch.from_numpy(np.arange(6.0)), (2, 3), 0, 0, 2, (1, 2))
    ours = conv_transpose2d(x, wt, np.arange(6.0), (2, 3), (0, 0, 0, 0), (1, 2), 2)
    close(ours, full, "conv_transpose2d")
    close(conv_transpose2d(x, wt, None, (2, 3), (1, 2, 0, 3), (1, 2), 2),
          F.conv_transpose2d(t, torch.from_numpy(wt), None, (2, 3), 0, 0, 2, (1, 2))[:, :, 1:-2, 0:-3], "conv_transpose2d crop")
    for align in (True, False):
        close(resize_bilinear(x, 15, 26, align), F.interpolate(t, size=(15, 26), mode="bilinear", align_corners=align), f"bilinear align={align}")
    close(resize_nearest(x, 18, 33), F.interpolate(t, size=(18, 33), mode="nearest"), "nearest")
    close(pixel_shuffle(x, 2), F.pixel_shuffle(t, 2), "pixel shuffle")
    for mode, tm in (("reflect", "reflect"), ("replicate", "replicate")):
        close(pad_ref(x, 2, 1, 0, 3, mode), F.pad(t, (0, 3, 2, 1), mode=tm), f"pad {mode}")
    close(softmax_channels(x), torch.softmax(t, 1), "softmax")
    print("numpy references agree with PyTorch")


# --- fixtures ---------------------------------------------------------------------------------

FIXTURES = []


def fixture(name, shape, target=ct.target.iOS16, flexible=False):
    """`flexible`: height and width are left open in the program (run at `shape`)."""
    def register(fn):
        FIXTURES.append((name, shape, target, flexible, fn))
        return fn
    return register


def rnd(rng, *shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


@fixture("conv_fp32", (1, 4, 15, 17))
def conv_fp32(rng, ref):
    """conv: custom asymmetric pads, groups with same padding and stride 2, depthwise
    same_lower with an even kernel, dilation with valid padding; fused and unfused relu."""
    w1, b1 = rnd(rng, 6, 4, 3, 3), rnd(rng, 6)
    w2 = rnd(rng, 6, 3, 2, 4)
    w3, b3 = rnd(rng, 6, 1, 2, 2), rnd(rng, 6)
    w4, b4 = rnd(rng, 5, 6, 3, 3), rnd(rng, 5)

    def prog(x):
        a = mb.conv(x=x, weight=w1, bias=b1, pad_type="custom", pad=[1, 0, 2, 1])
        a = mb.relu(x=a)
        b = mb.conv(x=a, weight=w2, groups=2, pad_type="same", strides=[2, 2])
        c = mb.conv(x=b, weight=w3, bias=b3, groups=6, pad_type="same_lower")
        d = mb.conv(x=c, weight=w4, bias=b4, dilations=[2, 1], pad_type="valid")
        return d

    def reference(x):
        a = np.maximum(conv2d(x, w1, b1, pads=(1, 0, 2, 1)), 0)
        ph, pw = same_pads(a.shape[2], 2, 2, 1), same_pads(a.shape[3], 4, 2, 1)
        b = conv2d(a, w2, None, (2, 2), ph + pw, groups=2)
        ph, pw = same_pads(b.shape[2], 2, 1, 1, lower=True), same_pads(b.shape[3], 2, 1, 1, lower=True)
        c = conv2d(b, w3, b3, pads=ph + pw, groups=6)
        return conv2d(c, w4, b4, dil=(2, 1))
    return prog, reference


@fixture("activations_fp32", (1, 3, 9, 10))
def activations_fp32(rng, ref):
    """Every activation on one convolution's output (read by all, so none fuses), a silu fused
    into its convolution, and channel concatenation of the results."""
    w, b = rnd(rng, 4, 3, 3, 3, scale=0.8), rnd(rng, 4)
    w2 = rnd(rng, 2, 3, 1, 1)
    slopes = np.array([0.1, -0.2, 0.3, 0.05], dtype=np.float32)

    def prog(x):
        a = mb.conv(x=x, weight=w, bias=b, pad_type="same")
        f = mb.silu(x=mb.conv(x=x, weight=w2))
        outs = [mb.relu(x=a), mb.leaky_relu(x=a, alpha=0.2), mb.silu(x=a), mb.sigmoid(x=a), mb.tanh(x=a),
                mb.clip(x=a, alpha=-0.5, beta=0.7), mb.relu6(x=mb.mul(x=a, y=np.float32(4.0))), mb.prelu(x=a, alpha=slopes), f]
        return mb.concat(values=outs, axis=1)

    def reference(x):
        a = conv2d(x, w, b, pads=(1, 1, 1, 1))
        f = conv2d(x, w2)
        f = f * sigmoid(f)
        outs = [np.maximum(a, 0), np.where(a > 0, a, 0.2 * a), a * sigmoid(a), sigmoid(a), np.tanh(a), np.clip(a, -0.5, 0.7),
                np.clip(4 * a, 0, 6), np.where(a > 0, a, f64(slopes)[None, :, None, None] * a), f]
        return np.concatenate(outs, axis=1)
    return prog, reference


@fixture("elementwise_fp32", (1, 4, 8, 9))
def elementwise_fp32(rng, ref):
    """add/sub/mul/real_div/maximum/minimum on two tensors (same shape, channel and row
    broadcasts), with scalars on either side, and with per-channel constants."""
    wa, wb = rnd(rng, 4, 4, 1, 1), rnd(rng, 4, 4, 3, 3)
    c1 = rnd(rng, 1, 4, 1, 1)
    c2 = rnd(rng, 4, 1, 1)
    c3 = rnd(rng, 1, 4, 1, 1)
    c4 = (np.abs(rnd(rng, 1, 4, 1, 1)) + 0.5).astype(np.float32)

    def prog(x):
        a = mb.conv(x=x, weight=wa)
        b = mb.conv(x=x, weight=wb, pad_type="same")
        bpos = mb.add(x=mb.sigmoid(x=b), y=np.float32(0.5))
        ch0 = mb.slice_by_index(x=a, begin=[0, 0, 0, 0], end=[1, 1, 8, 9])
        row = mb.slice_by_index(x=a, begin=[0, 0, 2, 0], end=[1, 4, 3, 9])
        outs = [mb.add(x=a, y=b), mb.sub(x=a, y=b), mb.mul(x=a, y=b), mb.real_div(x=a, y=bpos),
                mb.maximum(x=a, y=b), mb.minimum(x=a, y=b),
                mb.mul(x=x, y=ch0), mb.add(x=row, y=x),
                mb.add(x=x, y=np.float32(0.5)), mb.mul(x=np.float32(2.0), y=x), mb.sub(x=np.float32(1.0), y=x),
                mb.sub(x=x, y=np.float32(0.25)), mb.real_div(x=x, y=np.float32(4.0)), mb.real_div(x=np.float32(3.0), y=bpos),
                mb.maximum(x=x, y=np.float32(0.1)), mb.minimum(x=np.float32(0.3), y=x),
                mb.add(x=x, y=c1), mb.mul(x=c2, y=x), mb.sub(x=c3, y=x), mb.sub(x=x, y=c3), mb.real_div(x=x, y=c4)]
        return mb.concat(values=outs, axis=1)

    def reference(x):
        x = f64(x)
        a = conv2d(x, wa)
        b = conv2d(x, wb, pads=(1, 1, 1, 1))
        bpos = sigmoid(b) + 0.5
        ch0, row = a[:, 0:1], a[:, :, 2:3]
        outs = [a + b, a - b, a * b, a / bpos, np.maximum(a, b), np.minimum(a, b), x * ch0, row + x,
                x + 0.5, 2 * x, 1 - x, x - 0.25, x / 4, 3 / bpos, np.maximum(x, 0.1), np.minimum(0.3, x),
                x + c1, c2[None] * x, c3 - x, x - c3, x / c4]
        return np.concatenate(outs, axis=1)
    return prog, reference


@fixture("norm_resize_fp32", (1, 8, 6, 7))
def norm_resize_fp32(rng, ref):
    """batch_norm, softmax over channels, reduce_mean channel attention (spatial broadcast),
    pixel_shuffle, upsample_bilinear with aligned corners, half-pixel centres and a
    fractional scale, upsample_nearest_neighbor."""
    mean, var = rnd(rng, 8), (np.abs(rnd(rng, 8)) + 0.5).astype(np.float32)
    gamma, beta = rnd(rng, 8) + 1, rnd(rng, 8)
    w = rnd(rng, 8, 8, 1, 1)

    def prog(x):
        bn = mb.batch_norm(x=x, mean=mean, variance=var, gamma=gamma, beta=beta, epsilon=1e-3)
        sm = mb.softmax(x=bn, axis=1)
        att = mb.sigmoid(x=mb.reduce_mean(x=bn, axes=[2, 3], keep_dims=True))
        y = mb.conv(x=mb.mul(x=sm, y=att), weight=w)
        ps = mb.pixel_shuffle(x=y, upscale_factor=2)
        up_a = mb.upsample_bilinear(x=ps, scale_factor_height=2.0, scale_factor_width=2.0, align_corners=True)
        up_b = mb.upsample_nearest_neighbor(x=ps, scale_factor_height=2, scale_factor_width=2)
        up_c = mb.upsample_bilinear(x=ps, scale_factor_height=2.0, scale_factor_width=2.0, align_corners=False, half_pixel_centers=True)
        cat = mb.concat(values=[up_a, up_b, up_c], axis=-3)
        return mb.upsample_bilinear(x=cat, scale_factor_height=1.5, scale_factor_width=1.5, align_corners=False)

    def reference(x):
        scale = f64(gamma) / np.sqrt(f64(var) + 1e-3)
        bn = f64(x) * scale[None, :, None, None] + (f64(beta) - f64(mean) * scale)[None, :, None, None]
        sm = softmax_channels(bn)
        att = sigmoid(bn.mean(axis=(2, 3), keepdims=True))
        ps = pixel_shuffle(conv2d(sm * att, w), 2)
        h, wd = ps.shape[2:]
        cat = np.concatenate([resize_bilinear(ps, 2 * h, 2 * wd, True), resize_nearest(ps, 2 * h, 2 * wd),
                              resize_bilinear(ps, 2 * h, 2 * wd, False)], axis=1)
        return resize_bilinear(cat, int(cat.shape[2] * 1.5), int(cat.shape[3] * 1.5), False)
    return prog, reference


@fixture("pad_slice_fp32", (1, 4, 7, 8))
def pad_slice_fp32(rng, ref):
    """pad (constant with a value, reflect, replicate with an all-axes pad list), concat,
    slice_by_index (channels and rows/columns, negative end, begin/end masks), slice_by_size."""
    def prog(x):
        p1 = mb.pad(x=x, pad=np.array([1, 2, 0, 3], dtype=np.int32), mode="constant", constant_val=0.5)
        p2 = mb.pad(x=x, pad=np.array([2, 1, 1, 2], dtype=np.int32), mode="reflect")
        p3 = mb.pad(x=x, pad=np.array([0, 0, 0, 0, 2, 1, 3, 0], dtype=np.int32), mode="replicate")
        cat = mb.concat(values=[p1, p2, p3], axis=1)
        s1 = mb.slice_by_index(x=cat, begin=[0, 2, 1, 0], end=[1, 9, -1, 11])
        s2 = mb.slice_by_index(x=s1, begin=[0, 0, 3, 2], end=[0, 0, 0, -2], begin_mask=[True, True, False, False],
                               end_mask=[True, True, True, False])
        return mb.slice_by_size(x=s2, begin=[0, 1, 0, 1], size=[-1, 4, -1, 5])

    def reference(x):
        cat = np.concatenate([pad_ref(x, 1, 2, 0, 3, "constant", 0.5), pad_ref(x, 2, 1, 1, 2, "reflect"),
                              pad_ref(x, 2, 1, 3, 0, "replicate")], axis=1)
        s1 = cat[:, 2:9, 1:-1, 0:11]
        s2 = s1[:, :, 3:, 2:-2]
        return s2[:, 1:5, :, 1:6]
    return prog, reference


@fixture("deconv_valid_fp32", (1, 4, 5, 6))
def deconv_valid(rng, ref):
    """conv_transpose, valid padding, stride 2, bias, fused relu."""
    w, b = rnd(rng, 4, 3, 3, 3), rnd(rng, 3)

    def prog(x):
        return mb.relu(x=mb.conv_transpose(x=x, weight=w, bias=b, pad_type="valid", strides=[2, 2]))

    def reference(x):
        return np.maximum(conv_transpose2d(x, w, b, (2, 2)), 0)
    return prog, reference


@fixture("deconv_same_shape_fp32", (1, 4, 5, 6))
def deconv_same_shape(rng, ref):
    """conv_transpose with same padding and groups (odd crop), and custom pads with an
    output_shape one larger than the natural size (output padding)."""
    w1 = rnd(rng, 4, 2, 3, 3)
    w2, b2 = rnd(rng, 4, 3, 3, 3), rnd(rng, 3)

    def prog(x):
        a = mb.conv_transpose(x=x, weight=w1, pad_type="same", strides=[2, 2], groups=2)
        b = mb.conv_transpose(x=x, weight=w2, bias=b2, pad_type="custom", pad=[1, 1, 1, 1], strides=[2, 2],
                              output_shape=[1, 3, 10, 12])
        return mb.concat(values=[a, b], axis=1)

    def reference(x):
        a = conv_transpose2d(x, w1, None, (2, 2), (0, 1, 0, 1), groups=2)
        b = conv_transpose2d(x, w2, b2, (2, 2), (1, 1, 1, 1), out_pad=(1, 1))
        return np.concatenate([a, b], axis=1)
    return prog, reference


@fixture("deconv_custom_fp32", (1, 4, 5, 6))
def deconv_custom(rng, ref):
    """conv_transpose with asymmetric custom pads, different strides and a dilation."""
    w = rnd(rng, 4, 3, 3, 3)

    def prog(x):
        return mb.conv_transpose(x=x, weight=w, pad_type="custom", pad=[1, 0, 0, 1], strides=[2, 1], dilations=[1, 2])

    def reference(x):
        return conv_transpose2d(x, w, None, (2, 1), (1, 0, 0, 1), (1, 2))
    return prog, reference


@fixture("fp16", (1, 3, 10, 12))
def fp16(rng, ref):
    """An fp16 program in PiperSR's shape: cast in, fp16 blob weights and biases, fp16
    immediate scalars (stored as bytes), per-channel fp16 constant, batch norm with fp16
    parameters, residual add, pixel shuffle, clip, cast out."""
    h = lambda a: np.asarray(a, dtype=np.float16)
    w1, b1 = h(rnd(rng, 8, 3, 3, 3)), h(rnd(rng, 8))
    w2, b2 = h(rnd(rng, 8, 8, 3, 3, scale=0.2)), h(rnd(rng, 8))
    w3 = h(rnd(rng, 12, 8, 3, 3, scale=0.2))
    c = h(rnd(rng, 1, 8, 1, 1))
    mean, var, gamma, beta = h(rnd(rng, 8)), h(np.abs(rnd(rng, 8)) + 0.5), h(rnd(rng, 8) + 1), h(rnd(rng, 8))

    def prog(x):
        y = mb.cast(x=mb.mul(x=x, y=np.float32(1 / 255.0)), dtype="fp16")
        a = mb.conv(x=y, weight=w1, bias=b1, pad_type="custom", pad=[1, 1, 1, 1])
        r = mb.silu(x=mb.conv(x=a, weight=w2, bias=b2, pad_type="same"))
        r = mb.batch_norm(x=r, mean=mean, variance=var, gamma=gamma, beta=beta, epsilon=np.float16(1e-3))
        s = mb.add(x=mb.add(x=r, y=a), y=c)
        s = mb.conv(x=s, weight=w3, pad_type="same")
        p = mb.pixel_shuffle(x=s, upscale_factor=2)
        p = mb.clip(x=mb.add(x=p, y=np.float16(0.5)), alpha=np.float16(0), beta=np.float16(1))
        return mb.cast(x=mb.mul(x=p, y=np.float16(255)), dtype="fp32")

    def reference(x):
        y = f64(x) * f64(np.float32(1 / 255.0))
        a = conv2d(y, w1, b1, pads=(1, 1, 1, 1))
        r = conv2d(a, w2, b2, pads=(1, 1, 1, 1))
        r = r * sigmoid(r)
        scale = f64(gamma) / np.sqrt(f64(var) + f64(np.float16(1e-3)))
        r = r * scale[None, :, None, None] + (f64(beta) - f64(mean) * scale)[None, :, None, None]
        s = r + a + f64(c)
        p = pixel_shuffle(conv2d(s, w3, pads=(1, 1, 1, 1)), 2)
        return np.clip(p + 0.5, 0, 1) * 255
    return prog, reference


@fixture("affine_quantized", (1, 4, 7, 8))
def affine_quantized(rng, ref):
    """iOS 16 constexpr_affine_dequantize: uint8 data with per-channel uint8 zero points and
    fp32 scales (axis 0), int8 data with scalar zero point and scale, uint8 along axis 1 of a
    transposed convolution's weight with float zero points; constexpr_cast fp16 → fp32."""
    q1 = rng.integers(0, 256, (6, 4, 3, 3)).astype(np.uint8)
    zp1 = rng.integers(100, 156, 6).astype(np.uint8)
    s1 = (rng.uniform(0.002, 0.01, 6)).astype(np.float32)
    q2 = rng.integers(-128, 128, (5, 6, 1, 1)).astype(np.int8)
    zp2, s2 = np.int8(-3), np.float32(0.01)
    q3 = rng.integers(0, 256, (5, 3, 2, 2)).astype(np.uint8)
    zp3 = rng.uniform(120, 136, 3).astype(np.float32)
    s3 = rng.uniform(0.002, 0.01, 3).astype(np.float32)
    bias = np.asarray(rnd(rng, 5), dtype=np.float16)
    bias3 = rnd(rng, 3)

    def prog(x):
        w1 = mb.constexpr_affine_dequantize(quantized_data=q1, zero_point=zp1, scale=s1, axis=0)
        w2 = mb.constexpr_affine_dequantize(quantized_data=q2, zero_point=zp2, scale=s2, axis=0)
        w3 = mb.constexpr_affine_dequantize(quantized_data=q3, zero_point=zp3, scale=s3, axis=1)
        b2 = mb.constexpr_cast(source_val=bias, output_dtype="fp32")
        y = mb.conv(x=x, weight=w1, pad_type="same")
        y = mb.conv(x=y, weight=w2, bias=b2)
        return mb.conv_transpose(x=y, weight=w3, bias=bias3, strides=[2, 2])

    def reference(x):
        w1 = s1[:, None, None, None].astype(np.float64) * (q1.astype(np.float64) - zp1[:, None, None, None])
        w2 = float(s2) * (q2.astype(np.float64) - float(zp2))
        w3 = f64(s3)[None, :, None, None] * (q3.astype(np.float64) - f64(zp3)[None, :, None, None])
        y = conv2d(x, w1, pads=(1, 1, 1, 1))
        y = conv2d(y, w2, bias)
        return conv_transpose2d(y, w3, bias3, (2, 2))
    return prog, reference


def pack_lsb_first(codes, bits):
    out = np.zeros((len(codes) * bits + 7) // 8, dtype=np.uint8)
    for i, c in enumerate(codes):
        for b in range(bits):
            if (int(c) >> b) & 1:
                bit = i * bits + b
                out[bit >> 3] |= 1 << (bit & 7)
    return out


@fixture("lut_palettized", (1, 3, 8, 9))
def lut_palettized(rng, ref):
    """iOS 16 constexpr_lut_to_dense with 1-, 2-, 4-, 6- and 8-bit indices (fp32 tables and an
    fp16 table in an fp16 convolution); constexpr_sparse_to_dense with a packed mask."""
    layers = []
    cin = 3
    for bits, cout in ((1, 4), (2, 5), (4, 4), (6, 6), (8, 4)):
        shape = (cout, cin, 3, 3)
        lut = rnd(rng, 1 << bits, scale=0.3)
        if bits == 4:
            lut = np.asarray(lut, dtype=np.float16)
        codes = rng.integers(0, 1 << bits, int(np.prod(shape)))
        layers.append((bits, shape, lut, codes))
        cin = cout
    sshape = (3, cin, 1, 1)
    mask_bits = rng.integers(0, 2, int(np.prod(sshape)))
    nonzero = rnd(rng, int(mask_bits.sum()))

    def prog(x):
        y = x
        for bits, shape, lut, codes in layers:
            w = mb.constexpr_lut_to_dense(indices=pack_lsb_first(codes, bits), lut=lut, shape=np.array(shape, dtype=np.uint32))
            if lut.dtype == np.float16:
                y = mb.cast(x=mb.conv(x=mb.cast(x=y, dtype="fp16"), weight=w, pad_type="same"), dtype="fp32")
            else:
                y = mb.conv(x=y, weight=w, pad_type="same")
            y = mb.tanh(x=y)
        w = mb.constexpr_sparse_to_dense(nonzero_data=nonzero, mask=pack_lsb_first(mask_bits, 1), shape=np.array(sshape, dtype=np.uint32))
        return mb.conv(x=y, weight=w)

    def reference(x):
        y = f64(x)
        for bits, shape, lut, codes in layers:
            y = np.tanh(conv2d(y, f64(lut)[codes].reshape(shape), pads=(1, 1, 1, 1)))
        dense = np.zeros(int(np.prod(sshape)))
        dense[mask_bits != 0] = nonzero
        return conv2d(y, dense.reshape(sshape))
    return prog, reference


@fixture("blockwise_ios18", (1, 4, 6, 7), target=ct.target.iOS18)
def blockwise_ios18(rng, ref):
    """iOS 18 compression: constexpr_blockwise_shift_scale with int4 data and block scales and
    offsets (blocks of 2 input channels), with uint8 data and scales only; the iOS 18
    constexpr_lut_to_dense with uint4 indices and one table per output-channel pair; the iOS
    18 constexpr_sparse_to_dense with a uint1 mask."""
    d1 = rng.integers(-8, 8, (6, 4, 3, 3))
    s1 = rng.uniform(0.01, 0.05, (6, 2, 1, 1)).astype(np.float32)
    o1 = rng.integers(-2, 3, (6, 2, 1, 1))
    d2 = rng.integers(0, 256, (4, 6, 1, 1)).astype(np.uint8)
    s2 = rng.uniform(0.001, 0.004, (4, 1, 1, 1)).astype(np.float32)
    idx = rng.integers(0, 16, (4, 4, 3, 3))
    lut = rnd(rng, 2, 1, 1, 1, 16, 1, scale=0.3)
    mask = rng.integers(0, 2, (2, 4, 1, 1))
    nonzero = rnd(rng, int(mask.sum()))

    def prog(x):
        w1 = mb.constexpr_blockwise_shift_scale(data=d1.astype(types.np_int4_dtype), scale=s1, offset=o1.astype(types.np_int4_dtype))
        w2 = mb.constexpr_blockwise_shift_scale(data=d2, scale=s2)
        w3 = mb.constexpr_lut_to_dense(indices=idx.astype(types.np_uint4_dtype), lut=lut)
        w4 = mb.constexpr_sparse_to_dense(nonzero_data=nonzero, mask=mask.astype(types.np_uint1_dtype))
        y = mb.silu(x=mb.conv(x=x, weight=w1, pad_type="same"))
        y = mb.conv(x=y, weight=w2)
        y = mb.conv(x=y, weight=w3, pad_type="same")
        return mb.conv(x=y, weight=w4)

    def reference(x):
        w1 = np.repeat(np.repeat(f64(s1), 1, 0), 2, 1) * (d1 - np.repeat(o1, 2, 1))
        w2 = f64(s2) * d2
        w3 = f64(lut)[np.repeat(np.arange(2), 2)[:, None, None, None], 0, 0, 0, idx, 0]
        dense = np.zeros(mask.size)
        dense[mask.reshape(-1) != 0] = nonzero
        y = conv2d(x, w1, pads=(1, 1, 1, 1))
        y = conv2d(y * sigmoid(y), w2)
        y = conv2d(y, w3, pads=(1, 1, 1, 1))
        return conv2d(y, dense.reshape(mask.shape))
    return prog, reference


@fixture("flexible_fp32", (1, 3, 9, 11), flexible=True)
def flexible(rng, ref):
    """A program whose input height and width are open: same padding (stride 1), a slice with
    a negative end and end masks, a half-pixel 2× bilinear upsample."""
    w, b = rnd(rng, 4, 3, 3, 3), rnd(rng, 4)

    def prog(x):
        y = mb.conv(x=x, weight=w, bias=b, pad_type="same")
        y = mb.slice_by_index(x=y, begin=[0, 1, 1, 0], end=[1, 3, -1, 0], end_mask=[True, False, False, True])
        return mb.upsample_bilinear(x=y, scale_factor_height=2.0, scale_factor_width=2.0, align_corners=False)

    def reference(x):
        y = conv2d(x, w, b, pads=(1, 1, 1, 1))[:, 1:3, 1:-1, :]
        return resize_bilinear(y, 2 * y.shape[2], 2 * y.shape[3], False)
    return prog, reference


# An op the importer must refuse, naming the op type, its output and the file.
def unsupported_prog(x):
    y = mb.conv(x=x, weight=np.ones((2, 3, 1, 1), dtype=np.float32))
    return mb.exp(x=y, name="exp_out")


# --- writing ----------------------------------------------------------------------------------

def op_types(package):
    from coremltools.proto import Model_pb2
    m = Model_pb2.Model()
    with open(os.path.join(package, "Data", "com.apple.CoreML", "model.mlmodel"), "rb") as f:
        m.ParseFromString(f.read())
    fn = m.mlProgram.functions["main"]
    return sorted({op.type for op in fn.block_specializations[fn.opset].operations})


def main():
    torch_checks()
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    index = []
    for seed, (name, shape, target, flexible, make) in enumerate(FIXTURES):
        rng = np.random.default_rng(1000 + seed)
        prog_fn, reference = make(rng, None)
        declared = shape[:2] + (get_new_symbol(), get_new_symbol()) if flexible else shape
        program = mb.program(input_specs=[mb.TensorSpec(shape=declared)], opset_version=target)(prog_fn)
        model = ct.convert(program, convert_to="mlprogram", minimum_deployment_target=target,
                           pass_pipeline=ct.PassPipeline.EMPTY)
        package = os.path.join(OUT, name + ".mlpackage")
        model.save(package)
        x = rng.standard_normal(shape).astype(np.float32)
        if name == "fp16":
            x = (rng.uniform(0, 255, shape)).astype(np.float32)
        y = np.asarray(reference(x), dtype=np.float64).astype(np.float32)
        x.tofile(os.path.join(OUT, name + ".input.f32"))
        y.tofile(os.path.join(OUT, name + ".expected.f32"))
        ops = op_types(package)
        index.append({"name": name, "input": list(shape), "output": list(y.shape), "ops": ops,
                      "declared": list(shape[:2]) + [-1, -1] if flexible else list(shape)})
        print(f"{name}: {list(shape)} -> {list(y.shape)}, ops {', '.join(ops)}")
    program = mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 4, 4))], opset_version=ct.target.iOS16)(unsupported_prog)
    ct.convert(program, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS16,
               pass_pipeline=ct.PassPipeline.EMPTY).save(os.path.join(OUT, "unsupported_exp.mlpackage"))
    with open(os.path.join(OUT, "fixtures.json"), "w") as f:
        json.dump({"generator": "scripts/mlprogram_fixtures.py", "coremltools": ct.__version__, "fixtures": index,
                   "unsupported": {"package": "unsupported_exp.mlpackage", "op": "exp", "output": "exp_out"}}, f, indent=1)
    total = sum(os.path.getsize(os.path.join(d, n)) for d, _, names in os.walk(OUT) for n in names)
    print(f"{len(index)} fixtures, {total} bytes in {OUT}")
    assert total < 2 * 1024 * 1024, "fixtures exceed 2 MB"


if __name__ == "__main__":
    sys.exit(main())
