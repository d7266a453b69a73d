#!/usr/bin/env python3
"""Time one ONNX model on ONNX Runtime's CPU execution provider (peer for the Swift engine).

Usage:
    python3 Benchmarks/ort_bench.py --model FILE.onnx [--size 640x360] [--channels 3] \
        [--threads 2] [--runs 5] [--warmup 1] [--seed 0] [--opt all|extended|basic|none]

Example:
    # Real-ESRGAN animevideov3 x2 (written by scripts/onnx_fixtures.py), 640x360 in, 1280x720 out
    python3 scripts/onnx_fixtures.py --models-dir ../shared/models/ncnn --out /tmp/fx
    python3 Benchmarks/ort_bench.py --model /tmp/fx/animevideov3-x2.onnx --size 640x360 --threads 2 --runs 5

Session: CPUExecutionProvider only, SessionOptions.intra_op_num_threads = --threads,
inter_op_num_threads = 1, sequential execution, graph_optimization_level = ORT_ENABLE_ALL
(--opt changes it); everything else ONNX Runtime's default. The input is a seeded uniform
[0,1) float32 tensor 1 x C x H x W, made once. Each timed run is one InferenceSession.run()
(output allocation and the copy into numpy included, as `vivify bench-model` includes its
input and output copies). --warmup untimed runs first (1 by default).

Prints one JSON line: {"median_s":..., "runs":[...], "threads":2, "output_shape":[n,c,h,w], ...}.
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
    import onnxruntime as ort
except Exception as e:  # pragma: no cover
    sys.stderr.write("error: cannot import onnxruntime (pip install -r scripts/requirements-onnx.txt): %s\n" % e)
    sys.exit(2)

LEVELS = {
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
}


def parse_args():
    ap = argparse.ArgumentParser(description="ONNX Runtime CPU benchmark (peer for the Swift engine)")
    ap.add_argument("--model", required=True, help="path to the .onnx file (external data beside it)")
    ap.add_argument("--size", default="640x360", help="WxH of the input (default 640x360)")
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opt", default="all", choices=sorted(LEVELS))
    a = ap.parse_args()
    m = re.match(r"^(\d+)x(\d+)$", a.size)
    if not m:
        ap.error("--size must be WxH")
    a.w, a.h = int(m.group(1)), int(m.group(2))
    if a.runs < 1 or a.threads < 1 or a.warmup < 0:
        ap.error("--runs and --threads must be >= 1, --warmup >= 0")
    return a


def main():
    a = parse_args()
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = a.threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = LEVELS[a.opt]
    t0 = time.perf_counter()
    try:
        sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
    except Exception as e:
        sys.stderr.write("error: cannot load %s: %s\n" % (a.model, e))
        return 1
    load_s = time.perf_counter() - t0

    rng = np.random.default_rng(a.seed)
    x = np.ascontiguousarray(rng.random((1, a.channels, a.h, a.w), dtype=np.float32))
    feeds = {sess.get_inputs()[0].name: x}

    def once():
        s = time.perf_counter()
        out = sess.run(None, feeds)[0]
        return time.perf_counter() - s, out

    try:
        warm, runs, out = time_calls(once, a.warmup, a.runs)
    except Exception as e:
        sys.stderr.write("error: run failed: %s\n" % e)
        return 1
    if not np.all(np.isfinite(out)):
        sys.stderr.write("error: non-finite output\n")
        return 1

    res = {
        **timing_fields(warm, runs, load_s),
        "threads": a.threads,
        "output_shape": list(out.shape),
        "input_shape": list(x.shape),
        "optimization": a.opt,
        "model": a.model,
        "providers": sess.get_providers(),
        "onnxruntime_version": ort.__version__,
    }
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
