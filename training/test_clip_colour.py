"""Tests of training/clip_colour.py's scoring of a colorized clip against its colour original
(synthetic frames; no binary).

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import importlib.util, os, sys, unittest

import numpy as np

if not (importlib.util.find_spec("skimage") and importlib.util.find_spec("PIL")):
    raise unittest.SkipTest("scikit-image and Pillow score the clips (training/requirements.txt)")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import clip_colour
from evaluate import grey_of


def clip(seed, frames=4, size=24):
    """Frames of coloured blocks (red, green, blue, yellow) with noise, changing a little a frame."""
    rng = np.random.default_rng(seed)
    base = np.zeros((size, size, 3))
    half = size // 2
    base[:half, :half], base[:half, half:] = (200, 40, 40), (40, 180, 60)
    base[half:, :half], base[half:, half:] = (50, 60, 200), (220, 210, 40)
    out = [np.clip(base + rng.normal(0, 6, base.shape) + 3 * k, 0, 255).astype(np.uint8) for k in range(frames)]
    return np.stack(out)


class ScoreTests(unittest.TestCase):
    def test_the_truth_scores_full_marks_and_grey_scores_nothing_over_grey(self):
        truth = clip(0)
        s = clip_colour.score(truth, truth)
        self.assertAlmostEqual(s["rb_auc"], 100, places=6)
        self.assertAlmostEqual(s["colourfulness_ratio"], 1, places=9)
        self.assertGreater(s["rb_over_grey"], 20)  # saturated blocks: grey is far from them
        grey = np.stack([grey_of(f) for f in truth])
        g = clip_colour.score(grey, truth)
        self.assertAlmostEqual(g["rb_over_grey"], 0, delta=0.5)  # grey_of keeps L, so its ab is ~0
        self.assertLess(g["colourfulness_ratio"], 0.1)

    def test_frame_zero_is_not_scored(self):
        # Frame 0 is the keyframe in the guided evaluations: wrong colour there changes nothing.
        truth = clip(1)
        ours = truth.copy()
        ours[0] = 255 - ours[0]
        self.assertEqual(clip_colour.score(ours, truth), clip_colour.score(truth, truth))

    def test_a_paler_copy_scores_between_grey_and_the_truth(self):
        truth = clip(2)
        grey = np.stack([grey_of(f) for f in truth]).astype(float)
        pale = np.clip(grey + 0.5 * (truth - grey), 0, 255).astype(np.uint8)
        s = clip_colour.score(pale, truth)
        self.assertGreater(s["rb_over_grey"], 1)
        self.assertLess(s["rb_auc"], 100)
        self.assertTrue(0.3 < s["colourfulness_ratio"] < 0.8, s["colourfulness_ratio"])


if __name__ == "__main__":
    unittest.main()
