#!/usr/bin/env python3
"""Fetch-and-prepare the colorizer's training photographs (issue 29) as compact packs for
training/color_gpu.py.

Sources (training only; nothing here is committed):
  - Imagenette v2 (fastai; 10 ImageNet classes, 224x224 JPEGs, ImageNet's non-commercial
    research terms), from the public repository thunderInfy/imagenette @ IMAGENETTE_COMMIT
    (train/ and val/, 13,394 files). The ~1.8% one-channel (greyscale) JPEGs are dropped: a
    colorizer must not learn that things are grey. So are the 10 Imagenette files that are the
    very photographs of ImageNet-sample900 for Imagenette's classes (found by thumbnails: RMS
    0.5 of 255 apart), so that no cross-validation fold trains on a photograph it holds out.
  - with --caltech, Caltech 101 (101 object categories and Google background pictures, about
    300x200; Creative Commons Attribution 4.0 by its CaltechDATA record), from the public
    repository CALTECH_REPO @ CALTECH_COMMIT (a course's copy of 101_ObjectCategories: 9,144 of the original 9,146
    files): 7,682 colour photographs once the one-channel JPEGs and the grey ones stored as RGB
    (whole categories, e.g. car_side) are dropped by mean chroma.
  - every photograph of ../shared/datasets/train (ImageNet-sample900, T91, BSD200, Urban100,
    SunHays80: see ../shared/datasets/README.md for their sources and terms).
Never train or tune on the 100 photographs of EliSchwartz/imagenet-sample-images that are not
in ImageNet-sample900, the Kodak, McMaster, CBSD68 or other IRCNN test sets, Vid4, or
DAVIS/Pexels clips not in ../shared: they are how this project is judged, and none is read here.

Each photograph is squashed to --size x --size (the engine squashes a frame to 224x224 too,
and training crops change the aspect anyway) and stored as WebP (--quality); the packs are
uncompressed tars of those files plus `index.json` (one entry per photograph: file, source,
group (Imagenette's class id or the shared set's folder) and, for ImageNet-sample900, its
index in the sorted file list, which fixes its cross-validation fold: fold k holds out
index % 5 == k, as training/crossval.py). Photographs are spread over --parts packs of about
equal size, each under the device tool's 64 MiB a call together with the working tree.
Beware (seen 2026-11-27): a device call keeps only the ignored paths it carries itself; a pack
carried by an earlier call to the same warm machine was gone in the next one. So a run sees
only the packs of its own call: make --parts 1 fit (smaller --size / --quality), or train
in several calls that each resume from the last one's checkpoint on their own pack.

Get the snapshot first, at the commit named here, e.g. with git:
    git clone <thunderInfy/imagenette on GitHub> /tmp/imagenette && git -C /tmp/imagenette checkout b850f030
Usage: python3 training/data.py --imagenette /tmp/imagenette [--caltech /tmp/caltech] --out .gpu-data [--parts 2]
       python3 training/data.py --imagenette /tmp/imagenette --overlap   (which ImageNet-sample900
       photographs of Imagenette's classes are also in Imagenette, by 32x32 thumbnails)
Numpy and Pillow (with WebP) only.
"""
import argparse, glob, io, json, os, subprocess, sys, tarfile

import numpy as np

IMAGENETTE_REPO = "thunderInfy/imagenette"
IMAGENETTE_COMMIT = "b850f030ff0701c36a4adc8b928ea9483a46915b"
IMAGENETTE_TERMS = "ImageNet terms of access: non-commercial research and educational use"
IMAGENETTE_CLASSES = ["n01440764", "n02102040", "n02979186", "n03000684", "n03028079", "n03394916", "n03417042", "n03425413",
                      "n03445777", "n03888257"]
SHARED_SETS = ["ImageNet-sample900", "T91", "BSD200", "Urban100", "SunHays80"]
# Caltech 101 (Fei-Fei, Fergus and Perona, 2004; 101 object categories and a background set of
# Google images, about 300x200), as the Politecnico di Torino course repository holds it
# (101_ObjectCategories/CATEGORY/image_NNNN.jpg). Its terms: Creative Commons Attribution 4.0,
# as its CaltechDATA record (doi:10.22002/D1.20086) and Hugging Face's copy
# (HuggingFaceM4/Caltech-101) list it; the pictures were gathered from the web by its authors.
CALTECH_REPO = "MachineLearning2020/Homework2-Caltech101"
CALTECH_COMMIT = "836044dd000296b2bb74d0aa4b4e462e459b01d7"
CALTECH_TERMS = "Caltech 101, CaltechDATA doi:10.22002/D1.20086: Creative Commons Attribution 4.0 (attribution: Li, Andreeto, Ranzato, Perona)"


def image_files(folder):
    return sorted(glob.glob(os.path.join(folder, "**", "*.png"), recursive=True) + glob.glob(os.path.join(folder, "**", "*.jpg"), recursive=True))


def wnid(name):
    """The ImageNet class id a file name starts with (n01440764_tench.jpg), or None."""
    base = os.path.basename(name)
    return base[:9] if len(base) > 9 and base[0] == "n" and base[1:9].isdigit() else None


def overlap_classes(imagenet_names, classes=IMAGENETTE_CLASSES):
    """Indices (in the sorted ImageNet-sample900 list) of the photographs whose class is one of
    Imagenette's: their classes are not 'never seen' in a cross-validation that trains on
    Imagenette."""
    return [i for i, n in enumerate(imagenet_names) if wnid(n) in set(classes)]


def fold_of(index, folds=5):
    """training/crossval.py's fold of the ImageNet-sample900 photograph at `index` (files[k::folds])."""
    return index % folds


def split_parts(sizes, parts):
    """Assigns items of the given byte sizes to `parts` packs of about equal total size
    (largest first, each to the lightest pack); returns one pack number per item."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    load, out = [0] * parts, [0] * len(sizes)
    for i in order:
        p = min(range(parts), key=lambda k: (load[k], k))
        out[i] = p
        load[p] += sizes[i]
    return out


def entries(imagenette_root, train_root, caltech_root=None):
    """(source path, entry) for every photograph: Imagenette's colour ones, then ../shared's,
    then (with `caltech_root`) Caltech 101's colour ones."""
    from PIL import Image
    out, dropped, same = [], 0, []
    imagenet = image_files(os.path.join(train_root, "ImageNet-sample900"))
    held = {wnid(imagenet[i]): thumbs([imagenet[i]])[0] for i in overlap_classes(imagenet)}
    for f in sorted(glob.glob(os.path.join(imagenette_root, "*", "n*", "*.JPEG"))):
        if Image.open(f).mode != "RGB":
            dropped += 1
            continue
        cls = os.path.basename(os.path.dirname(f))
        if cls in held and is_duplicate(thumbs([f])[0], held[cls]):
            same.append(os.path.relpath(f, imagenette_root))
            continue
        rel = os.path.relpath(f, imagenette_root)
        out.append((f, {"file": "imagenette/" + os.path.splitext(rel)[0] + ".webp", "source": "imagenette", "group": rel.split(os.sep)[1]}))
    print(f"Imagenette: {len(out)} colour photographs, {dropped} one-channel ones dropped, {len(same)} dropped as the very "
          f"photographs of ImageNet-sample900 (which cross-validation holds out by fold): {', '.join(same)}", flush=True)
    for i, f in enumerate(imagenet):
        out.append((f, {"file": "shared/ImageNet-sample900/" + os.path.splitext(os.path.basename(f))[0] + ".webp", "source": "ImageNet-sample900",
                        "group": "ImageNet-sample900", "imagenet_index": i, "class": wnid(f)}))
    for s in SHARED_SETS[1:]:
        for f in image_files(os.path.join(train_root, s)):
            rel = os.path.relpath(f, os.path.join(train_root, s))
            out.append((f, {"file": f"shared/{s}/" + os.path.splitext(rel)[0] + ".webp", "source": s, "group": s}))
    if caltech_root:
        for f in caltech_files(caltech_root):
            rel = os.path.relpath(f, os.path.join(caltech_root, "101_ObjectCategories"))
            out.append((f, {"file": "caltech101/" + os.path.splitext(rel)[0] + ".webp", "source": "caltech101", "group": rel.split(os.sep)[0]}))
    return out


def chroma(path, side=64):
    """Mean CIE chroma sqrt(a*^2 + b*^2) of a photograph shrunk to side x side: about 0 for a
    grey picture stored as RGB (Caltech 101 has whole categories of them), 10-30 for colour."""
    from PIL import Image
    rgb = np.asarray(Image.open(path).convert("RGB").resize((side, side), Image.BILINEAR), dtype=np.float64) / 255
    # sRGB to CIE L*a*b* (D65), as skimage.color.rgb2lab, in numpy alone.
    lin = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = lin @ np.array([[0.412453, 0.357580, 0.180423], [0.212671, 0.715160, 0.072169], [0.019334, 0.119193, 0.950227]]).T
    xyz /= np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    a, b = 500 * (f[..., 0] - f[..., 1]), 200 * (f[..., 1] - f[..., 2])
    return float(np.sqrt(a ** 2 + b ** 2).mean())


def caltech_files(root, min_chroma=4.0):
    """Caltech 101's colour photographs in a checkout of CALTECH_REPO, sorted: one-channel JPEGs
    and grey ones stored as RGB (mean chroma under `min_chroma`) are dropped, as Imagenette's
    one-channel ones are (a colorizer must not learn that things are grey)."""
    from PIL import Image
    kept, grey = [], 0
    for f in sorted(glob.glob(os.path.join(root, "101_ObjectCategories", "*", "*.jpg"))):
        with Image.open(f) as im:
            mode = im.mode
        if mode != "RGB" or chroma(f) < min_chroma:
            grey += 1
            continue
        kept.append(f)
    print(f"Caltech 101: {len(kept)} colour photographs, {grey} grey ones dropped", flush=True)
    return kept


def is_duplicate(a, b, tolerance=2.0):
    """Whether two 32x32 grey thumbnails (0..255) are of one photograph (re-encoded, resized):
    RMS difference under `tolerance` (the same photographs differ by ~0.5, different ones by > 10)."""
    return float(np.sqrt(((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2).mean())) < tolerance


def encode(path, size, quality):
    from PIL import Image
    img = Image.open(path).convert("RGB").resize((size, size), Image.LANCZOS)
    buf = io.BytesIO()
    img.save(buf, "WEBP", quality=quality, method=4)
    return buf.getvalue()


def check_snapshot(root):
    """The snapshot's commit, when `root` is a git checkout or a bare mirror."""
    for args in (["-C", root, "rev-parse", "HEAD"], ["--git-dir", root, "rev-parse", "HEAD"]):
        r = subprocess.run(["git"] + args, capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.strip()
    return None


def require_snapshot(root, commit):
    """Exits naming the commit to check out when `root` is a git snapshot at another commit (a
    plain folder is taken as it is)."""
    found = check_snapshot(root)
    if found is not None and found != commit:
        sys.exit(f"'{root}' is at {found}, not {commit}: check out that commit, so the set is the one named in Models/vivify-color.info.md.")


def thumbs(files):
    from PIL import Image
    return np.stack([np.asarray(Image.open(f).convert("L").resize((32, 32), Image.BILINEAR), dtype=np.float32) for f in files])


def overlap(imagenette_root, train_root):
    """For each ImageNet-sample900 photograph of an Imagenette class: the closest Imagenette
    photograph of that class by 32x32 grey thumbnails (RMS difference in 0..255)."""
    imagenet = image_files(os.path.join(train_root, "ImageNet-sample900"))
    rows = []
    for i in overlap_classes(imagenet):
        f = imagenet[i]
        pool = sorted(glob.glob(os.path.join(imagenette_root, "*", wnid(f), "*.JPEG")))
        d = np.sqrt(((thumbs(pool) - thumbs([f])) ** 2).mean((1, 2)))
        j = int(d.argmin())
        rows.append({"file": os.path.basename(f), "index": i, "fold": fold_of(i), "closest": os.path.relpath(pool[j], imagenette_root), "rms": float(d[j])})
        print(f"{os.path.basename(f)} (index {i}, fold {fold_of(i)}): closest Imagenette photo {rows[-1]['closest']} at RMS {d[j]:.1f}", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--imagenette", required=True, help="a checkout (or bare mirror, extracted) of thunderInfy/imagenette at IMAGENETTE_COMMIT")
    ap.add_argument("--train", default="../shared/datasets/train")
    ap.add_argument("--caltech", help="also a checkout of CALTECH_REPO at CALTECH_COMMIT: Caltech 101's colour photographs")
    ap.add_argument("--out", default=".gpu-data")
    ap.add_argument("--size", type=int, default=192, help="side of the stored square photographs")
    ap.add_argument("--quality", type=int, default=60, help="WebP quality")
    ap.add_argument("--parts", type=int, default=2)
    ap.add_argument("--overlap", action="store_true", help="only report which ImageNet-sample900 photographs are also in Imagenette")
    args = ap.parse_args()
    if args.overlap:
        overlap(args.imagenette, args.train)
        return
    require_snapshot(args.imagenette, IMAGENETTE_COMMIT)
    if args.caltech:
        require_snapshot(args.caltech, CALTECH_COMMIT)
    items = entries(args.imagenette, args.train, args.caltech)
    data = []
    for k, (f, e) in enumerate(items):
        data.append(encode(f, args.size, args.quality))
        if k % 500 == 0:
            print(f"\r  {k}/{len(items)} encoded", end="", flush=True)
    print(flush=True)
    part = split_parts([len(d) for d in data], args.parts)
    os.makedirs(args.out, exist_ok=True)
    for p in range(args.parts):
        path = os.path.join(args.out, f"part{p + 1}.tar")
        chosen = [i for i in range(len(items)) if part[i] == p]
        with tarfile.open(path + ".tmp", "w") as tar:
            index = json.dumps({"size": args.size, "imagenette_commit": IMAGENETTE_COMMIT, "caltech_commit": CALTECH_COMMIT if args.caltech else None,
                                "terms": {"imagenette": IMAGENETTE_TERMS, **({"caltech101": CALTECH_TERMS} if args.caltech else {})},
                                "entries": [items[i][1] for i in chosen]}).encode()
            for name, blob in [("index.json", index)] + [(items[i][1]["file"], data[i]) for i in chosen]:
                info = tarfile.TarInfo(f"part{p + 1}/{name}")
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
        os.replace(path + ".tmp", path)
        print(f"{path}: {len(chosen)} photographs, {os.path.getsize(path) / 1e6:.1f} MB", flush=True)


if __name__ == "__main__":
    main()
