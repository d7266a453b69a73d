"""Tests of training/crossval.py's checkpoints: color.train writes one every --save-every steps
between its evaluations, and crossval.resume puts a fold back where that checkpoint left it (a
synthetic decoder and random features, on the CPU).

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import os, sys, tempfile, types, unittest
from unittest import mock

import numpy as np
try:
    import torch
except ImportError:  # CI has no PyTorch (training only): these tests run where training does
    raise unittest.SkipTest("PyTorch is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import color
import crossval

CHANNELS = [4, 4, 4, 4, 4]
BINS = np.array([[a, b] for a in (-20, 0, 20) for b in (-20, 0, 20)], dtype=np.float32)


class RandomFeatures:
    """color.Caches' interface over random features (the same for a crop every time)."""

    def __len__(self):
        return 16

    def batch(self, idx):
        g = torch.Generator().manual_seed(int(np.sum(idx)))
        shapes = [(4, 56, 56), (4, 28, 28), (4, 14, 14), (4, 7, 7), (4,)]
        feats = [torch.randn((len(idx),) + s, generator=g) for s in shapes]
        return feats + [30 * torch.rand((len(idx), 2, 56, 56), generator=g) - 15]


def fold_model():
    torch.manual_seed(0)
    model = color.Colorizer(color.Decoder(CHANNELS, BINS, 0.1))
    opt = torch.optim.Adam([{"params": list(model.decoder.parameters()), "lr": 1e-3, "base_lr": 1e-3}])
    return model, opt


class CheckpointTests(unittest.TestCase):
    def test_checkpoints_every_save_every_steps_and_resume_restores_them(self):
        g = torch.Generator().manual_seed(1)
        lab = torch.cat([100 * torch.rand(1, 1, 224, 224, generator=g), 40 * torch.rand(1, 2, 224, 224, generator=g) - 20], 1)
        val = [([torch.randn(1, 4, s, s, generator=g) for s in (56, 28, 14, 7)] + [torch.randn(1, 4, generator=g)], lab)]
        with tempfile.TemporaryDirectory() as out:
            ckpt = os.path.join(out, "checkpoint.pt")
            model, opt = fold_model()
            self.assertEqual(crossval.resume(ckpt, model, opt), (0, 0.0))  # no checkpoint: a fresh fold
            args = types.SimpleNamespace(out=out, seed=1, minutes=0, steps=5, schedule_steps=10, batch=2, eval_every=5, save_every=2)
            saved, real_save = [], torch.save

            def save(state, path):
                if path in (ckpt, ckpt + ".tmp"):
                    saved.append((state["step"], {k: v.clone() for k, v in state["model"].items()}))
                real_save(state, path)

            with mock.patch.object(color.torch, "save", save):
                color.train(model, None, opt, RandomFeatures(), torch.ones(len(BINS)), val, val, args, ckpt, 0, 0.0)
            # Steps 2 and 4 between the evaluations, 5 at the last one.
            self.assertEqual([s for s, _ in saved], [2, 4, 5])
            self.assertFalse(os.path.exists(ckpt + ".tmp"))
            fresh, fresh_opt = fold_model()
            step, seconds = crossval.resume(ckpt, fresh, fresh_opt)
            self.assertEqual(step, 5)
            self.assertGreater(seconds, 0)
            for k, v in fresh.state_dict().items():
                self.assertTrue(torch.equal(v, saved[-1][1][k]), k)
            self.assertEqual(fresh_opt.state_dict()["state"].keys(), opt.state_dict()["state"].keys())
            # A checkpoint of other colour bins is refused, not silently loaded.
            other = color.Colorizer(color.Decoder(CHANNELS, BINS[:5], 0.1))
            other_opt = torch.optim.Adam(other.parameters())
            with self.assertRaises(SystemExit) as e:
                crossval.resume(ckpt, other, other_opt)
            self.assertIn("other colour bins", str(e.exception))


if __name__ == "__main__":
    unittest.main()
