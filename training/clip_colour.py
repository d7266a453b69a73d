#!/usr/bin/env python3
"""Automatic colour on a colour clip turned grey, for one or more colorizers (issue 29, item 4).

Drift alone cannot tell a decoder whose colour holds through a shot from one that colours
little: a grey output never drifts. So beside `Benchmarks/drift.sh`'s drift, this measures what
the colour is worth on the same clip: the clip turned grey (every frame's CIE L kept, as
training/evaluate.py's --video and guided evaluations make it, ffv1 at the clip's rate),
colorized by `vivify run --colorize MODEL` (shot anchors and stabilizer on, as shipped;
ffv1 4:2:0 like the truth), and over frames 1..N against the clip's own colour: AuC and
rebalanced AuC (prior from those frames) against grey's, and colourfulness against the truth's.

Usage: python3 training/clip_colour.py [--clip ../shared/media/videos/color_davis_bedroom_123f.mp4]
           [--model Models/vivify-color.param ...] [--vivify .build/release/vivify]
       (no --model: the built-in vivify-color; each --model is scored in turn)
Needs numpy, Pillow and scikit-image (training/requirements.txt).
"""
import argparse, os, sys, tempfile

import numpy as np
from skimage import color

from common import ab_error_histogram, ab_prior, colourfulness, pooled_auc, rebalance_weights
from evaluate import frame_rate, frames_of, vivify, write_grey_clip


def score(frames, truth):
    """AuC, rebalanced AuC (both in points, grey's beside them) and the colourfulness ratio of
    `frames` against `truth` over frames 1..N."""
    true_abs = [color.rgb2lab(f)[..., 1:] for f in truth[1:]]
    prior = ab_prior(true_abs)
    hists = np.zeros((4, 152))
    for k, t in enumerate(true_abs):
        ab, wts = color.rgb2lab(frames[k + 1])[..., 1:], rebalance_weights(t, prior)
        zero = np.zeros_like(t)
        hists += [ab_error_histogram(ab, t), ab_error_histogram(zero, t), ab_error_histogram(ab, t, weights=wts),
                  ab_error_histogram(zero, t, weights=wts)]
    auc, grey_auc, rb, grey_rb = (100 * pooled_auc(h) for h in hists)
    ratio = np.mean([colourfulness(f.astype(float)) for f in frames[1:]]) / np.mean([colourfulness(f.astype(float)) for f in truth[1:]])
    return dict(auc=auc, grey_auc=grey_auc, rb_auc=rb, grey_rb_auc=grey_rb, rb_over_grey=rb - grey_rb, colourfulness_ratio=float(ratio))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clip", default="../shared/media/videos/color_davis_bedroom_123f.mp4")
    ap.add_argument("--model", action="append", help="a colorizer (.param or .wifm); repeatable; default the built-in one")
    ap.add_argument("--vivify", default=".build/release/vivify")
    args = ap.parse_args()
    if not os.access(args.vivify, os.X_OK):
        sys.exit(f"No vivify binary at '{args.vivify}'. Build it (swift build -c release --product vivify) or pass --vivify.")
    truth = frames_of(args.clip)
    with tempfile.TemporaryDirectory() as work:
        grey = os.path.join(work, "grey.mkv")
        write_grey_clip(truth, frame_rate(args.clip), grey)
        for model in args.model or [None]:
            out = os.path.join(work, "out.mkv")
            vivify(args.vivify, [grey, out, "--colorize"] + ([model] if model else []) + ["--codec", "ffv1", "--pix-fmt", "yuv420p", "--quiet"],
                   command="run")
            frames = frames_of(out)
            if len(frames) != len(truth):
                sys.exit(f"{model or 'built-in'}: {len(frames)} frames colorized of {len(truth)}")
            s = score(frames, truth)
            print(f"{model or 'built-in vivify-color'} on {os.path.basename(args.clip)} (frames 1-{len(truth) - 1}): "
                  f"rebalanced AuC {s['rb_auc']:.2f} vs grey {s['grey_rb_auc']:.2f} ({s['rb_over_grey']:+.2f}); "
                  f"AuC {s['auc']:.2f} vs grey {s['grey_auc']:.2f}; colourfulness {100 * s['colourfulness_ratio']:.0f}% of the truth's",
                  flush=True)


if __name__ == "__main__":
    main()
