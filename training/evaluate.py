#!/usr/bin/env python3
"""Quality of the built-in models, measured through the real vivify binary (issue 7's bars).

Colorizer (BSD100 of ../shared/datasets/val): each photograph is turned grey (its CIE L kept,
a* = b* = 0), colorized by `vivify image --colorize` (the built-in vivify-color unless --colorize
names another model) at full size, and compared with the original:
  - AuC: Zhang et al. (ECCV 2016): the fraction of pixels whose ab error (Euclidean, CIE units)
    is within a threshold, averaged over thresholds 0..150 (step 1), per image, then averaged;
    for our output and for the grey baseline (ab = 0). Bar: ours above grey.
  - Colourfulness: Hasler and Suesstrunk (2003) M of our output and of the original, averaged
    over the images. Bar: ours at least 50% of the original's.

Upscaler (Set5 and Set14): each image (cropped to even sides) is shrunk by PIL bicubic x0.5,
enlarged by `vivify image --upscale` (the built-in vivify-fast-2x unless --upscale names
another) and by PIL bicubic x2; luma (BT.601, 16-235) PSNR against the original with a 2-pixel
border shaved, averaged per set. Bar: ours at least bicubic + 0.8 dB.

--pictures DIR writes side-by-side JPEGs (input, ours, ground truth) for a few images.

Usage: python3 training/evaluate.py [--vivify .build/release/vivify] [--json results.json]
       [--pictures docs/images]
Needs numpy, Pillow and scikit-image (training/requirements.txt).
"""
import argparse, glob, json, os, subprocess, sys, tempfile

import numpy as np
from PIL import Image, ImageDraw
from skimage import color

from common import auc, bicubic_pairs, colourfulness, psnr


def vivify(binary, args):
    r = subprocess.run([binary, "image"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"vivify image {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")


def grey_of(rgb):
    lab = color.rgb2lab(rgb)
    lab[..., 1:] = 0
    return np.clip(np.round(color.lab2rgb(lab) * 255), 0, 255).astype(np.uint8)


def side_by_side(images, labels, path, height=200):
    tiles = []
    for im in images:
        pil = Image.fromarray(im)
        tiles.append(pil.resize((round(pil.width * height / pil.height), height), Image.LANCZOS) if pil.height != height else pil)
    w = sum(t.width for t in tiles) + 4 * (len(tiles) - 1)
    canvas = Image.new("RGB", (w, height + 18), "white")
    x = 0
    draw = ImageDraw.Draw(canvas)
    for t, label in zip(tiles, labels):
        canvas.paste(t, (x, 18))
        draw.text((x + 4, 3), label, fill="black")
        x += t.width + 4
    canvas.save(path, quality=88)


def evaluate_colorizer(binary, model, folder, work, pictures, picks):
    rows = []
    files = sorted(glob.glob(os.path.join(folder, "*.jpg")) + glob.glob(os.path.join(folder, "*.png")))
    for i, f in enumerate(files):
        truth = np.asarray(Image.open(f).convert("RGB"))
        grey = grey_of(truth)
        src, out = os.path.join(work, "grey.png"), os.path.join(work, "color.png")
        Image.fromarray(grey).save(src)
        vivify(binary, [src, out, "--colorize", model])
        ours = np.asarray(Image.open(out).convert("RGB"))
        true_ab = color.rgb2lab(truth)[..., 1:]
        our_ab = color.rgb2lab(ours)[..., 1:]
        rows.append({"image": os.path.basename(f), "auc": auc(our_ab, true_ab), "grey_auc": auc(np.zeros_like(true_ab), true_ab),
                     "colourfulness": colourfulness(ours), "truth_colourfulness": colourfulness(truth)})
        if pictures and os.path.basename(f) in picks:
            side_by_side([grey, ours, truth], ["input (grey)", "vivify-color", "ground truth"],
                         os.path.join(pictures, "color-" + os.path.splitext(os.path.basename(f))[0] + ".jpg"))
        print(f"\r  colorizer {i + 1}/{len(files)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    mean = lambda k: float(np.mean([r[k] for r in rows]))
    summary = {k: mean(k) for k in ["auc", "grey_auc", "colourfulness", "truth_colourfulness"]}
    summary["colourfulness_ratio"] = summary["colourfulness"] / summary["truth_colourfulness"]
    summary["images"] = len(rows)
    summary["auc_above_grey"] = summary["auc"] > summary["grey_auc"]
    summary["colourful_enough"] = summary["colourfulness_ratio"] >= 0.5
    return summary, rows


def evaluate_upscaler(binary, model, folder, work, pictures, picks):
    rows = []
    for name, img, small, bic in bicubic_pairs(folder):
        h, w = img.shape[:2]
        src, out = os.path.join(work, "small.png"), os.path.join(work, "big.png")
        small.save(src)
        vivify(binary, [src, out, "--upscale", model])
        ours = np.asarray(Image.open(out).convert("RGB"))
        rows.append({"image": name, "ours_db": psnr(ours, img), "bicubic_db": psnr(bic, img)})
        if pictures and name in picks:
            # A 160x160 crop of the centre, shown at 2x: the shrunk input (nearest), bicubic, ours, truth.
            cy, cx = h // 2 - 80, w // 2 - 80
            crop = lambda a: a[cy:cy + 160, cx:cx + 160]
            inp = np.asarray(Image.fromarray(crop(np.asarray(small.resize((w, h), Image.NEAREST)))))
            side_by_side([inp, crop(bic), crop(ours), crop(img)], ["input (x0.5, nearest)", "bicubic", "vivify-fast-2x", "ground truth"],
                         os.path.join(pictures, "upscale-" + os.path.splitext(name)[0] + ".jpg"), height=320)
    ours, bic = float(np.mean([r["ours_db"] for r in rows])), float(np.mean([r["bicubic_db"] for r in rows]))
    return {"ours_db": ours, "bicubic_db": bic, "gain_db": ours - bic, "images": len(rows), "meets_bar": ours - bic >= 0.8}, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vivify", default=".build/release/vivify")
    ap.add_argument("--val", default="../shared/datasets/val")
    ap.add_argument("--colorize", default="vivify-color", help="colorizer to evaluate (default: the built-in)")
    ap.add_argument("--upscale", default="2", help="upscaler to evaluate (default: the built-in 2x)")
    ap.add_argument("--skip", choices=["colorizer", "upscaler"], action="append", default=[])
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--pictures", help="write side-by-side JPEGs into this folder")
    args = ap.parse_args()
    if not os.access(args.vivify, os.X_OK):
        sys.exit(f"No vivify binary at '{args.vivify}'. Build it (swift build -c release) or pass --vivify.")
    if args.pictures:
        os.makedirs(args.pictures, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory() as work:
        if "colorizer" not in args.skip:
            s, rows = evaluate_colorizer(args.vivify, args.colorize, os.path.join(args.val, "BSD100"), work, args.pictures,
                                         {"img_005.jpg", "img_025.jpg", "img_062.jpg", "img_087.jpg"})
            results["colorizer"] = {"model": args.colorize, "BSD100": s, "per_image": rows}
            print(f"colorizer {args.colorize} on BSD100 ({s['images']} images): AuC {s['auc']:.4f} vs grey {s['grey_auc']:.4f} "
                  f"({'above' if s['auc_above_grey'] else 'NOT above'}); colourfulness {s['colourfulness']:.1f} vs truth "
                  f"{s['truth_colourfulness']:.1f} ({100 * s['colourfulness_ratio']:.0f}%, bar 50%)")
        if "upscaler" not in args.skip:
            results["upscaler"] = {"model": args.upscale}
            for name in ["Set5", "Set14"]:
                s, rows = evaluate_upscaler(args.vivify, args.upscale, os.path.join(args.val, name), work, args.pictures,
                                            {"butterfly.png", "comic.png"})
                results["upscaler"][name] = dict(s, per_image=rows)
                print(f"upscaler {args.upscale} on {name}: luma PSNR {s['ours_db']:.2f} dB vs bicubic {s['bicubic_db']:.2f} dB "
                      f"(+{s['gain_db']:.2f} dB, bar +0.80)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    ok = all([results.get("colorizer", {}).get("BSD100", {}).get(k, True) for k in ["auc_above_grey", "colourful_enough"]] +
             [results.get("upscaler", {}).get(n, {}).get("meets_bar", True) for n in ["Set5", "Set14"]])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
