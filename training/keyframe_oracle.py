#!/usr/bin/env python3
"""How far a keyframe's colour can carry (issue 28): an oracle beside vivify's keyframe run.

For each colour clip (turned grey, its frame 0 in colour as `--keyframe 0=`), over frames 1..N
against the truth, the rebalanced AuC margin over grey (as `evaluate.py --guided`) of:
  - ours: `vivify run --colorize --keyframe 0=frame0.png` (lossless, 4:2:0 as the clips are);
  - moved: the keyframe's own true colour carried frame to frame by dense optical flow on L
    (OpenCV Farneback, the previous result warped onto each frame), ours where the warped L
    does not match the frame's (weight exp(-|dL| / 6)): what perfect keyframe colour, moved
    as the content moves, gives;
  - per frame at distances 1, 2, 5, 10: the keyframe's true colour unmoved and warped
    directly onto the frame;
  - the colourfulness of ours and of the moved colour against the truth's (issue 28's 85% bar).
Needs numpy, Pillow, scikit-image and opencv-python-headless (analysis only, not CI).

Usage: python3 training/keyframe_oracle.py [--vivify .build/release/vivify] [clip.mp4 ...]
"""
import argparse, os, subprocess, sys, tempfile

import cv2
import numpy as np
from PIL import Image
from skimage import color

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ab_error_histogram, ab_prior, colourfulness, pooled_auc, rebalance_weights
from evaluate import GUIDED_CLIPS, frame_rate, frames_of, write_grey_clip


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vivify", default=".build/release/vivify")
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("clips", nargs="*", default=GUIDED_CLIPS)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="vivify-oracle-")
    u8 = lambda x: np.clip(x * 2.55, 0, 255).astype(np.uint8)
    for clip in args.clips:
        src = os.path.join(args.shared, "media/videos", clip)
        truth = frames_of(src)
        n, h, w, _ = truth.shape
        gp, key, out = os.path.join(work, "grey.mkv"), os.path.join(work, "key.png"), os.path.join(work, "key.mkv")
        write_grey_clip(truth, frame_rate(src), gp)
        Image.fromarray(truth[0]).save(key)
        subprocess.run([args.vivify, "run", gp, out, "--colorize", "--codec", "ffv1", "--pix-fmt", "yuv420p", "--quiet", "-y", "--keyframe", "0=" + key], check=True)
        ours = [color.rgb2lab(f)[..., 1:] for f in frames_of(out)]
        lab = [color.rgb2lab(f) for f in truth]
        true_abs = [l[..., 1:] for l in lab[1:]]
        prior = ab_prior(true_abs)

        def margins(abs_):
            return [margins_one(ab, t, prior) for ab, t in zip(abs_, true_abs)]
        ys, xs = np.mgrid[0:h, 0:w].astype(np.float32)
        L = [l[..., 0].astype(np.float32) for l in lab]
        flow = lambda a, b: cv2.calcOpticalFlowFarneback(u8(L[a]), u8(L[b]), None, 0.5, 4, 15, 3, 5, 1.2, 0)
        warp = lambda img, f: cv2.remap(img, xs + f[..., 0], ys + f[..., 1], cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        moved, prev = [], lab[0][..., 1:].astype(np.float32)
        for t in range(1, n):
            f = flow(t, t - 1)
            wt = np.exp(-np.abs(L[t] - warp(L[t - 1], f)) / 6)[..., None]
            prev = wt * warp(prev, f) + (1 - wt) * ours[t].astype(np.float32)
            moved.append(prev)

        def pooled(abs_):
            hr = hg = np.zeros(152)
            for k, t in enumerate(true_abs):
                wts = rebalance_weights(t, prior)
                hr = hr + ab_error_histogram(abs_[k], t, weights=wts)
                hg = hg + ab_error_histogram(np.zeros_like(t), t, weights=wts)
            return 100 * (pooled_auc(hr) - pooled_auc(hg))
        print(f"{clip} ({n} frames): margin over grey, frames 1..N: ours +{pooled(ours[1:]):.2f}; keyframe truth moved by flow +{pooled(moved):.2f}; "
              f"ceiling +{pooled(true_abs):.2f}", flush=True)

        def colourful(abs_):
            """Mean colourfulness over frames 1..N against the truth's, as evaluate.py's --guided
            averages it, but of the truth's own L with `abs_` (through sRGB), so that ours and the
            oracle are read alike (evaluate.py reads our output frames as they are; on the walk
            clip both give 76% for ours)."""
            rgb = lambda l, ab: 255 * color.lab2rgb(np.concatenate([l[..., None], ab], 2))
            return (np.mean([colourfulness(rgb(L[t + 1], ab)) for t, ab in enumerate(abs_)])
                    / np.mean([colourfulness(f.astype(float)) for f in truth[1:]]))
        print(f"  colourfulness against the truth's, frames 1..N: ours {100 * colourful(ours[1:]):.0f}%; "
              f"keyframe truth moved by flow {100 * colourful(moved):.0f}%", flush=True)
        po = margins(ours[1:])
        for k in [1, 2, 5, 10, 40]:
            if k >= n:
                continue
            one = lambda ab: margins_one(ab, true_abs[k - 1], prior)
            print(f"  frame {k}: ours +{po[k - 1]:.1f}; keyframe truth unmoved +{one(lab[0][..., 1:]):.1f}, warped onto it +{one(warp(lab[0][..., 1:].astype(np.float32), flow(k, 0))):.1f}, "
                  f"chained +{one(moved[k - 1]):.1f}", flush=True)


def margins_one(ab, t, prior):
    wts = rebalance_weights(t, prior)
    return 100 * (pooled_auc(ab_error_histogram(ab, t, weights=wts)) - pooled_auc(ab_error_histogram(np.zeros_like(t), t, weights=wts)))


if __name__ == "__main__":
    main()
