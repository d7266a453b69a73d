#!/usr/bin/env python3
"""ncnn's CPU path as a whole process, the peer of `vivify image`: read PNG/JPEG pictures, pad,
run one ncnn model on each whole picture (PyPI `ncnn`, CPU, ncnn's default options), crop,
round to 8 bits and write PNG. The model is loaded once for all inputs, as the ncnn CLIs do
with a directory.

    python3 Benchmarks/ncnn_image.py --param P --bin B --input-blob IN --output-blob OUT \
        --scale 2 [--pad 7] [--pad-mode replicate|reflect] [--threads 2] IN.png... OUTDIR
"""
import argparse, os
import ncnn
import numpy as np
from PIL import Image

ap = argparse.ArgumentParser()
ap.add_argument("--param", required=True)
ap.add_argument("--bin", required=True)
ap.add_argument("--input-blob", required=True)
ap.add_argument("--output-blob", required=True)
ap.add_argument("--scale", type=int, required=True)
ap.add_argument("--pad", type=int, default=0)
ap.add_argument("--pad-mode", default="replicate", choices=["replicate", "reflect"])
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("paths", nargs="+")
a = ap.parse_args()
*inputs, outdir = a.paths
os.makedirs(outdir, exist_ok=True)

net = ncnn.Net()
net.opt.use_vulkan_compute = False
net.opt.num_threads = a.threads
net.load_param(a.param)
net.load_model(a.bin)
for path in inputs:
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32) / 255.0
    h, w, _ = rgb.shape
    x = np.ascontiguousarray(rgb.transpose(2, 0, 1))
    if a.pad:
        x = np.pad(x, ((0, 0), (a.pad, a.pad), (a.pad, a.pad)), mode="edge" if a.pad_mode == "replicate" else "reflect")
    ex = net.create_extractor()
    ex.input(a.input_blob, ncnn.Mat(np.ascontiguousarray(x)))
    _, out = ex.extract(a.output_blob)
    y = np.array(out)
    # The model's own border loss plus what is left of the padding: crop to scale × the picture.
    top = (y.shape[1] - a.scale * h) // 2
    left = (y.shape[2] - a.scale * w) // 2
    y = y[:, top:top + a.scale * h, left:left + a.scale * w]
    y = (np.clip(y, 0, 1) * 255 + 0.5).astype(np.uint8).transpose(1, 2, 0)
    name = os.path.splitext(os.path.basename(path))[0] + ".png"
    Image.fromarray(y).save(os.path.join(outdir, name))
