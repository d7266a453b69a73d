#!/usr/bin/env python3
"""Time one ncnn model on the CPU with the PyPI `ncnn` package (peer for the Swift engine).

Usage:
    python3 Benchmarks/ncnn_bench.py --param P --bin B --input-blob NAME --output-blob NAME \
        [--size 640x360] [--pad L,T,R,B] [--pad-mode replicate|reflect|zero] \
        [--threads 2] [--runs 5] [--warmup 1] [--seed 0] [--fp16 | --fast] [--bf16] \
        [--no-winograd]

Examples:
    # waifu2x upconv7 2x, tiler pads 7 px replicate -> 654x374 input, 1280x720 output
    python3 Benchmarks/ncnn_bench.py \
        --param ../shared/models/ncnn/waifu2x-upconv7-photo/scale2.0x_model.param \
        --bin   ../shared/models/ncnn/waifu2x-upconv7-photo/scale2.0x_model.bin \
        --input-blob Input1 --output-blob Eltwise4 --size 640x360 --pad 7,7,7,7 --threads 2 --runs 5
    # Real-ESRGAN animevideov3 4x, no padding
    python3 Benchmarks/ncnn_bench.py \
        --param ../shared/models/ncnn/realesr-animevideov3/realesr-animevideov3-x4.param \
        --bin   ../shared/models/ncnn/realesr-animevideov3/realesr-animevideov3-x4.bin \
        --input-blob data --output-blob output --size 640x360 --threads 2 --runs 5

Precision modes (Vulkan is always off):
    default   fp32: use_fp16_storage/arithmetic/packed = False, use_bf16_storage = False;
              everything else ncnn's default (packing layout, winograd, sgemm on)
    --fp16    ncnn's fp16 switches on (use_fp16_packed/storage/arithmetic = True); they only
              take effect where the CPU and the layer implementation support them
    --fast    ncnn.Option() defaults untouched (ncnn's own fastest choice for this CPU)
    --bf16    additionally set use_bf16_storage = True (x86 AVX512-BF16 / ARM BF16 paths)

The input is a seeded uniform [0,1) float32 tensor of size 3 x (H+T+B) x (W+L+R): the
unpadded WxH image is generated, then padded as given (replicate by default), so --pad 7,7,7,7
with --size 640x360 feeds 654x374. Each timed run creates a fresh Extractor and times
input() + extract() (the numpy<->Mat copies are outside the timing). One warm-up run first.

Prints one JSON line: {"median_s":..., "runs":[...], "threads":2, "output_shape":[c,h,w], ...}.
"""

import argparse
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_timing import time_calls, timing_fields  # noqa: E402

try:
    import numpy as np
except Exception as e:  # pragma: no cover
    sys.stderr.write("error: cannot import numpy: %s\n" % e)
    sys.exit(2)

try:
    import ncnn
except Exception as e:  # pragma: no cover
    sys.stderr.write("error: cannot import ncnn (pip install -r scripts/requirements-ncnn.txt): %s\n" % e)
    sys.exit(2)


def parse_args():
    ap = argparse.ArgumentParser(description="ncnn CPU benchmark (peer for the Swift engine)")
    ap.add_argument("--param", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--input-blob", required=True)
    ap.add_argument("--output-blob", required=True)
    ap.add_argument("--size", default="640x360", help="WxH before padding (default 640x360)")
    ap.add_argument("--pad", default="0,0,0,0", help="L,T,R,B padding in pixels (default 0,0,0,0)")
    ap.add_argument("--pad-mode", default="replicate", choices=["replicate", "reflect", "zero"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--channels", type=int, default=3, help="input channels (1 for a colorizer's L)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--fp16", action="store_true", help="allow ncnn fp16 packed/storage/arithmetic")
    g.add_argument("--fast", action="store_true", help="ncnn.Option() defaults (fastest path)")
    ap.add_argument("--bf16", action="store_true", help="also set use_bf16_storage = True")
    ap.add_argument("--no-winograd", action="store_true", help="disable winograd convolution")
    a = ap.parse_args()
    m = re.match(r"^(\d+)x(\d+)$", a.size)
    if not m:
        ap.error("--size must be WxH")
    a.w, a.h = int(m.group(1)), int(m.group(2))
    try:
        a.pads = [int(v) for v in a.pad.split(",")]
        if len(a.pads) != 4 or min(a.pads) < 0:
            raise ValueError
    except ValueError:
        ap.error("--pad must be L,T,R,B with four non-negative integers")
    if a.runs < 1 or a.threads < 1 or a.warmup < 0:
        ap.error("--runs and --threads must be >= 1, --warmup >= 0")
    return a


def configure(opt, a):
    opt.use_vulkan_compute = False
    opt.num_threads = a.threads
    if a.fast:
        mode = "fast"
    elif a.fp16:
        mode = "fp16"
        opt.use_fp16_packed = True
        opt.use_fp16_storage = True
        opt.use_fp16_arithmetic = True
        opt.use_bf16_storage = False
    else:
        mode = "fp32"
        opt.use_fp16_packed = False
        opt.use_fp16_storage = False
        opt.use_fp16_arithmetic = False
        opt.use_bf16_storage = False
    if a.bf16:
        opt.use_bf16_storage = True
        mode += "+bf16"
    if a.no_winograd:
        opt.use_winograd_convolution = False
        mode += "-nowinograd"
    return mode


def main():
    a = parse_args()
    net = ncnn.Net()
    opt = net.opt
    mode = configure(opt, a)
    net.opt = opt
    t0 = time.perf_counter()
    if net.load_param(a.param) != 0:
        sys.stderr.write("error: load_param(%s) failed\n" % a.param)
        return 1
    if net.load_model(a.bin) != 0:
        sys.stderr.write("error: load_model(%s) failed\n" % a.bin)
        return 1
    load_s = time.perf_counter() - t0

    rng = np.random.default_rng(a.seed)
    img = rng.random((a.channels, a.h, a.w), dtype=np.float32)
    L, T, R, B = a.pads
    np_mode = {"replicate": "edge", "reflect": "reflect", "zero": "constant"}[a.pad_mode]
    x = np.ascontiguousarray(np.pad(img, ((0, 0), (T, B), (L, R)), mode=np_mode).astype(np.float32))
    mat_in = ncnn.Mat(x)

    def once():
        ex = net.create_extractor()
        s = time.perf_counter()
        if ex.input(a.input_blob, mat_in) != 0:
            raise RuntimeError("input(%s) failed" % a.input_blob)
        rc, out = ex.extract(a.output_blob)
        e = time.perf_counter()
        if rc != 0:
            raise RuntimeError("extract(%s) failed: %d" % (a.output_blob, rc))
        return e - s, out

    try:
        warm, runs, out = time_calls(once, a.warmup, a.runs)
    except RuntimeError as e:
        sys.stderr.write("error: %s\n" % e)
        return 1
    arr = np.array(out)
    if not np.all(np.isfinite(arr)):
        sys.stderr.write("error: non-finite output\n")
        return 1

    res = {
        **timing_fields(warm, runs, load_s),
        "threads": a.threads,
        "output_shape": list(arr.shape),
        "input_shape": list(x.shape),
        "mode": mode,
        "model": a.param,
        "ncnn_version": getattr(ncnn, "__version__", "unknown"),
        "options": {k: bool(getattr(opt, k)) for k in (
            "use_packing_layout", "use_fp16_packed", "use_fp16_storage", "use_fp16_arithmetic",
            "use_bf16_storage", "use_winograd_convolution", "use_sgemm_convolution")},
    }
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
