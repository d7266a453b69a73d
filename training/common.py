"""What the training and evaluation scripts share: the metrics of issue 7's quality bars, the
image lists, and our own ncnn writer."""
import glob, math, os, struct

import numpy as np


def image_files(folder):
    """Every PNG and JPEG below `folder`, sorted."""
    return sorted(glob.glob(os.path.join(folder, "**", "*.png"), recursive=True) +
                  glob.glob(os.path.join(folder, "**", "*.jpg"), recursive=True))


def auc(pred_ab, true_ab, axis=-1):
    """Zhang et al.'s AuC (ECCV 2016): the fraction of pixels whose ab error (Euclidean, CIE
    units) is within a threshold, averaged over thresholds 0..150 (step 1). `axis` holds a, b."""
    d = np.sqrt(((pred_ab - true_ab) ** 2).sum(axis=axis)).ravel()
    return float(np.mean([(d <= t).mean() for t in range(0, 151)]))


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

    def tagged(self, a):
        self.weights += struct.pack("<I", 0) + np.ascontiguousarray(a, dtype="<f4").tobytes()

    def raw(self, a):
        self.weights += np.ascontiguousarray(a, dtype="<f4").tobytes()

    def conv(self, name, src, dst, weight, bias, stride=1, dilation=1, relu=False):
        """A convolution with 'same' padding; `weight` is (out, in, k, k)."""
        o, i, k, _ = weight.shape
        self.add("Convolution", name, [src], [dst],
                 f"0={o} 1={k} 2={dilation} 3={stride} 4={dilation * (k // 2)} 5=1 6={weight.size}" + (" 9=1" if relu else ""))
        self.tagged(weight.reshape(-1))
        self.raw(bias)

    def write(self, param, binf):
        with open(param, "w") as f:
            f.write("7767517\n%d %d\n" % (len(self.layers), len(self.blobs)))
            f.write("\n".join(self.layers) + "\n")
        with open(binf, "wb") as f:
            f.write(self.weights)
