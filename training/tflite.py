#!/usr/bin/env python3
"""Our own TensorFlow Lite reader: a quantised MobileNet `.tflite` flatbuffer -> a float PyTorch
network (issue 11, part 1).

The file is a FlatBuffer (schema: tensorflow/lite/schema/schema.fbs). We read only what a
quantised MobileNet holds: tensors (shape, type, buffer, quantisation), buffers, operator codes
and operators with their Conv2D / DepthwiseConv2D / Pool2D / Add options. Weights dequantise as
scale * (q - zero_point), per tensor or per output channel (`quantized_dimension`); int32
biases likewise (their scale is input scale x weight scale, zero point 0). Batch norm is
already folded into the convolutions by the converter; fused ReLU6 stays ReLU6.

`TFLiteNet(path)` runs the whole graph in float (NCHW, 'SAME' padding as TensorFlow pads:
the extra pixel of an odd total goes to the bottom/right). `--check` compares its top-1 class
with the reference interpreter (ai-edge-litert) on photographs:

    python3 training/tflite.py --check ../shared/models/backbones/mobilenet_v2_1.0_224_quant.tflite \
        --images ../shared/datasets/train/ImageNet-sample900
"""
import argparse, os, struct, sys

import numpy as np

# TensorFlow Lite enums we need (schema.fbs).
ADD, AVERAGE_POOL_2D, CONV_2D, DEPTHWISE_CONV_2D, RESHAPE, SOFTMAX = 0, 1, 3, 4, 22, 25
OP_NAMES = {ADD: "ADD", AVERAGE_POOL_2D: "AVERAGE_POOL_2D", CONV_2D: "CONV_2D", DEPTHWISE_CONV_2D: "DEPTHWISE_CONV_2D",
            RESHAPE: "RESHAPE", SOFTMAX: "SOFTMAX", 14: "LOGISTIC", 17: "MAX_POOL_2D", 9: "FULLY_CONNECTED", 2: "CONCATENATION",
            6: "DEQUANTIZE", 114: "QUANTIZE"}
TYPE_DTYPES = {0: np.float32, 1: np.float16, 2: np.int32, 3: np.uint8, 4: np.int64, 7: np.int16, 9: np.int8}
ACT_NONE, ACT_RELU, ACT_RELU_N1_TO_1, ACT_RELU6 = 0, 1, 2, 3
PAD_SAME, PAD_VALID = 0, 1


class Table:
    """One FlatBuffer table: fields by index, read through its vtable."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        vt = pos - struct.unpack_from("<i", buf, pos)[0]
        vt_size = struct.unpack_from("<H", buf, vt)[0]
        self.fields = [struct.unpack_from("<H", buf, vt + 4 + 2 * i)[0] for i in range((vt_size - 4) // 2)]

    def _at(self, i):
        return self.pos + self.fields[i] if i < len(self.fields) and self.fields[i] else None

    def scalar(self, i, fmt, default=0):
        at = self._at(i)
        return default if at is None else struct.unpack_from("<" + fmt, self.buf, at)[0]

    def _ref(self, i):
        at = self._at(i)
        return None if at is None else at + struct.unpack_from("<I", self.buf, at)[0]

    def table(self, i):
        ref = self._ref(i)
        return None if ref is None else Table(self.buf, ref)

    def vector(self, i, fmt):
        """A vector of scalars as a numpy array (fmt: numpy dtype string)."""
        ref = self._ref(i)
        if ref is None:
            return np.zeros(0, dtype=fmt)
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return np.frombuffer(self.buf, dtype=np.dtype(fmt).newbyteorder("<"), count=n, offset=ref + 4)

    def tables(self, i):
        ref = self._ref(i)
        if ref is None:
            return []
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return [Table(self.buf, ref + 4 + 4 * k + struct.unpack_from("<I", self.buf, ref + 4 + 4 * k)[0]) for k in range(n)]

    def string(self, i):
        ref = self._ref(i)
        if ref is None:
            return ""
        n = struct.unpack_from("<I", self.buf, ref)[0]
        return bytes(self.buf[ref + 4:ref + 4 + n]).decode("utf-8", "replace")


class Tensor:
    def __init__(self, t, buffers):
        self.shape = [int(s) for s in t.vector(0, "i4")]
        self.type = t.scalar(1, "b")
        self.name = t.string(3)
        q = t.table(4)
        self.scale = q.vector(2, "f4").astype(np.float64) if q else np.zeros(0)
        self.zero_point = q.vector(3, "i8").astype(np.float64) if q else np.zeros(0)
        self.axis = q.scalar(6, "i") if q else 0
        data = buffers[t.scalar(2, "I")]
        self.data = None
        if len(data):
            if self.type not in TYPE_DTYPES:
                raise ValueError(f"tensor '{self.name}': TFLite type {self.type} is not supported")
            self.data = np.frombuffer(bytes(data), dtype=np.dtype(TYPE_DTYPES[self.type]).newbyteorder("<")).reshape(self.shape)

    def dequantized(self):
        """The real values: scale * (q - zero_point), per tensor or along `axis`."""
        q = self.data.astype(np.float64)
        if self.type in (0, 1) or len(self.scale) == 0:
            return q.astype(np.float32)
        shape = [1] * q.ndim
        if len(self.scale) > 1:
            shape[self.axis] = len(self.scale)
        zp = self.zero_point if len(self.zero_point) else np.zeros(1)
        return (self.scale.reshape(shape) * (q - zp.reshape(shape if len(zp) > 1 else [1] * q.ndim))).astype(np.float32)

    def quant_range(self):
        """The real interval a uint8/int8 tensor can hold (None for float tensors)."""
        if self.type not in (3, 9) or len(self.scale) != 1:
            return None
        lo, hi = (0, 255) if self.type == 3 else (-128, 127)
        return float(self.scale[0] * (lo - self.zero_point[0])), float(self.scale[0] * (hi - self.zero_point[0]))


class Op:
    def __init__(self, kind, inputs, outputs, options):
        self.kind, self.inputs, self.outputs, self.options = kind, inputs, outputs, options


def read(path):
    """(tensors, ops, graph inputs, graph outputs) of the first subgraph."""
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    if bytes(buf[4:8]) != b"TFL3":
        raise ValueError(f"'{path}' is not a TensorFlow Lite file (no TFL3 identifier)")
    model = Table(buf, struct.unpack_from("<I", buf, 0)[0])
    buffers = [b.vector(0, "u1") for b in model.tables(4)]
    codes = []
    for c in model.tables(1):
        codes.append(max(c.scalar(0, "b"), c.scalar(3, "i")))  # deprecated byte code, or the int32 one
    sub = model.tables(2)[0]
    tensors = [Tensor(t, buffers) for t in sub.tables(0)]
    ops = []
    for o in sub.tables(3):
        kind = codes[o.scalar(0, "I")]
        opt = o.table(4)
        options = {}
        if kind == CONV_2D and opt:
            options = dict(padding=opt.scalar(0, "b"), stride=(opt.scalar(2, "i"), opt.scalar(1, "i")),
                           act=opt.scalar(3, "b"), dilation=(opt.scalar(5, "i", 1), opt.scalar(4, "i", 1)))
        elif kind == DEPTHWISE_CONV_2D and opt:
            options = dict(padding=opt.scalar(0, "b"), stride=(opt.scalar(2, "i"), opt.scalar(1, "i")),
                           multiplier=opt.scalar(3, "i"), act=opt.scalar(4, "b"), dilation=(opt.scalar(6, "i", 1), opt.scalar(5, "i", 1)))
        elif kind == AVERAGE_POOL_2D and opt:
            options = dict(padding=opt.scalar(0, "b"), stride=(opt.scalar(2, "i"), opt.scalar(1, "i")),
                           kernel=(opt.scalar(4, "i"), opt.scalar(3, "i")), act=opt.scalar(5, "b"))
        elif kind == ADD and opt:
            options = dict(act=opt.scalar(0, "b"))
        elif kind not in (RESHAPE, SOFTMAX):
            raise ValueError(f"'{path}': operator {OP_NAMES.get(kind, kind)} is not supported by this reader")
        ops.append(Op(kind, [int(i) for i in o.vector(1, "i4")], [int(i) for i in o.vector(2, "i4")], options))
    return tensors, ops, [int(i) for i in sub.vector(1, "i4")], [int(i) for i in sub.vector(2, "i4")]


def same_padding(size, k, stride, dilation):
    """TensorFlow's SAME padding for one axis: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


# --- float network in PyTorch ------------------------------------------------------------------

def _torch():
    import torch
    return torch


class Layer:
    """One operator of the float network, with its dequantised weights as torch tensors."""

    def __init__(self, op, tensors):
        torch = _torch()
        self.kind, self.options = op.kind, op.options
        self.inputs, self.output = op.inputs, op.outputs[0]
        self.weight = self.bias = None
        if op.kind in (CONV_2D, DEPTHWISE_CONV_2D):
            w = tensors[op.inputs[1]].dequantized()  # conv: O,H,W,I; depthwise: 1,H,W,O*mult
            if op.kind == CONV_2D:
                w = w.transpose(0, 3, 1, 2)
            else:
                w = w.transpose(3, 0, 1, 2)  # -> (C, 1, H, W)
            self.weight = torch.from_numpy(np.ascontiguousarray(w))
            self.bias = torch.from_numpy(tensors[op.inputs[2]].dequantized().astype(np.float32)) if len(op.inputs) > 2 else None


class TFLiteNet:
    """The float network of a quantised TFLite MobileNet. `forward(x, taps)` takes NCHW input
    already normalised as the model expects (x / 127.5 - 1 for MobileNet) and returns the
    output plus the tensors named in `taps` (tensor indices)."""

    def __init__(self, path):
        self.tensors, self.ops, self.graph_inputs, self.graph_outputs = read(path)
        self.layers = [Layer(op, self.tensors) for op in self.ops]
        inp = self.tensors[self.graph_inputs[0]]
        self.input_size = inp.shape[1], inp.shape[2]
        self.input_range = inp.quant_range()

    def shape_of(self, index):
        """NHWC shape of a tensor, as TFLite stores it."""
        return self.tensors[index].shape

    def forward(self, x, taps=(), stop_after=None):
        values = run_layers(self.layers, {self.graph_inputs[0]: x}, stop_after)
        out = values.get(self.graph_outputs[0])
        return out, [values[t] for t in taps]


def run_layers(layers, values, stop_after=None, fold_padding=True):
    """Runs `layers` in order on `values` (tensor index -> NCHW tensor), adding each output;
    stops after the layer that writes `stop_after`. Also runs a slice of a network (the upper
    layers that training/color.py fine-tunes), with trainable weights set on the layers.

    The fast path of `run_layers_reference` (test_tflite.py holds the two equal): TensorFlow's
    'SAME' padding goes into the convolution's own `padding=` wherever it is symmetric (every
    stride-1 convolution, and 1x1 ones pad nothing), so only the few stride-2 convolutions,
    whose extra pixel goes to the bottom/right, still copy their input through an explicit pad
    (a copy of the whole activation each, and on a channels_last tensor a change of layout).
    Without autograd the activation clamps in place. `fold_padding=False` is the plain
    reference (`run_layers_reference`)."""
    torch = _torch()
    F = torch.nn.functional
    inplace = fold_padding and not torch.is_grad_enabled()
    for layer in layers:
        o = layer.options
        a = values[layer.inputs[0]]
        if layer.kind in (CONV_2D, DEPTHWISE_CONV_2D):
            k = layer.weight.shape[2:]
            padding = 0
            if o["padding"] == PAD_SAME:
                ph = same_padding(a.shape[2], k[0], o["stride"][0], o["dilation"][0])
                pw = same_padding(a.shape[3], k[1], o["stride"][1], o["dilation"][1])
                if fold_padding and ph[0] == ph[1] and pw[0] == pw[1]:
                    padding = (ph[0], pw[0])
                else:
                    a = F.pad(a, (pw[0], pw[1], ph[0], ph[1]))
            groups = a.shape[1] if layer.kind == DEPTHWISE_CONV_2D else 1
            y = F.conv2d(a, layer.weight, layer.bias, o["stride"], padding, o["dilation"], groups)
        elif layer.kind == ADD:
            y = a + values[layer.inputs[1]]
        elif layer.kind == AVERAGE_POOL_2D:
            y = F.avg_pool2d(a, o["kernel"], o["stride"])
        elif layer.kind == RESHAPE:
            y = a.reshape(a.shape[0], -1)
        elif layer.kind == SOFTMAX:
            y = F.softmax(a, 1)
        act = o.get("act", ACT_NONE)
        if act != ACT_NONE:
            lo, hi = {ACT_RELU6: (0, 6), ACT_RELU: (0, None), ACT_RELU_N1_TO_1: (-1, 1)}[act]
            # clamp, not relu6/hardtanh: their gradients differ where a value is exactly 0 or 6
            y = y.clamp_(lo, hi) if inplace else y.clamp(lo, hi)
        values[layer.output] = y
        if stop_after is not None and layer.output == stop_after:
            break
    return values


def run_layers_reference(layers, values, stop_after=None):
    """The plain reference of `run_layers`: an explicit pad before every 'SAME' convolution,
    exactly as TensorFlow pads, then an unpadded convolution; clamps never in place."""
    return run_layers(layers, values, stop_after, fold_padding=False)



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", required=True, help="a .tflite file")
    ap.add_argument("--images", default="../shared/datasets/train/ImageNet-sample900")
    ap.add_argument("--limit", type=int, default=100000)
    ap.add_argument("--bar", type=float, default=0.95)
    args = ap.parse_args()
    sys.exit(0 if check(args.check, args.images, args.limit) >= args.bar else 1)


if __name__ == "__main__":
    main()
