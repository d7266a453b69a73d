#!/usr/bin/env python3
"""Time scikit-image's rgb2lab + lab2rgb on one frame (peer for ColorScience.LabConverter).

Usage:
    python3 Benchmarks/lab_bench.py [--size 1920x1080] [--runs 5] [--seed 7]

The frame is seeded uniform random rgb24 (uint8). One round trip is
    lab = rgb2lab(frame)                      # uint8 -> float64 [0,1] inside skimage
    out = lab2rgb(lab)                        # float64 [0,1], clipped
    back = (out * 255 + 0.5).astype(uint8)    # rounded to nearest, as the Swift path does
and each part is timed too. One warm-up run first; medians of --runs timed runs.
skimage runs single-threaded (numpy elementwise code).

Prints one JSON line:
    {"peer": "skimage", "size": [w, h], "runs": 5, "round_trip_median_s": ..., "rgb2lab_median_s": ...,
     "lab2rgb_median_s": ..., "round_trip_runs_s": [...], "max_round_trip_error": 0, "skimage": "0.26.0"}
"""

import argparse
import json
import statistics
import sys
import time
import warnings

try:
    import numpy as np
    import skimage
    from skimage.color import lab2rgb, rgb2lab
except Exception as e:  # pragma: no cover
    sys.stderr.write("error: cannot import numpy/scikit-image (%s). Run: pip install scikit-image numpy\n" % e)
    sys.exit(2)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", default="1920x1080", help="frame size WxH")
    ap.add_argument("--runs", type=int, default=5, help="timed runs (median reported)")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    try:
        w, h = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        sys.stderr.write("error: --size '%s' is not WxH. Pass e.g. --size 1920x1080.\n" % args.size)
        sys.exit(2)
    if args.runs < 1:
        sys.stderr.write("error: --runs %d: please specify at least 1 run.\n" % args.runs)
        sys.exit(2)

    frame = np.random.default_rng(args.seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    warnings.simplefilter("ignore")

    def once():
        t0 = time.perf_counter()
        lab = rgb2lab(frame)
        t1 = time.perf_counter()
        out = lab2rgb(lab)
        back = (out * 255 + 0.5).astype(np.uint8)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1, t2 - t0, back

    once()
    fwd, bwd, total = [], [], []
    back = None
    for _ in range(args.runs):
        a, b, c, back = once()
        fwd.append(a)
        bwd.append(b)
        total.append(c)
    err = int(np.abs(back.astype(np.int16) - frame.astype(np.int16)).max())
    print(json.dumps({
        "peer": "skimage",
        "size": [w, h],
        "runs": args.runs,
        "round_trip_median_s": statistics.median(total),
        "rgb2lab_median_s": statistics.median(fwd),
        "lab2rgb_median_s": statistics.median(bwd),
        "round_trip_runs_s": total,
        "max_round_trip_error": err,
        "skimage": skimage.__version__,
    }))


if __name__ == "__main__":
    main()
