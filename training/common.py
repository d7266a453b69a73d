"""What the training and evaluation scripts share: the metrics of issue 7's quality bars, the
image lists, and our own ncnn writer."""
import glob, math, os, struct

import numpy as np


def image_files(folder):
    """Every PNG and JPEG below `folder`, sorted."""
    return sorted(glob.glob(os.path.join(folder, "**", "*.png"), recursive=True) +
                  glob.glob(os.path.join(folder, "**", "*.jpg"), recursive=True))


def auc(pred_ab, true_ab, axis=-1, weights=None):
    """Zhang et al.'s AuC (ECCV 2016): the fraction of pixels whose ab error (Euclidean, CIE
    units) is within a threshold, averaged over thresholds 0..150 (step 1). `axis` holds a, b.
    With `weights` (one per pixel, from `rebalance_weights`) each pixel counts by its weight:
    the class-rebalanced AuC, where rare saturated colours count as much as common greys."""
    d = np.sqrt(((pred_ab - true_ab) ** 2).sum(axis=axis)).ravel()
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    # P(d <= t) for t = 0..150 from a weighted histogram of ceil(d).
    hist = np.bincount(np.minimum(np.ceil(d).astype(np.int64), 151), weights=w, minlength=152)
    return float(np.mean(np.cumsum(hist)[:151] / w.sum()))


def ab_error_histogram(pred_ab, true_ab, axis=-1, weights=None):
    """Weighted histogram of ceil(ab error) over 0..151 (151 = beyond the last threshold):
    add these up over a whole set, then `pooled_auc` gives the set's AuC over all its pixels."""
    d = np.sqrt(((pred_ab - true_ab) ** 2).sum(axis=axis)).ravel()
    w = np.ones_like(d) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    return np.bincount(np.minimum(np.ceil(d).astype(np.int64), 151), weights=w, minlength=152)


def loss_concentration(pred_ab, true_ab, weights, fraction=0.001, axis=-1):
    """The share of a picture's rebalanced AuC loss that its worst `fraction` of pixels carry.
    A pixel's loss is its weight times min(ab error, 150) / 150 (what it takes from the AuC over
    thresholds 0..150). Near 1: a few rare-coloured pixels decide the picture's score."""
    d = np.sqrt(((pred_ab - true_ab) ** 2).sum(axis=axis)).ravel()
    loss = np.asarray(weights, dtype=np.float64).ravel() * np.minimum(d, 150) / 150
    total = loss.sum()
    if total <= 0:
        return 0.0
    k = max(1, int(round(fraction * loss.size)))
    return float(np.partition(loss, loss.size - k)[-k:].sum() / total)


def pooled_auc(histogram):
    """AuC (thresholds 0..150) of the cumulative mass of a summed `ab_error_histogram`."""
    return float(np.mean(np.cumsum(histogram)[:151] / histogram.sum()))


def ab_prior(true_abs, axis=-1, grid=10.0, sigma=5.0):
    """The empirical distribution of ground-truth ab over grid-10 bins (a, b in -115..115),
    Gaussian-smoothed (sigma 5 CIE units), from a list of ab arrays: (23, 23) probabilities."""
    return smoothed_prior(sum(ab_counts(ab, axis, grid) for ab in true_abs), grid, sigma)


def _bin(v, grid):
    return np.clip(np.round(v / grid).astype(np.int64) + 11, 0, 22)


def joint_error_histogram(pred_ab, true_ab, axis=-1, grid=10.0):
    """(529, 152) histogram of ceil(ab error) per grid-10 bin of the true ab: summed over a
    set it gives the plain AuC, and weighted by bin it gives the rebalanced AuC for any prior,
    so that a bootstrap can redraw the set's photographs without recolorizing them."""
    d = np.sqrt(((pred_ab - true_ab) ** 2).sum(axis=axis)).ravel()
    a, b = np.moveaxis(true_ab, axis, -1).reshape(-1, 2).T
    cell = _bin(a, grid) * 23 + _bin(b, grid)
    err = np.minimum(np.ceil(d).astype(np.int64), 151)
    return np.bincount(cell * 152 + err, minlength=529 * 152).reshape(529, 152).astype(np.float64)


def joint_counts(joint):
    """(23, 23) counts of the true ab bins of a `joint_error_histogram`'s pixels (its `ab_counts`)."""
    return joint.sum(1).reshape(23, 23)


def ab_counts(true_ab, axis=-1, grid=10.0):
    """(23, 23) counts of true ab over the grid-10 bins: what `ab_prior` sums and smooths."""
    counts = np.zeros((23, 23))
    a, b = np.moveaxis(true_ab, axis, -1).reshape(-1, 2).T
    np.add.at(counts, (_bin(a, grid), _bin(b, grid)), 1)
    return counts


def smoothed_prior(counts, grid=10.0, sigma=5.0):
    """`ab_prior` from summed `ab_counts`."""
    centres = (np.arange(23) - 11) * grid
    k = np.exp(-(centres[:, None] - centres[None, :]) ** 2 / (2 * sigma ** 2))
    p = k @ counts @ k.T
    return p / p.sum()


def bootstrap_margins(ours, grey, counts, draws=2000, seed=0):
    """Pooled AuC and rebalanced AuC margins over grey (ours - grey, in AuC units) for `draws`
    redraws of a set's photographs with replacement: `ours`, `grey` are per-photograph
    `joint_error_histogram`s, `counts` their `ab_counts` (of the pixels the prior is taken
    from). Returns two arrays (plain, rebalanced) of margins, one per redraw."""
    ours, grey, counts = np.asarray(ours), np.asarray(grey), np.asarray(counts)
    rng = np.random.default_rng(seed)
    n = len(ours)
    plain, rebalanced = np.empty(draws), np.empty(draws)
    for k in range(draws):
        pick = np.bincount(rng.integers(0, n, n), minlength=n).astype(np.float64)
        ho = np.tensordot(pick, ours, 1)
        hg = np.tensordot(pick, grey, 1)
        w = bin_weights(smoothed_prior(np.tensordot(pick, counts, 1))).ravel()
        plain[k] = pooled_auc(ho.sum(0)) - pooled_auc(hg.sum(0))
        rebalanced[k] = pooled_auc(w @ ho) - pooled_auc(w @ hg)
    return plain, rebalanced


def bin_weights(prior):
    """(23, 23) weights 1 / p(bin), normalised so that their mean over the prior is 1."""
    inv = np.where(prior > 0, 1 / np.maximum(prior, 1e-12), 0)
    return inv / (prior * inv).sum()


def rebalance_weights(true_ab, prior, axis=-1, grid=10.0):
    """Per-pixel weights 1 / p(bin of the true ab), normalised so that their mean over the
    prior is 1 (Zhang et al.'s class-rebalanced AuC)."""
    a, b = np.moveaxis(true_ab, axis, -1).reshape(-1, 2).T
    return bin_weights(prior)[_bin(a, grid), _bin(b, grid)]


def colourfulness(rgb255):
    """Hasler and Suesstrunk (2003) M of an (H, W, 3) sRGB image in 0..255."""
    r, g, b = [rgb255[..., i].astype(np.float64) for i in range(3)]
    rg, yb = r - g, 0.5 * (r + g) - b
    return float(math.sqrt(rg.std() ** 2 + yb.std() ** 2) + 0.3 * math.sqrt(rg.mean() ** 2 + yb.mean() ** 2))


def luma(a):
    """BT.601 studio-range luma (16..235) of an (H, W, 3) image in 0..255."""
    a = a.astype(np.float64)
    return 16 + (65.481 * a[..., 0] + 128.553 * a[..., 1] + 24.966 * a[..., 2]) / 255


def psnr(a, b, shave=2):
    """Luma PSNR in dB with `shave` border pixels left out."""
    d = luma(a)[shave:-shave, shave:-shave] - luma(b)[shave:-shave, shave:-shave]
    return 10 * math.log10(255 ** 2 / np.mean(d * d))


def bicubic_pairs(folder):
    """The x2 super-resolution test pairs of a folder of PNGs (Set5, Set14): for each image,
    (name, truth cropped to even sides, PIL-bicubic x0.5 of it, PIL-bicubic x2 of that)."""
    from PIL import Image
    for f in sorted(glob.glob(os.path.join(folder, "*.png"))):
        img = np.asarray(Image.open(f).convert("RGB"))
        h, w = img.shape[0] // 2 * 2, img.shape[1] // 2 * 2
        img = img[:h, :w]
        small = Image.fromarray(img).resize((w // 2, h // 2), Image.BICUBIC)
        yield os.path.basename(f), img, small, np.asarray(small.resize((w, h), Image.BICUBIC))


class NcnnWriter:
    """Our own ncnn writer: a .param with one layer per line and a .bin of fp32 weights
    (tag 0 before each convolution's weights, biases and slopes raw)."""

    def __init__(self):
        self.layers, self.blobs, self.weights = [], set(), bytearray()

    def add(self, kind, name, ins, outs, params=""):
        self.layers.append(f"{kind:<16} {name:<16} {len(ins)} {len(outs)} {' '.join(ins + outs)} {params}".rstrip())
        self.blobs.update(ins + outs)

    def tagged(self, a, fp16=False):
        """A weight array behind its ncnn tag: fp32 (tag 0) or fp16 (tag 0x01306B47, padded to 4 bytes)."""
        if fp16:
            data = np.ascontiguousarray(a, dtype="<f2").tobytes()
            self.weights += struct.pack("<I", 0x01306B47) + data + b"\0" * (-len(data) % 4)
        else:
            self.weights += struct.pack("<I", 0) + np.ascontiguousarray(a, dtype="<f4").tobytes()

    def raw(self, a):
        self.weights += np.ascontiguousarray(a, dtype="<f4").tobytes()

    def conv(self, name, src, dst, weight, bias, stride=1, dilation=1, relu=False, pads=None, groups=1, clip=None, fp16=False):
        """A convolution; `weight` is (out, in/groups, k, k). Padding is 'same' (dilation * (k // 2)
        each side) unless `pads` = (top, left, bottom, right). `groups` = out = in makes it a
        ConvolutionDepthWise; `clip` = (lo, hi) fuses a clip (ReLU6 is (0, 6))."""
        o, i, k, _ = weight.shape
        p = f"0={o} 1={k} 2={dilation} 3={stride} "
        if pads is None:
            p += f"4={dilation * (k // 2)}"
        else:
            top, left, bottom, right = pads
            p += f"4={left} 15={right} 14={top} 16={bottom}"
        p += f" 5=1 6={weight.size}"
        if groups > 1:
            p += f" 7={groups}"
        if relu:
            p += " 9=1"
        elif clip is not None:
            p += f" 9=3 -23310=2,{clip[0]:e},{clip[1]:e}"
        self.add("ConvolutionDepthWise" if groups > 1 else "Convolution", name, [src], [dst], p)
        self.tagged(weight.reshape(-1), fp16)
        self.raw(bias)

    def write(self, param, binf):
        with open(param, "w") as f:
            f.write("7767517\n%d %d\n" % (len(self.layers), len(self.blobs)))
            f.write("\n".join(self.layers) + "\n")
        with open(binf, "wb") as f:
            f.write(self.weights)


def summarize(rows):
    """The pooled figures and bars of a set of photographs (rows of evaluate.py's evaluate_colorizer:
    colourfulness, truth_colourfulness, auc, grey_auc, optional top1_*, and per photograph
    `_joint`, `_joint_grey` (joint_error_histogram of ours and of grey); possibly from several
    colorizers, as in training/crossval.py): AuC over all the set's pixels together (the
    cumulative mass of every pixel's error), plain and rebalanced by the set's own ground-truth
    prior; per image too, for the table; and 90% bootstrap intervals. Sets each row's rb_auc and
    grey_rb_auc.

    The prior is counted from the very pixels it weighs (the joint histograms' bins): a prior
    from a subsample (every 2nd pixel, as before 2026-11-26) left a lone pixel of a colour the
    subsample missed with only the smoothing's far tail as its p, and so a weight up to 1e7
    times a common bin's; one such pixel carried 86% of a 180-photograph set's weight."""
    counts = [joint_counts(r["_joint_grey"]) for r in rows]
    w = bin_weights(smoothed_prior(sum(counts))).ravel()
    joint_ours, joint_grey = [r["_joint"] for r in rows], [r["_joint_grey"] for r in rows]
    for r, jo, jg in zip(rows, joint_ours, joint_grey):
        r["rb_auc"], r["grey_rb_auc"] = pooled_auc(w @ jo), pooled_auc(w @ jg)
    ours, grey = sum(joint_ours), sum(joint_grey)
    hists = [ours.sum(0), grey.sum(0), w @ ours, w @ grey]
    mean = lambda k: float(np.mean([r[k] for r in rows]))
    keys = ["colourfulness", "truth_colourfulness"] + (["top1_truth", "top1_grey", "top1_ours"] if "top1_ours" in rows[0] else [])
    keys += ["ab_entropy", "truth_ab_entropy"] if "ab_entropy" in rows[0] else []
    summary = {k: mean(k) for k in keys}
    summary.update(zip(["auc", "grey_auc", "rb_auc", "grey_rb_auc"], [pooled_auc(h) for h in hists]))
    summary["per_image_mean_auc"], summary["per_image_mean_grey_auc"] = mean("auc"), mean("grey_auc")
    summary["colourfulness_ratio"] = summary["colourfulness"] / summary["truth_colourfulness"]
    summary["images"] = len(rows)
    # How much of a margin is the choice of photographs: a set of 90-100 photos pools few pixels
    # of each rare colour, and the rebalanced AuC weighs those bins as much as all the greys.
    plain, rebalanced = bootstrap_margins(joint_ours, joint_grey, counts)
    summary["auc_margin_90ci"] = [float(np.percentile(plain, 5)), float(np.percentile(plain, 95))]
    summary["rb_margin_90ci"] = [float(np.percentile(rebalanced, 5)), float(np.percentile(rebalanced, 95))]
    summary["auc_above_grey"] = summary["auc"] > summary["grey_auc"]
    summary["rb_auc_5_points_above_grey"] = summary["rb_auc"] >= summary["grey_rb_auc"] + 0.05
    summary["colourful_enough"] = summary["colourfulness_ratio"] >= 0.7
    return summary


def rebalance_from_counts(counts, lam=0.5, grid=10.0, sigma=5.0):
    """training/color.py's quantize_prior from (23, 23) (or 529) counts of true ab over the
    grid-10 bins: the bins seen (centres in CIE units, (Q, 2), row-major over a then b) and the
    class-rebalancing weights w = 1 / ((1 - lam) p + lam / Q), p smoothed over the seen bins
    (Gaussian, sigma) and w normalised so that its mean under p is 1."""
    counts = np.asarray(counts, dtype=np.float64).reshape(23, 23)
    keep = np.argwhere(counts > 0)
    bins = (keep - 11) * grid
    p = counts[keep[:, 0], keep[:, 1]]
    p = p / p.sum()
    d2 = ((bins[:, None, :] - bins[None, :, :]) ** 2).sum(-1)
    k = np.exp(-d2 / (2 * sigma ** 2))
    p = (k @ p) / k.sum(1)
    p = p / p.sum()
    w = 1 / ((1 - lam) * p + lam / len(p))
    w = w / (p * w).sum()
    return bins.astype(np.float32), w.astype(np.float32)


def ab_entropy(ab, axis=-1, grid=10.0):
    """Entropy (bits) of the distribution of a picture's ab over the grid-10 bins: the spread of
    its colours (one warm tint over everything is low, as is grey; the truth's is the mark)."""
    c = ab_counts(ab, axis, grid).ravel()
    p = c[c > 0] / c.sum()
    return float(-(p * np.log2(p)).sum())
