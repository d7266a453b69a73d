#!/usr/bin/env python3
"""Tile size against speed and peak memory: whole-process `vivify image` runs of a 1920x1080
picture (Set14's baboon scaled up, so the content is real) through catalog upscalers at several
--tile values and under --max-memory caps; wall time (median of --runs) and peak RSS
(/usr/bin/time's maximum resident set size) of each.

    python3 Benchmarks/tile_memory_bench.py [--vivify .build/release/vivify] [--runs 3]
        [--models waifu2x-photo-2x,realesr-animevideov3-2x] [--tiles default,128,256,384,512]
"""
import argparse, json, os, statistics, subprocess, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--vivify", default=".build/release/vivify")
ap.add_argument("--runs", type=int, default=3)
ap.add_argument("--models", default="waifu2x-photo-2x,realesr-animevideov3-2x,realcugan-2x")
ap.add_argument("--tiles", default="default,128,192,256,384,512")
ap.add_argument("--size", default="1920x1080")
ap.add_argument("--threads", default="")
a = ap.parse_args()
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
env = dict(os.environ)
env.setdefault("VIVIFY_MODEL_MIRROR", os.path.join(os.path.dirname(root), "shared", "models"))
tmp = tempfile.mkdtemp(prefix="tilebench-")
src = os.path.join(tmp, "in.png")
subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", os.path.join(os.path.dirname(root), "shared/datasets/val/Set14/baboon.png"),
                "-vf", "scale=%s:flags=bicubic" % a.size.replace("x", ":"), "-frames:v", "1", src], check=True)
rows = []
for model in a.models.split(","):
    # Built-in models need no fetching (fetch refuses them).
    subprocess.run([a.vivify, "models", "fetch", model], env=env, capture_output=True)
    for tile in a.tiles.split(","):
        times, rss = [], []
        for _ in range(a.runs):
            args = ["/usr/bin/time", "-f", "%e %M", a.vivify, "image", src, os.path.join(tmp, "out.png"), "--upscale", model, "-y", "--quiet"]
            if tile.startswith("mem"):
                args += ["--max-memory", tile[3:]]
            elif tile != "default":
                args += ["--tile", tile]
            if a.threads:
                args += ["--threads", a.threads]
            r = subprocess.run(args, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(r.stderr)
            t, m = r.stderr.strip().splitlines()[-1].split()
            times.append(float(t))
            rss.append(int(m) / 1024)
        row = {"model": model, "tile": tile, "median_s": statistics.median(times), "peak_rss_mb": max(rss)}
        rows.append(row)
        print(json.dumps(row), flush=True)
