#!/usr/bin/env python3
"""Train vivify-color: a compact CIE L -> ab colorizer for the CPU (issue 7, second part).

Network (input (L - 50) / 100 at 256x256, output ab / 110 at a quarter of the input size):
    encoder  conv3x3/2 1->16, conv3x3/2 16->32, conv3x3 32->32            (skip at 1/4)
             conv3x3/2 32->64, conv3x3 64->64                             (skip at 1/8)
             conv3x3/2 64->96, two dilated (2) conv3x3 96->96             (1/16: context)
    decoder  conv1x1 96->64, bilinear x2, + skip, ReLU, conv3x3 64->64
             conv1x1 64->32, bilinear x2, + skip, ReLU, conv3x3 32->32
    head     conv1x1 32->Q logits over quantized ab bins (grid 10, the bins seen in training),
             softmax(logits / T), conv1x1 Q->2 with the bin centres: the annealed mean of
             Zhang et al. (ECCV 2016), T folded into the logits at export.
Batch norm after each 3x3 convolution while training (folded at export), ReLU everywhere;
about 0.3 GMAC per 256x256 frame.

Loss: cross-entropy against a soft (Gaussian, sigma 5) encoding of the true ab over the bins,
weighted per pixel by class rebalancing (w ~ 1 / ((1 - lambda) p + lambda / Q), lambda 0.5,
E[w] = 1) so that the rare saturated colours are not drowned by the common greyish ones.

Data: ../shared/datasets/train minus every tenth image (the "tune" split that picks T), random
crops of 50-100% of each side (the engine squashes whole frames to 256x256, so aspect jitter is
what it sees), flips, resized to --size. Validation: AuC of the ab error (thresholds 0-150,
Zhang et al.) and Hasler-Suesstrunk colourfulness on ../shared/datasets/val/BSD100, against the
grey baseline (ab = 0) and the ground truth. Deterministic seeds, checkpoints and a CSV log in
--out; at the end, T and a chroma scale are chosen on the tune split and the model is exported to ncnn
.param/.bin by our own writer, with vivify-color.json (the colorizer description).

Usage: python3 training/color.py --minutes 40 --out training/runs/color
"""
import argparse, csv, json, math, os, random, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from common import NcnnWriter, auc, colourfulness, image_files

GRID = 10.0
SIGMA = 5.0
LAMBDA = 0.5
AB_SCALE = 110.0


# --- colour science (sRGB D65, CIE 1976 L*a*b*), in torch -------------------------------

def rgb_to_lab(rgb):
    """rgb: (B,3,H,W) in [0,1] -> (B,3,H,W) L*, a*, b*."""
    lin = torch.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    r, g, b = lin[:, 0], lin[:, 1], lin[:, 2]
    x = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b) / 0.95047
    y = 0.2126729 * r + 0.7151522 * g + 0.0721750 * b
    z = (0.0193339 * r + 0.1191920 * g + 0.9503041 * b) / 1.08883
    f = lambda t: torch.where(t > (6 / 29) ** 3, t.clamp(min=1e-12) ** (1 / 3), t / (3 * (6 / 29) ** 2) + 4 / 29)
    fx, fy, fz = f(x), f(y), f(z)
    return torch.stack([116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)], 1)


def lab_to_rgb(lab):
    """(B,3,H,W) Lab -> sRGB in [0,1] (clipped)."""
    fy = (lab[:, 0] + 16) / 116
    fx, fz = fy + lab[:, 1] / 500, fy - lab[:, 2] / 200
    g = lambda t: torch.where(t > 6 / 29, t ** 3, 3 * (6 / 29) ** 2 * (t - 4 / 29))
    x, y, z = g(fx) * 0.95047, g(fy), g(fz) * 1.08883
    r = 3.2404542 * x - 1.5371385 * y - 0.4985314 * z
    gg = -0.9692660 * x + 1.8760108 * y + 0.0415560 * z
    b = 0.0556434 * x - 0.2040259 * y + 1.0572252 * z
    lin = torch.stack([r, gg, b], 1).clamp(0, 1)
    return torch.where(lin <= 0.0031308, lin * 12.92, 1.055 * lin.clamp(min=1e-12) ** (1 / 2.4) - 0.055).clamp(0, 1)


# --- metrics -------------------------------------------------------------------------------

# --- model -----------------------------------------------------------------------------------

def cbr(i, o, stride=1, dilation=1):
    return nn.Sequential(nn.Conv2d(i, o, 3, stride, padding=dilation, dilation=dilation, bias=False),
                         nn.BatchNorm2d(o), nn.ReLU(inplace=True))


class VivifyColor(nn.Module):
    def __init__(self, bins):
        super().__init__()
        self.e1, self.e2, self.e3 = cbr(1, 16, 2), cbr(16, 32, 2), cbr(32, 32)
        self.e4, self.e5 = cbr(32, 64, 2), cbr(64, 64)
        self.e6, self.e7, self.e8 = cbr(64, 96, 2), cbr(96, 96, 1, 2), cbr(96, 96, 1, 2)
        self.u1, self.d1 = nn.Conv2d(96, 64, 1), cbr(64, 64)
        self.u2, self.d2 = nn.Conv2d(64, 32, 1), cbr(32, 32)
        self.head = nn.Conv2d(32, len(bins), 1)
        self.register_buffer("bins", torch.as_tensor(bins, dtype=torch.float32))

    def forward(self, l):
        s4 = self.e3(self.e2(self.e1(l)))
        s8 = self.e5(self.e4(s4))
        x = self.e8(self.e7(self.e6(s8)))
        up = lambda t: F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=False)
        x = self.d1(F.relu(up(self.u1(x)) + s8))
        x = self.d2(F.relu(up(self.u2(x)) + s4))
        return self.head(x)

    def ab(self, logits, t):
        """Annealed mean in CIE units."""
        p = F.softmax(logits / t, 1)
        return torch.einsum("bqhw,qc->bchw", p, self.bins)


# --- data --------------------------------------------------------------------------------------

def crops(images, rng, n, size):
    out = []
    while len(out) < n:
        img = images[rng.randrange(len(images))]
        w, h = img.size
        cw, ch = int(w * rng.uniform(0.5, 1.0)), int(h * rng.uniform(0.5, 1.0))
        x, y = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
        p = img.crop((x, y, x + cw, y + ch)).resize((size, size), Image.BILINEAR)
        a = np.asarray(p)
        if rng.random() < 0.5: a = a[:, ::-1]
        out.append(a.copy())
    return torch.from_numpy(np.stack(out).astype(np.float32) / 255).permute(0, 3, 1, 2)


def split_input(lab):
    """(B,3,S,S) Lab -> model input (L - 50) / 100 and the true ab at a quarter size."""
    return (lab[:, :1] - 50) / 100, F.avg_pool2d(lab[:, 1:], 4)


def quantize_prior(images, rng, size):
    """Bins seen in the training data (grid 10) and their smoothed empirical distribution."""
    counts = np.zeros((23, 23))
    for i in range(0, len(images)):
        lab = rgb_to_lab(crops([images[i]], rng, 1, size))
        ab = F.avg_pool2d(lab[:, 1:], 4)[0].reshape(2, -1).numpy()
        idx = np.clip(np.round(ab / GRID).astype(int) + 11, 0, 22)
        np.add.at(counts, (idx[0], idx[1]), 1)
    keep = np.argwhere(counts > 0)
    bins = (keep - 11) * GRID
    p = counts[keep[:, 0], keep[:, 1]]
    p = p / p.sum()
    # Smooth the distribution over the ab plane (Gaussian, sigma 5 ab units = half a bin).
    d2 = ((bins[:, None, :] - bins[None, :, :]) ** 2).sum(-1)
    k = np.exp(-d2 / (2 * SIGMA ** 2))
    p = (k @ p) / k.sum(1)
    p = p / p.sum()
    w = 1 / ((1 - LAMBDA) * p + LAMBDA / len(p))
    w = w / (p * w).sum()
    return bins.astype(np.float32), torch.as_tensor(w, dtype=torch.float32)


def soft_targets(ab, bins):
    """(B,2,h,w) ab -> (B,Q,h,w) Gaussian soft encoding over the bins."""
    d2 = ((ab[:, None] - bins[None, :, :, None, None]) ** 2).sum(2)
    return F.softmax(-d2 / (2 * SIGMA ** 2), 1)


# --- evaluation --------------------------------------------------------------------------------

def evaluate(model, images, t, size=256, scale=1.0):
    """Mean AuC (ours, grey) and colourfulness (ours, truth) over whole images at size x size."""
    ours, grey, m_ours, m_true = [], [], [], []
    with torch.no_grad():
        for img in images:
            rgb = torch.from_numpy(np.asarray(img.resize((size, size), Image.BILINEAR)).astype(np.float32) / 255).permute(2, 0, 1)[None]
            lab = rgb_to_lab(rgb)
            x, _ = split_input(lab)
            ab = F.interpolate(model.ab(model(x), t) * scale, scale_factor=4, mode="bilinear", align_corners=False)
            true_ab = lab[0, 1:].numpy()
            ours.append(auc(ab[0].numpy(), true_ab, axis=0))
            grey.append(auc(np.zeros_like(true_ab), true_ab, axis=0))
            out = lab_to_rgb(torch.cat([lab[:, :1], ab], 1))[0].permute(1, 2, 0).numpy() * 255
            m_ours.append(colourfulness(out))
            m_true.append(colourfulness(rgb[0].permute(1, 2, 0).numpy() * 255))
    return float(np.mean(ours)), float(np.mean(grey)), float(np.mean(m_ours)), float(np.mean(m_true))


def choose_decoding(model, images):
    """Picks the annealing temperature T and a chroma scale s (ab x s, folded into the decoding
    weights) on the tune split: the highest AuC among the settings whose colourfulness is at
    least 60% of the truth's, so that the output is colourful and no further from the truth
    than it must be. Returns (T, s, table)."""
    table = []
    for t in [1.0, 0.7, 0.5, 0.38, 0.3]:
        for scale in [1.0, 0.8, 0.65, 0.5, 0.4]:
            a, g, m, mt = evaluate(model, images, t, scale=scale)
            table.append({"T": t, "scale": scale, "auc": a, "grey_auc": g, "colourfulness": m, "truth_colourfulness": mt})
            print(f"  T {t:.2f} scale {scale:.2f}: AuC {a:.4f} (grey {g:.4f}), colourfulness {m:.1f} (truth {mt:.1f})", flush=True)
    colourful = [r for r in table if r["colourfulness"] >= 0.6 * r["truth_colourfulness"]] or table
    best = max(colourful, key=lambda r: r["auc"])
    return best["T"], best["scale"], table


# --- export ------------------------------------------------------------------------------------

def folded(block):
    """Conv + BatchNorm folded into one convolution's weight and bias (numpy)."""
    conv, bn = block[0], block[1]
    s = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach()
    w = conv.weight.detach() * s[:, None, None, None]
    b = bn.bias.detach() - bn.running_mean.detach() * s
    return w.numpy(), b.numpy(), conv.stride[0], conv.dilation[0]


def export(model, t, scale, param, binf):
    w = NcnnWriter()
    w.add("Input", "in0", [], ["in0"], "0=0 1=0 2=1")

    def block(name, src, dst):
        wt, b, s, d = folded(getattr(model, name))
        w.conv(name, src, dst, wt, b, s, d, relu=True)

    block("e1", "in0", "e1"); block("e2", "e1", "e2"); block("e3", "e2", "e3")
    w.add("Split", "split4", ["e3"], ["s4a", "s4b"])
    block("e4", "s4a", "e4"); block("e5", "e4", "e5")
    w.add("Split", "split8", ["e5"], ["s8a", "s8b"])
    block("e6", "s8a", "e6"); block("e7", "e6", "e7"); block("e8", "e7", "e8")
    for n, (u, d, src, skip) in enumerate([("u1", "d1", "e8", "s8b"), ("u2", "d2", "d1", "s4b")], 1):
        conv = getattr(model, u)
        w.conv(u, src, u, conv.weight.detach().numpy(), conv.bias.detach().numpy())
        w.add("Interp", f"up{n}", [u], [f"up{n}"], "0=2 1=2.0 2=2.0")
        w.add("BinaryOp", f"add{n}", [f"up{n}", skip], [f"sum{n}"], "0=0")
        w.add("ReLU", f"relu{n}", [f"sum{n}"], [f"act{n}"])
        block(d, f"act{n}", d)
    head = model.head
    w.conv("logits", "d2", "logits", head.weight.detach().numpy() / t, head.bias.detach().numpy() / t)
    w.add("Softmax", "softmax", ["logits"], ["prob"], "0=0 1=1")
    centres = (model.bins.numpy() * scale / AB_SCALE).T[:, :, None, None]  # (2, Q, 1, 1)
    w.conv("decode", "prob", "out0", centres, np.zeros(2, dtype=np.float32))
    w.write(param, binf)


# --- main --------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default="../shared/datasets/train")
    ap.add_argument("--val", default="../shared/datasets/val/BSD100")
    ap.add_argument("--out", default="training/runs/color")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--size", type=int, default=160)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--minutes", type=float, default=0, help="stop after this many minutes (0: no limit)")
    ap.add_argument("--eval-every", type=int, default=500)
    ap.add_argument("--resume", help="start from this checkpoint (weights and bins; a fresh optimizer and schedule)")
    ap.add_argument("--export-only", action="store_true", help="choose the decoding for the checkpoint in --out and export it (an untrained model if there is none)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed); np.random.seed(args.seed); torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.set_num_threads(args.threads)
    files = image_files(args.train)
    tune_files = files[::10]
    train_files = [f for i, f in enumerate(files) if i % 10]
    load = lambda fs: [Image.open(f).convert("RGB") for f in fs]
    train, tune, val = load(train_files), load(tune_files), load(image_files(args.val))
    print(f"{len(train)} training, {len(tune)} tune, {len(val)} validation images", flush=True)
    bins, weights = quantize_prior(train, random.Random(args.seed + 1), args.size)
    print(f"{len(bins)} ab bins", flush=True)
    model = VivifyColor(bins)
    ckpt = os.path.join(args.out, "checkpoint.pt")
    if args.export_only:
        if os.path.exists(ckpt):
            state = torch.load(ckpt, weights_only=False)  # our own checkpoint (bins are a numpy array)
            model = VivifyColor(state["bins"]); model.load_state_dict(state["model"])
            model.eval()
            finish(model, args, tune, val, state["step"], 0)
        else:
            model.eval()
            export(model, 0.38, 1.0, os.path.join(args.out, "vivify-color.param"), os.path.join(args.out, "vivify-color.bin"))
        return
    first_step = 0
    if args.resume:
        state = torch.load(args.resume, weights_only=False)  # our own checkpoint
        model = VivifyColor(state["bins"]); model.load_state_dict(state["model"])
        bins, first_step = state["bins"], state["step"]
        rng = random.Random(args.seed + first_step)
        print(f"resuming from {args.resume} at step {first_step}", flush=True)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=1e-5)
    budget = first_step + args.steps
    log = open(os.path.join(args.out, "log.csv"), "w", newline="")
    writer = csv.writer(log)
    writer.writerow(["step", "loss", "val_auc", "grey_auc", "val_colourfulness", "truth_colourfulness", "seconds"])
    start = time.time()
    running, seen = 0.0, 0
    step = first_step
    bins_t = model.bins
    while step < budget:
        step += 1
        elapsed = time.time() - start
        # Cosine schedule over the time budget when one is given, else over the steps.
        frac = min(1.0, elapsed / (args.minutes * 60)) if args.minutes else (step - first_step) / args.steps
        for g in opt.param_groups:
            g["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * frac))
        lab = rgb_to_lab(crops(train, rng, args.batch, args.size))
        x, ab = split_input(lab)
        target = soft_targets(ab, bins_t)
        w = weights[target.argmax(1)]
        logits = model(x)
        loss = (-(target * F.log_softmax(logits, 1)).sum(1) * w).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        running += loss.item(); seen += 1
        out_of_time = args.minutes and time.time() - start > args.minutes * 60
        if step % args.eval_every == 0 or step == budget or out_of_time:
            model.eval()
            a, g, m, mt = evaluate(model, val[::4], 0.38)
            model.train()
            writer.writerow([step, running / seen, a, g, m, mt, round(time.time() - start)]); log.flush()
            print(f"step {step}: loss {running / seen:.4f}, val AuC {a:.4f} (grey {g:.4f}), colourfulness {m:.1f} (truth {mt:.1f}) at T 0.38, {time.time() - start:.0f} s", flush=True)
            running, seen = 0.0, 0
            torch.save({"model": model.state_dict(), "bins": bins, "step": step, "seed": args.seed}, ckpt)
        if out_of_time:
            break
    model.eval()
    finish(model, args, tune, val, step, round(time.time() - start))


def finish(model, args, tune, val, steps, seconds):
    """Chooses the decoding on the tune split, reports BSD100, writes summary.json and exports."""
    print("choosing the decoding on the tune split:", flush=True)
    t, scale, table = choose_decoding(model, tune)
    a, g, m, mt = evaluate(model, val, t, scale=scale)
    print(f"T {t}, scale {scale}: BSD100 AuC {a:.4f} (grey {g:.4f}), colourfulness {m:.1f} (truth {mt:.1f}, {100 * m / mt:.0f}%)", flush=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"steps": steps, "seconds": seconds, "temperature": t, "scale": scale, "tune": table,
                   "bsd100_256px": {"auc": a, "grey_auc": g, "colourfulness": m, "truth_colourfulness": mt}}, f, indent=1)
    export(model, t, scale, os.path.join(args.out, "vivify-color.param"), os.path.join(args.out, "vivify-color.bin"))
    with open(os.path.join(args.out, "vivify-color.json"), "w") as f:
        json.dump({"input": "l", "inputSize": 256, "inputMultiple": 16, "lCenter": 50, "lScale": 100, "output": "ab", "abScale": AB_SCALE}, f)
    print("exported", os.path.join(args.out, "vivify-color.param"), flush=True)


if __name__ == "__main__":
    main()
