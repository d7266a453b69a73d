#!/usr/bin/env python3
"""Write the CIE Lab fixtures that Tests/ColorScienceTests check ColorScience against.

Usage:
    pip install scikit-image numpy
    python3 scripts/lab_fixtures.py [--out Tests/ColorScienceTests/Fixtures/lab_fixtures.json] [--seed 20240611]

The peer is scikit-image's `skimage.color.rgb2lab` / `lab2rgb` with their defaults
(illuminant "D65", observer "2"), run in float64. The file holds two sets, each as flat
row-major lists (3 numbers per sample) so that the JSON stays small:

    "rgb_to_lab": {"rgb": [r, g, b, ...],          8-bit integers 0...255, fed to rgb2lab as rgb / 255
                   "lab": [L, a, b, ...]}           rgb2lab's result, 6 decimals
    "lab_to_rgb": {"lab": [L, a, b, ...],          inputs, 2 decimals (parsed to the nearest Double)
                   "rgb": [r, g, b, ...]}           lab2rgb's result in [0, 1] (clipped as skimage
                                                    clips), 7 decimals

rgb_to_lab samples: an 11-step grid over the 8-bit cube (0, 25/26, ..., 255), the 8 corners
and the grey ramp, values around the sRGB linearisation threshold (0.04045 * 255 = 10.3) and
around the Lab f(t) threshold (dark colours), then seeded uniform random triplets.

lab_to_rgb samples: the Lab of seeded random 8-bit colours (in gamut: exercises the unclipped
path), a grid with L outside [0, 100] and |a|, |b| up to 300 (negative Z, clipped RGB), points
around the inverse-f threshold 0.2068966, then seeded uniform random Lab with L in [-20, 120]
and a, b in [-160, 160]. skimage's warning about negative Z values clipped to zero is expected
for the out-of-gamut samples and silenced here.

The output is deterministic for a given seed and scikit-image version (recorded in "meta").
"""

import argparse
import json
import os
import sys
import warnings

try:
    import numpy as np
    import skimage
    from skimage.color import lab2rgb, rgb2lab
except Exception as e:  # pragma: no cover
    sys.stderr.write("error: cannot import numpy/scikit-image (%s). Run: pip install scikit-image numpy\n" % e)
    sys.exit(2)


def rgb_samples(rng):
    steps = np.unique(np.round(np.linspace(0, 255, 11)).astype(int))
    grid = np.stack(np.meshgrid(steps, steps, steps, indexing="ij"), axis=-1).reshape(-1, 3)
    grey = np.repeat(np.arange(0, 256, 5)[:, None], 3, axis=1)
    near_linear = []  # 8-bit codes around 0.04045 * 255 = 10.31 on one channel
    for c in range(3):
        for v in range(6, 16):
            t = [0, 0, 0]
            t[c] = v
            near_linear.append(t)
    dark = rng.integers(0, 24, size=(200, 3))  # Y/Yn around 0.008856 and below
    rand = rng.integers(0, 256, size=(1400, 3))
    out = np.concatenate([grid, grey, np.array(near_linear), dark, rand]).astype(np.int64)
    return out


def lab_samples(rng):
    in_gamut = rgb2lab(rng.integers(0, 256, size=(700, 3)).astype(np.float64) / 255.0)
    vals_l = [-20, -16, -5, 0, 8, 25, 50, 75, 100, 105, 120]
    vals_ab = [-300, -160, -128, -60, 0, 60, 127, 160, 300]
    grid = np.array([[l, a, b] for l in vals_l for a in vals_ab for b in vals_ab], dtype=np.float64)
    # fy = (L + 16) / 116 = 0.2068966 at L = 8.0000056; fx, fz cross it through a and b too.
    thr = []
    for l in (7.99, 8.0, 8.01):
        for a in (-0.5, 0.0, 0.5):
            for b in (-0.5, 0.0, 0.5):
                thr.append([l, a, b])
    thr = np.array(thr)
    rand = np.stack([rng.uniform(-20, 120, 900), rng.uniform(-160, 160, 900), rng.uniform(-160, 160, 900)], axis=1)
    out = np.concatenate([in_gamut, grid, thr, rand])
    return np.round(out, 2)


def fmt(values, decimals):
    def one(v):
        s = "%.*f" % (decimals, v)
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        return "0" if s in ("-0", "") else s
    return "[" + ",".join(one(v) for v in values) + "]"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join("Tests", "ColorScienceTests", "Fixtures", "lab_fixtures.json"))
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)

    rgb = rgb_samples(rng)
    lab_of_rgb = rgb2lab(rgb.astype(np.float64) / 255.0)

    lab_in = lab_samples(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # negative Z clipped to zero: expected out of gamut
        rgb_of_lab = lab2rgb(lab_in)

    meta = {
        "generator": "scripts/lab_fixtures.py",
        "seed": args.seed,
        "skimage": skimage.__version__,
        "numpy": np.__version__,
        "illuminant": "D65",
        "observer": "2",
    }
    text = (
        "{\n"
        '"meta": ' + json.dumps(meta) + ",\n"
        '"rgb_to_lab": {\n"rgb": ' + fmt(rgb.reshape(-1), 0) + ',\n"lab": ' + fmt(lab_of_rgb.reshape(-1), 6) + "\n},\n"
        '"lab_to_rgb": {\n"lab": ' + fmt(lab_in.reshape(-1), 2) + ',\n"rgb": ' + fmt(rgb_of_lab.reshape(-1), 7) + "\n}\n"
        "}\n"
    )
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    print(json.dumps({"out": args.out, "bytes": len(text), "rgb_to_lab": len(rgb), "lab_to_rgb": len(lab_in)}))


if __name__ == "__main__":
    main()
