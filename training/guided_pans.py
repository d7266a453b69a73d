#!/usr/bin/env python3
"""Keyframes and references on clips never used for tuning (issue 28).

The colour clips in ../shared/media/videos are the ones the keyframe carry was tuned on; this
makes clips the carry never saw, from BSD100 photographs (../shared/datasets/val) that neither
tuning nor `guided_crops.py` (every 5th photo from the first) used: every 5th photo from the
third. Each photo becomes a 2-second, 24 fps colour clip filmed by a moving camera: the window
pans from one side of the photo to the other, zooms in by a quarter, and shakes by up to a
pixel and a half from frame to frame (a seeded random walk); each frame gets its own film grain
(Gaussian, σ 2 of 255) and the clip is encoded with x264 (CRF 16, 4:2:0). The motion is made,
the content is not: what is measured is how well a keyframe's colour follows content it was
never tuned on, not how well it follows people walking (the shared clips measure that).

Each clip then goes through `evaluate.evaluate_guided`, exactly as the shared clips do: turned
grey, colorized automatically, with its frame 0 as `--keyframe`, with its middle frame as
keyframe, and frame 0 as a `--reference` photo for the last frame. Printed: per clip and over
all clips (mean, median, worst), the keyframe run's rebalanced margin over grey, colourfulness
and flicker against the truth's, the last frame's keyframe − automatic, and the photo pair's
reference − automatic.

Usage: python3 training/guided_pans.py [--json OUT.json] [--clips N] [--vivify BINARY]
"""
import argparse, glob, json, os, subprocess, sys, tempfile
import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import evaluate  # noqa: E402

FRAMES, FPS = 48, 24


def make_clip(photo, path, seed, zoom=0.25, pan=0.9):
    """A 2-second clip of `photo` through a panning, zooming, shaking camera (see the docstring)."""
    im = Image.open(photo).convert("RGB")
    w, h = im.size
    landscape = w >= h
    out_w, out_h = (360, 240) if landscape else (240, 360)
    rng = np.random.default_rng(seed)
    # The window: 80% of the photo's short side at the start, a quarter smaller at the end.
    side0 = 0.8 * min(w * out_h / out_w, h) if landscape else 0.8 * min(h * out_w / out_h, w)
    shake = np.cumsum(rng.normal(0, 0.6, size=(FRAMES, 2)), axis=0)
    shake = np.clip(shake, -1.5, 1.5)
    direction = 1 if seed % 2 == 0 else -1
    frames = []
    for k in range(FRAMES):
        t = k / (FRAMES - 1)
        scale = 1 - zoom * t
        if landscape:
            wh, ww = side0 * scale, side0 * scale * out_w / out_h
        else:
            ww, wh = side0 * scale, side0 * scale * out_h / out_w
        # The centre travels from one end of the room the window leaves to the other.
        room_x, room_y = (w - ww) / 2, (h - wh) / 2
        cx = w / 2 + direction * (2 * t - 1) * pan * room_x + shake[k, 0]
        cy = h / 2 + (2 * t - 1) * pan * 0.4 / 0.9 * room_y + shake[k, 1]
        box = (cx - ww / 2, cy - wh / 2, cx + ww / 2, cy + wh / 2)
        frame = im.transform((out_w, out_h), Image.EXTENT, box, resample=Image.BICUBIC)
        a = np.asarray(frame).astype(np.float32) + rng.normal(0, 2, size=(out_h, out_w, 3))
        frames.append(np.clip(np.round(a), 0, 255).astype(np.uint8))
    raw = np.stack(frames).tobytes()
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{out_w}x{out_h}", "-r", str(FPS),
                    "-i", "-", "-c:v", "libx264", "-crf", "16", "-pix_fmt", "yuv420p", path], input=raw, check=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vivify", default=os.path.join(HERE, "..", ".build/release/vivify"))
    ap.add_argument("--shared", default=os.path.join(HERE, "..", "..", "shared"))
    ap.add_argument("--clips", type=int, default=20)
    ap.add_argument("--photos", help="a glob of other photographs (to tune on: the default set is held out)")
    ap.add_argument("--zoom", type=float, default=0.25, help="how much smaller the window gets by the last frame")
    ap.add_argument("--pan", type=float, default=0.9, help="how far across the room the window leaves it travels")
    ap.add_argument("--json")
    ap.add_argument("--pictures", help="write side-by-side JPEGs into this folder")
    args = ap.parse_args()
    binary = os.path.abspath(args.vivify)
    if not os.access(binary, os.X_OK):
        sys.exit(f"No vivify binary at '{binary}'. Build it (swift build -c release --product vivify) or pass --vivify.")
    if args.photos:
        photos = sorted(glob.glob(args.photos))[:args.clips]
    else:
        photos = sorted(glob.glob(os.path.join(args.shared, "datasets/val/BSD100/*.jpg")))[2::5][:args.clips]
    if not photos:
        sys.exit(f"No photographs: {args.photos or args.shared + '/datasets/val/BSD100'}. Pass --shared or --photos.")
    if args.pictures:
        os.makedirs(args.pictures, exist_ok=True)
    results = {}
    with tempfile.TemporaryDirectory() as made, tempfile.TemporaryDirectory() as work:
        os.makedirs(os.path.join(made, "media/videos"))
        names = []
        for i, photo in enumerate(photos):
            name = "pan_" + os.path.splitext(os.path.basename(photo))[0] + ".mp4"
            make_clip(photo, os.path.join(made, "media/videos", name), seed=i, zoom=args.zoom, pan=args.pan)
            names.append(name)
        results = evaluate.evaluate_guided(binary, "vivify-color", work, made, args.pictures, names)
    rows = list(results.values())
    summary = {}
    figures = {
        "keyframe_margin_over_grey": [r["keyframe"]["rb_margin_over_grey"] for r in rows],
        "automatic_margin_over_grey": [r["automatic"]["rb_margin_over_grey"] for r in rows],
        "ceiling_over_grey": [r["ceiling_over_grey"] for r in rows],
        "keyframe_colourfulness_ratio": [r["keyframe"]["colourfulness_ratio"] for r in rows],
        "keyframe_flicker_over_truth": [r["keyframe"]["flicker"] / r["truth_flicker"] for r in rows],
        "last_frame_keyframe_minus_automatic": [r["last_frame_reference_minus_automatic"] for r in rows],
        "photo_pair_reference_minus_automatic": [r["photo_pairs"][str(FRAMES - 1)]["reference_minus_automatic"] for r in rows],
        "middle_keyframe_before_margin_over_grey": [r["middle_keyframe"]["before"]["margin_over_grey"] for r in rows],
    }
    for key, v in figures.items():
        summary[key] = {"mean": float(np.mean(v)), "median": float(np.median(v)), "min": float(np.min(v)), "max": float(np.max(v))}
    summary["clips"] = len(rows)
    summary["clips_meeting_the_keyframe_bars"] = sum(r["keyframe"]["meets_bars"] for r in rows)
    print(f"\n{len(rows)} made clips (BSD100, held out):")
    for key, s in summary.items():
        if isinstance(s, dict):
            print(f"  {key}: mean {s['mean']:.3f}, median {s['median']:.3f}, min {s['min']:.3f}, max {s['max']:.3f}")
    print(f"  clips meeting the keyframe bars (+15 over grey, colourfulness >= 85%, flicker <= truth's): "
          f"{summary['clips_meeting_the_keyframe_bars']} of {len(rows)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "clips": {k: {kk: vv for kk, vv in v.items()} for k, v in results.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
