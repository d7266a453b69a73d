"""Tests of training/color_gpu.py's --resume: a run stopped after half its steps and resumed must
end with the very weights, optimiser state and weight average of a run never stopped (on the
CPU, fixed seed and --steps; two decoders, one with the encoder's top trained, on a synthetic
pack of a few photographs made here).

Run: python3 -m unittest discover -s training -p 'test_*.py'   (scripts/test does)
"""
import contextlib, io, json, os, sys, tarfile, tempfile, unittest

import numpy as np
try:
    import torch
except ImportError:  # CI has no PyTorch (training only): these tests run where training does
    raise unittest.SkipTest("PyTorch is not installed")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import color_gpu

BACKBONE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "models", "backbones",
                        "mobilenet_v2_1.0_224_quant.tflite")


def write_pack(folder, count=10, size=32, seed=0):
    """training/data.py's pack format: part1.tar holding part1/index.json and the photographs
    (smooth random colour fields as PNG; every other one an ImageNet-sample900 one, for the folds)."""
    from PIL import Image
    rng = np.random.default_rng(seed)
    entries, blobs = [], []
    for i in range(count):
        low = rng.uniform(0, 255, (4, 4, 3)).astype(np.uint8)
        img = Image.fromarray(low).resize((size, size), Image.BILINEAR)
        buf = io.BytesIO()
        img.save(buf, "PNG")
        e = {"file": f"synthetic/{i}.png", "source": "synthetic", "group": "synthetic"}
        if i % 2:
            e.update(source="ImageNet-sample900", imagenet_index=i // 2)
        entries.append(e)
        blobs.append(buf.getvalue())
    with tarfile.open(os.path.join(folder, "part1.tar"), "w") as tar:
        for name, blob in [("index.json", json.dumps({"size": size, "entries": entries}).encode())] + [(e["file"], b) for e, b in zip(entries, blobs)]:
            info = tarfile.TarInfo(f"part1/{name}")
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))


def flatten(obj, prefix=""):
    """Every tensor (and array) in a nested state, by path."""
    out = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(flatten(v, f"{prefix}/{k}"))
    elif isinstance(obj, (list, tuple)):
        for k, v in enumerate(obj):
            out.update(flatten(v, f"{prefix}/{k}"))
    elif torch.is_tensor(obj) or isinstance(obj, np.ndarray):
        out[prefix] = torch.as_tensor(obj)
    return out


@unittest.skipUnless(os.path.exists(BACKBONE), "needs ../shared/models/backbones (the frozen MobileNetV2)")
class ResumeTests(unittest.TestCase):
    STEPS = 4

    @classmethod
    def setUpClass(cls):
        torch.set_num_threads(1)
        cls.tmp = tempfile.TemporaryDirectory()
        cls.data = os.path.join(cls.tmp.name, "data")
        os.makedirs(cls.data)
        write_pack(cls.data)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def run_gpu(self, out, *extra):
        args = ["--data", self.data, "--out", os.path.join(self.tmp.name, out), "--backbone", BACKBONE, "--device", "cpu",
                "--batch", "2", "--steps", str(self.STEPS), "--warmup", "2", "--ablations", "ft", "--decoders", "all,fold0-ft",
                "--save-every", "1e9", "--seed", "3"] + list(extra)
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            color_gpu.main(args)
        return log.getvalue()

    def state(self, out):
        return torch.load(os.path.join(self.tmp.name, out, "state.pt"), map_location="cpu", weights_only=False)

    def assert_states_equal(self, a, b):
        fa, fb = flatten(a), flatten(b)
        self.assertEqual(sorted(fa), sorted(fb))
        for k in fa:
            x, y = fa[k].double(), fb[k].double()
            self.assertEqual(x.shape, y.shape, k)
            self.assertLessEqual(float((x - y).abs().max()), 1e-6 * max(1.0, float(y.abs().max())), k)

    def test_a_run_stopped_and_resumed_equals_a_run_never_stopped(self):
        self.run_gpu("whole")
        log = self.run_gpu("halves", "--call-steps", str(self.STEPS // 2))
        self.assertIn("--resume", log)
        half = self.state("halves")
        self.assertEqual(half["step"], self.STEPS // 2)
        whole = self.state("whole")
        self.assertEqual(whole["step"], self.STEPS)
        # the comparison below means something: half-way, the weights are not yet the end's
        with self.assertRaises(AssertionError):
            self.assert_states_equal(half["decoders"], whole["decoders"])
        log = self.run_gpu("halves", "--resume", "--lr", "0.5")
        self.assertIn("--lr 0.001 as the run was started", log)
        resumed = self.state("halves")
        self.assertEqual(resumed["step"], self.STEPS)
        self.assertEqual([d["name"] for d in resumed["decoders"]], ["all", "fold0-ft"])
        self.assert_states_equal(resumed["decoders"], whole["decoders"])
        self.assert_states_equal(resumed["rng"], whole["rng"])
        for name in ("decoders.pt", "decoders-ft.pt"):
            a, b = [torch.load(os.path.join(self.tmp.name, o, name), map_location="cpu", weights_only=False) for o in ("halves", "whole")]
            self.assertEqual(a["meta"]["step"], b["meta"]["step"])
            self.assert_states_equal(a["decoders"], b["decoders"])

    def test_the_evenness_loss_reaches_the_decoders_and_is_kept_on_resume(self):
        self.run_gpu("plain", "--call-steps", "1")
        self.run_gpu("even", "--call-steps", "1", "--even", "1")
        plain, even = self.state("plain"), self.state("even")
        with self.assertRaises(AssertionError):
            self.assert_states_equal(plain["decoders"], even["decoders"])
        log = self.run_gpu("even", "--resume", "--call-steps", "1")
        self.assertEqual(self.state("even")["step"], 2)
        self.assertIn("--even 1.0 as the run was started", log)

    def test_resume_without_a_state_says_what_to_do(self):
        with self.assertRaises(SystemExit) as e:
            self.run_gpu("nothing", "--resume")
        self.assertIn("Start the run without --resume", str(e.exception))


if __name__ == "__main__":
    unittest.main()
