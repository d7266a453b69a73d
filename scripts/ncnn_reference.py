#!/usr/bin/env python3
"""Reference outputs from the PyPI `ncnn` package (CPU, fp32) for every ncnn model.

Usage:
    python3 scripts/ncnn_reference.py --models-dir ../shared/models/ncnn --out DIR \
        [--size 40x32] [--seed 7] [--allow-winograd] [--threads 2] [--only SUBSTR]

For every <family>/<model>.param + .bin pair under --models-dir (families:
waifu2x-upconv7-photo, waifu2x-upconv7-art, waifu2x-cunet, realcugan-se,
realesr-animevideov3) this writes

    DIR/source.f32                        unpadded input, 3 x H x W (the image)
    DIR/<family>__<model>.input.f32       padded tensor actually fed to the net
    DIR/<family>__<model>.output.f32      raw net output (CHW, as extracted)
    DIR/<family>__<model>.final.f32       the upstream tiler's image for a single tile:
                                          output cropped to (scale*H, scale*W), plus the
                                          nearest-neighbour 4x input for realcugan up4x,
                                          still in [0,1] units (x255 / +0.5 / floor /
                                          clamp 0..255 not applied)
    DIR/manifest.json                     one entry per model (see below)

All .f32 files are raw little-endian float32, C order, channels-first (C, H, W), no header.

Input image (deterministic, no RNG; reproducible in Swift with Double math then Float cast):

    for c in 0..<3, y in 0..<H, x in 0..<W:
        g = (x / (W - 1) + y / (H - 1) + c / 2) / 3                  # smooth gradient, [0, 1]
        t = sin(c * 12.9898 + y * 78.233 + x * 37.719 + seed * 1.618) * 43758.5453
        n = t - floor(t)                                             # hash noise, [0, 1)
        v[c][y][x] = Float32(0.5 * g + 0.5 * n)                      # all in Double, then cast

(c, y, x are integers converted to Double; sin is the C library sin on doubles.)  The noise
amplifies last-bit differences of sin(), so a reimplementation can disagree on a few pixels;
use source.f32 / *.input.f32 rather than regenerating when exactness matters.

Padding (matches the CPU tilers of nihui/waifu2x-ncnn-vulkan src/waifu2x.cpp process_cpu and
nihui/realcugan-ncnn-vulkan src/realcugan.cpp process_cpu for a single tile covering the image):

  * prepadding p on top/left; bottom/right get p + extra, where
        extra = round_up(n, m) - n  for n = H (bottom) or W (right),
        m = 4 when scale in (1, 3), m = 2 when scale in (2, 4)
  * waifu2x (upconv7, cunet): copy_make_border BORDER_REPLICATE
        upconv7: p = 7 (scale 2)
        cunet:   p = 18 for *scale2.0x_model (scale 2), p = 28 for noiseN_model (scale 1)
  * realcugan-se: copy_make_border type 2 = reflect without repeating the edge pixel
        (numpy 'reflect', PyTorch ReflectionPad2d): p = 18 (2x), 14 (3x), 19 (4x)
  * realesr-animevideov3: no padding here ("same" convolutions keep the size; the upstream
        GPU tiler reflect-pads 10 px per tile and crops 10*scale px of output, see report)

Net outputs (for the default 40x32 input):
  * upconv7:      out = 2 * (in - 14)  -> exactly 2H x 2W for p = 7 (even sizes)
  * cunet, realcugan: the graph crops internally; the image is out[:, :scale*H, :scale*W]
  * realcugan up4x: out0 is a residual; image = out0 + nearest4x(unpadded input)
    (the .param ends with PixelShuffle, the addition is NOT in the graph; upstream adds
    in_tile[prepadding + i/4][prepadding + j/4])
  * realesr-animevideov3: the nearest 4x add is inside the graph (Interp 0=1 + BinaryOp add);
    x2/x3 then bicubic-downscale (Interp 0=3, scale 0.5 / 0.75) inside the graph

ncnn options: use_vulkan_compute = False, num_threads = --threads (2), use_fp16_storage /
use_fp16_arithmetic / use_fp16_packed = False, use_bf16_storage = False. Weights in the .bin
are fp16 and are widened to fp32 at load, so the math is fp32 on fp16-valued weights.
Winograd convolution is disabled by default (it is fp32 too but rounds differently from a
direct convolution); pass --allow-winograd to keep ncnn's defaults.

Exits non-zero if ncnn cannot be imported, if any model fails to load or run, or if an output
shape differs from what the tiler expects.
"""

import argparse
import json
import math
import os
import re
import sys
import time

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


FAMILIES = [
    "waifu2x-upconv7-photo",
    "waifu2x-upconv7-art",
    "waifu2x-cunet",
    "realcugan-se",
    "realesr-animevideov3",
]


def make_input(w, h, seed):
    """Deterministic 3 x h x w float32 image, formula in the module docstring."""
    c = np.arange(3, dtype=np.float64).reshape(3, 1, 1)
    y = np.arange(h, dtype=np.float64).reshape(1, h, 1)
    x = np.arange(w, dtype=np.float64).reshape(1, 1, w)
    g = (x / (w - 1) + y / (h - 1) + c / 2.0) / 3.0
    t = np.sin(c * 12.9898 + y * 78.233 + x * 37.719 + seed * 1.618) * 43758.5453
    n = t - np.floor(t)
    v = 0.5 * g + 0.5 * n
    return np.ascontiguousarray(v.astype(np.float32))


def round_extra(n, scale):
    m = 4 if scale in (1, 3) else 2
    return (n + m - 1) // m * m - n


def model_spec(family, stem):
    """Blob names, scale, pad rule for one model file."""
    if family.startswith("waifu2x-upconv7"):
        return dict(input_blob="Input1", output_blob="Eltwise4", scale=2, pad=7, mode="replicate",
                    residual_nearest=False)
    if family == "waifu2x-cunet":
        if "scale2.0x" in stem:
            return dict(input_blob="Input1", output_blob="Eltwise4", scale=2, pad=18, mode="replicate",
                        residual_nearest=False)
        return dict(input_blob="Input1", output_blob="Eltwise4", scale=1, pad=28, mode="replicate",
                    residual_nearest=False)
    if family == "realcugan-se":
        m = re.match(r"up(\d)x-", stem)
        if not m:
            raise ValueError("cannot parse scale from %s/%s" % (family, stem))
        scale = int(m.group(1))
        pad = {2: 18, 3: 14, 4: 19}[scale]
        return dict(input_blob="in0", output_blob="out0", scale=scale, pad=pad, mode="reflect",
                    residual_nearest=(scale == 4))
    if family == "realesr-animevideov3":
        m = re.search(r"-x(\d)$", stem)
        if not m:
            raise ValueError("cannot parse scale from %s/%s" % (family, stem))
        return dict(input_blob="data", output_blob="output", scale=int(m.group(1)), pad=0, mode="none",
                    residual_nearest=False)
    raise ValueError("unknown family %s" % family)


def pad_input(img, spec):
    """Returns padded array and [left, top, right, bottom]."""
    _, h, w = img.shape
    p = spec["pad"]
    if spec["mode"] == "none":
        return img.copy(), [0, 0, 0, 0]
    left = top = p
    right = p + round_extra(w, spec["scale"])
    bottom = p + round_extra(h, spec["scale"])
    if spec["mode"] == "reflect" and (max(top, bottom) >= h or max(left, right) >= w):
        raise ValueError("reflect padding %s needs an image larger than %dx%d" % ((left, top, right, bottom), w, h))
    np_mode = {"replicate": "edge", "reflect": "reflect"}[spec["mode"]]
    out = np.pad(img, ((0, 0), (top, bottom), (left, right)), mode=np_mode)
    return np.ascontiguousarray(out.astype(np.float32)), [left, top, right, bottom]


def check_pad_against_ncnn(img, padded, amounts, spec):
    """Cross-check numpy padding with ncnn.copy_make_border (the function upstream uses)."""
    if spec["mode"] == "none":
        return
    border = {"replicate": 1, "reflect": 2}[spec["mode"]]  # ncnn BORDER_REPLICATE=1, type 2 reflect
    left, top, right, bottom = amounts
    src = ncnn.Mat(np.ascontiguousarray(img))
    dst = ncnn.Mat()
    ncnn.copy_make_border(src, dst, top, bottom, left, right, border, 0.0)
    ref = np.array(dst)
    if ref.shape != padded.shape or not np.array_equal(ref, padded):
        raise RuntimeError("numpy padding differs from ncnn.copy_make_border (%s)" % spec["mode"])


def make_net(param, binf, threads, allow_winograd):
    net = ncnn.Net()
    opt = net.opt
    opt.use_vulkan_compute = False
    opt.num_threads = threads
    opt.use_fp16_storage = False
    opt.use_fp16_arithmetic = False
    opt.use_fp16_packed = False
    opt.use_bf16_storage = False
    opt.use_int8_inference = False
    if not allow_winograd:
        opt.use_winograd_convolution = False
        opt.use_winograd23_convolution = False
        opt.use_winograd43_convolution = False
        opt.use_winograd63_convolution = False
    net.opt = opt
    rc = net.load_param(param)
    if rc != 0:
        raise RuntimeError("load_param(%s) failed: %d" % (param, rc))
    rc = net.load_model(binf)
    if rc != 0:
        raise RuntimeError("load_model(%s) failed: %d" % (binf, rc))
    return net


def run_net(net, padded, in_blob, out_blob):
    ex = net.create_extractor()
    mat_in = ncnn.Mat(padded)
    rc = ex.input(in_blob, mat_in)
    if rc != 0:
        raise RuntimeError("input(%s) failed: %d" % (in_blob, rc))
    rc, mat_out = ex.extract(out_blob)
    if rc != 0:
        raise RuntimeError("extract(%s) failed: %d" % (out_blob, rc))
    out = np.array(mat_out, dtype=np.float32, copy=True)
    if out.ndim != 3:
        raise RuntimeError("unexpected output rank %s" % (out.shape,))
    return np.ascontiguousarray(out)


def expected_output_hw(family, spec, padded_hw, src_hw):
    ph, pw = padded_hw
    h, w = src_hw
    s = spec["scale"]
    if family.startswith("waifu2x-upconv7"):
        return (2 * (ph - 14), 2 * (pw - 14))
    if family == "realesr-animevideov3":
        return (h * s, w * s)
    return None  # cunet / realcugan: only require >= s*H x s*W (graph crops internally)


def write_f32(path, arr):
    a = np.ascontiguousarray(arr, dtype="<f4")
    with open(path, "wb") as f:
        f.write(a.tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--size", default="40x32", help="WxH of the unpadded image (default 40x32)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--allow-winograd", action="store_true",
                    help="keep ncnn's winograd convolution (default: off, direct/sgemm fp32)")
    ap.add_argument("--only", default=None, help="only models whose <family>__<stem> contains this")
    args = ap.parse_args()

    m = re.match(r"^(\d+)x(\d+)$", args.size)
    if not m:
        ap.error("--size must be WxH")
    w, h = int(m.group(1)), int(m.group(2))
    if w < 2 or h < 2:
        ap.error("--size too small")

    os.makedirs(args.out, exist_ok=True)
    img = make_input(w, h, args.seed)
    write_f32(os.path.join(args.out, "source.f32"), img)

    entries = []
    failures = []
    found = 0
    t_all = time.perf_counter()
    for family in FAMILIES:
        fdir = os.path.join(args.models_dir, family)
        if not os.path.isdir(fdir):
            failures.append("%s: family folder missing" % fdir)
            continue
        stems = sorted(f[:-6] for f in os.listdir(fdir) if f.endswith(".param"))
        if not stems:
            failures.append("%s: no .param files" % fdir)
        for stem in stems:
            key = "%s__%s" % (family, stem)
            if args.only and args.only not in key:
                continue
            found += 1
            param = os.path.join(fdir, stem + ".param")
            binf = os.path.join(fdir, stem + ".bin")
            try:
                if not os.path.isfile(binf):
                    raise RuntimeError("missing %s" % binf)
                spec = model_spec(family, stem)
                padded, amounts = pad_input(img, spec)
                check_pad_against_ncnn(img, padded, amounts, spec)
                t0 = time.perf_counter()
                net = make_net(param, binf, args.threads, args.allow_winograd)
                t1 = time.perf_counter()
                out = run_net(net, padded, spec["input_blob"], spec["output_blob"])
                t2 = time.perf_counter()
                net.clear()
                if not np.all(np.isfinite(out)):
                    raise RuntimeError("non-finite values in output")
                s = spec["scale"]
                oh, ow = out.shape[1], out.shape[2]
                exp = expected_output_hw(family, spec, padded.shape[1:], (h, w))
                if out.shape[0] != 3:
                    raise RuntimeError("output has %d channels" % out.shape[0])
                if exp is not None and (oh, ow) != exp:
                    raise RuntimeError("output %dx%d, expected %dx%d" % (ow, oh, exp[1], exp[0]))
                if oh < s * h or ow < s * w:
                    raise RuntimeError("output %dx%d smaller than %dx%d" % (ow, oh, s * w, s * h))
                final = out[:, : s * h, : s * w].copy()
                if spec["residual_nearest"]:
                    final += np.repeat(np.repeat(img, s, axis=1), s, axis=2)
                write_f32(os.path.join(args.out, key + ".input.f32"), padded)
                write_f32(os.path.join(args.out, key + ".output.f32"), out)
                write_f32(os.path.join(args.out, key + ".final.f32"), final)
                left, top, right, bottom = amounts
                entries.append({
                    "family": family,
                    "model": stem,
                    "param": os.path.relpath(param, args.models_dir),
                    "bin": os.path.relpath(binf, args.models_dir),
                    "input_blob": spec["input_blob"],
                    "output_blob": spec["output_blob"],
                    "scale": s,
                    "unpadded_size": {"w": w, "h": h},
                    "pad": {
                        "mode": spec["mode"],
                        "prepadding": spec["pad"],
                        "round_to_multiple": 0 if spec["mode"] == "none" else (4 if s in (1, 3) else 2),
                        "left": left, "top": top, "right": right, "bottom": bottom,
                    },
                    "input_shape": list(padded.shape),
                    "output_shape": list(out.shape),
                    "final_crop": {"y": 0, "x": 0, "h": s * h, "w": s * w},
                    "final_adds_nearest_input": bool(spec["residual_nearest"]),
                    "final_shape": list(final.shape),
                    "files": {
                        "input": key + ".input.f32",
                        "output": key + ".output.f32",
                        "final": key + ".final.f32",
                    },
                    "output_stats": {
                        "min": float(out.min()), "max": float(out.max()), "mean": float(out.mean()),
                    },
                    "seconds": {"load": round(t1 - t0, 4), "run": round(t2 - t1, 4)},
                })
                print("ok  %-55s in %s out %s  load %.2fs run %.2fs" % (
                    key, list(padded.shape), list(out.shape), t1 - t0, t2 - t1), flush=True)
            except Exception as e:
                failures.append("%s: %s" % (key, e))
                print("ERR %-55s %s" % (key, e), file=sys.stderr, flush=True)

    manifest = {
        "generator": "scripts/ncnn_reference.py",
        "ncnn_version": getattr(ncnn, "__version__", "unknown"),
        "numpy_version": np.__version__,
        "size": {"w": w, "h": h},
        "seed": args.seed,
        "source": {"file": "source.f32", "shape": [3, h, w]},
        "dtype": "float32 little-endian, CHW, no header",
        "input_formula": "g=(x/(W-1)+y/(H-1)+c/2)/3; t=sin(c*12.9898+y*78.233+x*37.719+seed*1.618)*43758.5453; "
                         "n=t-floor(t); v=Float32(0.5*g+0.5*n) (Double math)",
        "options": {
            "use_vulkan_compute": False, "num_threads": args.threads,
            "use_fp16_storage": False, "use_fp16_arithmetic": False, "use_fp16_packed": False,
            "use_bf16_storage": False, "winograd": bool(args.allow_winograd),
        },
        "postprocess": "pixel = clamp(floor(final*255 + 0.5), 0, 255) (upstream: v*255+0.5 then saturate_cast)",
        "models": entries,
        "failures": failures,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("%d models, %d ok, %d failed, %.2fs total" % (found, len(entries), len(failures),
                                                      time.perf_counter() - t_all))
    if failures or not entries:
        for fl in failures:
            print("FAILED: " + fl, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
