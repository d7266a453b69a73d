#!/usr/bin/env python3
"""Whole process, as a user meets it: `vivify image` against ncnn's CPU path from a fresh
process (`ncnn_image.py`: PyPI ncnn, the same model files, PNG in and out), wall time and peak
RSS (/usr/bin/time), medians of --runs alternating runs; then a batch of photos: one
`vivify image DIR OUT` against one single `vivify image` run per photo and against the ncnn
peer given the whole list (model loaded once).

    python3 Benchmarks/whole_process_bench.py [--vivify .build/release/vivify] [--runs 3]
        [--models waifu2x-photo-2x,realcugan-2x,realesr-animevideov3-4x]
        [--sizes 640x360,1280x720] [--batch 50] [--batch-model waifu2x-photo-2x] [--threads 2]
        [--precision fp32|bf16|int8|auto]

Prints one JSON line per row. The pictures: Set14's baboon scaled to each size; the batch
takes the first N photos of ../shared/datasets/val/BSD100 (JPEG, 481×321), written as PNG by all.
With --precision int8 (or auto on a VNNI CPU) each model is first calibrated, untimed, on a
training photo (BSD200 122048) in a model store of the benchmark's own, as a user's first
int8 run would; the timed runs then start from that stored calibration.
"""
import argparse, glob, json, os, shutil, statistics, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--vivify", default=".build/release/vivify")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--models", default="waifu2x-photo-2x,realcugan-2x,realesr-animevideov3-4x")
ap.add_argument("--sizes", default="640x360,1280x720")
ap.add_argument("--batch", type=int, default=50)
ap.add_argument("--batch-model", default="waifu2x-photo-2x")
ap.add_argument("--threads", default="2")
ap.add_argument("--precision", default="fp32")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shared = os.path.join(os.path.dirname(root), "shared")
ncnn_models = os.path.join(shared, "models", "ncnn")
env = dict(os.environ)
env.setdefault("VIVIFY_MODEL_MIRROR", os.path.join(shared, "models"))
peer = os.path.join(root, "Benchmarks", "ncnn_image.py")
# Catalog name -> the same files and tiling rules for the peer (blobs, scale, pad, border).
MODELS = {
    "waifu2x-photo-2x": ("waifu2x-upconv7-photo/scale2.0x_model", "Input1", "Eltwise4", 2, 7, "replicate"),
    "realcugan-2x": ("realcugan-se/up2x-no-denoise", "in0", "out0", 2, 18, "reflect"),
    "realesr-animevideov3-4x": ("realesr-animevideov3/realesr-animevideov3-x4", "data", "output", 4, 0, "replicate"),
    "realesr-animevideov3-2x": ("realesr-animevideov3/realesr-animevideov3-x2", "data", "output", 2, 0, "replicate"),
}
tmp = tempfile.mkdtemp(prefix="wholebench-")
if a.precision != "fp32":
    env["VIVIFY_MODELS"] = os.path.join(tmp, "models")
precision = ["--precision", a.precision]
calibration_photo = os.path.join(shared, "datasets/train/BSD200/122048.jpg")


def timed(args):
    r = subprocess.run(["/usr/bin/time", "-f", "%e %M"] + args, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(" ".join(args) + "\n" + r.stderr)
    t, m = r.stderr.strip().splitlines()[-1].split()
    return float(t), int(m) / 1024


def peer_args(model, inputs, outdir):
    f, i, o, scale, pad, mode = MODELS[model]
    base = os.path.join(ncnn_models, f)
    return ["python3", peer, "--param", base + ".param", "--bin", base + ".bin", "--input-blob", i, "--output-blob", o,
            "--scale", str(scale), "--pad", str(pad), "--pad-mode", mode, "--threads", a.threads] + inputs + [outdir]


def row(**kw):
    print(json.dumps(kw), flush=True)


for model in a.models.split(","):
    subprocess.run([a.vivify, "models", "fetch", model], env=env, capture_output=True)
    if a.precision != "fp32":
        timed([a.vivify, "image", calibration_photo, os.path.join(tmp, "calibration.png"), "--upscale", model, "-y", "--quiet"] + precision)
    for size in a.sizes.split(","):
        src = os.path.join(tmp, "in-%s.png" % size)
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", os.path.join(shared, "datasets/val/Set14/baboon.png"),
                        "-vf", "scale=%s:flags=bicubic" % size.replace("x", ":"), "-frames:v", "1", src], check=True)
        ours, theirs = [], []
        for _ in range(a.runs):
            ours.append(timed([a.vivify, "image", src, os.path.join(tmp, "out.png"), "--upscale", model, "-y", "--quiet",
                               "--threads", a.threads] + precision))
            theirs.append(timed(peer_args(model, [src], os.path.join(tmp, "peer"))))
        t_ours = statistics.median(t for t, _ in ours)
        t_peer = statistics.median(t for t, _ in theirs)
        row(model=model, size=size, precision=a.precision, vivify_s=t_ours, vivify_rss_mb=round(max(m for _, m in ours)),
            ncnn_s=t_peer, ncnn_rss_mb=round(max(m for _, m in theirs)), ratio=round(t_peer / t_ours, 3))

if a.batch:
    photos = sorted(glob.glob(os.path.join(shared, "datasets/val/BSD100/*.*")))[:a.batch]
    indir = os.path.join(tmp, "batch")
    os.makedirs(indir, exist_ok=True)
    for p in photos:
        shutil.copy(p, indir)
    inputs = sorted(glob.glob(os.path.join(indir, "*.*")))
    model = a.batch_model
    batch, singles, peers = [], [], []
    for _ in range(a.runs):
        out = os.path.join(tmp, "batch-out")
        shutil.rmtree(out, ignore_errors=True)
        batch.append(timed([a.vivify, "image", indir, out, "--upscale", model, "--format", "png", "--quiet", "--threads", a.threads] + precision))
        start = 0.0
        for p in inputs:
            start += timed([a.vivify, "image", p, os.path.join(tmp, "single.png"), "--upscale", model, "-y", "--quiet",
                            "--threads", a.threads] + precision)[0]
        singles.append(start)
        peers.append(timed(peer_args(model, inputs, os.path.join(tmp, "peer-batch"))))
    t_batch = statistics.median(t for t, _ in batch)
    row(model=model, batch=len(inputs), precision=a.precision, vivify_batch_s=t_batch, vivify_batch_rss_mb=round(max(m for _, m in batch)),
        vivify_singles_s=statistics.median(singles), ncnn_batch_s=statistics.median(t for t, _ in peers),
        ncnn_batch_rss_mb=round(max(m for _, m in peers)),
        singles_over_batch=round(statistics.median(singles) / t_batch, 3),
        ncnn_over_batch=round(statistics.median(t for t, _ in peers) / t_batch, 3))
shutil.rmtree(tmp, ignore_errors=True)
