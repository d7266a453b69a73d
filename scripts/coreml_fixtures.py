#!/usr/bin/env python3
"""Core ML NeuralNetwork fixtures for Vivify's Core ML importer (Tests/EngineTests).

    pip install coremltools numpy        # torch optional (cross-checks the reference)
    python3 scripts/coreml_fixtures.py [--out Tests/ModelFormatsTests/Fixtures/coreml] [--seed 20250101]

Builds small `.mlmodel` files with coremltools' NeuralNetworkBuilder (it writes NeuralNetwork
specs on Linux but cannot run them there), with seeded random weights, covering every layer
type and weight encoding the importer supports, and computes each model's output on a fixed
input with this script's own numpy evaluator of the spec. Writes, per fixture NAME:

    NAME.mlmodel          the model (protobuf, as coremltools saves it)
    NAME.input.f32        the input the graph takes, raw little-endian float32, CHW
                          (0-255 pixel values for image inputs: the scaler is in the model)
    NAME.output.f32       the evaluator's output, CHW
    manifest.json         shapes, layers covered, seed, versions, reference cross-checks
    style/                fast style transfer networks with Core ML custom layers and their
                          declarations, in fp32, fp16, 8-bit linear and 8-bit LUT weights
                          (scripts/coreml_style_fixtures.py says what and why)

The evaluator (`run_spec`) reads the *saved spec* with coremltools' protobuf classes and
follows the semantics written in mlmodel/format/NeuralNetwork.proto: padding and output
sizes, the upsample grid formulas of each linearUpsampleMode, the reorganizeData channel
orders (checked against the proto's worked example), BorderAmounts, WeightParams encodings
(floatValue, float16Value, rawValue fp32, n-bit linear / look-up-table quantization, MSB-first
as coremltools packs them). Its primitives are cross-checked against PyTorch (conv2d,
conv_transpose2d, interpolate, pixel_shuffle, pad, softmax, batch_norm) when torch imports;
the largest differences go into the manifest.

Two conventions the proto does not pin down and the evaluator assumes (as the importer does):
a deconvolution with `same` padding crops k - s from the full output split like a
convolution's same padding (floor half at the top/left for BOTTOM_RIGHT_HEAVY), and one with
an explicit `outputShape` keeps its top/left crop and crops or zero-extends (bias only) at the
bottom/right, as PyTorch's output_padding does (coremltools' own ML-to-NN backend writes
PyTorch transposed convolutions that way).
"""
import argparse
import json
import math
import os
import sys

import numpy as np

import coremltools
from coremltools.models import datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder
from coremltools.models.utils import save_spec
from coremltools.proto import Model_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from coreml_style_fixtures import CUSTOM_LAYERS, write_style_fixtures  # noqa: E402


# ---------------------------------------------------------------------------------------------
# WeightParams


def set_weights(wp, values, encoding="float"):
    """Writes `values` into a WeightParams as floatValue, float16Value or rawValue (fp32 LE);
    returns the values as the model holds them (fp16-rounded for float16)."""
    v = np.asarray(values, dtype=np.float64).ravel()
    wp.ClearField("floatValue")
    wp.ClearField("float16Value")
    wp.ClearField("rawValue")
    wp.ClearField("quantization")
    if encoding == "float":
        wp.floatValue.extend(v.astype(np.float32).tolist())
        return v.astype(np.float32).astype(np.float64)
    if encoding == "fp16":
        h = v.astype("<f2")
        wp.float16Value = h.tobytes()
        return h.astype(np.float64)
    if encoding == "raw":
        f = v.astype("<f4")
        wp.rawValue = f.tobytes()
        return f.astype(np.float64)
    raise ValueError(encoding)


def pack_bits(codes, nbits):
    """Packs unsigned codes MSB-first, nbits each (coremltools' _convert_array_to_nbit_quantized_bytes)."""
    bits = []
    for c in codes:
        for i in reversed(range(nbits)):
            bits.append((int(c) >> i) & 1)
    while len(bits) % 8:
        bits.append(0)
    out = bytearray()
    for k in range(0, len(bits), 8):
        byte = 0
        for b in bits[k:k + 8]:
            byte = byte << 1 | b
        out.append(byte)
    return bytes(out)


def set_linear_quantized(wp, codes, nbits, scale, bias):
    wp.ClearField("floatValue")
    wp.rawValue = pack_bits(codes, nbits)
    wp.quantization.numberOfBits = nbits
    wp.quantization.linearQuantization.scale.extend(list(scale))
    wp.quantization.linearQuantization.bias.extend(list(bias))


def set_lut_quantized(wp, codes, nbits, table):
    wp.ClearField("floatValue")
    wp.rawValue = pack_bits(codes, nbits)
    wp.quantization.numberOfBits = nbits
    wp.quantization.lookupTableQuantization.floatValue.extend(list(table))


def unpack_bits(data, nbits, count):
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))  # MSB first
    bits = bits[: count * nbits].reshape(count, nbits)
    return (bits * (1 << np.arange(nbits - 1, -1, -1))).sum(axis=1)


def wp_values(wp, count, channel_axis=None):
    """Decodes a WeightParams to float64; channel_axis = (outer, channels, inner) for
    per-channel linear quantization."""
    if len(wp.floatValue):
        v = np.array(wp.floatValue, dtype=np.float64)
    elif len(wp.float16Value):
        v = np.frombuffer(wp.float16Value, dtype="<f2").astype(np.float64)
    elif len(wp.rawValue) and wp.HasField("quantization"):
        q = wp.quantization
        codes = unpack_bits(wp.rawValue, q.numberOfBits, count)
        kind = q.WhichOneof("QuantizationType")
        if kind == "linearQuantization":
            s = np.array(q.linearQuantization.scale, dtype=np.float64)
            b = np.array(q.linearQuantization.bias, dtype=np.float64)
            outer, ch, inner = channel_axis or (1, 1, count)
            idx = (np.arange(count) // inner) % ch
            sv = s[idx] if len(s) > 1 else np.full(count, s[0])
            bv = (b[idx] if len(b) > 1 else np.full(count, b[0])) if len(b) else np.zeros(count)
            # Core ML computes in fp32.
            v = (codes.astype(np.float32) * sv.astype(np.float32) + bv.astype(np.float32)).astype(np.float64)
        else:
            v = np.array(q.lookupTableQuantization.floatValue, dtype=np.float32)[codes].astype(np.float64)
    elif len(wp.rawValue):
        v = np.frombuffer(wp.rawValue, dtype="<f4").astype(np.float64)
    else:
        v = np.zeros(0)
    assert v.size == count, (v.size, count)
    return v


# ---------------------------------------------------------------------------------------------
# numpy primitives (CHW, float64)


def conv2d(x, w, b, stride, dil, pads, groups):
    """w: [O, C/groups, kh, kw]; pads (top, left, bottom, right), zeros."""
    t, l, bt, r = pads
    xp = np.pad(x, ((0, 0), (t, bt), (l, r)))
    _, H, W = xp.shape
    O, kc, kh, kw = w.shape
    Ho = (H - (dil[0] * (kh - 1) + 1)) // stride[0] + 1
    Wo = (W - (dil[1] * (kw - 1) + 1)) // stride[1] + 1
    out = np.zeros((O, Ho, Wo))
    og = O // groups
    for o in range(O):
        g = o // og
        for c in range(kc):
            for i in range(kh):
                for j in range(kw):
                    y0, x0 = i * dil[0], j * dil[1]
                    patch = xp[g * kc + c, y0:y0 + stride[0] * (Ho - 1) + 1:stride[0], x0:x0 + stride[1] * (Wo - 1) + 1:stride[1]]
                    out[o] += w[o, c, i, j] * patch
    if b is not None:
        out += b[:, None, None]
    return out


def deconv_full(x, w, stride, groups):
    """w: [Cin, Cout/groups, kh, kw] (Core ML's deconvolution layout); the uncropped output."""
    C, H, W = x.shape
    _, og, kh, kw = w.shape
    icg = C // groups
    full = np.zeros((og * groups, (H - 1) * stride[0] + kh, (W - 1) * stride[1] + kw))
    for ci in range(C):
        g = ci // icg
        for o in range(og):
            for i in range(kh):
                for j in range(kw):
                    full[g * og + o, i:i + stride[0] * (H - 1) + 1:stride[0], j:j + stride[1] * (W - 1) + 1:stride[1]] += x[ci] * w[ci, o, i, j]
    return full


def split_same(total, top_left_heavy):
    small = total // 2
    return (total - small, small) if top_left_heavy else (small, total - small)


def reorganize(x, mode, r):
    C, H, W = x.shape
    if mode == 1:  # DEPTH_TO_SPACE (DCR)
        c = C // (r * r)
        return x.reshape(r, r, c, H, W).transpose(2, 3, 0, 4, 1).reshape(c, H * r, W * r)
    if mode == 2:  # PIXEL_SHUFFLE (CRD)
        c = C // (r * r)
        return x.reshape(c, r, r, H, W).transpose(0, 3, 1, 4, 2).reshape(c, H * r, W * r)
    # SPACE_TO_DEPTH: the inverse of DEPTH_TO_SPACE.
    return x.reshape(C, H // r, r, W // r, r).transpose(2, 4, 0, 1, 3).reshape(r * r * C, H // r, W // r)


def check_reorganize_against_proto_example():
    x = np.arange(1, 17, dtype=np.float64).reshape(8, 1, 2)
    d2s = reorganize(x, 1, 2)
    ps = reorganize(x, 2, 2)
    assert (d2s == np.array([[[1, 5, 2, 6], [9, 13, 10, 14]], [[3, 7, 4, 8], [11, 15, 12, 16]]])).all(), d2s
    assert (ps == np.array([[[1, 3, 2, 4], [5, 7, 6, 8]], [[9, 11, 10, 12], [13, 15, 14, 16]]])).all(), ps
    assert (reorganize(d2s, 0, 2) == x).all()


def pad(x, t, l, b, r, kind, value=0.0):
    widths = ((0, 0), (t, b), (l, r))
    if kind == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode="reflect" if kind == "reflection" else "edge")


def check_padding_against_proto_example():
    x = np.arange(1, 13, dtype=np.float64).reshape(1, 3, 4)
    refl = pad(x, 2, 2, 0, 0, "reflection")[0]
    repl = pad(x, 2, 2, 0, 0, "replication")[0]
    assert (refl[0] == [11, 10, 9, 10, 11, 12]).all() and (refl[2] == [3, 2, 1, 2, 3, 4]).all(), refl
    assert (repl[3] == [5, 5, 5, 6, 7, 8]).all() and (repl[0] == [1, 1, 1, 2, 3, 4]).all(), repl


def grid(n_in, n_out, lin_mode):
    """Sample points of the upsample layer's bilinear modes (NeuralNetwork.proto)."""
    i = np.arange(n_out, dtype=np.float64)
    if lin_mode == 1:  # ALIGN_CORNERS_TRUE
        spacing = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        g = i * spacing
    elif lin_mode == 2:  # ALIGN_CORNERS_FALSE
        spacing = n_in / n_out
        g = i * spacing + 0.5 * spacing - 0.5
    else:  # DEFAULT
        spacing = (n_in - n_in / n_out) / (n_out - 1) if n_out > 1 else 0.0
        g = i * spacing
    return np.minimum(n_in - 1, np.maximum(0, g))


def upsample(x, fh, fw, mode, lin_mode):
    C, H, W = x.shape
    Ho, Wo = int(math.floor(H * fh)), int(math.floor(W * fw))
    if mode == 0:
        rows = np.minimum(H - 1, (np.arange(Ho) / fh).astype(int))
        cols = np.minimum(W - 1, (np.arange(Wo) / fw).astype(int))
        return x[:, rows][:, :, cols]
    gy, gx = grid(H, Ho, lin_mode), grid(W, Wo, lin_mode)
    y0 = np.floor(gy).astype(int)
    x0 = np.floor(gx).astype(int)
    y1, x1 = np.minimum(y0 + 1, H - 1), np.minimum(x0 + 1, W - 1)
    ty, tx = (gy - y0)[:, None], (gx - x0)[None, :]
    top = x[:, y0][:, :, x0] * (1 - tx) + x[:, y0][:, :, x1] * tx
    bottom = x[:, y1][:, :, x0] * (1 - tx) + x[:, y1][:, :, x1] * tx
    return top * (1 - ty) + bottom * ty


def borders(amounts):
    e = list(amounts.borderAmounts)
    if not e:
        return 0, 0, 0, 0
    return e[0].startEdgeSize, e[1].startEdgeSize, e[0].endEdgeSize, e[1].endEdgeSize


# ---------------------------------------------------------------------------------------------
# The evaluator


def run_spec(spec, x):
    """Runs a NeuralNetwork spec (Model message) on x (CHW as the input feature takes it)."""
    kind = spec.WhichOneof("Type")
    nn = getattr(spec, kind)
    name = spec.description.input[0].name
    blobs = {}
    feature = spec.description.input[0].type
    for p in nn.preprocessing:
        if p.WhichOneof("preprocessor") == "scaler":
            s = p.scaler
            cs = feature.imageType.colorSpace
            if cs == 20:
                biases = [s.redBias, s.greenBias, s.blueBias]
            elif cs == 30:
                biases = [s.blueBias, s.greenBias, s.redBias]
            else:
                biases = [s.grayBias]
            x = x * np.float64(np.float32(s.channelScale)) + np.array(biases, dtype=np.float64)[:, None, None]
    blobs[name] = x
    for layer in nn.layers:
        t = layer.WhichOneof("layer")
        p = getattr(layer, t)
        ins = [blobs[i] for i in layer.input]
        out = layer.output[0]
        if t == "convolution":
            X = ins[0]
            kh, kw = list(p.kernelSize) or [3, 3]
            st = list(p.stride) or [1, 1]
            dil = list(p.dilationFactor) or [1, 1]
            g = p.nGroups or 1
            O, kc = p.outputChannels, p.kernelChannels
            H, W = X.shape[1:]
            bias = wp_values(p.bias, O) if p.hasBias else None
            if not p.isDeconvolution:
                w = wp_values(p.weights, O * kc * kh * kw, (1, O, kc * kh * kw)).reshape(O, kc, kh, kw)
                if p.WhichOneof("ConvolutionPaddingType") == "same":
                    tl = p.same.asymmetryMode == 1
                    ekh, ekw = dil[0] * (kh - 1) + 1, dil[1] * (kw - 1) + 1
                    th = max(0, (math.ceil(H / st[0]) - 1) * st[0] + ekh - H)
                    tw = max(0, (math.ceil(W / st[1]) - 1) * st[1] + ekw - W)
                    (t_, b_), (l_, r_) = split_same(th, tl), split_same(tw, tl)
                    pads = (t_, l_, b_, r_)
                else:
                    pads = borders(p.valid.paddingAmounts)
                blobs[out] = conv2d(X, w, bias, st, dil, pads, g)
            else:
                og = O // g
                w = wp_values(p.weights, kc * og * kh * kw, (kc, og, kh * kw)).reshape(kc, og, kh, kw)
                full = deconv_full(X, w, st, g)
                FH, FW = full.shape[1:]
                if p.WhichOneof("ConvolutionPaddingType") == "same":
                    tl = p.same.asymmetryMode == 1
                    top = split_same(max(0, kh - st[0]), tl)[0]
                    left = split_same(max(0, kw - st[1]), tl)[0]
                    Ho, Wo = H * st[0], W * st[1]
                else:
                    top, left, bottom, right = borders(p.valid.paddingAmounts)
                    Ho, Wo = FH - top - bottom, FW - left - right
                if len(p.outputShape) == 2:
                    Ho, Wo = p.outputShape
                y = np.zeros((O, Ho, Wo))
                part = full[:, top:top + Ho, left:left + Wo]
                y[:, :part.shape[1], :part.shape[2]] = part
                if bias is not None:
                    y += bias[:, None, None]
                blobs[out] = y
        elif t == "activation":
            a = p.WhichOneof("NonlinearityType")
            X = ins[0]
            q = getattr(p, a)
            if a == "linear":
                y = np.float32(q.alpha) * X + np.float32(q.beta)
            elif a == "ReLU":
                y = np.maximum(X, 0)
            elif a == "leakyReLU":
                y = np.where(X >= 0, X, np.float32(q.alpha) * X)
            elif a == "PReLU":
                s = wp_values(q.alpha, len(q.alpha.floatValue) or len(q.alpha.float16Value) // 2)
                y = np.where(X >= 0, X, s.reshape(-1, 1, 1) * X)
            elif a == "tanh":
                y = np.tanh(X)
            elif a == "scaledTanh":
                y = np.float32(q.alpha) * np.tanh(np.float32(q.beta) * X)
            elif a == "sigmoid":
                y = 1 / (1 + np.exp(-X))
            elif a == "sigmoidHard":
                y = np.clip(np.float32(q.alpha) * X + np.float32(q.beta), 0, 1)
            else:
                raise ValueError(a)
            blobs[out] = y
        elif t == "batchnorm":
            n = p.channels
            eps = np.float32(p.epsilon or 1e-5)
            gm, bt = wp_values(p.gamma, n), wp_values(p.beta, n)
            if p.computeMeanVar:
                # Batch 1: the statistics over the batch are each channel's own (instance
                # normalisation either way), the variance biased.
                mu, var = ins[0].mean(axis=(1, 2)), ins[0].var(axis=(1, 2))
            else:
                mu, var = wp_values(p.mean, n), wp_values(p.variance, n)
            blobs[out] = (ins[0] - mu[:, None, None]) / np.sqrt(var + eps)[:, None, None] * gm[:, None, None] + bt[:, None, None]
        elif t == "softmax":
            X = ins[0]
            e = np.exp(X - X.max(axis=0, keepdims=True))
            blobs[out] = e / e.sum(axis=0, keepdims=True)
        elif t == "upsample":
            if len(p.fractionalScalingFactor):
                fh, fw = p.fractionalScalingFactor
            else:
                fh, fw = list(p.scalingFactor) or [1, 1]
            blobs[out] = upsample(ins[0], fh, fw, p.mode, p.linearUpsampleMode)
        elif t == "reorganizeData":
            blobs[out] = reorganize(ins[0], p.mode, p.blockSize)
        elif t == "padding":
            top, left, bottom, right = borders(p.paddingAmounts)
            k = p.WhichOneof("PaddingType")
            blobs[out] = pad(ins[0], top, left, bottom, right, k, p.constant.value if k == "constant" else 0.0)
        elif t == "crop":
            X = ins[0]
            if len(ins) == 1:
                top, left, bottom, right = borders(p.cropAmounts)
                blobs[out] = X[:, top:X.shape[1] - bottom, left:X.shape[2] - right]
            else:
                oy, ox = p.offset
                ref = ins[1]
                blobs[out] = X[:, oy:oy + ref.shape[1], ox:ox + ref.shape[2]]
        elif t == "concat":
            blobs[out] = np.concatenate(ins, axis=0)
        elif t in ("add", "multiply", "average", "max", "min"):
            if len(ins) == 1 and t == "add":
                y = ins[0] + np.float32(p.alpha)
            elif len(ins) == 1 and t == "multiply":
                y = ins[0] * np.float32(p.alpha)
            else:
                y = ins[0]
                for z in ins[1:]:
                    y = {"add": np.add, "average": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum}[t](y, z)
                if t == "average":
                    y = y / len(ins)
            blobs[out] = y
        elif t == "loadConstant":
            shape = list(p.shape)
            blobs[out] = wp_values(p.data, int(np.prod(shape))).reshape(shape)
        elif t == "scale":
            s = wp_values(p.scale, int(np.prod(p.shapeScale))).reshape(-1, 1, 1)
            y = ins[0] * s
            if p.hasBias:
                y = y + wp_values(p.bias, int(np.prod(p.shapeBias))).reshape(-1, 1, 1)
            blobs[out] = y
        elif t == "bias":
            blobs[out] = ins[0] + wp_values(p.bias, int(np.prod(p.shape))).reshape(-1, 1, 1)
        elif t == "innerProduct":
            X = ins[0].reshape(-1)
            w = wp_values(p.weights, p.inputChannels * p.outputChannels, (1, p.outputChannels, p.inputChannels))
            y = w.reshape(p.outputChannels, p.inputChannels) @ X
            if p.hasBias:
                y = y + wp_values(p.bias, p.outputChannels)
            blobs[out] = y.reshape(-1, 1, 1)
        elif t == "pooling":
            assert p.globalPooling and p.type == 1
            blobs[out] = ins[0].mean(axis=(1, 2), keepdims=True)
        elif t == "clip":
            blobs[out] = np.clip(ins[0], p.minVal, p.maxVal)
        elif t == "custom":
            # What the declaration beside the model says the class computes (coreml_style_fixtures).
            blobs[out] = CUSTOM_LAYERS[p.className](ins[0], p)
        else:
            raise ValueError("no reference for layer type " + t)
    if kind == "neuralNetworkClassifier":
        return blobs[nn.labelProbabilityLayerName or nn.layers[-1].output[0]]
    return blobs[spec.description.output[0].name]


# ---------------------------------------------------------------------------------------------
# Cross-checks of the primitives against PyTorch


def torch_crosscheck(rng):
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:  # noqa: BLE001 - torch is optional
        return {"skipped": "torch not importable: %s" % e}
    T = lambda a: torch.from_numpy(np.ascontiguousarray(a))[None]  # noqa: E731
    worst = {}

    def note(what, a, b):
        worst[what] = max(worst.get(what, 0.0), float(np.abs(a - b).max()))

    x = rng.uniform(-1, 1, (4, 9, 11))
    w = rng.uniform(-1, 1, (6, 2, 3, 3))
    b = rng.uniform(-1, 1, 6)
    ours = conv2d(x, w, b, (2, 1), (1, 2), (1, 2, 1, 2), 2)
    ref = F.conv2d(T(x), torch.from_numpy(w), torch.from_numpy(b), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2)[0].numpy()
    note("conv2d", ours, ref)
    wd = rng.uniform(-1, 1, (4, 3, 4, 3))
    full = deconv_full(x, wd, (2, 3), 2)
    ref = F.conv_transpose2d(T(x), torch.from_numpy(wd), stride=(2, 3), groups=2)[0].numpy()
    note("conv_transpose2d", full, ref)
    ref = F.conv_transpose2d(T(x), torch.from_numpy(wd), stride=(2, 3), padding=(1, 1), output_padding=(1, 0), groups=2)[0].numpy()
    mine = np.zeros_like(ref)
    part = full[:, 1:1 + ref.shape[1], 1:1 + ref.shape[2]]
    mine[:, :part.shape[1], :part.shape[2]] = part
    note("conv_transpose2d output_padding", mine, ref)
    for s in [(2, 2), (3, 2)]:
        note("upsample nearest", upsample(x, s[0], s[1], 0, 0), F.interpolate(T(x), scale_factor=s, mode="nearest")[0].numpy())
        note("upsample align_corners true", upsample(x, s[0], s[1], 1, 1),
             F.interpolate(T(x), size=(9 * s[0], 11 * s[1]), mode="bilinear", align_corners=True)[0].numpy())
        note("upsample align_corners false", upsample(x, s[0], s[1], 1, 2),
             F.interpolate(T(x), scale_factor=s, mode="bilinear", align_corners=False)[0].numpy())
    note("pixel_shuffle (PIXEL_SHUFFLE)", reorganize(np.tile(x, (4, 1, 1))[:16], 2, 2), F.pixel_shuffle(T(np.tile(x, (4, 1, 1))[:16]), 2)[0].numpy())
    note("pad reflect", pad(x, 1, 2, 3, 1, "reflection"), F.pad(T(x), (2, 1, 1, 3), mode="reflect")[0].numpy())
    note("pad replicate", pad(x, 1, 2, 3, 1, "replication"), F.pad(T(x), (2, 1, 1, 3), mode="replicate")[0].numpy())
    e = np.exp(x - x.max(axis=0, keepdims=True))
    note("softmax", e / e.sum(axis=0, keepdims=True), torch.softmax(T(x), dim=1)[0].numpy())
    return {k: "%.3g" % v for k, v in worst.items()}


# ---------------------------------------------------------------------------------------------
# The fixtures


def rand(rng, shape, fan_in=None):
    scale = 1.0 / math.sqrt(fan_in) if fan_in else 1.0
    return rng.uniform(-1, 1, shape) * scale


def conv_layer(builder, rng, name, inp, out, cin, cout, k, stride=(1, 1), dil=(1, 1), groups=1, border="valid",
               pads=(0, 0, 0, 0), asym="BOTTOM_RIGHT_HEAVY", deconv=False, output_shape=None, encoding="float", bias=True):
    kh, kw = k
    kc = cin if deconv else cin // groups
    wshape = (kc, cout // groups, kh, kw) if deconv else (cout, kc, kh, kw)
    w = rand(rng, wshape, kc * kh * kw)
    b = rand(rng, cout) * 0.5 if bias else None
    # The builder wants (kh, kw, kc, out[/groups]); the values are rewritten below anyway.
    wb = w.transpose(2, 3, 0, 1) if deconv else w.transpose(2, 3, 1, 0)
    builder.add_convolution(
        name=name, kernel_channels=kc, output_channels=cout, height=kh, width=kw, stride_height=stride[0],
        stride_width=stride[1], border_mode=border, groups=groups, W=wb, b=b, has_bias=bias, is_deconv=deconv,
        output_shape=output_shape, input_name=inp, output_name=out, dilation_factors=list(dil),
        padding_top=pads[0], padding_left=pads[1], padding_bottom=pads[2], padding_right=pads[3],
        same_padding_asymmetry_mode=asym)
    layer = builder.nn_spec.layers[-1]
    set_weights(layer.convolution.weights, w, encoding)
    if bias:
        set_weights(layer.convolution.bias, b, "float")
    return layer


def fixture_conv_image_bgr(rng):
    """BGR image input with scaler; valid explicit (asymmetric) padding, fp32; dilated grouped same conv, fp16;
    PReLU; strided same conv (top-left heavy), rawValue fp32; leaky ReLU; sigmoid."""
    H, W = 12, 10
    b = NeuralNetworkBuilder([("image", datatypes.Array(3, H, W))], [("out", datatypes.Array(4, 6, 5))])
    conv_layer(b, rng, "conv1", "image", "c1", 3, 8, (3, 3), border="valid", pads=(1, 0, 1, 2))
    b.add_activation("lrelu1", "LEAKYRELU", "c1", "a1", params=[0.1])
    conv_layer(b, rng, "conv2", "a1", "c2", 8, 6, (3, 3), dil=(2, 2), groups=2, border="same", encoding="fp16")
    b.add_activation("prelu2", "PRELU", "c2", "a2", params=rand(rng, 6) * 0.5)
    conv_layer(b, rng, "conv3", "a2", "c3", 6, 4, (4, 3), stride=(2, 2), border="same", asym="TOP_LEFT_HEAVY", encoding="raw")
    b.add_activation("sig3", "SIGMOID", "c3", "out")
    b.set_pre_processing_parameters(image_input_names=["image"], is_bgr=True, blue_bias=-0.5, green_bias=-0.25,
                                    red_bias=0.125, image_scale=1 / 255.0)
    x = np.floor(rng.uniform(0, 256, (3, H, W)))
    return b.spec, x, ["image BGR", "scaler", "convolution valid explicit", "convolution same dilated grouped",
                       "convolution strided same TOP_LEFT_HEAVY", "fp32 floatValue", "fp16 float16Value",
                       "rawValue fp32", "leakyReLU", "PReLU", "sigmoid"]


def fixture_gray_deconv(rng):
    """Grayscale image input with scaler; same conv; ReLU; deconvolutions: valid with crop (fp16), grouped
    same, explicit outputShape; tanh; linear."""
    H, W = 9, 11
    b = NeuralNetworkBuilder([("gray", datatypes.Array(1, H, W))], [("out", None)])
    conv_layer(b, rng, "conv1", "gray", "c1", 1, 6, (3, 3), border="same")
    b.add_activation("relu1", "RELU", "c1", "a1")
    conv_layer(b, rng, "up1", "a1", "d1", 6, 4, (4, 4), stride=(2, 2), deconv=True, border="valid", pads=(1, 1, 1, 1), encoding="fp16")
    b.add_activation("tanh1", "TANH", "d1", "a2")
    # 9x11 -> up1 (kernel 4, stride 2, crop 1 each side) -> 18x22 -> up2 (same, stride 2, kernel 3:
    # k - s = 1, so 0 rows cropped at the top and 1 at the bottom) -> 36x44
    conv_layer(b, rng, "up2", "a2", "d2", 4, 4, (3, 3), stride=(2, 2), groups=2, deconv=True, border="same")
    b.add_activation("lin2", "LINEAR", "d2", "a3", params=[0.5, 0.1])
    # up3: kernel 3, stride 1, valid crop (top 1, right 1): full 38x46 -> 37x45; outputShape 38x44 keeps
    # the top/left crop, extends the bottom by one row (bias only) and crops one more column.
    conv_layer(b, rng, "up3", "a3", "out", 4, 3, (3, 3), stride=(1, 1), deconv=True, border="valid",
               pads=(1, 0, 0, 1), output_shape=(38, 44))
    b.set_pre_processing_parameters(image_input_names=["gray"], gray_bias=-0.5, image_scale=1 / 255.0)
    x = np.floor(rng.uniform(0, 256, (1, H, W)))
    return b.spec, x, ["image GRAYSCALE", "scaler grayBias", "convolution same", "ReLU", "deconvolution valid crop",
                       "deconvolution same grouped", "deconvolution outputShape", "tanh", "linear", "fp16 float16Value"]


def fixture_upsample(rng):
    """Upsample by (2, 3): nearest, bilinear DEFAULT, ALIGN_CORNERS_TRUE, ALIGN_CORNERS_FALSE; concat."""
    C, H, W = 3, 5, 7
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    b.add_upsample("nn", 2, 3, "x", "u0", mode="NN")
    b.add_upsample("bl_default", 2, 3, "x", "u1", mode="BILINEAR", linear_upsample_mode="DEFAULT")
    b.add_upsample("bl_true", 2, 3, "x", "u2", mode="BILINEAR", linear_upsample_mode="ALIGN_CORNERS_TRUE")
    b.add_upsample("bl_false", 2, 3, "x", "u3", mode="BILINEAR", linear_upsample_mode="ALIGN_CORNERS_FALSE")
    b.add_elementwise("cat", ["u0", "u1", "u2", "u3"], "out", mode="CONCAT")
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["upsample NN", "upsample BILINEAR DEFAULT",
                                                    "upsample ALIGN_CORNERS_TRUE", "upsample ALIGN_CORNERS_FALSE", "concat"]


def fixture_upsample_fractional(rng):
    """Fractional bilinear upsampling (1.5 x 2.5), both align-corners modes; concat."""
    C, H, W = 2, 6, 4
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    b.add_upsample("frac_true", 1.5, 2.5, "x", "u0", mode="BILINEAR", linear_upsample_mode="ALIGN_CORNERS_TRUE")
    b.add_upsample("frac_false", 1.5, 2.5, "x", "u1", mode="BILINEAR", linear_upsample_mode="ALIGN_CORNERS_FALSE")
    b.add_elementwise("cat", ["u0", "u1"], "out", mode="CONCAT")
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["upsample fractionalScalingFactor ALIGN_CORNERS_TRUE",
                                                    "upsample fractionalScalingFactor ALIGN_CORNERS_FALSE"]


def fixture_reorganize(rng):
    """DEPTH_TO_SPACE (DCR) and PIXEL_SHUFFLE (CRD) of the same 8 channels, concatenated, then SPACE_TO_DEPTH."""
    C, H, W = 8, 3, 5
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    b.add_reorganize_data("d2s", "x", "r0", mode="DEPTH_TO_SPACE", block_size=2)
    b.add_reorganize_data("ps", "x", "r1", mode="PIXEL_SHUFFLE", block_size=2)
    b.add_elementwise("cat", ["r0", "r1"], "r2", mode="CONCAT")
    b.add_reorganize_data("s2d", "r2", "out", mode="SPACE_TO_DEPTH", block_size=2)
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["reorganizeData DEPTH_TO_SPACE", "reorganizeData PIXEL_SHUFFLE",
                                                    "reorganizeData SPACE_TO_DEPTH"]


def fixture_pad_crop(rng):
    """Padding constant / reflection / replication; crop by amounts; two-input crop with offset; concat."""
    C, H, W = 3, 6, 7
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    b.add_padding("pad_const", left=2, right=1, top=1, bottom=2, value=0.75, input_name="x", output_name="p0", padding_type="constant")
    b.add_padding("pad_reflect", left=1, right=2, top=2, bottom=1, input_name="x", output_name="p1", padding_type="reflection")
    b.add_padding("pad_replicate", left=3, right=0, top=0, bottom=3, input_name="x", output_name="p2", padding_type="replication")
    b.add_elementwise("cat1", ["p0", "p1", "p2"], "p", mode="CONCAT")          # 9 x 9 x 10
    b.add_crop("crop_amounts", left=2, right=1, top=1, bottom=2, offset=[0, 0], input_names=["p"], output_name="k0")  # 9 x 6 x 7
    b.add_crop("crop_like", left=0, right=0, top=0, bottom=0, offset=[2, 1], input_names=["p", "x"], output_name="k1")  # 9 x 6 x 7
    b.add_elementwise("cat2", ["k0", "k1"], "out", mode="CONCAT")
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["padding constant", "padding reflection", "padding replication",
                                                    "crop cropAmounts", "crop two inputs offset", "concat"]


def fixture_elementwise(rng):
    """add (2, 3 inputs, alpha), multiply (2 inputs, broadcast C x 1 x 1, alpha), average, max, min, loadConstant
    folded into add and multiply, scale [C] + bias, scale [1] + bias [1], bias [C] and [1], batchnorm, linear,
    clip, softmax, global average pooling."""
    C, H, W = 4, 5, 6
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    conv_layer(b, rng, "mix", "x", "a", C, C, (1, 1))
    b.add_elementwise("add2", ["x", "a"], "s2", mode="ADD")
    b.add_elementwise("add3", ["x", "a", "s2"], "s3", mode="ADD")
    b.add_elementwise("add_alpha", ["s3"], "s4", mode="ADD", alpha=0.3)
    b.add_pooling("gap", 1, 1, 1, 1, "AVERAGE", "VALID", "x", "g", is_global=True)
    b.add_elementwise("mul_broadcast", ["s4", "g"], "m1", mode="MULTIPLY")
    b.add_elementwise("mul_alpha", ["m1"], "m2", mode="MULTIPLY", alpha=-0.7)
    b.add_elementwise("avg", ["x", "m2", "a"], "v", mode="AVE")
    b.add_elementwise("max", ["v", "a"], "mx", mode="MAX")
    b.add_elementwise("min", ["mx", "s2"], "mn", mode="MIN")
    b.add_load_constant("const_c", "k_c", rand(rng, C), [C, 1, 1])
    b.add_elementwise("add_const", ["mn", "k_c"], "e1", mode="ADD")
    b.add_load_constant("const_1", "k_1", np.array([1.5]), [1, 1, 1])
    b.add_elementwise("mul_const", ["k_1", "e1"], "e2", mode="MULTIPLY")
    b.add_scale("scale_c", rand(rng, C), rand(rng, C), True, "e2", "e3", shape_scale=[C], shape_bias=[C])
    b.add_scale("scale_1", np.array([0.8]), np.array([-0.2]), True, "e3", "e4", shape_scale=[1], shape_bias=[1])
    b.add_bias("bias_c", rand(rng, C), "e4", "e5", shape_bias=[C])
    b.add_bias("bias_1", np.array([0.05]), "e5", "e6", shape_bias=[1])
    b.add_batchnorm("bn", C, rand(rng, C) + 1.5, rand(rng, C), rand(rng, C), rng.uniform(0.5, 2, C), "e6", "e7", epsilon=1e-3)
    b.add_activation("lin", "LINEAR", "e7", "e8", params=[1.25, -0.1])
    b.add_clip("clip", "e8", "e9", min_value=-1.5, max_value=1.25)
    b.add_softmax("softmax", "e9", "out")
    return b.spec, rng.uniform(-1, 1, (C, H, W)), [
        "add 2 inputs", "add 3 inputs", "add alpha", "multiply broadcast", "multiply alpha", "average", "max", "min",
        "loadConstant folded into add", "loadConstant folded into multiply", "scale [C] with bias", "scale [1] with bias",
        "bias [C]", "bias [1]", "batchnorm", "linear", "clip", "softmax", "pooling global average"]


def fixture_inner_product(rng):
    """Convolution, innerProduct fp32 with bias, ReLU, innerProduct fp16, scaledTanh, sigmoidHard."""
    C, H, W = 3, 4, 4
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    conv_layer(b, rng, "conv", "x", "c", C, 4, (3, 3))                          # 4 x 2 x 2
    w1, b1 = rand(rng, (10, 16), 16), rand(rng, 10) * 0.1
    b.add_inner_product("fc1", w1, b1, 16, 10, True, "c", "f1")
    b.add_activation("relu", "RELU", "f1", "f1r")
    w2 = rand(rng, (5, 10), 10)
    b.add_inner_product("fc2", w2, None, 10, 5, False, "f1r", "f2")
    set_weights(b.nn_spec.layers[-1].innerProduct.weights, w2, "fp16")
    b.add_activation("stanh", "SCALED_TANH", "f2", "f3", params=[1.7, 0.6])
    b.add_activation("hsig", "SIGMOID_HARD", "f3", "out", params=[0.3, 0.4])
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["innerProduct fp32 bias", "innerProduct fp16", "scaledTanh", "sigmoidHard"]


def fixture_quantized(rng):
    """Convolutions with 8-bit per-channel linear, 4-bit look-up-table and 3-bit linear quantized weights;
    an innerProduct with 2-bit look-up-table weights."""
    C, H, W = 3, 6, 6
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("out", None)])
    l1 = conv_layer(b, rng, "q8", "x", "a", C, 5, (3, 3))
    n1 = 5 * C * 9
    set_linear_quantized(l1.convolution.weights, rng.integers(0, 256, n1), 8, rng.uniform(0.001, 0.01, 5), rng.uniform(-0.5, 0.5, 5))
    l2 = conv_layer(b, rng, "lut4", "a", "b", 5, 4, (3, 3), border="same")
    set_lut_quantized(l2.convolution.weights, rng.integers(0, 16, 4 * 5 * 9), 4, rng.uniform(-0.3, 0.3, 16))
    l3 = conv_layer(b, rng, "q3_deconv", "b", "c", 4, 2, (2, 2), stride=(2, 2), deconv=True)
    set_linear_quantized(l3.convolution.weights, rng.integers(0, 8, 4 * 2 * 4), 3, rng.uniform(0.05, 0.1, 2), [-0.2])
    b.add_pooling("gap", 1, 1, 1, 1, "AVERAGE", "VALID", "c", "g", is_global=True)
    wq = rand(rng, (3, 2))
    b.add_inner_product("lut2_fc", wq, None, 2, 3, False, "g", "out")
    set_lut_quantized(b.nn_spec.layers[-1].innerProduct.weights, rng.integers(0, 4, 6), 2, [-1.0, -0.25, 0.5, 2.0])
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["quantized 8-bit linear per channel", "quantized 4-bit look-up table",
                                                    "quantized 3-bit linear (deconvolution)", "quantized 2-bit look-up table"]


def fixture_classifier(rng):
    """A NeuralNetworkClassifier: the graph ends at the probability blob feeding the labels."""
    C, H, W = 3, 8, 8
    b = NeuralNetworkBuilder([("x", datatypes.Array(C, H, W))], [("probs", None)], mode="classifier")
    conv_layer(b, rng, "conv", "x", "c", C, 6, (3, 3), stride=(2, 2), border="same")
    b.add_activation("relu", "RELU", "c", "r")
    b.add_pooling("gap", 1, 1, 1, 1, "AVERAGE", "VALID", "r", "g", is_global=True)
    b.add_inner_product("fc", rand(rng, (4, 6), 6), rand(rng, 4), 6, 4, True, "g", "logits")
    b.add_softmax("softmax", "logits", "probs")
    b.set_class_labels(["cat", "dog", "bird", "fish"], predicted_feature_name="label", prediction_blob="probs")
    return b.spec, rng.uniform(-1, 1, (C, H, W)), ["neuralNetworkClassifier", "pooling global average",
                                                    "convolution strided same BOTTOM_RIGHT_HEAVY"]


FIXTURES = [
    ("conv_image_bgr", fixture_conv_image_bgr),
    ("gray_deconv", fixture_gray_deconv),
    ("upsample", fixture_upsample),
    ("upsample_fractional", fixture_upsample_fractional),
    ("reorganize", fixture_reorganize),
    ("pad_crop", fixture_pad_crop),
    ("elementwise", fixture_elementwise),
    ("inner_product", fixture_inner_product),
    ("quantized", fixture_quantized),
    ("classifier", fixture_classifier),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "Tests", "ModelFormatsTests", "Fixtures", "coreml"))
    ap.add_argument("--seed", type=int, default=20250101)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    check_reorganize_against_proto_example()
    check_padding_against_proto_example()
    entries = []
    for k, (name, make) in enumerate(FIXTURES):
        rng = np.random.default_rng(args.seed + k)
        spec, x, covers = make(rng)
        path = os.path.join(args.out, name + ".mlmodel")
        save_spec(spec, path)
        # Evaluate what was saved, read back with the official protobuf classes.
        saved = Model_pb2.Model()
        with open(path, "rb") as f:
            saved.ParseFromString(f.read())
        x32 = x.astype(np.float32)
        y = run_spec(saved, x32.astype(np.float64)).astype(np.float32)
        x32.astype("<f4").tofile(os.path.join(args.out, name + ".input.f32"))
        y.astype("<f4").tofile(os.path.join(args.out, name + ".output.f32"))
        feature = saved.description.input[0]
        entries.append({
            "name": name,
            "model": name + ".mlmodel",
            "input": name + ".input.f32",
            "output": name + ".output.f32",
            "input_name": feature.name,
            "input_is_image": feature.type.WhichOneof("Type") == "imageType",
            "input_shape": list(x.shape),
            "output_shape": list(y.shape),
            "spec_version": saved.specificationVersion,
            "model_type": saved.WhichOneof("Type"),
            "covers": covers,
        })
        print("%-22s spec %d  in %-12s out %-14s %s" % (name, saved.specificationVersion, "x".join(map(str, x.shape)),
                                                       "x".join(map(str, y.shape)), ", ".join(covers)))
    def save(spec, path):
        save_spec(spec, path)
        saved = Model_pb2.Model()
        with open(path, "rb") as f:
            saved.ParseFromString(f.read())
        return saved

    write_style_fixtures(args.out, args.seed, run_spec, save)
    cross = torch_crosscheck(np.random.default_rng(args.seed))
    manifest = {
        "generator": "scripts/coreml_fixtures.py",
        "seed": args.seed,
        "coremltools": coremltools.__version__,
        "numpy": np.__version__,
        "tolerance": 1e-4,
        "reference": "numpy evaluator of the saved spec (float64, output rounded to float32)",
        "torch_crosscheck_max_abs_diff": cross,
        "fixtures": entries,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(args.out, n)) for n in os.listdir(args.out))
    print("torch cross-check:", cross)
    print("wrote %d fixtures, %d bytes, to %s" % (len(entries), total, os.path.normpath(args.out)))


if __name__ == "__main__":
    sys.exit(main())
