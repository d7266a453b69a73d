"""Chapter-shaped fast style transfer fixtures with Core ML custom layers (issue 32).

Run through `scripts/coreml_fixtures.py` (which calls `write_style_fixtures`); writes into
`<out>/style/`:

    style_fp32.mlmodel, style_fp16.mlmodel, style_linear8.mlmodel, style_lut8.mlmodel
                          the same network with fp32, fp16, 8-bit linear and 8-bit look-up-table
                          weights (coremltools' own quantizer; the table from a seeded 1-D
                          k-means here, as coremltools' 'kmeans' mode needs the kmeans1d package)
    style_*.layers.json   the custom-layer declaration beside each model (the same text)
    style.input.f32       the input: 0-255 RGB pixels, CHW, 3x40x40
    style_*.output.f32    the numpy evaluator's output of each saved model, CHW
    style_bn.*            the same network with inference batch norm in place of instance norm
                          (fp32), which has no whole-picture statistics and so tiles exactly
    params.*              a custom layer with its own weights and parameters (channel scale and
                          bias from weights[0] and weights[1], an expression with a parameter)
    manifest.json         shapes, seeds, tolerances, torch cross-check

The network follows the Keras model of "Creating Art with Style Transfer" (Machine Learning
with Core ML, chapter 6): padding 40 then a 9x9 convolution, two stride-2 convolutions,
residual blocks of two valid 3x3 convolutions whose skip is cropped by the Lambda layer
`res_crop` (x[:, 2:-2, 2:-2], class ResCropBlockLambda), two 2x nearest upsamplings with 3x3
convolutions, a 9x9 convolution, tanh, and the Lambda layer `rescale_output` ((x + 1) * 127.5,
class RescaleOutputLambda). Scaled down: 8/16 channels, 2 residual blocks, so the padding is
2 blocks x 4 rows lost x 4 (the quarter resolution) / 2 sides = 16 and a 40x40 input comes out
40x40 (the chapter's 320 + 2*40 = 400 -> 100 -> 5 blocks -> 80 -> 320). Reflection padding
and instance norm as in Johnson et al.'s network (the issue's shape), an RGB image input
scaled to [-1, 1] by the model's scaler.
"""
import copy
import json
import math
import os

import numpy as np

import coremltools as ct
from coremltools.models import datatypes
from coremltools.models.neural_network import NeuralNetworkBuilder
from coremltools.models.neural_network import quantization_utils as qu
from coremltools.models.utils import save_spec
from coremltools.proto import FeatureTypes_pb2, Model_pb2

SIDE = 40
BLOCKS = 2
PAD = BLOCKS * 4 * 4 // 2  # 16

DECLARATIONS = {
    "customLayers": {
        "ResCropBlockLambda": {"ops": [{"op": "crop", "all": 2}]},
        "RescaleOutputLambda": {"ops": [{"op": "expression", "expression": "(x + 1) * 127.5"}]},
    }
}

PARAMS_DECLARATIONS = {
    "customLayers": {
        "ChannelGainLambda": {
            "ops": [
                {"op": "scaleBias", "scale": {"weights": 0}, "bias": {"weights": 1}},
                {"op": "expression", "expression": "clamp(x * gain + offset, -limit, limit)"},
                {"op": "pad", "all": {"param": "border"}, "mode": "replicate"},
            ]
        }
    }
}


def res_crop(x, _):
    return x[:, 2:-2, 2:-2]


def rescale_output(x, _):
    return (x + 1) * 127.5


def channel_gain(x, p):
    from coreml_fixtures import wp_values  # noqa: E402 - the evaluator's weight decoder
    c = x.shape[0]
    s, b = wp_values(p.weights[0], c), wp_values(p.weights[1], c)
    y = x * s[:, None, None] + b[:, None, None]
    par = p.parameters
    gain, offset, limit = par["gain"].doubleValue, par["offset"].doubleValue, par["limit"].doubleValue
    y = np.clip(y * np.float32(gain) + np.float32(offset), -np.float32(limit), np.float32(limit))
    n = par["border"].intValue
    return np.pad(y, ((0, 0), (n, n), (n, n)), mode="edge")


CUSTOM_LAYERS = {"ResCropBlockLambda": res_crop, "RescaleOutputLambda": rescale_output, "ChannelGainLambda": channel_gain}


def custom_layer(builder, name, inp, out, class_name, description):
    builder.add_custom(name, [inp], [out])
    p = builder.nn_spec.layers[-1].custom
    p.className = class_name
    p.description = description
    return p


def style_spec(rng, norm="instance"):
    """The network as a NeuralNetwork spec with fp32 weights; returns the spec."""
    from coreml_fixtures import conv_layer, rand  # noqa: E402

    b = NeuralNetworkBuilder([("image", datatypes.Array(3, SIDE, SIDE))], [("output", None)])
    # An RGB image input, scaled to [-1, 1] by the scaler (as the chapter's Vision request feeds it).
    b.spec.description.input[0].type.imageType.width = SIDE
    b.spec.description.input[0].type.imageType.height = SIDE
    b.spec.description.input[0].type.imageType.colorSpace = FeatureTypes_pb2.ImageFeatureType.RGB
    b.set_pre_processing_parameters(image_input_names=["image"], image_scale=1 / 127.5, red_bias=-1, green_bias=-1, blue_bias=-1)
    b.spec.description.metadata.shortDescription = "Fast style transfer shaped as the chapter's (seeded random weights)"

    counter = [0]

    def norm_relu(inp, channels, relu=True):
        counter[0] += 1
        k = counter[0]
        out = "n%d" % k
        gamma, beta = 1 + 0.2 * rand(rng, channels), 0.2 * rand(rng, channels)
        if norm == "instance":
            b.add_batchnorm("norm%d" % k, channels, gamma, beta, input_name=inp, output_name=out,
                            compute_mean_var=True, instance_normalization=True, epsilon=1e-3)
        else:
            mean, var = 0.3 * rand(rng, channels), rng.uniform(0.5, 2.0, channels)
            b.add_batchnorm("norm%d" % k, channels, gamma, beta, mean, var, input_name=inp, output_name=out, epsilon=1e-3)
        if not relu:
            return out
        b.add_activation("relu%d" % k, "RELU", out, out + "r")
        return out + "r"

    b.add_padding("reflection_padding", left=PAD, right=PAD, top=PAD, bottom=PAD, input_name="image", output_name="padded",
                  padding_type="reflection")
    conv_layer(b, rng, "conv1", "padded", "c1", 3, 8, (9, 9), border="same")
    x = norm_relu("c1", 8)
    conv_layer(b, rng, "conv2", x, "c2", 8, 16, (3, 3), stride=(2, 2), border="same")
    x = norm_relu("c2", 16)
    conv_layer(b, rng, "conv3", x, "c3", 16, 16, (3, 3), stride=(2, 2), border="same")
    x = norm_relu("c3", 16)
    for r in range(1, BLOCKS + 1):
        conv_layer(b, rng, "res%d_conv1" % r, x, "r%da" % r, 16, 16, (3, 3), border="valid")
        y = norm_relu("r%da" % r, 16)
        conv_layer(b, rng, "res%d_conv2" % r, y, "r%db" % r, 16, 16, (3, 3), border="valid")
        y = norm_relu("r%db" % r, 16, relu=False)
        custom_layer(b, "res_crop_%d" % r, x, "r%dcrop" % r, "ResCropBlockLambda", "return x[:, 2:-2, 2:-2]")
        b.add_elementwise("add_%d" % r, ["r%dcrop" % r, y], "r%d" % r, mode="ADD")
        x = "r%d" % r
    b.add_upsample("up1", 2, 2, x, "u1", mode="NN")
    conv_layer(b, rng, "conv4", "u1", "c4", 16, 8, (3, 3), border="same")
    x = norm_relu("c4", 8)
    b.add_upsample("up2", 2, 2, x, "u2", mode="NN")
    conv_layer(b, rng, "conv5", "u2", "c5", 8, 8, (3, 3), border="same")
    x = norm_relu("c5", 8)
    conv_layer(b, rng, "conv6", x, "c6", 8, 3, (9, 9), border="same")
    b.add_activation("tanh", "TANH", "c6", "t")
    custom_layer(b, "rescale_output", "t", "output", "RescaleOutputLambda", "Rescale output using ((x+1)*127.5)")
    return b.spec


def params_spec(rng):
    """A convolution, then a custom layer with two weight vectors and four parameters."""
    from coreml_fixtures import conv_layer, set_weights

    C, H, W = 4, 9, 11
    b = NeuralNetworkBuilder([("x", datatypes.Array(3, H, W))], [("out", None)])
    conv_layer(b, rng, "conv", "x", "c", 3, C, (3, 3), border="same")
    p = custom_layer(b, "gain", "c", "out", "ChannelGainLambda", "y = clamp((x * w0 + w1) * gain + offset, -limit, limit), edges replicated by border")
    set_weights(p.weights.add(), rng.uniform(0.5, 2.0, C))
    set_weights(p.weights.add(), rng.uniform(-0.5, 0.5, C))
    p.parameters["gain"].doubleValue = 1.75
    p.parameters["offset"].doubleValue = -0.25
    p.parameters["limit"].doubleValue = 1.5
    p.parameters["border"].intValue = 2
    return b.spec, rng.uniform(-1, 1, (3, H, W))


def kmeans_lut(nbits, w):
    """A seeded 1-D k-means (Lloyd's, quantile start): (table, codes) for coremltools' custom_lut."""
    w = np.asarray(w, dtype=np.float64).ravel()
    k = 1 << nbits
    centres = np.quantile(w, (np.arange(k) + 0.5) / k)
    for _ in range(30):
        codes = np.abs(w[:, None] - centres[None, :]).argmin(axis=1)
        for j in range(k):
            members = w[codes == j]
            if members.size:
                centres[j] = members.mean()
    codes = np.abs(w[:, None] - centres[None, :]).argmin(axis=1)
    return centres.astype(np.float32), codes.astype(np.uint8)


def quantized(spec, kind):
    M = ct.models
    s = copy.deepcopy(spec)
    if kind == "fp32":
        return s
    if kind == "fp16":
        return qu._quantize_spec_weights(s, 16, M._QUANTIZATION_MODE_LINEAR_QUANTIZATION)
    if kind == "linear8":
        return qu._quantize_spec_weights(s, 8, M._QUANTIZATION_MODE_LINEAR_QUANTIZATION)
    if kind == "lut8":
        return qu._quantize_spec_weights(s, 8, M._QUANTIZATION_MODE_CUSTOM_LOOKUP_TABLE, lut_function=kmeans_lut)
    raise ValueError(kind)


def torch_style(spec, x):
    """The fp32 network again in PyTorch, weights read from the saved spec (a cross-check of the
    numpy evaluator on this network)."""
    import torch
    import torch.nn.functional as F
    from coreml_fixtures import wp_values

    nn = spec.neuralNetwork
    s = nn.preprocessing[0].scaler
    t = torch.from_numpy(x)[None] * s.channelScale + torch.tensor([s.redBias, s.greenBias, s.blueBias], dtype=torch.float64)[None, :, None, None]
    blobs = {"image": t}
    for layer in nn.layers:
        kind = layer.WhichOneof("layer")
        p = getattr(layer, kind)
        ins = [blobs[i] for i in layer.input]
        if kind == "padding":
            a = p.paddingAmounts.borderAmounts
            y = F.pad(ins[0], (a[1].startEdgeSize, a[1].endEdgeSize, a[0].startEdgeSize, a[0].endEdgeSize), mode="reflect")
        elif kind == "convolution":
            kh, kw = p.kernelSize
            st = list(p.stride) or [1, 1]
            w = torch.from_numpy(wp_values(p.weights, p.outputChannels * p.kernelChannels * kh * kw,
                                            (1, p.outputChannels, p.kernelChannels * kh * kw)).reshape(p.outputChannels, p.kernelChannels, kh, kw))
            bias = torch.from_numpy(wp_values(p.bias, p.outputChannels))
            X = ins[0]
            if p.WhichOneof("ConvolutionPaddingType") == "same":
                H, W = X.shape[2:]
                th = max(0, (math.ceil(H / st[0]) - 1) * st[0] + kh - H)
                tw = max(0, (math.ceil(W / st[1]) - 1) * st[1] + kw - W)
                X = F.pad(X, (tw // 2, tw - tw // 2, th // 2, th - th // 2))
            y = F.conv2d(X, w, bias, stride=st)
        elif kind == "batchnorm":
            n = p.channels
            gm, bt = torch.from_numpy(wp_values(p.gamma, n)), torch.from_numpy(wp_values(p.beta, n))
            if p.computeMeanVar:
                y = F.instance_norm(ins[0], weight=gm, bias=bt, eps=p.epsilon)
            else:
                y = F.batch_norm(ins[0], torch.from_numpy(wp_values(p.mean, n)), torch.from_numpy(wp_values(p.variance, n)), gm, bt, eps=p.epsilon)
        elif kind == "activation":
            y = torch.relu(ins[0]) if p.WhichOneof("NonlinearityType") == "ReLU" else torch.tanh(ins[0])
        elif kind == "custom":
            y = ins[0][:, :, 2:-2, 2:-2] if p.className == "ResCropBlockLambda" else (ins[0] + 1) * 127.5
        elif kind == "add":
            y = ins[0] + ins[1]
        elif kind == "upsample":
            y = F.interpolate(ins[0], scale_factor=2, mode="nearest")
        else:
            raise ValueError(kind)
        blobs[layer.output[0]] = y
    return blobs["output"][0].numpy()


def write_style_fixtures(out_root, seed, run_spec, save):
    """Writes the fixtures into out_root/style; `run_spec` is the numpy evaluator, `save` writes
    a spec and reads it back."""
    out = os.path.join(out_root, "style")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 255, (3, SIDE, SIDE)).round().astype(np.float32).astype(np.float64)
    x.astype("<f4").tofile(os.path.join(out, "style.input.f32"))
    declaration = json.dumps(DECLARATIONS, indent=2) + "\n"
    entries = []
    base = style_spec(np.random.default_rng(seed + 1))
    reference32 = None
    cross = {}
    variants = [("style_fp32", base, "fp32"), ("style_fp16", base, "fp16"), ("style_linear8", base, "linear8"),
                ("style_lut8", base, "lut8"), ("style_bn", style_spec(np.random.default_rng(seed + 2), norm="batch"), "fp32")]
    for name, spec, kind in variants:
        saved = save(quantized(spec, kind), os.path.join(out, name + ".mlmodel"))
        with open(os.path.join(out, name + ".layers.json"), "w") as f:
            f.write(declaration)
        y = run_spec(saved, x).astype(np.float32)
        y.astype("<f4").tofile(os.path.join(out, name + ".output.f32"))
        if name == "style_fp32":
            reference32 = y
        entry = {"name": name, "model": name + ".mlmodel", "declarations": name + ".layers.json", "input": "style.input.f32",
                 "output": name + ".output.f32", "weights": kind, "input_shape": list(x.shape), "output_shape": list(y.shape),
                 "bytes": os.path.getsize(os.path.join(out, name + ".mlmodel"))}
        if name != "style_bn" and kind != "fp32":
            # How far the quantised weights move the output from the fp32 model's (0-255 units).
            entry["max_abs_diff_from_fp32"] = float(np.abs(y - reference32).max())
        try:
            t = torch_style(saved, x)
            cross[name] = "%.3g" % float(np.abs(t - y).max())
        except ImportError as e:
            cross[name] = "skipped: %s" % e
        entries.append(entry)
        print("%-14s %-7s out %s  %6d bytes%s" % (name, kind, "x".join(map(str, y.shape)), entry["bytes"],
                                                 "  vs fp32 %.3g" % entry["max_abs_diff_from_fp32"] if "max_abs_diff_from_fp32" in entry else ""))
    pspec, px = params_spec(np.random.default_rng(seed + 3))
    saved = save(pspec, os.path.join(out, "params.mlmodel"))
    with open(os.path.join(out, "params.layers.json"), "w") as f:
        f.write(json.dumps(PARAMS_DECLARATIONS, indent=2) + "\n")
    px32 = px.astype(np.float32)
    py = run_spec(saved, px32.astype(np.float64)).astype(np.float32)
    px32.astype("<f4").tofile(os.path.join(out, "params.input.f32"))
    py.astype("<f4").tofile(os.path.join(out, "params.output.f32"))
    entries.append({"name": "params", "model": "params.mlmodel", "declarations": "params.layers.json", "input": "params.input.f32",
                    "output": "params.output.f32", "weights": "fp32", "input_shape": list(px.shape), "output_shape": list(py.shape),
                    "bytes": os.path.getsize(os.path.join(out, "params.mlmodel"))})
    manifest = {
        "generator": "scripts/coreml_fixtures.py (scripts/coreml_style_fixtures.py)",
        "seed": seed,
        "coremltools": ct.__version__,
        "reference": "numpy evaluator of the saved spec (float64, output rounded to float32); outputs in 0-255 units",
        "torch_crosscheck_max_abs_diff": cross,
        "fixtures": entries,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print("style torch cross-check:", cross)
