#!/usr/bin/env python3
"""Quality of the built-in models, measured through the real vivify binary (issues 7 and 11).

Colorizer. Each colour photograph is turned grey (its CIE L kept, a* = b* = 0), colorized by
`vivify image --colorize` (the built-in vivify-color unless --colorize names another model) at
full size, and compared with the original, on BSD100 (../shared/datasets/val) and on the two
ImageNet-sample900 splits that training/color.py holds out (tune: every 10th file, which chose
the decoding; test: every 10th from the 5th, never seen by training in any way):
  - AuC (Zhang et al., ECCV 2016): the fraction of pixels whose ab error (Euclidean, CIE units)
    is within a threshold, averaged over thresholds 0..150, over all the set's pixels together;
    ours and grey's (ab = 0). Bar: ours above grey. (The per-image mean is reported too.)
  - Rebalanced AuC: the same with each pixel weighted by 1 / p(its true ab bin), p the set's
    ground-truth distribution over grid-10 ab bins (Gaussian-smoothed, sigma 5): every colour
    bin counts as much in total, so rare saturated colours weigh as much as common greys.
    Bar: ours >= grey + 5 points.
  - Colourfulness (Hasler and Suesstrunk 2003) of ours against the originals'. Bar: >= 70%.
  - Semantic score (the ECCV16 "colorization Turing test by a classifier"): top-1 accuracy of
    MobileNetV1 0.5/160 (../shared/models/backbones, run by the reference TFLite interpreter
    ai-edge-litert; not our encoder, so a fair judge) on the original, grey and colorized
    photographs. ImageNet splits: against the class in the file name; BSD100 (no labels):
    agreement with the original's top-1.
Video (--video): ../shared/media/videos/color_davis_bedroom_123f.mp4 turned grey (every frame's
L kept) and colorized by `vivify run --colorize` (stabilizer on): AuC and rebalanced AuC per
frame against the colour original, and `vivify flicker` of ours against the original's
(bar: at most 1.5x). The real grey clips (bw_davis_goat_90f.mp4, the 1950s film) are colorized
and their flicker reported.

Upscaler (Set5 and Set14): each image (cropped to even sides) is shrunk by PIL bicubic x0.5,
enlarged by `vivify image --upscale` (the built-in vivify-fast-2x unless --upscale names
another) and by PIL bicubic x2; luma (BT.601, 16-235) PSNR against the original with a 2-pixel
border shaved, averaged per set. Bar: ours at least bicubic + 0.8 dB.

--pictures DIR writes side-by-side JPEGs (input, ours, ground truth) for a few images, and
(input, ours) for historic photographs.

Usage: python3 training/evaluate.py [--vivify .build/release/vivify] [--json results.json]
       [--pictures docs/images] [--video] [--skip upscaler]
Needs numpy, Pillow, scikit-image and ai-edge-litert (training/requirements.txt).
"""
import argparse, glob, json, os, re, subprocess, sys, tempfile
from fractions import Fraction

import numpy as np
from PIL import Image, ImageDraw
from skimage import color

from common import (loss_concentration, ab_entropy, ab_error_histogram, ab_prior, auc, bicubic_pairs, colourfulness, image_files, joint_error_histogram,
                    pooled_auc, psnr, rebalance_weights, summarize)

SHARED = "../shared"


def vivify(binary, args, command="image"):
    overwrite = ["-y"] if command in ("image", "run") else []  # docs/images are rewritten; `flicker` writes nothing
    r = subprocess.run([binary, command] + args + overwrite, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"vivify {command} {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
    return r.stdout


def grey_of(rgb):
    lab = color.rgb2lab(rgb)
    lab[..., 1:] = 0
    return np.clip(np.round(color.lab2rgb(lab) * 255), 0, 255).astype(np.uint8)


def side_by_side(images, labels, path, height=200):
    tiles = []
    for im in images:
        pil = Image.fromarray(im)
        tiles.append(pil.resize((round(pil.width * height / pil.height), height), Image.LANCZOS) if pil.height != height else pil)
    w = sum(t.width for t in tiles) + 4 * (len(tiles) - 1)
    canvas = Image.new("RGB", (w, height + 18), "white")
    x = 0
    draw = ImageDraw.Draw(canvas)
    for t, label in zip(tiles, labels):
        canvas.paste(t, (x, 18))
        draw.text((x + 4, 3), label, fill="black")
        x += t.width + 4
    canvas.save(path, quality=88)


class Judge:
    """MobileNetV1 0.5/160 in the reference TFLite interpreter: top-1 class of an RGB image."""

    def __init__(self, shared):
        from ai_edge_litert.interpreter import Interpreter
        self.interp = Interpreter(model_path=os.path.join(shared, "models/backbones/mobilenet_v1_0.5_160_quant.tflite"))
        self.interp.allocate_tensors()
        self.inp, self.out = self.interp.get_input_details()[0], self.interp.get_output_details()[0]
        labels = open(os.path.join(shared, "models/backbones/imagenet_labels.txt")).read().splitlines()
        self.by_name = {}
        for i, label in enumerate(labels):
            self.by_name.setdefault(label.split(",")[0].strip().replace(" ", "_").lower(), set()).add(i)

    def top1(self, rgb):
        img = np.asarray(Image.fromarray(rgb).resize((160, 160), Image.BILINEAR))
        self.interp.set_tensor(self.inp["index"], img[None].astype(self.inp["dtype"]))
        self.interp.invoke()
        return int(np.argmax(self.interp.get_tensor(self.out["index"])[0]))

    def classes(self, path):
        """The label indices an ImageNet-sample file name (n01440764_tench.jpg) stands for."""
        name = re.sub(r"^n\d+_", "", os.path.splitext(os.path.basename(path))[0]).lower()
        return self.by_name.get(name, set())


def imagenet_splits(shared):
    files = image_files(os.path.join(shared, "datasets/train/ImageNet-sample900"))
    return files[::10], files[5::10]


def evaluate_colorizer(binary, model, files, work, pictures, picks, judge, labelled, saturation=None):
    rows = []
    for i, f in enumerate(files):
        truth = np.asarray(Image.open(f).convert("RGB"))
        grey = grey_of(truth)
        src, out = os.path.join(work, "grey.png"), os.path.join(work, "color.png")
        Image.fromarray(grey).save(src)
        vivify(binary, [src, out, "--colorize", model] + (["--saturation", str(saturation)] if saturation else []))
        ours = np.asarray(Image.open(out).convert("RGB"))
        true_ab = color.rgb2lab(truth)[..., 1:]
        our_ab = color.rgb2lab(ours)[..., 1:]
        row = {"image": os.path.basename(f), "auc": auc(our_ab, true_ab), "grey_auc": auc(np.zeros_like(true_ab), true_ab),
               "colourfulness": colourfulness(ours), "truth_colourfulness": colourfulness(truth), "_ab": (our_ab, true_ab),
               "ab_entropy": ab_entropy(our_ab), "truth_ab_entropy": ab_entropy(true_ab), "mean_ab": [float(v) for v in our_ab.reshape(-1, 2).mean(0)],
               "truth_mean_ab": [float(v) for v in true_ab.reshape(-1, 2).mean(0)]}
        if judge:
            t, g, o = judge.top1(truth), judge.top1(grey), judge.top1(ours)
            target = judge.classes(f) if labelled else {t}
            row.update(top1_truth=t in target, top1_grey=g in target, top1_ours=o in target)
        rows.append(row)
        if pictures and os.path.basename(f) in picks:
            side_by_side([grey, ours, truth], ["input (grey)", "vivify-color", "ground truth"],
                         os.path.join(pictures, "color-" + os.path.splitext(os.path.basename(f))[0] + ".jpg"))
        print(f"\r  colorizer {i + 1}/{len(files)}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    for r in rows:
        our_ab, true_ab = r.pop("_ab")
        # One joint histogram (true ab bin x error) per photograph: enough to pool any set of
        # photographs under their prior (summarize), and for the bootstrap's redraws.
        r["_joint"], r["_joint_grey"] = joint_error_histogram(our_ab, true_ab), joint_error_histogram(np.zeros_like(true_ab), true_ab)
    return summarize(rows), rows


def public(rows):
    """Rows without the per-photograph histograms, for the JSON."""
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


def print_colorizer(name, s):
    line = (f"colorizer on {name} ({s['images']} images): AuC {100 * s['auc']:.2f} vs grey {100 * s['grey_auc']:.2f}; rebalanced "
            f"{100 * s['rb_auc']:.2f} vs grey {100 * s['grey_rb_auc']:.2f} ({100 * (s['rb_auc'] - s['grey_rb_auc']):+.2f}, bar +5); "
            f"colourfulness {s['colourfulness']:.1f} vs truth {s['truth_colourfulness']:.1f} ({100 * s['colourfulness_ratio']:.0f}%, bar 70%); "
            f"90% bootstrap interval of the margins over the photographs: AuC {100 * s['auc_margin_90ci'][0]:+.2f}..{100 * s['auc_margin_90ci'][1]:+.2f}, "
            f"rebalanced {100 * s['rb_margin_90ci'][0]:+.2f}..{100 * s['rb_margin_90ci'][1]:+.2f}")
    if "ab_entropy" in s:
        line += f"; ab-histogram entropy {s['ab_entropy']:.2f} vs truth {s['truth_ab_entropy']:.2f} bits"
    if "top1_ours" in s:
        line += f"; MobileNetV1 top-1 original {100 * s['top1_truth']:.1f}%, grey {100 * s['top1_grey']:.1f}%, ours {100 * s['top1_ours']:.1f}%"
    print(line, flush=True)


def frames_of(path, size=None):
    """Every frame of a video as (N, H, W, 3) uint8, through the ffmpeg CLI: the frames the file
    holds, one for one (`-fps_mode passthrough`; a constant-rate read padded a stream that starts
    late with copies of its first frame: 67 of "Big Buck Bunny"'s 301, whose video starts at 2.24 s)."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                            "-of", "csv=p=0", path], capture_output=True, text=True, check=True).stdout.strip().split(",")
    w, h = int(probe[0]), int(probe[1])
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
                         capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)


def frame_rate(path):
    """The first video stream's frame rate as ffprobe writes it ("24/1", "30000/1001")."""
    return subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate", "-of", "csv=p=0", path],
                          capture_output=True, text=True, check=True).stdout.strip()


def write_grey_clip(truth, rate, path):
    """A colour clip's frames turned grey (CIE L kept, a* = b* = 0: grey_of), written lossless
    (ffv1, RGB) at `rate`; returns the grey frames."""
    n, h, w, _ = truth.shape
    grey = np.stack([grey_of(f) for f in truth])
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}", "-r", rate, "-i", "-",
                    "-c:v", "ffv1", "-pix_fmt", "bgr0", path], input=grey.tobytes(), check=True)
    return grey


def evaluate_video(binary, model, work, shared):
    """The DAVIS colour clip turned grey and colorized; flicker of the real grey clips."""
    out = {}
    src = os.path.join(shared, "media/videos/color_davis_bedroom_123f.mp4")
    truth = frames_of(src)
    n, h, w, _ = truth.shape
    grey_path, ours_path = os.path.join(work, "grey.mkv"), os.path.join(work, "ours.mkv")
    write_grey_clip(truth, "24", grey_path)
    vivify(binary, [grey_path, ours_path, "--colorize", model, "--codec", "ffv1", "--pix-fmt", "yuv420p", "--quiet"], command="run")
    ours = frames_of(ours_path)
    assert len(ours) == n, f"{len(ours)} frames colorized of {n}"
    true_abs = [color.rgb2lab(f)[..., 1:] for f in truth]
    prior = ab_prior(true_abs)  # from every pixel it weighs (see common.summarize)
    hists = np.zeros((4, 152))
    for o, t in zip(ours, true_abs):
        our_ab, zero = color.rgb2lab(o)[..., 1:], np.zeros_like(t)
        wts = rebalance_weights(t, prior)
        hists += [ab_error_histogram(our_ab, t), ab_error_histogram(zero, t), ab_error_histogram(our_ab, t, weights=wts),
                  ab_error_histogram(zero, t, weights=wts)]
    m = [pooled_auc(h) for h in hists]
    flicker = lambda p: float(re.search(r"flicker ([0-9.]+)", vivify(binary, [p], command="flicker")).group(1))
    f_ours, f_truth = flicker(ours_path), flicker(src)
    out["davis_bedroom"] = {"frames": n, "auc": m[0], "grey_auc": m[1], "rb_auc": m[2], "grey_rb_auc": m[3],
                            "flicker": f_ours, "truth_flicker": f_truth, "flicker_ratio": f_ours / f_truth,
                            "rb_auc_above_grey": bool(m[2] > m[3]), "flicker_within_1_5x": f_ours <= 1.5 * f_truth}
    print(f"DAVIS bedroom ({n} frames): AuC {100 * m[0]:.2f} vs grey {100 * m[1]:.2f}; rebalanced {100 * m[2]:.2f} vs grey "
          f"{100 * m[3]:.2f}; flicker {f_ours:.3f} vs original {f_truth:.3f} ({f_ours / f_truth:.2f}x, bar 1.5x)", flush=True)
    for clip in ["bw_davis_goat_90f.mp4", "bw_a-bomb_blast_effects_part_deepremaster.mp4"]:
        p = os.path.join(work, "c-" + clip.replace(".mp4", ".mkv"))
        vivify(binary, [os.path.join(shared, "media/videos", clip), p, "--colorize", model, "--codec", "ffv1", "--pix-fmt", "yuv420p", "--quiet"], command="run")
        out[clip] = {"flicker": flicker(p)}
        print(f"{clip}: colorized, flicker {out[clip]['flicker']:.3f}", flush=True)
    return out


# Outputs are written lossless (ffv1) in the clips' own chroma format, 4:2:0: flicker and AuC
# are compared with the truth's, which is 4:2:0 (ffv1 keeps RGB otherwise, since 1bbdb9b, and
# full-resolution chroma measured the calendar clip's keyframe flicker at 1.124 against 0.943).
GUIDED_CLIPS = ["color_davis_bedroom_123f.mp4", "vid4_calendar_gt.mp4", "vid4_walk_gt.mp4", "color_pexels_plane_clouds.mp4",
                "cartoon_big_buck_bunny_10s_360p.mp4"]


def evaluate_guided(binary, model, work, shared, pictures=None, clips=GUIDED_CLIPS):
    """Colour from references (issue 28). Each colour clip is turned grey (L kept) and colorized
    twice through the binary: automatically, and with its own frame 0 in colour as the keyframe
    (`--keyframe 0=...`). Over frames 1..N, against the clip's colour: pooled AuC and rebalanced
    AuC (prior from those frames), colourfulness against the truth's, flicker against the
    truth's, and the rebalanced margin over grey per frame (by distance from the keyframe).
    Photo pairs: frame 0 as a `--reference` photo for the frame 2 s later (and for the last
    frame), `vivify image` with and without it."""
    out = {}
    for clip in clips:
        src = os.path.join(shared, "media/videos", clip)
        if not os.path.exists(src):
            continue
        truth = frames_of(src)
        n, h, w, _ = truth.shape
        rate = frame_rate(src)
        grey_path, key = os.path.join(work, "g-grey.mkv"), os.path.join(work, "g-key.png")
        grey = write_grey_clip(truth, rate, grey_path)
        Image.fromarray(truth[0]).save(key)
        # A keyframe in the middle too: it colours the frames of its shot before it as well as after.
        mid = n // 2
        key_mid = os.path.join(work, "g-key-mid.png")
        Image.fromarray(truth[mid]).save(key_mid)
        runs = {}
        for name, extra in [("automatic", []), ("keyframe", ["--keyframe", "0=" + key]), ("middle", ["--keyframe", f"{mid}=" + key_mid])]:
            path = os.path.join(work, f"g-{name}.mkv")
            vivify(binary, [grey_path, path, "--colorize", model, "--codec", "ffv1", "--pix-fmt", "yuv420p", "--quiet"] + extra, command="run")
            runs[name] = frames_of(path)
            assert len(runs[name]) == n, f"{clip} {name}: {len(runs[name])} frames of {n}"
        true_abs = [color.rgb2lab(f)[..., 1:] for f in truth[1:]]
        prior = ab_prior(true_abs)
        row = {"frames": n}
        flicker = lambda p: float(re.search(r"flicker ([0-9.]+)", vivify(binary, [p], command="flicker")).group(1))
        row["truth_flicker"] = flicker(src)
        zero = [np.zeros_like(t) for t in true_abs]
        middle = runs.pop("middle")
        for name, frames in [("grey", None)] + list(runs.items()):
            hists, per, conc = np.zeros((2, 152)), [], []
            for k, t in enumerate(true_abs):
                ab = zero[k] if frames is None else color.rgb2lab(frames[k + 1])[..., 1:]
                wts = rebalance_weights(t, prior)
                hr = ab_error_histogram(ab, t, weights=wts)
                hists += [ab_error_histogram(ab, t), hr]
                per.append(100 * pooled_auc(hr))
                conc.append(loss_concentration(ab, t, wts))
            row[name] = {"auc": 100 * pooled_auc(hists[0]), "rb_auc": 100 * pooled_auc(hists[1]), "per_frame_rb_auc": per,
                         # How much of a frame's rebalanced loss its worst 0.1% of pixels carry (mean over frames).
                         "loss_in_worst_0.1%_of_pixels": float(np.mean(conc))}
            if frames is not None:
                row[name]["colourfulness_ratio"] = float(np.mean([colourfulness(f.astype(float)) for f in frames[1:]])
                                                         / np.mean([colourfulness(f.astype(float)) for f in truth[1:]]))
                row[name]["flicker"] = flicker(os.path.join(work, f"g-{name}.mkv"))
        # The most any colour can gain over grey here: the truth's own rebalanced AuC is 100.
        row["ceiling_over_grey"] = 100 - row["grey"]["rb_auc"]
        for name in runs:
            row[name]["rb_margin_over_grey"] = row[name]["rb_auc"] - row["grey"]["rb_auc"]
            row[name]["per_frame_margin"] = [a - b for a, b in zip(row[name]["per_frame_rb_auc"], row["grey"]["per_frame_rb_auc"])]
        # The middle keyframe: per-frame rebalanced margin over grey on the frames before it
        # and after it (frame 0 included, the keyframe's own frame not), beside the automatic
        # colour's on the same frames.
        true_all = [color.rgb2lab(f)[..., 1:] for f in truth]
        prior_all = ab_prior(true_all)
        def per_frame(frames, k):
            t = true_all[k]
            ab = np.zeros_like(t) if frames is None else color.rgb2lab(frames[k])[..., 1:]
            return 100 * pooled_auc(ab_error_histogram(ab, t, weights=rebalance_weights(t, prior_all)))
        automatic_frames = runs["automatic"]
        sides = {"before": range(0, mid), "after": range(mid + 1, n)}
        row["middle_keyframe"] = {"frame": mid}
        for side, ks in sides.items():
            g = [per_frame(None, k) for k in ks]
            m = [per_frame(middle, k) - gk for k, gk in zip(ks, g)]
            a = [per_frame(automatic_frames, k) - gk for k, gk in zip(ks, g)]
            row["middle_keyframe"][side] = {"frames": len(ks), "margin_over_grey": float(np.mean(m)), "automatic_margin_over_grey": float(np.mean(a))}
        row["middle_keyframe"]["flicker"] = flicker(os.path.join(work, "g-middle.mkv"))
        k = row["keyframe"]
        k["meets_bars"] = bool(k["rb_margin_over_grey"] >= 15 and k["colourfulness_ratio"] >= 0.85 and k["flicker"] <= row["truth_flicker"])
        row["last_frame_reference_minus_automatic"] = k["per_frame_rb_auc"][-1] - row["automatic"]["per_frame_rb_auc"][-1]
        # Photo pairs: frame 0 as a reference photo for the frame 2 s on, and for the last frame.
        fps = float(Fraction(rate))
        pairs = {}
        for target in sorted({min(n - 1, int(round(2 * fps))), n - 1}):
            g, t = os.path.join(work, "p-grey.png"), color.rgb2lab(truth[target])[..., 1:]
            Image.fromarray(grey[target]).save(g)
            res = {}
            for name, extra in [("automatic", []), ("reference", ["--reference", key])]:
                o = os.path.join(work, f"p-{name}.png")
                vivify(binary, [g, o, "--colorize", model] + extra)
                res[name] = np.asarray(Image.open(o).convert("RGB"))
            pr = ab_prior([t])
            wts = rebalance_weights(t, pr)
            scores = {name: 100 * pooled_auc(ab_error_histogram(color.rgb2lab(im)[..., 1:], t, weights=wts)) for name, im in res.items()}
            scores["grey"] = 100 * pooled_auc(ab_error_histogram(np.zeros_like(t), t, weights=wts))
            pairs[str(target)] = dict(scores, reference_minus_automatic=scores["reference"] - scores["automatic"])
            if pictures and target == n - 1:
                side_by_side([grey[target], res["automatic"], res["reference"], truth[target], truth[0]],
                             ["grey", "automatic", f"with frame 0 as reference", "truth", "reference (frame 0)"],
                             os.path.join(pictures, "reference-" + os.path.splitext(clip)[0] + ".jpg"), height=200)
        row["photo_pairs"] = pairs
        if pictures:
            mid = n // 2
            side_by_side([grey[mid], runs["automatic"][mid], runs["keyframe"][mid], truth[mid], truth[0]],
                         ["grey", "automatic", "keyframe 0 given", "truth", "keyframe (frame 0)"],
                         os.path.join(pictures, "keyframe-" + os.path.splitext(clip)[0] + f"-frame{mid}.jpg"), height=200)
        out[clip] = row
        a = row["automatic"]
        print(f"{clip}: keyframe-guided rebalanced AuC {k['rb_auc']:.2f} (+{k['rb_margin_over_grey']:.2f} over grey {row['grey']['rb_auc']:.2f}, "
              f"of +{row['ceiling_over_grey']:.2f} possible; worst 0.1% of pixels {100 * k['loss_in_worst_0.1%_of_pixels']:.0f}% of the loss, "
              f"automatic +{a['rb_margin_over_grey']:.2f}); AuC {k['auc']:.2f} vs automatic {a['auc']:.2f}, grey {row['grey']['auc']:.2f}; "
              f"colourfulness {100 * k['colourfulness_ratio']:.0f}% (automatic {100 * a['colourfulness_ratio']:.0f}%); flicker {k['flicker']:.3f} vs "
              f"truth {row['truth_flicker']:.3f}; last frame keyframe - automatic {row['last_frame_reference_minus_automatic']:+.2f}; photo pairs "
              + ", ".join(f"frame {t}: reference - automatic {p['reference_minus_automatic']:+.2f}" for t, p in pairs.items()), flush=True)
        mk = row["middle_keyframe"]
        print(f"{clip}: keyframe at frame {mk['frame']}: before it +{mk['before']['margin_over_grey']:.2f} over grey (automatic "
              f"{mk['before']['automatic_margin_over_grey']:+.2f}, {mk['before']['frames']} frames), after it +{mk['after']['margin_over_grey']:.2f} "
              f"(automatic {mk['after']['automatic_margin_over_grey']:+.2f}); flicker {mk['flicker']:.3f}", flush=True)
    return out


def evaluate_upscaler(binary, model, folder, work, pictures, picks):
    rows = []
    for name, img, small, bic in bicubic_pairs(folder):
        h, w = img.shape[:2]
        src, out = os.path.join(work, "small.png"), os.path.join(work, "big.png")
        small.save(src)
        vivify(binary, [src, out, "--upscale", model])
        ours = np.asarray(Image.open(out).convert("RGB"))
        rows.append({"image": name, "ours_db": psnr(ours, img), "bicubic_db": psnr(bic, img)})
        if pictures and name in picks:
            # A 160x160 crop of the centre, shown at 2x: the shrunk input (nearest), bicubic, ours, truth.
            cy, cx = h // 2 - 80, w // 2 - 80
            crop = lambda a: a[cy:cy + 160, cx:cx + 160]
            inp = np.asarray(Image.fromarray(crop(np.asarray(small.resize((w, h), Image.NEAREST)))))
            side_by_side([inp, crop(bic), crop(ours), crop(img)], ["input (x0.5, nearest)", "bicubic", "vivify-fast-2x", "ground truth"],
                         os.path.join(pictures, "upscale-" + os.path.splitext(name)[0] + ".jpg"), height=320)
    ours, bic = float(np.mean([r["ours_db"] for r in rows])), float(np.mean([r["bicubic_db"] for r in rows]))
    return {"ours_db": ours, "bicubic_db": bic, "gain_db": ours - bic, "images": len(rows), "meets_bar": ours - bic >= 0.8}, rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vivify", default=".build/release/vivify")
    ap.add_argument("--shared", default=SHARED)
    ap.add_argument("--colorize", default="vivify-color", help="colorizer to evaluate (default: the built-in)")
    ap.add_argument("--saturation", type=float, help="pass --saturation S to the colorizer")
    ap.add_argument("--upscale", default="2", help="upscaler to evaluate (default: the built-in 2x)")
    ap.add_argument("--skip", choices=["colorizer", "upscaler", "tune"], action="append", default=[])
    ap.add_argument("--sets", default="bsd100,test,tune", help="colorizer sets, comma-separated: bsd100, test, tune "
                    "(compare candidate models on tune alone, so that the test split stays unseen by every choice)")
    ap.add_argument("--video", action="store_true", help="also the DAVIS clip and the real grey clips")
    ap.add_argument("--guided", action="store_true", help="colour from references: the colour clips with frame 0 as keyframe and as reference photo")
    ap.add_argument("--guided-clips", default=",".join(GUIDED_CLIPS), help="the clips --guided uses (comma-separated, from ../shared/media/videos)")
    ap.add_argument("--json", help="write every figure here")
    ap.add_argument("--pictures", help="write side-by-side JPEGs into this folder")
    args = ap.parse_args()
    if not os.access(args.vivify, os.X_OK):
        sys.exit(f"No vivify binary at '{args.vivify}'. Build it (swift build -c release) or pass --vivify.")
    if args.pictures:
        os.makedirs(args.pictures, exist_ok=True)
    results = {}
    ok = True
    with tempfile.TemporaryDirectory() as work:
        if "colorizer" not in args.skip:
            judge = Judge(args.shared)
            tune, test = imagenet_splits(args.shared)
            wanted = set(args.sets.split(","))
            if "tune" in args.skip:
                wanted.discard("tune")
            sets = [("BSD100", sorted(glob.glob(os.path.join(args.shared, "datasets/val/BSD100/*.jpg"))), False,
                     {"img_005.jpg", "img_025.jpg", "img_062.jpg", "img_087.jpg"}, "bsd100"),
                    ("ImageNet test split", test, True, {"n07747607_orange.jpg", "n02782093_balloon.jpg", "n04285008_sports_car.jpg", "n02951358_canoe.jpg"}, "test"),
                    ("ImageNet tune split", tune, True, set(), "tune")]
            sets = [s[:4] for s in sets if s[4] in wanted]
            results["colorizer"] = {"model": args.colorize}
            for name, files, labelled, picks in sets:
                s, rows = evaluate_colorizer(args.vivify, args.colorize, files, work, args.pictures, picks, judge, labelled, args.saturation)
                results["colorizer"][name] = dict(s, per_image=public(rows))
                print_colorizer(name, s)
                ok &= s["auc_above_grey"] and s["rb_auc_5_points_above_grey"] and s["colourful_enough"]
            if args.pictures:
                for photo in ["1890Surfer.jpg", "1946Wedding.jpg", "1899NycBlizzard.jpg"]:
                    src = os.path.join(args.shared, "media/images/historic-bw", photo)
                    if not os.path.exists(src):
                        continue
                    out = os.path.join(work, "historic.png")
                    vivify(args.vivify, [src, out, "--colorize", args.colorize])
                    side_by_side([np.asarray(Image.open(src).convert("RGB")), np.asarray(Image.open(out).convert("RGB"))],
                                 ["historic photograph", "vivify-color"], os.path.join(args.pictures, "historic-" + os.path.splitext(photo)[0] + ".jpg"), height=280)
            if args.video:
                v = evaluate_video(args.vivify, args.colorize, work, args.shared)
                results["colorizer"]["video"] = v
                ok &= v["davis_bedroom"]["rb_auc_above_grey"] and v["davis_bedroom"]["flicker_within_1_5x"]
        if args.guided:
            results["guided"] = evaluate_guided(args.vivify, args.colorize, work, args.shared, args.pictures, args.guided_clips.split(","))
        if "upscaler" not in args.skip:
            results["upscaler"] = {"model": args.upscale}
            for name in ["Set5", "Set14"]:
                s, rows = evaluate_upscaler(args.vivify, args.upscale, os.path.join(args.shared, "datasets/val", name), work, args.pictures,
                                            {"butterfly.png", "comic.png"})
                results["upscaler"][name] = dict(s, per_image=rows)
                print(f"upscaler {args.upscale} on {name}: luma PSNR {s['ours_db']:.2f} dB vs bicubic {s['bicubic_db']:.2f} dB "
                      f"(+{s['gain_db']:.2f} dB, bar +0.80)")
                ok &= s["meets_bar"]
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
