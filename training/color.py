#!/usr/bin/env python3
"""Train vivify-color v2: a colorizer that knows what things are (issue 11).

Network (input L at 224x224 as (L - 50) / 50, output ab / 110 at 56x56):
    encoder  MobileNetV2 1.0/224, ImageNet-trained, frozen: dequantised from the quantised
             TFLite file by our own reader (training/tflite.py), its first convolution summed
             over R, G, B so that it reads L directly (a grey picture is R = G = B, and
             (L - 50) / 50 is within a few units of a grey sRGB pixel's x / 127.5 - 1), cut
             after the 320 -> 1280 convolution (no classifier).
    taps     hypercolumns: block outputs at 56x56 (24 ch), 28x28 (32), 14x14 (96), 7x7 (320),
             and the 1280-channel map pooled to one global vector (Iizuka et al.'s global
             prior), projected to 128 channels and added over the whole 7x7 map.
    decoder  7x7: 1x1 320->128 + global, two 3x3 128 (BN, ReLU);
             14x14: bilinear x2 + 1x1 96->128 of the tap, ReLU, two 3x3 128;
             28x28: 1x1 128->64, x2, + 1x1 32->64 of the tap, ReLU, one 3x3 64;
             56x56: 1x1 64->64, x2, + 1x1 24->64 of the tap, ReLU, one 3x3 64;
             head 1x1 64->Q logits over the grid-10 ab bins seen in training,
             softmax((logits - alpha log w) / T), 1x1 Q->2 with the bin centres x chroma scale
             (the annealed mean; alpha undoes part of the rebalancing), all folded at export.
Loss: cross-entropy against a Gaussian (sigma 5) soft encoding of the true ab, weighted by
class rebalancing w (lambda 0.5), as Zhang et al. (ECCV 2016). alpha, T and the chroma scale
are chosen on the tune split for the largest margin over the weakest of the three bars.

Data: every photograph in ../shared/datasets/train, ImageNet-sample900 first, minus two
held-out ImageNet splits: "tune" (every 10th file, picks T and the chroma scale) and "test"
(every 10th from the 5th, reported by training/evaluate.py). Each training photograph gives
--crops random crops (50-100% of each side, so aspect changes as the engine's squash does),
flips, and on the input only, degradations of old film (gamma and contrast shifts, blur, grain,
scratches, dust, JPEG). The frozen encoder's features for every crop are computed once and
cached (fp16, --out/cache), so only the decoder trains: the CPU is enough.

Options beyond the shipped recipe (tried in the issue-11 session of 2026-11-26, see
Models/training-logs/README.md; neither beat the shipped decoder on the tune split):
  --finetune  also trains the encoder's layers after the 14x14 tap (the 7x7 stage and the
              320 -> 1280 convolution) at --encoder-lr, run from the cached 14x14 features;
  --ema D     evaluates, keeps and exports an exponential average of the weights;
  --final     keeps the last checkpoint instead of the best one on the tune split;
  --cache DIR / --cache-only  build the feature caches once and share them between runs.

Usage: python3 training/color.py --minutes 40 --out training/runs/color
       python3 training/color.py --out training/runs/color --export-only
       python3 training/color.py --cache training/runs/shared --cache-only
       python3 training/color.py --cache training/runs/shared --out training/runs/ft --finetune --ema 0.995 --minutes 50
"""
import argparse, csv, io, json, math, os, random, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image, ImageFilter

from common import NcnnWriter, ab_error_histogram, ab_prior, colourfulness, image_files, pooled_auc, rebalance_weights
from tflite import ADD, CONV_2D, DEPTHWISE_CONV_2D, PAD_SAME, ACT_RELU6, TFLiteNet, run_layers, same_padding

GRID, SIGMA, LAMBDA, AB_SCALE = 10.0, 5.0, 0.5, 110.0
SIZE = 224
BACKBONE = "../shared/models/backbones/mobilenet_v2_1.0_224_quant.tflite"


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


# --- the frozen encoder ----------------------------------------------------------------------

class Encoder:
    """MobileNetV2 from the TFLite file, reading one L channel, with the taps named above."""

    def __init__(self, path):
        self.net = TFLiteNet(path)
        first = self.net.layers[0]
        # A grey picture has R = G = B: the first convolution on L alone is the sum over RGB.
        first.weight = first.weight.sum(1, keepdim=True)
        tensors = self.net.tensors
        shape = lambda i: tensors[i].shape
        # Block outputs: the last tensor of each size produced by a residual add or a linear
        # (no activation) projection; the 1280 map: the last ReLU6 convolution.
        taps = {}
        for layer in self.net.layers:
            s = shape(layer.output)
            linear = layer.kind == ADD or (layer.kind == CONV_2D and layer.options["act"] == 0)
            if linear and len(s) == 4 and s[1] in (56, 28, 14, 7):
                taps[s[1]] = layer.output
            if layer.kind == CONV_2D and layer.options["act"] == ACT_RELU6 and len(s) == 4 and s[1] == 7:
                taps["global"] = layer.output
        self.taps = [taps[56], taps[28], taps[14], taps[7], taps["global"]]
        self.channels = [shape(t)[3] for t in self.taps]
        self.last = taps["global"]
        self.layers = [l for l in self.net.layers[:[l.output for l in self.net.layers].index(self.last) + 1]]

    def __call__(self, x):
        """x: (B,1,224,224) as (L - 50) / 50 -> [f56, f28, f14, f7, g(B,1280)]."""
        _, feats = self.net.forward(x, taps=self.taps, stop_after=self.last)
        return feats[:4] + [feats[4].mean((2, 3))]


# --- the decoder -------------------------------------------------------------------------------

def cbr(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))


class Decoder(nn.Module):
    def __init__(self, channels, bins, dropout=0.1):
        super().__init__()
        self.dropout = dropout
        c56, c28, c14, c7, cg = channels
        self.p7, self.pg = nn.Conv2d(c7, 128, 1), nn.Conv2d(cg, 128, 1)
        self.c7a, self.c7b = cbr(128, 128), cbr(128, 128)
        self.p14 = nn.Conv2d(c14, 128, 1)
        self.c14a, self.c14b = cbr(128, 128), cbr(128, 128)
        self.q28, self.p28, self.c28 = nn.Conv2d(128, 64, 1), nn.Conv2d(c28, 64, 1), cbr(64, 64)
        self.q56, self.p56, self.c56 = nn.Conv2d(64, 64, 1), nn.Conv2d(c56, 64, 1), cbr(64, 64)
        self.head = nn.Conv2d(64, len(bins), 1)
        self.register_buffer("bins", torch.as_tensor(bins, dtype=torch.float32))
        self.register_buffer("log_w", torch.zeros(len(bins)))

    def forward(self, f56, f28, f14, f7, g):
        up = lambda t: F.interpolate(t, scale_factor=2, mode="bilinear", align_corners=False)
        if self.training:
            # The features of each cached crop are fixed: dropping whole feature maps (and part
            # of the global vector) keeps the decoder from memorising them.
            f56, f28, f14, f7 = [F.dropout2d(f, self.dropout) for f in (f56, f28, f14, f7)]
            g = F.dropout(g, 2 * self.dropout)
        x = F.relu(self.p7(f7) + self.pg(g[:, :, None, None]))
        x = self.c7b(self.c7a(x))
        x = self.c14b(self.c14a(F.relu(up(x) + self.p14(f14))))
        x = self.c28(F.relu(up(self.q28(x)) + self.p28(f28)))
        x = self.c56(F.relu(up(self.q56(x)) + self.p56(f56)))
        return self.head(x)

    def ab(self, logits, t, scale=1.0, alpha=0.0):
        """Annealed mean in CIE units. `alpha` undoes that share of the class rebalancing: a
        rebalanced model predicts q(bin) ~ p(bin) w(bin), so logits - log w are calibrated."""
        return torch.einsum("bqhw,qc->bchw", F.softmax((logits - alpha * self.log_w[:, None, None]) / t, 1), self.bins) * scale


class Upper(nn.Module):
    """The encoder's layers after the 14x14 tap (the stride-2 block into 7x7, the 7x7 blocks
    and the 320 -> 1280 convolution: 1.67 of its 2.21 M weights, 90 of its 292 M
    multiply-adds) as trainable parameters, for --finetune. They run from the cached 14x14
    features, so only this slice costs time; `write_to` puts the trained weights back into
    the encoder that `export` writes."""

    def __init__(self, encoder):
        super().__init__()
        self.start = [l.output for l in encoder.layers].index(encoder.taps[2]) + 1
        self.layers = encoder.layers[self.start:]
        self.f14, self.f7, self.g = encoder.taps[2], encoder.taps[3], encoder.taps[4]
        self.weights, self.biases = nn.ParameterList(), nn.ParameterList()
        for layer in self.layers:
            if layer.weight is not None:
                layer.weight = nn.Parameter(layer.weight.detach().clone())
                layer.bias = nn.Parameter(layer.bias.detach().clone())
                self.weights.append(layer.weight); self.biases.append(layer.bias)

    def forward(self, f14):
        values = run_layers(self.layers, {self.f14: f14}, stop_after=self.g)
        return values[self.f7], values[self.g].mean((2, 3))

    def write_to(self, encoder):
        """Copies these weights into `encoder`'s own layers (frozen tensors)."""
        it = iter(zip(self.weights, self.biases))
        for layer in encoder.layers[self.start:]:
            if layer.weight is not None:
                w, b = next(it)
                layer.weight, layer.bias = w.detach().clone(), b.detach().clone()


class Colorizer(nn.Module):
    """Decoder, plus the encoder's upper layers when they are fine-tuned."""

    def __init__(self, decoder, upper=None):
        super().__init__()
        self.decoder, self.upper = decoder, upper

    def forward(self, f56, f28, f14, f7, g):
        if self.upper is not None:
            f7, g = self.upper(f14)
        return self.decoder(f56, f28, f14, f7, g)

    def ab(self, logits, t, scale=1.0, alpha=0.0):
        return self.decoder.ab(logits, t, scale, alpha)


class EMA:
    """Exponential moving average of a model's weights and batch-norm statistics: the
    averaged decoder is what is evaluated, kept and exported (a smoother choice than any one
    step of a noisy run on little data)."""

    def __init__(self, model, decay):
        import copy
        self.decay, self.model = decay, copy.deepcopy(model)
        for p in self.model.parameters():
            p.requires_grad_(False)

    @torch.no_grad()
    def update(self, model):
        for a, b in zip(self.model.state_dict().values(), model.state_dict().values()):
            if a.dtype.is_floating_point:
                a.mul_(self.decay).add_(b.detach(), alpha=1 - self.decay)
            else:
                a.copy_(b)


# --- data: crops, film degradations, cached features -----------------------------------------

def split_files(train_root):
    """(training files, tune files, test files): ImageNet-sample900 first; two ImageNet splits held out."""
    imagenet = image_files(os.path.join(train_root, "ImageNet-sample900"))
    others = [f for f in image_files(train_root) if "ImageNet-sample900" not in f]
    tune = imagenet[::10]
    test = imagenet[5::10]
    held = set(tune) | set(test)
    return [f for f in imagenet if f not in held] + others, tune, test


def random_crop(img, rng):
    w, h = img.size
    cw, ch = int(w * rng.uniform(0.5, 1.0)), int(h * rng.uniform(0.5, 1.0))
    x, y = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
    p = img.crop((x, y, x + cw, y + ch)).resize((SIZE, SIZE), Image.BILINEAR)
    if rng.random() < 0.5:
        p = p.transpose(Image.FLIP_LEFT_RIGHT)
    return np.asarray(p, dtype=np.float32) / 255


def degrade(l, rng):
    """Old-film degradations of an L* plane (H, W) in 0..100; each with its own chance."""
    nrng = np.random.default_rng(rng.randrange(1 << 30))
    if rng.random() < 0.5:  # gamma and contrast / brightness shifts (exposure, printing)
        l = 100 * (np.clip(l, 0, 100) / 100) ** rng.uniform(0.7, 1.4)
        l = 50 + rng.uniform(0.7, 1.25) * (l - 50) + rng.uniform(-10, 10)
    if rng.random() < 0.4:  # soft focus
        img = Image.fromarray(np.clip(l * 2.55, 0, 255).astype(np.uint8)).filter(ImageFilter.GaussianBlur(rng.uniform(0.4, 1.6)))
        l = np.asarray(img, dtype=np.float32) / 2.55
    if rng.random() < 0.5:  # film grain, slightly clumped
        n = nrng.normal(0, rng.uniform(1, 6), l.shape).astype(np.float32)
        if rng.random() < 0.5:
            n = (n + np.roll(n, 1, 0) + np.roll(n, 1, 1)) / math.sqrt(3)
        l = l + n
    if rng.random() < 0.3:  # vertical scratches, bright or dark, partial length
        for _ in range(rng.randint(1, 3)):
            x = rng.randrange(l.shape[1]); wdt = rng.randint(1, 2)
            y0 = rng.randrange(l.shape[0] // 2); y1 = rng.randrange(y0 + 1, l.shape[0] + 1)
            l[y0:y1, x:x + wdt] += rng.choice([-1, 1]) * rng.uniform(15, 40)
    if rng.random() < 0.25:  # dust
        for _ in range(rng.randint(1, 8)):
            y, x = rng.randrange(l.shape[0] - 3), rng.randrange(l.shape[1] - 3)
            l[y:y + rng.randint(1, 3), x:x + rng.randint(1, 3)] = rng.choice([3.0, 97.0])
    l = np.clip(l, 0, 100)
    if rng.random() < 0.4:  # JPEG of the grey picture
        buf = io.BytesIO()
        Image.fromarray(np.round(l * 2.55).astype(np.uint8)).save(buf, "JPEG", quality=rng.randint(20, 85))
        l = np.asarray(Image.open(io.BytesIO(buf.getvalue())), dtype=np.float32) / 2.55
    return l


def _drawn_crops(files, crops, seed, batch):
    """The crops build_cache caches, batch by batch, in the order its random draws make them:
    (first crop index, Lab of the clean crops (B, 3, 224, 224), their degraded L* (B, 224, 224)).
    replay_clean_l draws through the same generator, so its crop i is the cache's crop i."""
    rng = random.Random(seed)
    jobs = [(f, j) for f in files for j in range(crops)]
    for k in range(0, len(jobs), batch):
        part = jobs[k:k + batch]
        rgb = torch.from_numpy(np.stack([random_crop(Image.open(f).convert("RGB"), rng) for f, _ in part])).permute(0, 3, 1, 2)
        lab = rgb_to_lab(rgb)
        yield k, lab, np.stack([degrade(lab[i, 0].numpy().copy(), rng) for i in range(len(part))])


def build_cache(encoder, files, crops, seed, path, batch=32):
    """Encoder features of `crops` degraded crops per file, and their true ab at 56x56 (fp16)."""
    n = len(files) * crops
    c = encoder.channels
    shapes = [(n, c[0], 56, 56), (n, c[1], 28, 28), (n, c[2], 14, 14), (n, c[3], 7, 7), (n, c[4]), (n, 2, 56, 56)]
    names = ["f56", "f28", "f14", "f7", "g", "ab"]
    os.makedirs(path, exist_ok=True)
    if os.path.exists(os.path.join(path, "l.npy")):
        os.remove(os.path.join(path, "l.npy"))  # the clean L* of the crops this cache held before
    arrays = [np.lib.format.open_memmap(os.path.join(path, k + ".tmp.npy"), "w+", np.float16, s) for k, s in zip(names, shapes)]
    start = time.time()
    for k, lab, ls in _drawn_crops(files, crops, seed, batch):
        with torch.no_grad():
            feats = encoder(torch.from_numpy((ls[:, None] - 50) / 50).float())
        feats.append(F.avg_pool2d(lab[:, 1:], 4))
        for a, t in zip(arrays, feats):
            a[k:k + len(ls)] = t.numpy().astype(np.float16)
        print(f"\r  cache {k + len(ls)}/{n} crops, {time.time() - start:.0f} s", end="", flush=True)
    print(flush=True)
    for a, name in zip(arrays, names):
        a.flush(); del a
        os.replace(os.path.join(path, name + ".tmp.npy"), os.path.join(path, name + ".npy"))


def replay_clean_l(files, crops, seed, path, batch=32):
    """Issue 29, the semantic loss on the CPU: the clean L* (before the degradations) at 224x224
    of every crop that build_cache(files, crops, seed, batch) cached, as uint8 (L* x 2.55) in
    PATH/l.npy. It draws the crops again through build_cache's own generator (no encoder), and
    checks each batch's true ab against the cache's ab.npy so that a replay that went astray
    (other files, seed or batch size) stops."""
    n = len(files) * crops
    cached_ab = np.load(os.path.join(path, "ab.npy"), mmap_mode="r")
    if len(cached_ab) != n:
        raise SystemExit(f"'{path}' holds {len(cached_ab)} crops, not the {n} of these files: it was built from other files.")
    out = np.lib.format.open_memmap(os.path.join(path, "l.tmp.npy"), "w+", np.uint8, (n, SIZE, SIZE))
    start = time.time()
    for k, lab, _ in _drawn_crops(files, crops, seed, batch):
        b = len(lab)
        ab = F.avg_pool2d(lab[:, 1:], 4).numpy().astype(np.float16)
        # A crop drawn out of step differs by whole units; 0.2 leaves room for an fp16 step
        # (0.0625 above 64) flipped by another torch or instruction set.
        if not np.allclose(ab.astype(np.float32), np.asarray(cached_ab[k:k + b], dtype=np.float32), atol=0.2):
            raise SystemExit(f"replaying '{path}' went astray at crop {k}: its true ab differs from the cache's.")
        out[k:k + b] = np.clip(np.round(lab[:, 0].numpy() * 2.55), 0, 255).astype(np.uint8)
        print(f"\r  clean L {k + b}/{n} crops, {time.time() - start:.0f} s", end="", flush=True)
    print(flush=True)
    out.flush(); del out
    os.replace(os.path.join(path, "l.tmp.npy"), os.path.join(path, "l.npy"))


def load_cache(path):
    return [np.load(os.path.join(path, k + ".npy"), mmap_mode="r") for k in ["f56", "f28", "f14", "f7", "g", "ab"]]


class Caches:
    """Several caches (each --crops crops per photograph, its own seed) read as one; `keep`, a
    sorted array of global crop indices, restricts it to those crops (training/crossval.py)."""

    def __init__(self, paths, keep=None, clean_l=False):
        self.parts = [load_cache(p) for p in paths]
        if clean_l:
            # a 7th array: the crops' clean L* at 224x224 (replay_clean_l), for the semantic loss
            for p, part in zip(paths, self.parts):
                if not os.path.exists(os.path.join(p, "l.npy")):
                    raise SystemExit(f"'{p}' has no l.npy: the semantic loss needs the crops' clean L (color.replay_clean_l).")
                part.append(np.load(os.path.join(p, "l.npy"), mmap_mode="r"))
                if len(part[6]) != len(part[5]):
                    raise SystemExit(f"'{p}/l.npy' holds {len(part[6])} crops, the cache {len(part[5])}: delete l.npy to replay it.")
        self.arrays = 7 if clean_l else 6
        self.starts = np.cumsum([0] + [len(p[5]) for p in self.parts])
        self.keep = keep

    def __len__(self):
        return int(self.starts[-1]) if self.keep is None else len(self.keep)

    def batch(self, idx):
        """Six float tensors (f56, f28, f14, f7, g, ab) for the sorted indices `idx` (into `keep`),
        and with clean_l a seventh, the clean L* (B, 1, 224, 224) in 0..100."""
        if self.keep is not None:
            idx = self.keep[idx]
        out = [[] for _ in range(self.arrays)]
        for k, part in enumerate(self.parts):
            local = idx[(idx >= self.starts[k]) & (idx < self.starts[k + 1])] - self.starts[k]
            if len(local):
                for j in range(self.arrays):
                    out[j].append(np.asarray(part[j][local], dtype=np.float32))
        tensors = [torch.from_numpy(np.concatenate(o)) for o in out]
        if self.arrays == 7:
            tensors[6] = tensors[6][:, None] / 2.55
        return tensors


def quantize_prior(ab, lam=LAMBDA):
    """Bins seen in the cached training targets (grid 10) and the class-rebalancing weights."""
    counts = np.zeros((23, 23))
    for i in range(0, len(ab), 256):
        a = np.asarray(ab[i:i + 256], dtype=np.float32)
        idx = np.clip(np.round(a / GRID).astype(int) + 11, 0, 22)
        np.add.at(counts, (idx[:, 0].ravel(), idx[:, 1].ravel()), 1)
    keep = np.argwhere(counts > 0)
    bins = (keep - 11) * GRID
    p = counts[keep[:, 0], keep[:, 1]]
    p = p / p.sum()
    d2 = ((bins[:, None, :] - bins[None, :, :]) ** 2).sum(-1)
    k = np.exp(-d2 / (2 * SIGMA ** 2))
    p = (k @ p) / k.sum(1)
    p = p / p.sum()
    w = 1 / ((1 - lam) * p + lam / len(p))
    w = w / (p * w).sum()
    return bins.astype(np.float32), torch.as_tensor(w, dtype=torch.float32)


def soft_targets(ab, bins):
    """(B,2,h,w) ab -> (B,Q,h,w) Gaussian soft encoding over the bins."""
    d2 = ((ab[:, None] - bins[None, :, :, None, None]) ** 2).sum(2)
    return F.softmax(-d2 / (2 * SIGMA ** 2), 1)


# --- evaluation (whole photographs squashed to 224x224) --------------------------------------

def prepare_eval(encoder, files):
    """Features of each clean photograph's L and its true Lab at 224x224."""
    out = []
    with torch.no_grad():
        for f in files:
            rgb = torch.from_numpy(np.asarray(Image.open(f).convert("RGB").resize((SIZE, SIZE), Image.BILINEAR), dtype=np.float32) / 255).permute(2, 0, 1)[None]
            lab = rgb_to_lab(rgb)
            out.append(([t.clone() for t in encoder((lab[:, :1] - 50) / 50)], lab))
    return out


def evaluate(decoder, prepared, t, scale=1.0, alpha=0.0):
    """AuC (ours, grey) and class-rebalanced AuC (ours, grey), each over all the set's pixels
    together, and mean colourfulness (ours, truth)."""
    prior = ab_prior([lab[0, 1:].numpy() for _, lab in prepared], axis=0)
    hists = np.zeros((4, 152))
    m = []
    with torch.no_grad():
        for feats, lab in prepared:
            ab = F.interpolate(decoder.ab(decoder(*feats), t, scale, alpha), scale_factor=4, mode="bilinear", align_corners=False)
            true_ab = lab[0, 1:].numpy()
            w = rebalance_weights(true_ab, prior, axis=0)
            zero = np.zeros_like(true_ab)
            hists += [ab_error_histogram(ab[0].numpy(), true_ab, axis=0), ab_error_histogram(zero, true_ab, axis=0),
                      ab_error_histogram(ab[0].numpy(), true_ab, axis=0, weights=w), ab_error_histogram(zero, true_ab, axis=0, weights=w)]
            out = lab_to_rgb(torch.cat([lab[:, :1], ab], 1))[0].permute(1, 2, 0).numpy() * 255
            m.append([colourfulness(out), colourfulness(lab_to_rgb(lab)[0].permute(1, 2, 0).numpy() * 255)])
    a = [pooled_auc(h) for h in hists]
    m = np.mean(m, 0)
    return dict(auc=a[0], grey_auc=a[1], rb_auc=a[2], grey_rb_auc=a[3], colourfulness=m[0], truth_colourfulness=m[1])


def margin(r):
    """How far a setting clears the weakest of issue 11's three bars, in AuC points: plain AuC
    over grey's, rebalanced AuC over grey's + 5, colourfulness over 70% of the truth's (5% of
    colourfulness counted as one point)."""
    return min(100 * (r["auc"] - r["grey_auc"]), 100 * (r["rb_auc"] - r["grey_rb_auc"]) - 5,
               (100 * r["colourfulness"] / r["truth_colourfulness"] - 70) / 5)


def choose_decoding(decoder, prepared):
    """The decoding on the tune split: the share alpha of the rebalancing undone, the
    temperature T and the chroma scale whose weakest bar margin (`margin`) is largest, so that
    the output is no greyer, no more garish and no further from the truth than it must be."""
    table = []
    for alpha in [0.0, 0.25, 0.5, 0.75, 1.0]:
        for t in [1.0, 0.7, 0.5, 0.38]:
            for scale in [0.9, 1.0, 1.1, 1.2, 1.35]:
                r = evaluate(decoder, prepared, t, scale, alpha)
                r.update(alpha=alpha, T=t, scale=scale)
                r = {k: float(v) for k, v in r.items()}
                r["margin"] = margin(r)
                table.append(r)
                print(f"  alpha {alpha:.2f} T {t:.2f} scale {scale:.2f}: AuC {100 * r['auc']:.2f} (grey {100 * r['grey_auc']:.2f}), "
                      f"rebalanced {100 * r['rb_auc']:.2f} (grey {100 * r['grey_rb_auc']:.2f}), colourfulness {r['colourfulness']:.1f} "
                      f"(truth {r['truth_colourfulness']:.1f}), margin {r['margin']:+.2f}", flush=True)
    best = max(table, key=lambda r: r["margin"])
    return best["alpha"], best["T"], best["scale"], table


# --- export ------------------------------------------------------------------------------------

def folded(block):
    conv, bn = block[0], block[1]
    s = (bn.weight / torch.sqrt(bn.running_var + bn.eps)).detach()
    return (conv.weight.detach() * s[:, None, None, None]).numpy(), (bn.bias.detach() - bn.running_mean.detach() * s).numpy()


def export(encoder, decoder, t, scale, alpha, param, binf):
    """The whole network (encoder + decoder + annealed-mean decoding) as ncnn, fp16 weights."""
    w = NcnnWriter()
    w.add("Input", "in0", [], ["in0"], f"0={SIZE} 1={SIZE} 2=1")
    name = {encoder.net.graph_inputs[0]: "in0"}
    uses = {}
    for layer in encoder.layers:
        for i in layer.inputs[:1] + (layer.inputs[1:2] if layer.kind == ADD else []):
            uses[i] = uses.get(i, 0) + 1
    for tap in encoder.taps:
        uses[tap] = uses.get(tap, 0) + 1
    pending = {}  # tensor -> list of split outputs still to hand out

    def read(i):
        if i in pending:
            return pending[i].pop()
        return name[i]

    def produced(i, blob):
        name[i] = blob
        if uses.get(i, 0) > 1:
            outs = [f"{blob}_{k}" for k in range(uses[i])]
            w.add("Split", f"split_{blob}", [blob], outs)
            pending[i] = outs[::-1]

    shapes = {encoder.net.graph_inputs[0]: (SIZE, SIZE)}
    for n, layer in enumerate(encoder.layers):
        o = layer.options
        blob = f"e{n}"
        h, wd = shapes[layer.inputs[0]]
        if layer.kind in (CONV_2D, DEPTHWISE_CONV_2D):
            k = layer.weight.shape[2]
            ph = same_padding(h, k, o["stride"][0], 1) if o["padding"] == PAD_SAME else (0, 0)
            pw = same_padding(wd, k, o["stride"][1], 1) if o["padding"] == PAD_SAME else (0, 0)
            clip = (0.0, 6.0) if o["act"] == ACT_RELU6 else None
            groups = layer.weight.shape[0] if layer.kind == DEPTHWISE_CONV_2D else 1
            w.conv(blob, read(layer.inputs[0]), blob, layer.weight.numpy(), layer.bias.numpy(), o["stride"][0],
                   pads=(ph[0], pw[0], ph[1], pw[1]), groups=groups, clip=clip, fp16=True)
            shapes[layer.output] = (-(-h // o["stride"][0]), -(-wd // o["stride"][1]))
        elif layer.kind == ADD:
            a, b = read(layer.inputs[0]), read(layer.inputs[1])
            w.add("BinaryOp", blob, [a, b], [blob], "0=0")
            shapes[layer.output] = (h, wd)
        else:
            raise ValueError(f"unexpected encoder operator {layer.kind}")
        produced(layer.output, blob)
    f56, f28, f14, f7, g = [read(t) for t in encoder.taps]
    w.add("Pooling", "gpool", [g], ["gvec"], "0=1 4=1")

    d = decoder
    conv = lambda nm, src, dst, m, relu=False: w.conv(nm, src, dst, m.weight.detach().numpy(), m.bias.detach().numpy(), relu=relu, fp16=True)
    block = lambda nm, src, dst, m: w.conv(nm, src, dst, *folded(m), relu=True, fp16=True)
    conv("p7", f7, "p7", d.p7); conv("pg", "gvec", "pg", d.pg)
    w.add("BinaryOp", "add7", ["p7", "pg"], ["s7"], "0=0"); w.add("ReLU", "relu7", ["s7"], ["a7"])
    block("c7a", "a7", "c7a", d.c7a); block("c7b", "c7a", "c7b", d.c7b)
    w.add("Interp", "up14", ["c7b"], ["u14"], "0=2 1=2.0 2=2.0")
    conv("p14", f14, "p14", d.p14)
    w.add("BinaryOp", "add14", ["u14", "p14"], ["s14"], "0=0"); w.add("ReLU", "relu14", ["s14"], ["a14"])
    block("c14a", "a14", "c14a", d.c14a); block("c14b", "c14a", "c14b", d.c14b)
    for lo, hi, q, p, c, src, tap in [(14, 28, d.q28, d.p28, d.c28, "c14b", f28), (28, 56, d.q56, d.p56, d.c56, "c28", f56)]:
        conv(f"q{hi}", src, f"q{hi}", q)
        w.add("Interp", f"up{hi}", [f"q{hi}"], [f"u{hi}"], "0=2 1=2.0 2=2.0")
        conv(f"p{hi}", tap, f"p{hi}", p)
        w.add("BinaryOp", f"add{hi}", [f"u{hi}", f"p{hi}"], [f"s{hi}"], "0=0"); w.add("ReLU", f"relu{hi}", [f"s{hi}"], [f"a{hi}"])
        block(f"c{hi}", f"a{hi}", f"c{hi}", c)
    head_bias = d.head.bias.detach() - alpha * d.log_w
    w.conv("logits", "c56", "logits", d.head.weight.detach().numpy() / t, head_bias.numpy() / t)
    w.add("Softmax", "softmax", ["logits"], ["prob"], "0=0 1=1")
    centres = (d.bins.numpy() * scale / AB_SCALE).T[:, :, None, None]
    w.conv("decode", "prob", "out0", centres, np.zeros(2, dtype=np.float32))
    w.write(param, binf)


def reference_input():
    """A deterministic 224x224 L test pattern (as (L - 50) / 50) that the Swift parity test
    rebuilds with the same formula: smooth shading, stripes and a hard-edged square."""
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    l = 50 + 30 * np.sin(x / 9.0) * np.cos(y / 13.0) + 12 * np.sin((x + 2 * y) / 3.0)
    l[60:120, 80:150] = 85.0
    return np.clip(l, 0, 100)


def reference_pair(encoder, decoder, t, scale, alpha, out):
    """The PyTorch output (ab / 110 at 56x56, float32 little-endian, a then b) of the exported
    network on `reference_input`, for the engine's parity test."""
    import copy
    x = torch.from_numpy(((reference_input() - 50) / 50)[None, None]).float()
    # The exported weights are fp16: compute the reference with the same rounding (BN folded).
    enc, dec = copy.deepcopy(encoder), copy.deepcopy(decoder)
    half = lambda t: t.half().float()
    for layer in enc.net.layers:
        if layer.weight is not None:
            layer.weight = half(layer.weight)
    with torch.no_grad():
        for m in dec.modules():
            if isinstance(m, nn.Sequential):  # conv + BN: round the folded weight, keep BN's shift
                conv, bn = m[0], m[1]
                s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
                conv.weight.copy_(half(conv.weight * s[:, None, None, None]) / s[:, None, None, None])
            elif isinstance(m, nn.Conv2d) and m is not dec.head and not any(m is q[0] for q in dec.modules() if isinstance(q, nn.Sequential)):
                m.weight.copy_(half(m.weight))
        ab = dec.ab(dec(*enc(x)), t, scale, alpha) / AB_SCALE
    ab.numpy().astype("<f4").tofile(os.path.join(out, "vivify-color.reference.bin"))


# --- main --------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default="../shared/datasets/train")
    ap.add_argument("--val", default="../shared/datasets/val/BSD100")
    ap.add_argument("--backbone", default=BACKBONE)
    ap.add_argument("--out", default="training/runs/color")
    ap.add_argument("--cache", default=None, help="folder of the feature caches (default: --out), to share them between runs")
    ap.add_argument("--cache-only", action="store_true", help="build the feature caches and stop")
    ap.add_argument("--crops", type=int, default=12, help="cached crops per training photograph in each cache set")
    ap.add_argument("--cache-sets", type=int, default=2, help="cache sets, each with its own seed (crops and degradations)")
    ap.add_argument("--dropout", type=float, default=0.1, help="feature-map dropout on the encoder taps while training")
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--steps", type=int, default=100000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--rebalance", type=float, default=LAMBDA, help="class rebalancing lambda (Zhang et al.): 0 weighs every colour bin alike, 1 every pixel alike (no rebalancing)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--finetune", action="store_true", help="also train the encoder's layers after the 14x14 tap (from the cached 14x14 features)")
    ap.add_argument("--encoder-lr", type=float, default=1e-4, help="learning rate of the fine-tuned encoder layers")
    ap.add_argument("--ema", type=float, default=0.0, help="decay of a weight average that is evaluated and kept instead of the raw weights, e.g. 0.995 (0: none, as the shipped decoder)")
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--minutes", type=float, default=0, help="stop after this many minutes (0: no limit)")
    ap.add_argument("--eval-every", type=int, default=300)
    ap.add_argument("--resume", action="store_true", help="continue from --out/checkpoint.pt (weights, optimizer, step)")
    ap.add_argument("--export-only", action="store_true", help="choose the decoding for --out/checkpoint-best.pt and export it")
    ap.add_argument("--final", action="store_true", help="keep the last checkpoint (the weight average at the end of the schedule) rather than the one with the best tune margin")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed); np.random.seed(args.seed); torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    encoder = Encoder(args.backbone)
    train_files, tune_files, test_files = split_files(args.train)
    print(f"{len(train_files)} training, {len(tune_files)} tune, {len(test_files)} test photographs", flush=True)
    cache_root = args.cache or args.out
    paths = [os.path.join(cache_root, "cache" + ("" if k == 0 else str(k + 1))) for k in range(args.cache_sets)]
    for k, cache in enumerate(paths):
        if not os.path.exists(os.path.join(cache, "ab.npy")):
            build_cache(encoder, train_files, args.crops, args.seed + k, cache)
    if args.cache_only:
        return
    data = Caches(paths)
    bins, weights = quantize_prior(data.parts[0][5], args.rebalance)
    print(f"{len(data)} cached crops in {len(paths)} sets, {len(bins)} ab bins", flush=True)
    ckpt = os.path.join(args.out, "checkpoint.pt")
    best_path = os.path.join(args.out, "checkpoint-best.pt")
    state = None
    if args.resume or args.export_only:
        state = torch.load(best_path if args.export_only and not args.final else ckpt, weights_only=False)  # our own checkpoint
        if not np.allclose(state["bins"], bins):
            raise SystemExit("the checkpoint's bins differ from the cache's: resume with the cache it was trained on")
        args.finetune = state.get("finetune", False)
        if "ema" in state and args.ema == 0:
            args.ema = state.get("ema_decay", 0.995)  # a checkpoint of an averaged run keeps its average
    model = Colorizer(Decoder(encoder.channels, bins, args.dropout), Upper(encoder) if args.finetune else None)
    model.decoder.log_w.copy_(torch.log(weights))
    groups = [{"params": list(model.decoder.parameters()), "lr": args.lr, "base_lr": args.lr}]
    if model.upper is not None:
        groups.append({"params": list(model.upper.parameters()), "lr": args.encoder_lr, "base_lr": args.encoder_lr, "weight_decay": 0.0})
    opt = torch.optim.Adam(groups, weight_decay=args.weight_decay)
    ema = EMA(model, args.ema) if args.ema > 0 else None
    step, spent = 0, 0.0
    if state is not None:
        model.load_state_dict(state["model"])
        if ema is not None and "ema" in state:
            ema.model.load_state_dict(state["ema"])
        step, spent = state["step"], state.get("seconds", 0.0)
        if "opt" in state and not args.export_only:
            opt.load_state_dict(state["opt"])
        print(f"resumed at step {step} ({spent:.0f} s trained)", flush=True)
    tune = prepare_eval(encoder, tune_files)
    if not args.export_only:
        val = prepare_eval(encoder, image_files(args.val)[::4])
        train(model, ema, opt, data, weights, val, tune, args, ckpt, step, spent)
        # The weights that cleared the bars by the most on the tune split while training.
        state = torch.load(ckpt if args.final else best_path, weights_only=False)
        model.load_state_dict(state["model"])
        if ema is not None and "ema" in state:
            ema.model.load_state_dict(state["ema"])
        print(f"best checkpoint: step {state['step']} (tune margin {state['margin']:+.2f})", flush=True)
    kept = ema.model if ema is not None else model
    kept.decoder.log_w.copy_(torch.log(weights))
    kept.eval()
    if kept.upper is not None:
        kept.upper.write_to(encoder)
    finish(encoder, kept, tune, args, state)


# A few decodings tried on the tune split at each evaluation to pick the best checkpoint.
SELECTION_GRID = [(0.5, 0.38, 1.0), (0.5, 0.5, 1.1), (0.25, 0.5, 1.0), (0.75, 0.38, 1.2), (0.5, 0.38, 1.2), (0.25, 0.38, 0.9)]


# The shipped decoder's decoding (training/crossval.py exports every fold with it); the evenness
# loss reads the colour with its alpha and T.
SHIPPED_DECODING = dict(alpha=0.5, t=0.5, scale=1.155)


def evenness_loss(ab, truth, scales=(1, 2, 4), per_picture=False, relative=False):
    """Issue 29, item 4: colour no less even than the truth's. The mean of how far each
    spatial gradient of the decoded colour (annealed mean, ab units, B x 2 x 56 x 56) exceeds
    the true colour's in size, at 56, 28 and 14 across. The bins' cross-entropy scores each
    pixel on its own, so a flat wall may take a glow that comes and goes with the framing (the
    DAVIS bedroom's ceiling); here a gradient the truth does not have costs, one it has does
    not (nor is a colour edge the prediction lacks pushed for: that would be guessing).
    `per_picture`: one figure per picture (B,), for training/color_gpu.py's per-picture loss.
    `relative`: each picture's figure over its mean chroma (plus 1): a decoder then gains
    nothing by colouring less, where the plain figure is least for grey (weight 0.1 on the CPU
    took a fold decoder's colourfulness to 30% of the truth's in 300 steps, against 72% without
    it; Models/training-logs/README.md)."""
    total = 0.0
    for s in scales:
        p, t = (ab, truth) if s == 1 else (F.avg_pool2d(ab, s), F.avg_pool2d(truth, s))
        for dim in (2, 3):
            total = total + F.relu(p.diff(dim=dim).abs() - t.diff(dim=dim).abs()).mean((1, 2, 3))
    total = total / len(scales)
    if relative:
        total = total / (ab.norm(dim=1).mean((1, 2)) + 1)
    return total if per_picture else total.mean()


def semantic_loss(critic, ab, clean_l, true_ab, kl_weight, feat_weight):
    """Issue 29's semantic loss on the CPU, as training/color_gpu.py computes it on a GPU: the
    frozen MobileNetV2 classifier (`critic`, color_gpu.Critic) reads the colorized picture (the
    clean L* at 224x224 with `ab`, the decoder's annealed mean at 56x56 (T 0.5, alpha 0.5),
    brought up) and the true one (the same L* with the true ab at 56x56 brought up alike, so that
    the two differ only in colour); KL of its classes and feature matching at 28, 14 and 7
    across, weighed by kl_weight and feat_weight; mean over the batch."""
    from color_gpu import critic_loss
    up = lambda ab: F.interpolate(ab, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
    with torch.no_grad():
        truth_logits, truth_feats = critic(lab_to_rgb(torch.cat([clean_l, up(true_ab)], 1)))
    sem, _, _ = critic_loss(critic, clean_l, up(ab), truth_logits, truth_feats, kl_weight, feat_weight)
    return sem.mean()


def train(model, ema, opt, data, weights, val, tune, args, ckpt, step, spent):
    n = len(data)
    best_path = os.path.join(args.out, "checkpoint-best.pt")
    best = torch.load(best_path, weights_only=False)["margin"] if os.path.exists(best_path) else -float("inf")
    log_path = os.path.join(args.out, "log.csv")
    new = not os.path.exists(log_path)
    log = open(log_path, "a", newline="")
    writer = csv.writer(log)
    if new:
        writer.writerow(["step", "loss", "val_auc", "grey_auc", "val_rb_auc", "grey_rb_auc", "val_colourfulness", "truth_colourfulness", "seconds", "tune_margin"])
    rng = np.random.default_rng(args.seed + step)
    total = args.minutes * 60 + spent if args.minutes else None
    start = time.time() - spent
    running, seen = 0.0, 0
    model.train()
    judged = ema.model if ema is not None else model
    while step < args.steps:
        step += 1
        # Cosine learning rate over the time limit, or over --steps (or a longer schedule that
        # training/crossval.py stops early, as the shipped run's best checkpoint was).
        frac = min(1.0, (time.time() - start) / total) if total else step / getattr(args, "schedule_steps", args.steps)
        for g in opt.param_groups:
            g["lr"] = g["base_lr"] * 0.5 * (1 + math.cos(math.pi * frac))
        idx = np.sort(rng.choice(n, args.batch, replace=False))
        batch = data.batch(idx)
        target = soft_targets(batch[5], model.decoder.bins)
        w = weights[target.argmax(1)]
        logits = model(*batch[:5])
        loss = (-(target * F.log_softmax(logits, 1)).sum(1) * w).mean()
        critic = getattr(args, "critic", None)
        # The decoded 56x56 colour, once, for the evenness and semantic losses alike.
        ab = model.ab(logits, SHIPPED_DECODING["t"], alpha=SHIPPED_DECODING["alpha"]) if getattr(args, "even_weight", 0) or critic else None
        if getattr(args, "even_weight", 0):
            loss = loss + args.even_weight * evenness_loss(ab, batch[5], relative=getattr(args, "even_relative", False))
        if critic is not None:
            loss = loss + semantic_loss(critic, ab, batch[6], batch[5], args.critic_kl, args.critic_feat)
        opt.zero_grad(); loss.backward(); opt.step()
        if ema is not None:
            ema.update(model)
        running += loss.item(); seen += 1
        out_of_time = total and time.time() - start > total
        if step % args.eval_every == 0 or out_of_time or step == args.steps:
            judged.eval()
            r = evaluate(judged, val, 0.38)
            tune_margin = max(margin(evaluate(judged, tune, t, sc, a)) for a, t, sc in SELECTION_GRID)
            model.train()
            secs = time.time() - start
            writer.writerow([step, running / seen, r["auc"], r["grey_auc"], r["rb_auc"], r["grey_rb_auc"], r["colourfulness"], r["truth_colourfulness"],
                             round(secs), tune_margin]); log.flush()
            print(f"step {step}: loss {running / seen:.4f}, BSD100/4 AuC {r['auc']:.4f} (grey {r['grey_auc']:.4f}), rebalanced {r['rb_auc']:.4f} "
                  f"(grey {r['grey_rb_auc']:.4f}), colourfulness {r['colourfulness']:.1f} (truth {r['truth_colourfulness']:.1f}), "
                  f"tune margin {tune_margin:+.2f}, {secs:.0f} s", flush=True)
            running, seen = 0.0, 0
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "bins": model.decoder.bins.numpy(), "step": step,
                     "seconds": secs, "seed": args.seed, "margin": tune_margin, "finetune": model.upper is not None}
            if ema is not None:
                state["ema"], state["ema_decay"] = ema.model.state_dict(), args.ema
            torch.save(state, ckpt)
            if tune_margin > best:
                best = tune_margin
                torch.save(state, best_path)
        elif getattr(args, "save_every", 0) and step % args.save_every == 0:
            # A checkpoint to resume from, without the evaluation (training/crossval.py).
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "bins": model.decoder.bins.numpy(), "step": step,
                     "seconds": time.time() - start, "seed": args.seed, "finetune": model.upper is not None}
            torch.save(state, ckpt + ".tmp")
            os.replace(ckpt + ".tmp", ckpt)
        if out_of_time:
            break


def finish(encoder, model, tune, args, state):
    print("choosing the decoding on the tune split:", flush=True)
    alpha, t, scale, table = choose_decoding(model, tune)
    decoder = model.decoder
    print(f"chose alpha {alpha}, T {t}, scale {scale}", flush=True)
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"steps": state["step"], "seconds": state.get("seconds"), "alpha": alpha, "temperature": t, "scale": scale,
                   "bins": len(decoder.bins), "rebalance_lambda": args.rebalance, "finetune": model.upper is not None, "ema": args.ema, "tune": table}, f, indent=1)
    export(encoder, decoder, t, scale, alpha, os.path.join(args.out, "vivify-color.param"), os.path.join(args.out, "vivify-color.bin"))
    reference_pair(encoder, decoder, t, scale, alpha, args.out)
    write_sidecar(args.out)
    print("exported", os.path.join(args.out, "vivify-color.param"), flush=True)


def write_sidecar(out):
    """vivify-color.json beside the exported .param: how the engine feeds and reads the network."""
    with open(os.path.join(out, "vivify-color.json"), "w") as f:
        json.dump({"input": "l", "inputSize": SIZE, "inputMultiple": 32, "lCenter": 50, "lScale": 50, "output": "ab",
                   "abScale": AB_SCALE, "upsample": "guided"}, f)


if __name__ == "__main__":
    main()
