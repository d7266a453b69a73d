#!/usr/bin/env python3
"""Vivify's Vulkan backend against ncnn's Vulkan path (the PyPI `ncnn` wheel) on the same
device, model and input size, in one run: whole-graph time of one picture (after a warm-up),
median of --runs, fp32 on both sides (ncnn's fp16 storage and arithmetic off, so that both
compute what the reference computes). The device is whatever Vulkan lists first (ncnn) and
what `vivify bench-model --backend vulkan` picks (a discrete GPU first; lavapipe on a machine
without one, where both run on the CPU). Prints one JSON line.

Usage: python3 Benchmarks/vulkan_vs_ncnn.py [--binary .build/release/vivify] [--model PARAM]
       [--size 160x90] [--runs 3]
"""
import argparse, json, os, statistics, subprocess, time

import ncnn
import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("--binary", default=os.path.join(here, "..", ".build", "release", "vivify"))
ap.add_argument("--model", default=os.path.join(here, "..", "..", "shared", "models", "ncnn", "realesr-animevideov3", "realesr-animevideov3-x2.param"))
ap.add_argument("--size", default="160x90")
ap.add_argument("--runs", type=int, default=3)
a = ap.parse_args()
w, h = map(int, a.size.split("x"))

ours = json.loads(subprocess.run([a.binary, "bench-model", "--model", a.model, "--size", a.size, "--runs", str(a.runs), "--backend", "vulkan"],
                                 capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])

net = ncnn.Net()
net.opt.use_vulkan_compute = True
net.opt.use_fp16_packed = net.opt.use_fp16_storage = net.opt.use_fp16_arithmetic = False
net.load_param(a.model)
net.load_model(a.model[:-len(".param")] + ".bin")
lines = open(a.model).read().splitlines()[2:]
first, last = lines[0].split(), lines[-1].split()
in_blob, out_blob = first[-1], last[4]
x = ncnn.Mat(np.random.default_rng(0).random((3, h, w), dtype=np.float32))
times = []
for i in range(a.runs + 1):
    t = time.perf_counter()
    ex = net.create_extractor()
    ex.input(in_blob, x)
    rc, y = ex.extract(out_blob)
    assert rc == 0, f"ncnn extract failed: {rc}"
    np.array(y)
    if i:
        times.append(time.perf_counter() - t)
theirs = statistics.median(times)
print(json.dumps({"model": os.path.basename(a.model), "size": a.size, "vivify_vulkan_s": ours["median_s"], "ncnn_vulkan_s": theirs,
                  "ratio_ncnn_over_vivify": theirs / ours["median_s"], "gpus_ncnn_sees": ncnn.get_gpu_count()}))
