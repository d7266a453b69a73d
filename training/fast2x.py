#!/usr/bin/env python3
"""Train vivify-fast-2x: a compact ESPCN-class 2x upscaler for the CPU (issue 7, first part).

Network (RGB in [0,1], "same" padding): the detail is predicted for luma only and added to
every channel of a bilinear 2x of the input, which changes luma by exactly that detail and
keeps chroma bilinear (the eye's chroma resolution is low; the budget goes to luma):
    conv 5x5 3->16 + leaky ReLU (0.1), conv 3x3 16->16 + leaky ReLU, conv 3x3 16->4,
    PixelShuffle(2) -> 1 channel of luma detail at 2x
    + bilinear 2x of the input (align_corners=False)
about 4.1k multiply-adds per input pixel (1.9 GFLOP for 640x360 -> 1280x720); channel counts
are multiples of oneDNN's 16-wide blocks, activations fuse into the convolutions, and the
only full-size passes are the shuffle, the bilinear resize and the add.

Data: random 96x96 crops of ../shared/datasets/train (flips, 90-degree turns, scale jitter
0.6-1.0), low-resolution inputs by PIL bicubic (antialiased) x0.5. Validation: luma PSNR gain
over bicubic on ../shared/datasets/val/Set5 and Set14 (2-px shave). Deterministic seeds,
checkpoints and a CSV log in --out; --export writes ncnn .param/.bin with our own writer.

Usage: python3 training/fast2x.py --steps 20000 --out training/runs/fast2x
"""
import argparse, csv, os, random, time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

from common import NcnnWriter, bicubic_pairs, image_files, psnr


class Fast2x(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 5, padding=2)
        self.c2 = nn.Conv2d(16, 16, 3, padding=1)
        self.c3 = nn.Conv2d(16, 4, 1)

    def forward(self, x):
        y = self.c3(F.relu(self.c2(F.relu(self.c1(x)))))
        return F.pixel_shuffle(y, 2) + F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False)


def load_images(folder):
    return [np.asarray(Image.open(f).convert("RGB")) for f in image_files(folder)]


def batch(images, rng, n, patch):
    lr, hr = [], []
    while len(hr) < n:
        img = images[rng.randrange(len(images))]
        s = rng.uniform(0.6, 1.0)
        h, w = img.shape[:2]
        if min(h, w) * s < patch + 2:
            continue
        pil = Image.fromarray(img)
        if s < 0.999:
            pil = pil.resize((max(1, int(w * s)), max(1, int(h * s))), Image.BICUBIC)
        a = np.asarray(pil)
        y, x = rng.randrange(a.shape[0] - patch + 1), rng.randrange(a.shape[1] - patch + 1)
        p = a[y:y + patch, x:x + patch]
        if rng.random() < 0.5: p = p[:, ::-1]
        p = np.rot90(p, rng.randrange(4)).copy()
        small = np.asarray(Image.fromarray(p).resize((patch // 2, patch // 2), Image.BICUBIC))
        hr.append(p); lr.append(small)
    t = lambda a: torch.from_numpy(np.stack(a).astype(np.float32) / 255).permute(0, 3, 1, 2)
    return t(lr), t(hr)


def evaluate(model, folder):
    gains = []
    for _, img, small, bic in bicubic_pairs(folder):
        with torch.no_grad():
            x = torch.from_numpy(np.asarray(small).astype(np.float32) / 255).permute(2, 0, 1)[None]
            y = model(x)[0].permute(1, 2, 0).clamp(0, 1).numpy()
        ours = np.round(y * 255).astype(np.uint8)
        gains.append(psnr(ours, img) - psnr(bic, img))
    return float(np.mean(gains))


def export(model, param, binf):
    w = NcnnWriter()
    w.add("Input", "in0", [], ["in0"], "0=0 1=0 2=3")
    w.add("Split", "split0", ["in0"], ["x0", "x1"])
    prev = "x0"
    for i, (conv, relu) in enumerate([(model.c1, True), (model.c2, True), (model.c3, False)]):
        k = conv.kernel_size[0]
        out = f"c{i + 1}"
        w.add("Convolution", f"conv{i + 1}", [prev], [out],
              f"0={conv.out_channels} 1={k} 4={k // 2} 5=1 6={conv.weight.numel()}" + (" 9=1" if relu else ""))
        w.tagged(conv.weight.detach().numpy().reshape(-1))
        w.raw(conv.bias.detach().numpy())
        prev = out
    w.add("PixelShuffle", "shuffle", [prev], ["detail"], "0=2")
    w.add("Interp", "bicubic", ["x1"], ["base"], "0=3 1=2.0 2=2.0")
    w.add("BinaryOp", "add", ["detail", "base"], ["out0"], "0=0")
    w.write(param, binf)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default="../shared/datasets/train")
    ap.add_argument("--val", default="../shared/datasets/val")
    ap.add_argument("--out", default="training/runs/fast2x")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--patch", type=int, default=96)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--minutes", type=float, default=0, help="stop after this many minutes (0: no limit)")
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--export-untrained", action="store_true", help="export the untrained network (for timing) and stop")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    random.seed(args.seed); np.random.seed(args.seed); torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    torch.set_num_threads(args.threads)
    if args.export_untrained:
        export(Fast2x(), os.path.join(args.out, "vivify-fast-2x.param"), os.path.join(args.out, "vivify-fast-2x.bin"))
        return
    images = load_images(args.train)
    print(f"{len(images)} training images", flush=True)
    model = Fast2x()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, args.steps)
    log = open(os.path.join(args.out, "log.csv"), "w", newline="")
    writer = csv.writer(log)
    writer.writerow(["step", "loss", "set5_gain_db", "set14_gain_db", "seconds"])
    start = time.time()
    running = 0.0
    for step in range(1, args.steps + 1):
        lr, hr = batch(images, rng, args.batch, args.patch)
        loss = F.l1_loss(model(lr), hr)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        running += loss.item()
        out_of_time = args.minutes and time.time() - start > args.minutes * 60
        if step % 1000 == 0 or step == args.steps or out_of_time:
            model.eval()
            g5, g14 = evaluate(model, os.path.join(args.val, "Set5")), evaluate(model, os.path.join(args.val, "Set14"))
            model.train()
            writer.writerow([step, running / min(step, 1000), g5, g14, round(time.time() - start)]); log.flush()
            print(f"step {step}: loss {running / min(step, 1000):.4f}, Set5 +{g5:.2f} dB, Set14 +{g14:.2f} dB over bicubic, {time.time() - start:.0f} s", flush=True)
            running = 0.0
            torch.save({"model": model.state_dict(), "step": step, "seed": args.seed}, os.path.join(args.out, "checkpoint.pt"))
        if out_of_time:
            break
    model.eval()
    export(model, os.path.join(args.out, "vivify-fast-2x.param"), os.path.join(args.out, "vivify-fast-2x.bin"))
    print("exported", os.path.join(args.out, "vivify-fast-2x.param"), flush=True)


if __name__ == "__main__":
    main()
