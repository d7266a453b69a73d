#!/usr/bin/env python3
"""A learned fusion for colour from references (issue 28): on the 112x112 fine grid, what the
matcher transferred (ab and its weight), the automatic model's ab and the frame's L go in; a
gate z and a residual r come out, and the colour is

    g = sigmoid(z + 8 (weight - 0.5)),  ab = g x transferred + (1 - g) x automatic + 64 r

(with z = r = 0 that is close to the hand-set blend, weight x transferred + (1 - weight) x
automatic, which the network starts from).

Self-supervised on photographs, as the issue asks: the target is one crop of a photograph
turned grey, the reference another crop of the same photograph (overlapping by 0-70%, scaled
by 0.8-1.25), so part of the target has a correspondence in the reference and part has not;
one pair in ten takes its reference from another photograph (nothing corresponds). The
inputs come from the real binary (`vivify image --colorize --reference`, with
`VIVIFY_DUMP_GUIDE` set), so training sees exactly what the matcher gives at run time.

    python3 training/fusion.py data --out training/runs/fusion/train --sets BSD200,ImageNet-sample900,SunHays80
    python3 training/fusion.py data --out training/runs/fusion/val --sets Urban100 --count 200 --seed 2
    python3 training/fusion.py train --data training/runs/fusion --out training/runs/fusion
    (training/runs/fusion/vivify-guide.param/.bin are then packed by Models/make-builtin.sh)

Photographs: `../shared/datasets/train` only; Urban100's pairs are the validation split (its
photographs are never trained on). BSD100, the clips and everything in `evaluate.py` stay
held out: the figures in the README come from them.
"""
import argparse, copy, glob, os, subprocess, sys, tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SHARED = os.path.join(ROOT, "..", "shared")
FINE = 112


def lab_of(rgb):
    from skimage import color
    return color.rgb2lab(rgb).astype(np.float32)


def grey_of(lab):
    from skimage import color
    g = lab.copy()
    g[..., 1:] = 0
    return np.clip(np.round(color.lab2rgb(g) * 255), 0, 255).astype(np.uint8)


def fine_plane(plane):
    """A full-resolution plane to the fine grid as the binary does it (area to 224², then 112²)."""
    im = Image.fromarray(plane.astype(np.float32), mode="F")
    return np.asarray(im.resize((224, 224), Image.BOX).resize((FINE, FINE), Image.BOX), dtype=np.float32)


def read_dump(path):
    v = np.fromfile(path, dtype=np.float32)
    n = FINE * FINE
    assert v.size == 6 * n, f"{path}: {v.size} values, not {6 * n}"
    l, ab, w, auto = v[:n], v[n:3 * n], v[3 * n:4 * n], v[4 * n:]
    return l.reshape(FINE, FINE), ab.reshape(2, FINE, FINE), w.reshape(FINE, FINE), auto.reshape(2, FINE, FINE)


def crop_pair(im, rng, other=None):
    """(reference RGB, target RGB) from one photograph (or the reference from `other`)."""
    h, w, _ = im.shape
    tw = int(w * rng.uniform(0.5, 0.75))
    th = int(h * rng.uniform(0.7, 1.0))
    tx, ty = rng.integers(0, w - tw + 1), rng.integers(0, h - th + 1)
    target = im[ty:ty + th, tx:tx + tw]
    src = other if other is not None else im
    sh, sw, _ = src.shape
    rw, rh = min(sw, int(tw * rng.uniform(0.8, 1.25))), min(sh, int(th * rng.uniform(0.8, 1.25)))
    if other is None:
        # Overlap 0-70% of the target's width: the reference starts left or right of it.
        overlap = rng.uniform(0.0, 0.7)
        shift = int(tw * (1 - overlap))
        rx = tx - shift if rng.random() < 0.5 else tx + shift
        rx = int(np.clip(rx, 0, sw - rw))
        ry = int(np.clip(ty + rng.integers(-th // 5, th // 5 + 1), 0, sh - rh))
    else:
        rx, ry = rng.integers(0, sw - rw + 1), rng.integers(0, sh - rh + 1)
    return src[ry:ry + rh, rx:rx + rw], target


def make_sample(binary, work, reference, target, out):
    lab = lab_of(target)
    Image.fromarray(reference).save(os.path.join(work, "r.png"))
    Image.fromarray(grey_of(lab)).save(os.path.join(work, "g.png"))
    env = dict(os.environ, VIVIFY_DUMP_GUIDE=os.path.join(work, "dump.bin"))
    subprocess.run([binary, "image", os.path.join(work, "g.png"), os.path.join(work, "o.png"), "--colorize",
                    "--reference", os.path.join(work, "r.png"), "--threads", "1", "-y"],
                   check=True, capture_output=True, env=env)
    l, ab, w, auto = read_dump(os.path.join(work, "dump.bin"))
    truth = np.stack([fine_plane(lab[..., 1]), fine_plane(lab[..., 2])])
    np.savez_compressed(out, l=l, ab=ab, w=w, auto=auto, truth=truth)


def data(args):
    binary = os.path.join(ROOT, ".build/release/vivify")
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)
    jobs = []
    if True:
        files = []
        for s in args.sets.split(","):
            files += sorted(glob.glob(os.path.join(SHARED, "datasets/train", s, "*")))
        files = [f for f in files if f.lower().endswith((".png", ".jpg", ".jpeg", ".bmp"))]
        order = rng.permutation(len(files))
        n = 0
        for k in range(args.count):
            f = files[order[k % len(files)]]
            im = Image.open(f)
            if im.mode != "RGB":
                continue
            im = np.asarray(im)
            if min(im.shape[:2]) < 96:
                continue
            other = None
            if rng.random() < 0.1:
                other = np.asarray(Image.open(files[order[(k + 7) % len(files)]]).convert("RGB"))
                if min(other.shape[:2]) < 96:
                    other = None
            ref, tgt = crop_pair(im, rng, other)
            jobs.append((ref, tgt, os.path.join(args.out, f"{n:05d}.npz")))
            n += 1

    def run(job):
        if os.path.exists(job[2]):
            return
        with tempfile.TemporaryDirectory() as work:
            try:
                make_sample(binary, work, *job)
            except subprocess.CalledProcessError as e:
                print("skipped", job[2], e.stderr.decode()[-200:], flush=True)

    with ThreadPoolExecutor(args.workers) as pool:
        for i, _ in enumerate(pool.map(run, jobs)):
            if i % 100 == 0:
                print(f"{i}/{len(jobs)}", flush=True)


def load_set(folder):
    xs, ys = [], []
    for f in sorted(glob.glob(os.path.join(folder, "*.npz"))):
        z = np.load(f)
        xs.append(inputs(z["l"], z["ab"], z["w"], z["auto"]))
        ys.append(z["truth"])
    return np.stack(xs), np.stack(ys)


def inputs(l, ab, w, auto):
    """The network's 8 input planes, scaled to about ±1: L, transferred ab, weight, automatic
    ab, and the hand-set blend (what the output corrects)."""
    blend = w[None] * ab + (1 - w[None]) * auto
    return np.concatenate([(l[None] - 50) / 50, ab / 64, w[None], auto / 64, blend / 64]).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("--out", required=True)
    d.add_argument("--sets", default="BSD200,ImageNet-sample900,SunHays80,Urban100")
    d.add_argument("--count", type=int, default=2400)
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("train")
    t.add_argument("--data", default="training/runs/fusion")
    t.add_argument("--out", default="training/runs/fusion")
    t.add_argument("--epochs", type=int, default=40)
    t.add_argument("--batch", type=int, default=16)
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--seed", type=int, default=1)
    t.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    if args.cmd == "data":
        data(args)
    else:
        train(args)


def fine_scores(pred, truth, prior):
    """Pooled AuC and rebalanced AuC (in points) of predicted ab against the truth, (n, 2, h, w)."""
    from common import ab_error_histogram, pooled_auc, rebalance_weights
    p, t = np.moveaxis(pred, 1, -1), np.moveaxis(truth, 1, -1)
    w = rebalance_weights(t, prior)
    return 100 * pooled_auc(ab_error_histogram(p, t)), 100 * pooled_auc(ab_error_histogram(p, t, weights=w))


def train(args):
    import torch
    from common import ab_prior, rebalance_weights
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    xt, yt = load_set(os.path.join(args.data, "train"))
    xv, yv = load_set(os.path.join(args.data, "val"))
    print(f"pairs: {len(xt)} training, {len(xv)} validation", flush=True)
    prior = ab_prior([np.moveaxis(yt, 1, -1)])
    wt = rebalance_weights(np.moveaxis(yt, 1, -1), prior).reshape(len(yt), 1, FINE, FINE).astype(np.float32)
    # Half plain, half rebalanced (rare colours count more), mean 1.
    wt = 0.5 + 0.5 * np.minimum(wt, 10) / np.minimum(wt, 10).mean()
    val_prior = ab_prior([np.moveaxis(yv, 1, -1)])
    blend_v = xv[:, 6:8] * 64
    print("validation, fine grid: AuC / rebalanced  grey %.2f / %.2f  automatic %.2f / %.2f  transferred %.2f / %.2f"
          "  blend %.2f / %.2f" % (*fine_scores(np.zeros_like(yv), yv, val_prior), *fine_scores(xv[:, 4:6] * 64, yv, val_prior),
                                   *fine_scores(xv[:, 1:3] * 64, yv, val_prior), *fine_scores(blend_v, yv, val_prior)), flush=True)
    net = FusionNet()
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=1e-4)
    steps = args.epochs * (len(xt) // args.batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=steps, pct_start=0.1)
    X, Y, W = torch.from_numpy(xt), torch.from_numpy(yt / 64), torch.from_numpy(wt)
    best = None
    for epoch in range(args.epochs):
        net.train()
        order = torch.randperm(len(X))
        total = 0.0
        for i in range(len(X) // args.batch):
            idx = order[i * args.batch:(i + 1) * args.batch]
            x, y, w = X[idx], Y[idx], W[idx]
            if torch.rand(()) < 0.5:  # mirror: the correspondence does not care
                x, y, w = x.flip(-1), y.flip(-1), w.flip(-1)
            pred = fuse(x, net(x))
            loss = (w * (pred - y).abs().sum(1, keepdim=True)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total += loss.item()
        net.eval()
        with torch.no_grad():
            xvt = torch.from_numpy(xv)
            pv = fuse(xvt, net(xvt)).numpy() * 64
        auc, reb = fine_scores(pv, yv, val_prior)
        print(f"epoch {epoch + 1}: loss {total / (len(X) // args.batch):.4f}  validation AuC {auc:.2f} rebalanced {reb:.2f}", flush=True)
        if best is None or reb > best[0]:
            best = (reb, auc, epoch + 1)
            torch.save(net.state_dict(), os.path.join(args.out, "fusion.pt"))
    print("best: epoch %d, validation AuC %.2f rebalanced %.2f" % (best[2], best[1], best[0]))
    net.load_state_dict(torch.load(os.path.join(args.out, "fusion.pt")))
    export(net, os.path.join(args.out, "vivify-guide.param"), os.path.join(args.out, "vivify-guide.bin"))
    write_reference(net, os.path.join(args.out, "vivify-guide.reference.json"))


def reference_pattern():
    """Smooth test planes (L, transferred ab, weight, automatic ab on the fine grid), as
    GuideFusionTests builds them, for the engine's parity with PyTorch."""
    y, x = np.mgrid[0:FINE, 0:FINE].astype(np.float64)
    l = 50 + 40 * np.sin(0.11 * x + 0.05 * y)
    ab = np.stack([30 * np.sin(0.07 * x), 25 * np.cos(0.09 * y)])
    w = 0.5 + 0.5 * np.sin(0.13 * (x + y))
    auto = np.stack([10 * np.cos(0.05 * x + 0.03 * y), -8 * np.sin(0.04 * y)])
    return [v.astype(np.float32) for v in (l, ab, w, auto)]


def write_reference(net, path):
    """The corrected blend (a then b, flattened) on `reference_pattern`, every 97th value."""
    import json, torch
    l, ab, w, auto = reference_pattern()
    x = inputs(l, ab, w, auto)
    net = copy.deepcopy(net)
    with torch.no_grad():
        for m in net.modules():  # the weights as exported (fp16; biases stay fp32)
            if isinstance(m, torch.nn.Conv2d):
                m.weight.copy_(m.weight.half().float())
        xt = torch.from_numpy(x[None])
        out = fuse(xt, net(xt))[0].numpy() * 64
    flat = out.reshape(-1)
    idx = list(range(0, flat.size, 97))
    json.dump({"indices": idx, "values": [float(flat[i]) for i in idx]}, open(path, "w"))


def fuse(x, out):
    """The colour (ab / 64) from the input planes and the network's gate and residual."""
    import torch
    g = torch.sigmoid(out[:, :1] + 8 * (x[:, 3:4] - 0.5))
    return g * x[:, 1:3] + (1 - g) * x[:, 4:6] + out[:, 1:3]


def FusionNet():
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        """8 planes at 112² ─▶ 32 @ 56 ─▶ 48 @ 28 ─▶ dilated 2, 4, plus the global mean
        ─▶ up to 56, with the 56 features ─▶ 3 @ 56 (gate, residual) ─▶ bilinear to 112."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(8, 32, 3, 2, 1)
            self.c2 = nn.Conv2d(32, 48, 3, 2, 1)
            self.c3 = nn.Conv2d(48, 48, 3, 1, 2, dilation=2)
            self.c4 = nn.Conv2d(48, 48, 3, 1, 4, dilation=4)
            self.g = nn.Conv2d(48, 48, 1)
            self.c5 = nn.Conv2d(48 + 32, 32, 3, 1, 1)
            self.c6 = nn.Conv2d(32, 3, 3, 1, 1)
            nn.init.zeros_(self.c6.weight)
            nn.init.zeros_(self.c6.bias)

        def forward(self, x):
            f = torch.nn.functional
            x56 = f.relu(self.c1(x))
            y = f.relu(self.c2(x56))
            y = f.relu(self.c3(y))
            y = self.c4(y)
            y = f.relu(y + self.g(y.mean((2, 3), keepdim=True)))
            y = f.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
            y = f.relu(self.c5(torch.cat([y, x56], 1)))
            y = self.c6(y)
            return f.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)

    return Net()


def export(net, param, binf):
    """The fusion network as ncnn (fp16 weights): input 8 @ 112², output gate and residual."""
    from common import NcnnWriter
    w = NcnnWriter()
    conv = lambda nm, src, m, relu=False, stride=1, dilation=1: w.conv(
        nm, src, nm, m.weight.detach().numpy(), m.bias.detach().numpy(), stride=stride, dilation=dilation, relu=relu, fp16=True)
    w.add("Input", "in0", [], ["in0"], f"0={FINE} 1={FINE} 2=8")
    conv("c1", "in0", net.c1, relu=True, stride=2)
    w.add("Split", "split_c1", ["c1"], ["c1_0", "c1_1"])
    conv("c2", "c1_0", net.c2, relu=True, stride=2)
    conv("c3", "c2", net.c3, relu=True, dilation=2)
    conv("c4", "c3", net.c4, dilation=4)
    w.add("Split", "split_c4", ["c4"], ["c4_0", "c4_1"])
    w.add("Pooling", "gpool", ["c4_0"], ["gvec"], "0=1 4=1")
    conv("g", "gvec", net.g)
    w.add("BinaryOp", "addg", ["c4_1", "g"], ["s4"], "0=0")
    w.add("ReLU", "relu4", ["s4"], ["a4"])
    w.add("Interp", "up56", ["a4"], ["u56"], "0=2 1=2.0 2=2.0")
    w.add("Concat", "cat56", ["u56", "c1_1"], ["cat56"], "0=0")
    conv("c5", "cat56", net.c5, relu=True)
    conv("c6", "c5", net.c6)
    w.add("Interp", "up112", ["c6"], ["out0"], "0=2 1=2.0 2=2.0")
    w.write(param, binf)


if __name__ == "__main__":
    main()
