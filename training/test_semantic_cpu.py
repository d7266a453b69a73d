"""Tests of issue 29's semantic loss on the CPU (training/crossval.py --critic-kl/--critic-feat):
color.replay_clean_l gives back the clean L* of exactly the crops a feature cache holds (and
stops when it cannot), and color.semantic_loss is nothing for the true colour, something for
grey, and reaches the decoder's weights.

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import os, sys, tempfile, unittest

import numpy as np
try:
    import torch
except ImportError:  # CI has no PyTorch (training only): these tests run where training does
    raise unittest.SkipTest("PyTorch is not installed")
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import color

BACKBONE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", color.BACKBONE)  # color's is from the checkout's root


class NoEncoder:
    """build_cache's encoder interface: features of the right shapes, all zero (the replay never
    reads them)."""
    channels = [1, 1, 1, 1, 1]

    def __call__(self, x):
        b = x.shape[0]
        return [torch.zeros(b, 1, s, s) for s in (56, 28, 14, 7)] + [torch.zeros(b, 1)]


def photographs(folder, n=3):
    """n colour pictures of different sizes: a hue ramp across, a lightness ramp down, noise."""
    rng = np.random.default_rng(7)
    files = []
    for i in range(n):
        h, w = 90 + 20 * i, 130 + 10 * i
        x = np.linspace(0, 1, w)[None, :, None]
        y = np.linspace(0, 1, h)[:, None, None]
        rgb = np.concatenate([x * np.ones((h, 1, 1)), y * np.ones((1, w, 1)), (1 - x) * (1 - y)], 2) * 200
        rgb = np.clip(rgb + rng.normal(0, 12, rgb.shape), 0, 255).astype(np.uint8)
        files.append(os.path.join(folder, f"p{i}.png"))
        Image.fromarray(rgb).save(files[-1])
    return files


class ReplayTests(unittest.TestCase):
    def test_the_replay_gives_the_cached_crops_clean_lightness_and_stops_when_it_goes_astray(self):
        with tempfile.TemporaryDirectory() as tmp:
            files = photographs(tmp)
            cache = os.path.join(tmp, "cache")
            color.build_cache(NoEncoder(), files, 3, 11, cache, batch=4)
            color.replay_clean_l(files, 3, 11, cache, batch=4)
            l = np.load(os.path.join(cache, "l.npy"))
            self.assertEqual(l.shape, (9, color.SIZE, color.SIZE))
            # Crop 0 drawn again by hand, as build_cache draws it first: the same clean L*.
            import random
            rng = random.Random(11)
            crop = torch.from_numpy(color.random_crop(Image.open(files[0]).convert("RGB"), rng)).permute(2, 0, 1)[None]
            first = np.round(color.rgb_to_lab(crop)[0, 0].numpy() * 2.55)
            self.assertLessEqual(np.abs(first - l[0].astype(np.float64)).max(), 1)
            # The crops differ (other windows, flips), so the check below has something to catch.
            self.assertGreater(np.abs(l[0].astype(int) - l[1].astype(int)).mean(), 1)
            # Another seed draws other crops: their true ab is not the cache's, and it says so.
            os.remove(os.path.join(cache, "l.npy"))
            with self.assertRaises(SystemExit) as stop:
                color.replay_clean_l(files, 3, 12, cache, batch=4)
            self.assertIn("went astray", str(stop.exception))
            self.assertFalse(os.path.exists(os.path.join(cache, "l.npy")))
            with self.assertRaises(SystemExit):  # other files: another number of crops
                color.replay_clean_l(files[:2], 3, 11, cache, batch=4)
            with self.assertRaises(SystemExit):  # another batch size draws in another order
                color.replay_clean_l(files, 3, 11, cache, batch=3)
            # A stale l.npy (of another number of crops) is refused, not paired with the cache.
            np.save(os.path.join(cache, "l.npy"), np.zeros((4, color.SIZE, color.SIZE), np.uint8))
            with self.assertRaises(SystemExit):
                color.Caches([cache], clean_l=True)
            # Rebuilding the cache removes the clean L* of the crops it held before.
            color.build_cache(NoEncoder(), files, 3, 11, cache, batch=4)
            self.assertFalse(os.path.exists(os.path.join(cache, "l.npy")))


@unittest.skipUnless(os.path.exists(BACKBONE), "needs ../shared/models/backbones (the frozen MobileNetV2)")
class SemanticLossTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from color_gpu import Critic
        torch.set_num_threads(2)
        cls.critic = Critic(BACKBONE, torch.device("cpu"))
        with tempfile.TemporaryDirectory() as tmp:
            rgb = torch.stack([torch.from_numpy(np.asarray(Image.open(f).convert("RGB").resize((224, 224)), dtype=np.float32) / 255)
                               for f in photographs(tmp, 2)]).permute(0, 3, 1, 2)
        lab = color.rgb_to_lab(rgb)
        cls.l, cls.ab = lab[:, :1], torch.nn.functional.avg_pool2d(lab[:, 1:], 4)

    def loss(self, ab):
        return color.semantic_loss(self.critic, ab, self.l, self.ab, 1.0, 1.0)

    def test_the_true_colour_costs_nothing_and_grey_costs(self):
        self.assertLess(abs(self.loss(self.ab).item()), 1e-4)
        self.assertGreater(self.loss(torch.zeros_like(self.ab)).item(), 0.01)

    def test_its_gradient_reaches_the_decoded_colour_and_points_towards_the_truth(self):
        gain = torch.tensor(0.5, requires_grad=True)  # half the true colour
        self.loss(self.ab * gain).backward()
        self.assertLess(gain.grad.item(), 0)  # more colour, towards the truth, lowers it


if __name__ == "__main__":
    unittest.main()
