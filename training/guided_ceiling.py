#!/usr/bin/env python3
"""The ceiling of colour transferred on a coarse grid (issue 28): each colour clip's own true
ab, area-shrunk to the square transfer grid the colour guide uses (112, and 224 for
comparison) and brought back to full size bilinearly or with a guided filter on L, scored
as rebalanced AuC over grey on every 3rd frame (prior from those frames). No model runs: it
says how much of the "keyframe >= grey + 15" bar the grid itself allows.

    pip install opencv-python-headless scikit-image
    python3 training/guided_ceiling.py color_davis_bedroom_123f.mp4 vid4_walk_gt.mp4 ...

Clips are read from ../shared/media/videos.
"""
import os, sys
import numpy as np
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from evaluate import frames_of
from common import *
from skimage import color
import cv2
def area(x, s): return cv2.resize(x, (s, s), interpolation=cv2.INTER_AREA)
def box(x, r): return cv2.blur(x, (2*r+1, 2*r+1), borderType=cv2.BORDER_REFLECT)
def guided_coeffs(I, p, r, eps):
    mI, mp = box(I, r), box(p, r)
    cov = box(I*p, r) - mI*mp; var = box(I*I, r) - mI*mI
    a = cov/(var+eps); b = mp - a*mI
    return box(a, r), box(b, r)
for clip in sys.argv[1:]:
    truth = frames_of(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'shared', 'media', 'videos', clip))[::3]
    labs = [color.rgb2lab(f).astype(np.float32) for f in truth[1:]]
    prior = ab_prior([l[..., 1:] for l in labs])
    H, W = labs[0].shape[:2]
    res = {}
    for name in ['grey', 'bil112', 'gf112', 'bil224', 'gf224', 'gf112e']:
        hist = np.zeros(152)
        for lab in labs:
            t = lab[..., 1:]; L = lab[..., 0]
            if name == 'grey': p = np.zeros_like(t)
            else:
                s = 224 if '224' in name else 112
                Ls = area(L, s)
                chans = []
                for c in range(2):
                    abs_ = area(np.ascontiguousarray(t[..., c]), s)
                    if name.startswith('bil'):
                        chans.append(cv2.resize(abs_, (W, H), interpolation=cv2.INTER_LINEAR))
                    else:
                        eps = 4.0 if name.endswith('e') else 25.0
                        a, b = guided_coeffs(Ls, abs_, 1, eps)
                        A = cv2.resize(a, (W, H)); B = cv2.resize(b, (W, H))
                        chans.append(A*L + B)
                p = np.stack(chans, -1)
            hist += ab_error_histogram(p, t, weights=rebalance_weights(t, prior))
        res[name] = 100*pooled_auc(hist)
    print(clip, {k: round(v - res['grey'], 2) for k, v in res.items()}, 'grey', round(res['grey'], 2))
