"""Tests of training/data.py's pure helpers and common.py's issue-29 additions (numpy only).

Run: python3 -m unittest discover -s training -p 'test_*.py'
"""
import importlib.util, os, sys, unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ab_entropy, rebalance_from_counts
from data import IMAGENETTE_CLASSES, caltech_files, chroma, fold_of, is_duplicate, overlap_classes, split_parts, wnid


class DataTests(unittest.TestCase):
    def test_wnid_reads_the_class_id_of_a_sample_file_name(self):
        self.assertEqual(wnid("x/n01440764_tench.jpg"), "n01440764")
        self.assertIsNone(wnid("T91/t1.png"))

    def test_overlap_lists_only_imagenette_classes(self):
        names = ["n01440764_tench.jpg", "n01443537_goldfish.jpg", "n03888257_parachute.jpg"]
        self.assertEqual(overlap_classes(names), [0, 2])
        self.assertEqual(len(IMAGENETTE_CLASSES), 10)

    def test_folds_are_crossval_slices(self):
        files = list(range(23))
        for k in range(5):
            self.assertEqual([i for i in files if fold_of(i) == k], files[k::5])

    def test_parts_are_balanced_and_cover_every_item(self):
        rng = np.random.default_rng(0)
        sizes = list(rng.integers(1000, 9000, 500))
        part = split_parts(sizes, 3)
        self.assertEqual(sorted(set(part)), [0, 1, 2])
        loads = [sum(s for s, p in zip(sizes, part) if p == k) for k in range(3)]
        self.assertLess(max(loads) - min(loads), max(sizes))

    @unittest.skipUnless(importlib.util.find_spec("PIL"), "Pillow reads the photographs")
    def test_caltech_keeps_colour_photographs_and_drops_grey_ones(self):
        import tempfile
        from PIL import Image
        rng = np.random.default_rng(2)
        with tempfile.TemporaryDirectory() as root:
            folder = os.path.join(root, "101_ObjectCategories", "ketch")
            os.makedirs(folder)
            # A colour photograph (a red boat on blue water), the same turned grey but stored as
            # RGB, and a one-channel JPEG: only the first is a colour photograph.
            colour = np.zeros((60, 80, 3), np.uint8)
            colour[:30] = (40, 90, 200)
            colour[30:] = (200, 40, 30)
            colour = np.clip(colour + rng.normal(0, 6, colour.shape), 0, 255).astype(np.uint8)
            grey = np.repeat(colour.mean(-1, keepdims=True).astype(np.uint8), 3, -1)
            Image.fromarray(colour).save(os.path.join(folder, "image_0001.jpg"), quality=95)
            Image.fromarray(grey).save(os.path.join(folder, "image_0002.jpg"), quality=95)
            Image.fromarray(grey[..., 0]).save(os.path.join(folder, "image_0003.jpg"), quality=95)
            self.assertGreater(chroma(os.path.join(folder, "image_0001.jpg")), 20)
            self.assertLess(chroma(os.path.join(folder, "image_0002.jpg")), 2)
            self.assertEqual([os.path.basename(f) for f in caltech_files(root)], ["image_0001.jpg"])

    def test_duplicates_by_thumbnail(self):
        rng = np.random.default_rng(1)
        a = rng.uniform(0, 255, (32, 32))
        self.assertTrue(is_duplicate(a, a + rng.normal(0, 0.5, a.shape)))
        self.assertFalse(is_duplicate(a, rng.uniform(0, 255, (32, 32))))


class PriorTests(unittest.TestCase):
    def test_rebalance_weights_have_mean_one_under_the_prior_and_favour_rare_bins(self):
        counts = np.zeros((23, 23))
        counts[11, 11], counts[11, 13], counts[15, 8] = 1000, 100, 5
        bins, w = rebalance_from_counts(counts)
        self.assertEqual(bins.shape, (3, 2))
        self.assertEqual(bins.tolist(), [[0, 0], [0, 20], [40, -30]])
        self.assertLess(w[0], w[1])
        self.assertLess(w[1], w[2])
        p = counts[counts > 0] / counts.sum()  # no overlap between these bins at sigma 5: smoothing keeps p
        self.assertAlmostEqual(float((p * w).sum()), 1.0, places=3)

    def test_lambda_one_is_no_rebalancing(self):
        counts = np.zeros(529)
        counts[[0, 100, 300]] = [10, 20, 30]
        _, w = rebalance_from_counts(counts, lam=0.0)
        _, flat = rebalance_from_counts(counts, lam=1.0)
        self.assertTrue(np.allclose(flat, 1.0))
        self.assertGreater(w.max() / w.min(), 2)

    def test_entropy_of_grey_is_zero_and_grows_with_spread(self):
        grey = np.zeros((20, 20, 2))
        self.assertEqual(ab_entropy(grey), 0.0)
        two = grey.copy(); two[:10, :, 0] = 40
        self.assertAlmostEqual(ab_entropy(two), 1.0)
        rng = np.random.default_rng(2)
        self.assertGreater(ab_entropy(rng.normal(0, 30, (20, 20, 2))), ab_entropy(rng.normal(0, 10, (20, 20, 2))))


if __name__ == "__main__":
    unittest.main()
