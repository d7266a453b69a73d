"""Tests of training/tflite.py's fast path: `run_layers` (TensorFlow's 'SAME' padding folded into
the convolution wherever it is symmetric) against `run_layers_reference` (an explicit pad before
every convolution), on the same seeded input.

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import os, sys, types, unittest

import numpy as np
try:
    import torch
except ImportError:  # CI has no PyTorch (training only): these tests run where training does
    raise unittest.SkipTest("PyTorch is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tflite import (ACT_NONE, ACT_RELU, ACT_RELU6, ADD, CONV_2D, DEPTHWISE_CONV_2D, PAD_SAME, PAD_VALID, TFLiteNet, run_layers,
                    run_layers_reference)

BACKBONE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models", "backbones",
                        "mobilenet_v2_1.0_224_quant.tflite")
TOLERANCE = 1e-5


def conv(kind, index, cin, cout, k, stride, padding=PAD_SAME, act=ACT_RELU6, dilation=1, seed=0):
    """A Layer-like convolution reading tensor `index` and writing `index + 1`."""
    g = torch.Generator().manual_seed(seed)
    shape = (cout, 1, k, k) if kind == DEPTHWISE_CONV_2D else (cout, cin, k, k)
    return types.SimpleNamespace(kind=kind, inputs=[index], output=index + 1,
                                 options=dict(padding=padding, stride=(stride, stride), act=act, dilation=(dilation, dilation)),
                                 weight=torch.randn(shape, generator=g) * 0.3, bias=torch.randn(cout, generator=g) * 0.1)


def both(layers, x, out):
    """(fast, reference) outputs of `layers` on x, without and with autograd (then the input's gradient too)."""
    results = []
    for fn in (run_layers, run_layers_reference):
        with torch.no_grad():
            y = fn(layers, {0: x.clone()})[out]
        xg = x.clone().requires_grad_(True)
        yg = fn(layers, {0: xg})[out]
        (yg * torch.linspace(-1, 1, yg.numel()).view(yg.shape)).sum().backward()
        results.append((y, yg.detach(), xg.grad))
    return results


class PaddingFoldTests(unittest.TestCase):
    def setUp(self):
        torch.set_num_threads(1)

    def assert_same(self, fast, reference):
        for a, b in zip(fast, reference):
            self.assertEqual(a.shape, b.shape)
            self.assertLessEqual(float((a - b).abs().max()), TOLERANCE)

    def test_every_padding_case_matches_the_explicit_pad(self):
        """Stride 1 (symmetric: folded), stride 2 on even and odd sides (asymmetric on even:
        kept explicit), 1x1 (no padding), dilation 2, depthwise, VALID, in NCHW and channels_last."""
        cases = [(CONV_2D, 3, 1, PAD_SAME, 1), (CONV_2D, 3, 2, PAD_SAME, 1), (DEPTHWISE_CONV_2D, 3, 1, PAD_SAME, 1),
                 (DEPTHWISE_CONV_2D, 3, 2, PAD_SAME, 1), (CONV_2D, 1, 1, PAD_SAME, 1), (CONV_2D, 3, 1, PAD_SAME, 2),
                 (CONV_2D, 5, 2, PAD_SAME, 1), (CONV_2D, 3, 2, PAD_VALID, 1)]
        for side in (14, 15):
            for kind, k, stride, padding, dilation in cases:
                with self.subTest(side=side, kind=kind, k=k, stride=stride, padding=padding, dilation=dilation):
                    c = 6
                    layer = conv(kind, 0, c, c, k, stride, padding, dilation=dilation, seed=side + k)
                    x = torch.randn(2, c, side, side, generator=torch.Generator().manual_seed(side))
                    for fmt in (torch.contiguous_format, torch.channels_last):
                        fast, reference = both([layer], x.contiguous(memory_format=fmt), 1)
                        self.assert_same(fast, reference)

    def test_in_place_activation_leaves_taps_and_residuals_intact(self):
        """Without autograd the fast path clamps in place: a residual add that reads an earlier
        tensor, and a tapped linear output, must still be what the reference gives."""
        layers = [conv(CONV_2D, 0, 4, 4, 1, 1, act=ACT_NONE, seed=1), conv(DEPTHWISE_CONV_2D, 1, 4, 4, 3, 1, act=ACT_RELU6, seed=2),
                  conv(CONV_2D, 2, 4, 4, 1, 1, act=ACT_RELU, seed=3),
                  types.SimpleNamespace(kind=ADD, inputs=[3, 1], output=4, options=dict(act=ACT_RELU6), weight=None, bias=None)]
        x = torch.randn(2, 4, 9, 9, generator=torch.Generator().manual_seed(4)) * 4
        for out in (1, 2, 4):
            fast, reference = both(layers, x, out)
            self.assert_same(fast, reference)


@unittest.skipUnless(os.path.exists(BACKBONE), "needs ../shared/models/backbones (the frozen MobileNetV2)")
class MobileNetTests(unittest.TestCase):
    def test_mobilenet_v2_through_its_classifier_matches_the_reference(self):
        """The critic's whole pass (RGB to the 1001 logits, with the block outputs), and the
        gradient with respect to the picture that the semantic loss sends back through it."""
        torch.set_num_threads(1)
        net = TFLiteNet(BACKBONE)
        x = torch.rand(2, 3, 224, 224, generator=torch.Generator().manual_seed(0)) * 2 - 1
        layers = net.layers
        logits = [l.output for l in layers if len(net.tensors[l.output].shape) == 4 and net.tensors[l.output].shape[3] == 1001][-1]
        layers = layers[:[l.output for l in layers].index(logits) + 1]
        taps = [l.output for l in layers if len(net.tensors[l.output].shape) == 4][::10]
        for fmt in (torch.contiguous_format, torch.channels_last):
            outs = []
            for fn in (run_layers, run_layers_reference):
                xg = x.contiguous(memory_format=fmt).clone().requires_grad_(True)
                values = fn(layers, {net.graph_inputs[0]: xg})
                values[logits].square().sum().backward()
                with torch.no_grad():
                    plain = fn(layers, {net.graph_inputs[0]: x.contiguous(memory_format=fmt)})
                outs.append([values[logits].detach(), xg.grad, plain[logits]] + [plain[t] for t in taps])
            for a, b in zip(*outs):
                self.assertLessEqual(float((a - b).abs().max()), TOLERANCE * max(1.0, float(b.abs().max())))


if __name__ == "__main__":
    unittest.main()
