"""Tests of training/color.py's evenness loss (issue 29, item 4): a decoded colour that is
less even than the truth's costs; the truth's own edges, and an even prediction, do not; in
the relative form, colouring less does not make it cheaper.

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import os, sys, unittest

try:
    import torch
except ImportError:  # CI has no PyTorch (training only): these tests run where training does
    raise unittest.SkipTest("PyTorch is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from color import evenness_loss


def wall(b=12.0):
    """A 56x56 picture: a flat cream wall (a 2, b `b`) with a red square on it (rows and columns 20-35)."""
    ab = torch.zeros(1, 2, 56, 56)
    ab[:, 0], ab[:, 1] = 2.0, b
    ab[:, 0, 20:36, 20:36] = 40.0
    return ab


class EvennessLossTests(unittest.TestCase):
    def setUp(self):
        torch.manual_seed(0)

    def test_the_truth_itself_costs_nothing(self):
        self.assertEqual(evenness_loss(wall(), wall()).item(), 0.0)

    def test_an_even_prediction_costs_nothing_even_without_the_truths_edges(self):
        # Grey everywhere misses the red frame: the bins' cross-entropy says so, this loss does not.
        self.assertEqual(evenness_loss(torch.zeros(1, 2, 56, 56), wall()).item(), 0.0)

    def test_a_glow_on_a_flat_wall_costs_and_more_glow_costs_more(self):
        x = torch.linspace(0, 1, 56)
        glow = lambda k: wall() + k * torch.stack([x[None, :].expand(56, 56), x[:, None].expand(56, 56)])[None]
        weak, strong = evenness_loss(glow(10), wall()).item(), evenness_loss(glow(30), wall()).item()
        self.assertGreater(weak, 0.05)
        self.assertAlmostEqual(strong / weak, 3.0, delta=0.3)

    def test_gradients_reach_the_prediction_and_flatten_it(self):
        truth = wall()
        pred = (wall() + 5 * torch.randn(1, 2, 56, 56)).requires_grad_()
        before = evenness_loss(pred, truth)
        before.backward()
        with torch.no_grad():
            after = evenness_loss(pred - 0.5 * pred.grad / pred.grad.abs().max(), truth)
        self.assertLess(after.item(), before.item())

    def test_relative_figure_gives_nothing_for_colouring_less(self):
        x = torch.linspace(0, 1, 56)
        glow = wall() + 10 * torch.stack([x[None, :].expand(56, 56), x[:, None].expand(56, 56)])[None]
        plain = [evenness_loss(s * glow, wall()).item() for s in (1.0, 0.5)]
        relative = [evenness_loss(s * glow, wall(), relative=True).item() for s in (1.0, 0.5)]
        self.assertAlmostEqual(plain[1] / plain[0], 0.5, delta=0.1)  # half the colour, half the cost
        self.assertGreater(relative[1] / relative[0], 0.85)  # nearly the same cost
        self.assertGreater(relative[0], 0.0)

    def test_per_picture_figures_average_to_the_batch_figure(self):
        truth = torch.cat([wall(), wall(30.0)])
        pred = truth + torch.randn(2, 2, 56, 56)
        for relative in (False, True):
            each = evenness_loss(pred, truth, per_picture=True, relative=relative)
            self.assertEqual(tuple(each.shape), (2,))
            self.assertAlmostEqual(each.mean().item(), evenness_loss(pred, truth, relative=relative).item(), places=5)


if __name__ == "__main__":
    unittest.main()
