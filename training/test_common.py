"""Tests of the colorizer metrics in common.py that evaluate.py reports (numpy only).

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import os, sys, unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (ab_counts, bin_weights, ab_error_histogram, ab_prior, bootstrap_margins, joint_error_histogram, loss_concentration,
                    pooled_auc, rebalance_weights, smoothed_prior, summarize)


def photos(seed, n=8, spread=25.0):
    """`n` pairs (prediction, truth) of random ab planes: truths with a few saturated patches
    (rare bins, as a red object in a photograph), predictions near the truth."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        truth = rng.normal(0, 8, (30, 40, 2))
        truth[5:12, 10:20] += rng.normal(0, spread, 2)  # one colourful object per photograph
        pred = truth * 0.6 + rng.normal(0, 6, truth.shape)
        out.append((pred, truth))
    return out


class PooledMetricsTests(unittest.TestCase):
    def test_joint_histograms_give_the_pooled_aucs_exactly(self):
        """The bootstrap's per-photograph joint histograms, summed over the whole set, must give
        the same plain and rebalanced AuC as evaluate.py's direct pooling."""
        ims = photos(1)
        prior = ab_prior([t for _, t in ims])
        direct = np.zeros((4, 152))
        for pred, truth in ims:
            w = rebalance_weights(truth, prior)
            zero = np.zeros_like(truth)
            direct += [ab_error_histogram(pred, truth), ab_error_histogram(zero, truth),
                       ab_error_histogram(pred, truth, weights=w), ab_error_histogram(zero, truth, weights=w)]
        ours = sum(joint_error_histogram(p, t) for p, t in ims)
        grey = sum(joint_error_histogram(np.zeros_like(t), t) for _, t in ims)
        w = bin_weights(prior).ravel()
        self.assertAlmostEqual(pooled_auc(ours.sum(0)), pooled_auc(direct[0]), places=12)
        self.assertAlmostEqual(pooled_auc(grey.sum(0)), pooled_auc(direct[1]), places=12)
        self.assertAlmostEqual(pooled_auc(w @ ours), pooled_auc(direct[2]), places=12)
        self.assertAlmostEqual(pooled_auc(w @ grey), pooled_auc(direct[3]), places=12)

    def test_bootstrap_of_grey_against_grey_is_zero(self):
        ims = photos(2)
        grey = [joint_error_histogram(np.zeros_like(t), t) for _, t in ims]
        plain, rebalanced = bootstrap_margins(grey, grey, [ab_counts(t) for _, t in ims], draws=50)
        self.assertEqual(np.abs(plain).max(), 0.0)
        self.assertEqual(np.abs(rebalanced).max(), 0.0)

    def test_bootstrap_interval_brackets_the_set_and_widens_with_rare_colours(self):
        """A prediction near the truth beats grey on every redraw; the interval contains the
        full set's margin; photographs whose colourful objects are more saturated (rarer bins,
        larger rebalancing weights) give a wider rebalanced interval."""
        widths = []
        for spread in (10.0, 60.0):
            ims = photos(3, n=12, spread=spread)
            ours = [joint_error_histogram(p, t) for p, t in ims]
            grey = [joint_error_histogram(np.zeros_like(t), t) for _, t in ims]
            counts = [ab_counts(t) for _, t in ims]
            plain, rebalanced = bootstrap_margins(ours, grey, counts, draws=400)
            self.assertGreater(plain.min(), 0)
            self.assertGreater(rebalanced.min(), 0)
            w = bin_weights(smoothed_prior(sum(counts))).ravel()
            full = pooled_auc(w @ sum(ours)) - pooled_auc(w @ sum(grey))
            lo, hi = np.percentile(rebalanced, [5, 95])
            self.assertLessEqual(lo, full)
            self.assertGreaterEqual(hi, full)
            widths.append(hi - lo)
        self.assertGreater(widths[1], widths[0])


    def test_summarize_pools_photographs_of_several_colorizers_under_one_prior(self):
        """crossval.py pools rows that different fold decoders produced: the pooled figures must
        be those of all the photographs' pixels together under the prior of all of them, not a
        mean of the folds' figures (each under its own prior)."""
        def rows_of(ims, gain):
            rows = []
            for pred, truth in ims:
                pred = pred * gain
                rows.append({"colourfulness": float(np.abs(pred).mean()), "truth_colourfulness": float(np.abs(truth).mean()),
                             "auc": 0.0, "grey_auc": 0.0, "_joint": joint_error_histogram(pred, truth),
                             "_joint_grey": joint_error_histogram(np.zeros_like(truth), truth)})
            return rows
        first, second = photos(4, n=6, spread=15.0), photos(5, n=6, spread=70.0)
        a, b = rows_of(first, 1.0), rows_of(second, 1.4)  # two "decoders": the second more saturated
        pooled = summarize(a + b)
        everything = [(p, t) for p, t in first] + [(p * 1.4, t) for p, t in second]
        prior = ab_prior([t for _, t in everything])
        direct = np.zeros(152)
        direct_grey = np.zeros(152)
        for pred, truth in everything:
            w = rebalance_weights(truth, prior)
            direct += ab_error_histogram(pred, truth, weights=w)
            direct_grey += ab_error_histogram(np.zeros_like(truth), truth, weights=w)
        self.assertAlmostEqual(pooled["rb_auc"], pooled_auc(direct), places=12)
        self.assertAlmostEqual(pooled["grey_rb_auc"], pooled_auc(direct_grey), places=12)
        self.assertEqual(pooled["images"], 12)
        folds = [summarize(a), summarize(b)]
        mean_of_folds = np.mean([f["rb_auc"] - f["grey_rb_auc"] for f in folds])
        self.assertGreater(abs((pooled["rb_auc"] - pooled["grey_rb_auc"]) - mean_of_folds), 1e-3)
        lo, hi = pooled["rb_margin_90ci"]
        self.assertLessEqual(lo, pooled["rb_auc"] - pooled["grey_rb_auc"])
        self.assertGreaterEqual(hi, pooled["rb_auc"] - pooled["grey_rb_auc"])


    def test_a_lone_pixel_of_an_unseen_colour_weighs_no_more_than_a_colour_bin(self):
        """Regression: the prior once came from every 2nd pixel, so a lone pixel of a colour the
        subsample missed got the smoothing's far tail as its p and a weight ~1e7 times a common
        bin's. With the prior counted from the pixels it weighs, getting that one pixel wrong
        costs at most about one colour bin's share of the rebalanced AuC."""
        def margin(lone_prediction):
            rows = []
            for k, (pred, truth) in enumerate(photos(6, n=6)):
                if k == 0:
                    truth, pred = truth.copy(), pred.copy()
                    truth[1, 1] = (80.0, -100.0)  # one pixel, far from every other colour
                    pred[1, 1] = lone_prediction
                rows.append({"colourfulness": 1.0, "truth_colourfulness": 1.0, "auc": 0.0, "grey_auc": 0.0,
                             "_joint": joint_error_histogram(pred, truth), "_joint_grey": joint_error_histogram(np.zeros_like(truth), truth)})
            s = summarize(rows)
            bins = int((sum(r["_joint_grey"] for r in rows).sum(1) > 0).sum())
            return s["rb_auc"] - s["grey_rb_auc"], bins
        right, bins = margin((80.0, -100.0))
        wrong, _ = margin((0.0, 0.0))
        self.assertGreater(right, wrong)  # the pixel does count
        self.assertLess(right - wrong, 2.0 / bins)


if __name__ == "__main__":
    unittest.main()


class LossConcentrationTests(unittest.TestCase):
    def test_one_wrong_pixel_carries_all_the_loss(self):
        truth = np.zeros((40, 50, 2))
        pred = truth.copy()
        pred[7, 9] = (60, -40)
        self.assertAlmostEqual(loss_concentration(pred, truth, np.ones((40, 50))), 1.0)

    def test_even_errors_spread_the_loss(self):
        """Every pixel equally wrong and equally weighted: the worst 0.1% carry 0.1% of it;
        a weight 1000 times the rest on those pixels makes them carry about half."""
        truth = np.zeros((100, 100, 2))
        pred = truth + 10
        w = np.ones((100, 100))
        self.assertAlmostEqual(loss_concentration(pred, truth, w), 0.001, places=6)
        w.ravel()[:10] = 1000
        self.assertAlmostEqual(loss_concentration(pred, truth, w), 10000 / (10000 + 9990), places=6)

    def test_no_loss_is_zero(self):
        truth = np.ones((8, 8, 2))
        self.assertEqual(loss_concentration(truth, truth, np.ones((8, 8))), 0.0)
