#!/usr/bin/env python3
"""Train vivify-color decoders on a GPU with a semantic loss through a frozen critic (issue 29).

The network is training/color.py's (frozen MobileNetV2 encoder reading L, hypercolumn decoder,
annealed-mean head over the grid-10 ab bins) and is exported by its code; what changes is how
the decoder is trained:
  - data: the packs of training/data.py (Imagenette's colour photographs plus every photograph
    of ../shared/datasets/train), decoded once into GPU memory;
  - on the fly on the GPU, per step: crops of 50-100% of each side (aspect changes, as the
    engine's squash to 224x224), flips, and on the encoder's input only color.py's old-film
    degradations (gamma / contrast / brightness, blur, grain, scratches, dust, and JPEG as 8x8
    DCT quantisation of the L plane); the frozen encoder runs on every crop (no cache);
  - loss: color.py's cross-entropy against the Gaussian soft encoding of the true ab, weighted by
    class rebalancing (lambda 0.5; bins and weights from each decoder's own training photos),
    PLUS a semantic loss through a frozen critic: the same MobileNetV2 with its classifier, on
    RGB (first convolution as trained), reads the colorized picture (the clean L with the
    decoder's annealed-mean ab, T 0.5, alpha 0.5, through a differentiable Lab -> sRGB) and the
    true one; --kl weighs the KL divergence of its class distribution on ours from that on the
    truth, --feat a feature-matching loss (mean squared difference over the truth's mean square)
    on its block outputs at 28x28, 14x14 and 7x7. Gradients flow through the critic into the
    decoder; the critic never changes. MobileNetV1 (evaluate.py's judge) is never used here.
    --even adds color.py's evenness loss on the decoded 56x56 colour (issue 29, item 4; on the
    CPU it traded colour for evenness: Models/training-logs/README.md).
  - several decoders train in one run and share each step's crops, degradations, encoder
    features and critic pass on the truth: five cross-validation folds (fold k never sees the
    ImageNet-sample900 photographs of index % 5 == k, exactly as training/crossval.py holds them
    out), the final decoder on every photograph, and ablations on fold 0 (--ablations: "ce",
    no semantic loss; "ft", the encoder's 7x7 stage and 320 -> 1280 convolution trained too at
    --encoder-lr, as color.py --finetune). Each decoder's loss counts only its own photographs.
  - Adam, cosine learning rate over --minutes of wall clock after a short warm-up, bf16
    autocast, channels_last; an exponential weight average (--ema) is what is kept.
Every --save-every seconds, and at the end, all decoders' averaged weights (fp16) go to
OUT/decoders.pt (and OUT/decoders-ft.pt), which training/crossval.py --checkpoints and `--export` below read,
and the full training state (fp32: weights, Adam, averages, step, seconds trained, random
state, options) to --state (default OUT/state.pt; about 18 MB a decoder). A run spans several
device calls: --minutes (or --steps) is the whole run's, the cosine schedule spans it; each call
ends after --call-minutes (wall clock, loading included) or --call-steps and saves; the next
call continues it with --resume, reading the options, decoders, schedule and random state from
--state (only the CALL_ARGS below come from its own command line), and may read another pack.
A run stopped and resumed gives the weights of one never stopped (training/test_color_gpu.py).

Usage (GPU):  python3 training/color_gpu.py --data .gpu-data --out $OUT --minutes 6.5
  over two calls, the state kept on the warm machine in an ignored folder (not in $OUT):
              python3 training/color_gpu.py --data .gpu-data --out $OUT --state training/runs/gpu30/state.pt --minutes 10 --call-minutes 8
              python3 training/color_gpu.py --data .gpu-data --out $OUT --state training/runs/gpu30/state.pt --resume --call-minutes 4.5
       (Models/training-logs/README.md, "What would close the rest", says what each call carries.)
       (CPU smoke test): python3 training/color_gpu.py --data .gpu-data --out /tmp/smoke --device cpu --steps 3 --batch 4 --limit 200
       export one decoder here: python3 training/color_gpu.py --export /path/decoders.pt --name all --out training/runs/c29
                                 [--alpha 0.5 --t 0.5 --scale 1.1]
"""
import argparse, copy, glob, io, json, math, os, sys, tarfile, time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from color import (BACKBONE, GRID, LAMBDA, SIZE, Colorizer, Decoder, Encoder, Upper, evenness_loss, export, lab_to_rgb,
                   reference_pair, rgb_to_lab, soft_targets, write_sidecar)
from common import rebalance_from_counts
from tflite import TFLiteNet, run_layers

FOLDS = 5


# --- data ----------------------------------------------------------------------------------------

def _decode(blob):
    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(blob)).convert("RGB"))


def load_packs(folder, limit=0):
    """Every photograph of the packs under `folder` (part*.tar, or folders part*/ already
    unpacked): (uint8 array (N, S, S, 3), entries)."""
    blobs, entries = [], []
    for tar_path in sorted(glob.glob(os.path.join(folder, "part*.tar"))):
        with tarfile.open(tar_path) as tar:
            members = {m.name: m for m in tar.getmembers()}
            part = os.path.basename(tar_path)[:-4]
            index = json.load(tar.extractfile(members[f"{part}/index.json"]))
            for e in index["entries"]:
                blobs.append(tar.extractfile(members[f"{part}/{e['file']}"]).read())
                entries.append(e)
        print(f"{tar_path}: {len(index['entries'])} photographs", flush=True)
    if limit:
        pick = np.random.default_rng(0).permutation(len(blobs))[:limit]
        blobs, entries = [blobs[i] for i in pick], [entries[i] for i in pick]
    if len(blobs) > 2000:
        from multiprocessing import Pool
        with Pool(min(16, os.cpu_count() or 1)) as pool:
            images = pool.map(_decode, blobs, chunksize=64)
    else:
        images = [_decode(b) for b in blobs]
    return np.stack(images), entries


def decoder_plan(entries, ablations):
    """(name, training mask over entries, options) of each decoder trained: folds 0..4, 'all',
    then the ablations on fold 0."""
    idx = np.array([e.get("imagenet_index", -1) for e in entries])
    plan = []
    for k in range(FOLDS):
        plan.append((f"fold{k}", ~((idx >= 0) & (idx % FOLDS == k)), {}))
    plan.append(("all", np.ones(len(entries), bool), {}))
    for a in ablations:
        plan.append((f"fold0-{a}", plan[0][1].copy(), {"semantic": a != "ce", "finetune": a == "ft"}))
    return plan


# --- augmentation on the GPU ---------------------------------------------------------------------

def random_crops(images, idx, gen, size=SIZE):
    """Crops of 50-100% of each side (independently), flipped half the time, resized
    (bilinear) to size x size: float RGB (B, 3, size, size) in 0..1."""
    x = images[idx].permute(0, 3, 1, 2).float() / 255
    b = len(idx)
    u = lambda: torch.rand(b, device=x.device, generator=gen)
    sx, sy = 0.5 + 0.5 * u(), 0.5 + 0.5 * u()
    cx, cy = (2 * u() - 1) * (1 - sx), (2 * u() - 1) * (1 - sy)
    flip = torch.where(u() < 0.5, -1.0, 1.0)
    theta = torch.zeros(b, 2, 3, device=x.device)
    theta[:, 0, 0], theta[:, 0, 2], theta[:, 1, 1], theta[:, 1, 2] = sx * flip, cx, sy, cy
    grid = F.affine_grid(theta, (b, 3, size, size), align_corners=False)
    return F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False).clamp(0, 1)


def _dct_matrix(device):
    n = torch.arange(8, dtype=torch.float32, device=device)
    d = torch.cos((2 * n[None, :] + 1) * n[:, None] * math.pi / 16) * math.sqrt(2 / 8)
    d[0] /= math.sqrt(2)
    return d


JPEG_LUMA = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
             18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]


def jpeg_luma(l, quality):
    """The quantisation JPEG applies to a grey picture (8x8 DCT, libjpeg's luminance table
    scaled by `quality` (B,)); l: (B, 1, H, W) L* with H, W multiples of 8."""
    b, _, h, w = l.shape
    d = _dct_matrix(l.device)
    q = torch.where(quality < 50, 5000 / quality, 200 - 2 * quality)
    table = ((torch.tensor(JPEG_LUMA, dtype=torch.float32, device=l.device)[None] * q[:, None] + 50) / 100).floor().clamp(1, 255)
    x = (l * 2.55 - 128).reshape(b, h // 8, 8, w // 8, 8).permute(0, 1, 3, 2, 4)
    c = d @ x @ d.T
    t = table.reshape(b, 1, 1, 8, 8)
    x = d.T @ (torch.round(c / t) * t) @ d
    return (torch.round(x + 128).clamp(0, 255) / 2.55).permute(0, 1, 3, 2, 4).reshape(b, 1, h, w)


def degrade(l, gen):
    """color.py's old-film degradations of L* planes (B, 1, H, W) in 0..100, on the GPU, each
    with the same chance and range: gamma and contrast / brightness, soft focus, grain (half
    clumped), vertical scratches, dust, JPEG."""
    b, _, h, w = l.shape
    dev = l.device
    u = lambda *s: torch.rand(*(s or (b,)), device=dev, generator=gen)
    col = lambda v: v.view(b, 1, 1, 1)
    on = lambda p: col(u() < p)
    g = 100 * (l.clamp(0, 100) / 100) ** col(0.7 + 0.7 * u())
    g = 50 + col(0.7 + 0.55 * u()) * (g - 50) + col(-10 + 20 * u())
    l = torch.where(on(0.5), g, l)
    # soft focus: a Gaussian of sigma 0.4..1.6 per picture, separable, as grouped convolutions
    sigma = 0.4 + 1.2 * u()
    r = torch.arange(-4, 5, device=dev, dtype=torch.float32)
    k = torch.exp(-r[None] ** 2 / (2 * sigma[:, None] ** 2))
    k = k / k.sum(1, keepdim=True)
    blurred = F.conv2d(F.pad(l.transpose(0, 1), (4, 4, 0, 0), mode="replicate"), k[:, None, None, :], groups=b)
    blurred = F.conv2d(F.pad(blurred, (0, 0, 4, 4), mode="replicate"), k[:, None, :, None], groups=b).transpose(0, 1)
    l = torch.where(on(0.4), blurred, l)
    n = torch.randn(l.shape, device=dev, generator=gen) * col(1 + 5 * u())
    clumped = (n + torch.roll(n, 1, 2) + torch.roll(n, 1, 3)) / math.sqrt(3)
    n = torch.where(on(0.5), clumped, n)
    l = torch.where(on(0.5), l + n, l)
    rows = torch.arange(h, device=dev).view(1, 1, h, 1)
    cols = torch.arange(w, device=dev).view(1, 1, 1, w)
    # scratches: 1-3 per picture (30%), 1-2 px wide, from a row in the top half to one below it
    s = 3
    x0 = (u(b, s) * w).long().view(b, s, 1, 1)
    wd = 1 + (u(b, s) < 0.5).long().view(b, s, 1, 1)
    y0 = (u(b, s) * (h // 2)).long().view(b, s, 1, 1)
    y1 = (y0 + 1 + (u(b, s) * (h - y0.view(b, s))).long().view(b, s, 1, 1)).clamp(max=h)
    active = (torch.arange(s, device=dev)[None] < (1 + (u(b) * 3).long())[:, None]) & (u(b, 1) < 0.3)
    amp = torch.where(u(b, s) < 0.5, -1.0, 1.0) * (15 + 25 * u(b, s))
    mask = (cols >= x0) & (cols < x0 + wd) & (rows >= y0) & (rows < y1) & active.view(b, s, 1, 1)
    l = l + (mask.float() * amp.view(b, s, 1, 1)).sum(1, keepdim=True)
    # dust: 1-8 specks (25%) of 1-3 px, black or white
    s = 8
    dy, dx = (u(b, s) * (h - 3)).long().view(b, s, 1, 1), (u(b, s) * (w - 3)).long().view(b, s, 1, 1)
    sh, sw = 1 + (u(b, s) * 3).long().view(b, s, 1, 1), 1 + (u(b, s) * 3).long().view(b, s, 1, 1)
    active = (torch.arange(s, device=dev)[None] < (1 + (u(b) * 8).long())[:, None]) & (u(b, 1) < 0.25)
    speck = (rows >= dy) & (rows < dy + sh) & (cols >= dx) & (cols < dx + sw) & active.view(b, s, 1, 1)
    value = torch.where(u(b, s) < 0.5, 3.0, 97.0).view(b, s, 1, 1)
    hit = speck.any(1, keepdim=True)
    l = torch.where(hit, (speck.float() * value).amax(1, keepdim=True), l)
    l = l.clamp(0, 100)
    l = torch.where(on(0.4), jpeg_luma(l, (20 + 65 * u()).round()), l)
    return l


# --- frozen networks on the GPU --------------------------------------------------------------------

def net_to(net_layers, device):
    for layer in net_layers:
        if layer.weight is not None:
            layer.weight = layer.weight.to(device).contiguous(memory_format=torch.channels_last)
            layer.bias = layer.bias.to(device)


class Critic:
    """MobileNetV2 with its classifier, RGB in (x / 127.5 - 1): (logits (B, 1001), block
    outputs at 28x28, 14x14 and 7x7). Frozen; differentiable with respect to its input."""

    def __init__(self, path, device):
        self.net = TFLiteNet(path)
        enc = Encoder(path)  # the same tap choice as the encoder's
        self.taps = enc.taps[1:4]
        self.logits = [l.output for l in self.net.layers if len(self.net.tensors[l.output].shape) == 4
                       and self.net.tensors[l.output].shape[3] == 1001][-1]
        self.layers = self.net.layers[:[l.output for l in self.net.layers].index(self.logits) + 1]
        net_to(self.layers, device)
        self.run = self._run

    def _run(self, rgb):
        x = (rgb * 2 - 1).contiguous(memory_format=torch.channels_last)
        values = run_layers(self.layers, {self.net.graph_inputs[0]: x}, stop_after=self.logits)
        return values[self.logits].flatten(1).float(), [values[t] for t in self.taps]

    def __call__(self, rgb):
        return self.run(rgb)


def critic_loss(critic, l, ab, truth_logits, truth_feats, kl_weight, feat_weight):
    """Per-picture semantic loss (B,) of the colorized picture (L, ab at 224x224, CIE units)."""
    rgb = lab_to_rgb(torch.cat([l, ab], 1).float())
    logits, feats = critic(rgb)
    p = F.softmax(truth_logits, 1)
    kl = (p * (F.log_softmax(truth_logits, 1) - F.log_softmax(logits, 1))).sum(1)
    fm = sum(((f.float() - t.float()) ** 2).mean((1, 2, 3)) / (t.float() ** 2).mean((1, 2, 3)).clamp(min=1e-6)
             for f, t in zip(feats, truth_feats)) / len(feats)
    return kl_weight * kl + feat_weight * fm, kl.detach(), fm.detach()


# --- training --------------------------------------------------------------------------------------

def bin_counts(images, device, batch=512):
    """(N, 529) counts of each photograph's ab (whole picture at 56x56) over the grid-10 bins."""
    out = []
    for i in range(0, len(images), batch):
        x = images[i:i + batch].permute(0, 3, 1, 2).float() / 255
        x = F.interpolate(x, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
        ab = F.avg_pool2d(rgb_to_lab(x)[:, 1:], 4)
        cell = (torch.round(ab / GRID).long() + 11).clamp(0, 22)
        cell = (cell[:, 0] * 23 + cell[:, 1]).flatten(1) + 529 * torch.arange(len(cell), device=cell.device)[:, None]
        out.append(torch.bincount(cell.flatten(), minlength=529 * len(cell)).view(-1, 529).cpu())
    return torch.cat(out).numpy().astype(np.float64)


# What a resumed call takes from its own command line; every other option is the run's, read
# back from the state file (the schedule, the decoders, the losses stay those of the first call).
CALL_ARGS = ("data", "out", "state", "backbone", "device", "resume", "call_minutes", "call_steps", "save_every", "limit", "compile")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=".gpu-data")
    ap.add_argument("--out", default="training/runs/color-gpu")
    ap.add_argument("--backbone", default=None, help="MobileNetV2 TFLite file (default: color.py's, or .gpu-data's copy)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--minutes", type=float, default=6.5, help="training time over all calls of a run; the cosine schedule spans it")
    ap.add_argument("--steps", type=int, default=0, help="train this many steps over all calls; the schedule spans them (0: --minutes decides)")
    ap.add_argument("--call-minutes", type=float, default=0, help="end this call after this many minutes of wall clock from its start "
                    "(loading included), saving the state for --resume (0: no limit but --minutes)")
    ap.add_argument("--call-steps", type=int, default=0, help="end this call after this many steps, saving the state for --resume (0: no limit)")
    ap.add_argument("--state", help="the full training state (fp32, for --resume; default OUT/state.pt); put it where the next call finds it")
    ap.add_argument("--resume", action="store_true", help="continue the run saved in --state (its options, decoders, schedule and random state)")
    ap.add_argument("--decoders", default="", help="train only these decoders of the plan, comma-separated (default: folds 0-4, all, fold0-<ablation>)")
    ap.add_argument("--compile", action="store_true", help="run the frozen encoder and critic through torch.compile (same result, faster on a GPU)")
    ap.add_argument("--batch", type=int, default=192)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--encoder-lr", type=float, default=5e-5)
    ap.add_argument("--warmup", type=int, default=150)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--rebalance", type=float, default=LAMBDA)
    ap.add_argument("--kl", type=float, default=1.0, help="weight of the critic's KL term")
    ap.add_argument("--feat", type=float, default=1.0, help="weight of the critic's feature-matching term")
    ap.add_argument("--even", type=float, default=0.0, help="weight of color.py's evenness loss (a decoded colour less even than the truth's costs; "
                    "issue 29, item 4); on the CPU it traded colour for evenness at every weight tried (Models/training-logs/README.md)")
    ap.add_argument("--even-relative", action="store_true", help="the evenness loss over each picture's mean chroma (colouring less gains nothing)")
    ap.add_argument("--sem-t", type=float, default=0.5, help="temperature of the annealed mean the critic sees")
    ap.add_argument("--sem-alpha", type=float, default=0.5, help="share of the rebalancing undone in what the critic sees")
    ap.add_argument("--ema", type=float, default=0.995)
    ap.add_argument("--ablations", default="ce,ft", help="extra fold-0 decoders: ce (no semantic loss), ft (encoder top trained)")
    ap.add_argument("--save-every", type=float, default=60)
    ap.add_argument("--limit", type=int, default=0, help="use only this many photographs (smoke tests)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--export", help="a decoders.pt: export the decoder --name (no training)")
    ap.add_argument("--name", default="all")
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--t", type=float, default=0.5)
    ap.add_argument("--scale", type=float, default=1.1)
    args = ap.parse_args(argv)
    backbone = args.backbone or (BACKBONE if os.path.exists(BACKBONE) else os.path.join(args.data, "mobilenet_v2_1.0_224_quant.tflite"))
    os.makedirs(args.out, exist_ok=True)
    if args.export:
        torch.set_num_threads(2)
        encoder, model = load_decoder(args.export, args.name, backbone)
        export_decoder(encoder, model, args.t, args.scale, args.alpha, args.out)
        return
    train(args, backbone)


def resume_args(args, saved):
    """`args` with every option that is not in CALL_ARGS taken from the saved run's."""
    for k, v in saved.items():
        if k in CALL_ARGS or not hasattr(args, k):
            continue
        if getattr(args, k) != v:
            print(f"--resume: --{k.replace('_', '-')} {v!r} as the run was started ({getattr(args, k)!r} on this command line ignored)", flush=True)
        setattr(args, k, v)
    return args


def new_decoder(name, mask, opts, bins, weights, encoder, args, dev):
    """One decoder to train: Colorizer (with the encoder's top as trainable layers for 'ft'),
    Adam over its groups, and its weight average."""
    torch.manual_seed(args.seed)
    enc_copy = copy.deepcopy(encoder) if opts.get("finetune") else None
    model = Colorizer(Decoder(encoder.channels, bins, args.dropout), Upper(enc_copy) if enc_copy else None).to(dev)
    model = model.to(memory_format=torch.channels_last)
    model.decoder.log_w.copy_(torch.log(torch.as_tensor(weights)))
    groups = [{"params": list(model.decoder.parameters()), "lr": args.lr, "base_lr": args.lr}]
    if model.upper is not None:
        groups.append({"params": list(model.upper.parameters()), "lr": args.encoder_lr, "base_lr": args.encoder_lr, "weight_decay": 0.0})
    opt = torch.optim.Adam(groups, weight_decay=args.weight_decay)
    ema = copy.deepcopy(model)
    for p in ema.parameters():
        p.requires_grad_(False)
    return dict(name=name, mask=torch.from_numpy(mask).to(dev), semantic=opts.get("semantic", True), model=model, opt=opt, ema=ema,
                weights=torch.as_tensor(weights, device=dev), bins=bins, enc_copy=enc_copy, sums=np.zeros(4), seen=0)


def train(args, backbone):
    call_start = time.time()
    dev = torch.device(args.device)
    args.state = args.state or os.path.join(args.out, "state.pt")
    state = None
    if args.resume:
        if not os.path.exists(args.state):
            sys.exit(f"--resume: no training state at '{args.state}'. Start the run without --resume, or pass the --state of the call to continue.")
        state = torch.load(args.state, map_location="cpu", weights_only=False)
        args = resume_args(args, state["args"])
        print(f"resuming '{args.state}': step {state['step']}, {state['seconds']:.0f} s trained of "
              + (f"{args.steps} steps" if args.steps else f"{args.minutes * 60:.0f} s"), flush=True)
    torch.manual_seed(args.seed)
    if dev.type == "cuda":
        torch.backends.cudnn.benchmark = True
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    t0 = time.time()
    images_np, entries = load_packs(args.data, args.limit)
    images = torch.from_numpy(images_np).to(dev)
    gen = torch.Generator(device=dev).manual_seed(args.seed)  # after the decoding workers: no CUDA before a fork
    print(f"{len(entries)} photographs ({images.shape[1]}x{images.shape[2]}) on {dev} in {time.time() - t0:.0f} s; sources "
          + ", ".join(f"{s} {sum(e['source'] == s for e in entries)}" for s in sorted({e['source'] for e in entries})), flush=True)
    counts = bin_counts(images, dev) if state is None else None
    encoder = Encoder(backbone)
    enc_layers = encoder.layers
    net_to(enc_layers, dev)
    critic = Critic(backbone, dev)
    plan = decoder_plan(entries, [a for a in args.ablations.split(",") if a])
    wanted = [w for w in args.decoders.split(",") if w]
    unknown = [w for w in wanted if w not in [p[0] for p in plan]]
    if unknown:
        sys.exit(f"--decoders: no decoder named {', '.join(repr(u) for u in unknown)}. Choose from {', '.join(p[0] for p in plan)} "
                 "(fold0-<ablation> needs that ablation in --ablations).")
    plan = [p for p in plan if not wanted or p[0] in wanted]
    decoders = []
    if state is None:
        for name, mask, opts in plan:
            bins, weights = rebalance_from_counts(counts[mask].sum(0), args.rebalance)
            decoders.append(new_decoder(name, mask, opts, bins, weights, encoder, args, dev))
    else:
        # The saved bins and rebalancing weights, not this call's photographs': a resumed call may
        # read another pack, and the decoder's head is sized by its bins.
        masks = {name: mask for name, mask, _ in plan}
        for saved in state["decoders"]:
            opts = {"semantic": saved["semantic"], "finetune": saved["finetune"]}
            d = new_decoder(saved["name"], masks[saved["name"]], opts, saved["bins"], saved["weights"], encoder, args, dev)
            d["model"].load_state_dict(saved["model"])
            d["ema"].load_state_dict(saved["ema"])
            d["opt"].load_state_dict(saved["opt"])
            decoders.append(d)
        gen.set_state(state["rng"]["crops"])
        torch.set_rng_state(state["rng"]["torch"])
        if dev.type == "cuda" and state["rng"].get("cuda") is not None:
            torch.cuda.set_rng_state(state["rng"]["cuda"], dev)
    for d in decoders:
        print(f"decoder {d['name']}: {int(d['mask'].sum())} photographs, {len(d['bins'])} bins, semantic {d['semantic']}, "
              f"encoder top trained {d['model'].upper is not None}", flush=True)
    encode = lambda l_in: encoder.net.forward(l_in, taps=encoder.taps, stop_after=encoder.last)[1]
    if args.compile:
        encode = torch.compile(encode, dynamic=False)
        critic.run = torch.compile(critic.run, dynamic=False)
    n = len(entries)
    budget = args.minutes * 60
    step0 = step = state["step"] if state else 0
    before = state["seconds"] if state else 0.0  # training seconds of the earlier calls
    finished = lambda now: (args.steps and step >= args.steps) or (not args.steps and before + now - start >= budget)
    start = time.time()
    last_save = start
    amp = dict(device_type=dev.type, dtype=torch.bfloat16)
    while not finished(start):
        step += 1
        frac = min(1.0, (before + time.time() - start) / budget) if not args.steps else step / args.steps
        warm = min(1.0, step / args.warmup)
        idx = torch.randint(0, n, (args.batch,), device=dev, generator=gen)
        with torch.no_grad():
            rgb = random_crops(images, idx, gen)
            lab = rgb_to_lab(rgb)
            l_in = degrade(lab[:, :1].clone(), gen)
            true_ab = F.avg_pool2d(lab[:, 1:], 4)
            with torch.autocast(**amp):
                feats = encode(((l_in - 50) / 50).contiguous(memory_format=torch.channels_last))
                feats = [f.float() for f in feats[:4]] + [feats[4].float().mean((2, 3))]
                truth_logits, truth_feats = critic(rgb)
        for d in decoders:
            model, opt = d["model"], d["opt"]
            for g in opt.param_groups:
                g["lr"] = g["base_lr"] * warm * 0.5 * (1 + math.cos(math.pi * frac))
            valid = d["mask"][idx].float()
            with torch.autocast(**amp):
                logits = model(*feats).float()
            target = soft_targets(true_ab, model.decoder.bins)
            w = d["weights"][target.argmax(1)]
            ce = (-(target * F.log_softmax(logits, 1)).sum(1) * w).mean((1, 2))
            loss = ce
            # The decoded 56x56 colour, for the evenness loss and the critic alike.
            ab56 = model.ab(logits, args.sem_t, 1.0, args.sem_alpha) if args.even or d["semantic"] else None
            if args.even:
                # color.py's evenness loss (issue 29, item 4).
                loss = loss + args.even * evenness_loss(ab56, true_ab, per_picture=True, relative=args.even_relative)
            kl = fm = torch.zeros(())
            if d["semantic"]:
                ab = F.interpolate(ab56, size=(SIZE, SIZE), mode="bilinear", align_corners=False)
                with torch.autocast(**amp):
                    sem, kl, fm = critic_loss(critic, lab[:, :1], ab, truth_logits, truth_feats, args.kl, args.feat)
                loss = loss + sem.float()
                kl, fm = (kl * valid).sum() / valid.sum().clamp(min=1), (fm * valid).sum() / valid.sum().clamp(min=1)
            loss = (loss * valid).sum() / valid.sum().clamp(min=1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                decay = min(args.ema, (1 + step) / (10 + step))
                for a, b in zip(d["ema"].state_dict().values(), model.state_dict().values()):
                    if a.dtype.is_floating_point:
                        a.mul_(decay).add_(b.detach(), alpha=1 - decay)
                    else:
                        a.copy_(b)
            d["sums"] += [float(loss.detach()), float((ce.detach() * valid).sum() / valid.sum().clamp(min=1)), float(kl), float(fm)]
            d["seen"] += 1
        now = time.time()
        call_over = (args.call_steps and step - step0 >= args.call_steps) or (args.call_minutes and now - call_start >= args.call_minutes * 60)
        done = finished(now) or call_over
        if step % 50 == 0 or done:
            rate = (step - step0) * args.batch / (now - start)
            print(f"step {step} ({before + now - start:.0f} s, {rate:.0f} crops/s, lr x{warm * 0.5 * (1 + math.cos(math.pi * frac)):.3f}): "
                  + "; ".join(f"{d['name']} loss {d['sums'][0] / d['seen']:.3f} ce {d['sums'][1] / d['seen']:.3f} kl {d['sums'][2] / d['seen']:.3f} "
                              f"fm {d['sums'][3] / d['seen']:.3f}" for d in decoders), flush=True)
            for d in decoders:
                d["sums"][:] = 0; d["seen"] = 0
        if done or now - last_save > args.save_every:
            save(decoders, args, step, before + now - start, os.path.join(args.out, "decoders.pt"))
            save_state(decoders, args, step, before + now - start, gen, dev)
            last_save = now
        if done:
            break
    seconds = before + time.time() - start
    if step == step0:  # nothing left to train: the outputs of the finished run again
        save(decoders, args, step, seconds, os.path.join(args.out, "decoders.pt"))
    if finished(time.time()):
        print(f"done: {step} steps of {args.batch} in {seconds:.0f} s of training", flush=True)
    else:
        print(f"call ends at step {step} ({seconds:.0f} s of training): the next call continues it with --resume --state {args.state}", flush=True)


def save_state(decoders, args, step, seconds, gen, dev):
    """Everything --resume needs (fp32, never fetched back): each decoder's weights, optimiser
    and weight average, the step, the training seconds, the random state of the crops and of
    dropout, and the options; written to .tmp and renamed, so a call killed mid-write leaves
    the last state whole."""
    cpu = lambda sd: {k: v.detach().cpu() if torch.is_tensor(v) else v for k, v in sd.items()}
    out = {"step": step, "seconds": seconds, "args": vars(args),
           "rng": {"crops": gen.get_state(), "torch": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state(dev) if dev.type == "cuda" else None},
           "decoders": [{"name": d["name"], "bins": d["bins"], "weights": d["weights"].cpu().numpy(), "semantic": d["semantic"],
                         "finetune": d["model"].upper is not None, "model": cpu(d["model"].state_dict()), "ema": cpu(d["ema"].state_dict()),
                         "opt": d["opt"].state_dict()} for d in decoders]}
    os.makedirs(os.path.dirname(os.path.abspath(args.state)), exist_ok=True)
    torch.save(out, args.state + ".tmp")
    os.replace(args.state + ".tmp", args.state)


def save(decoders, args, step, seconds, path):
    """The averaged weights (fp16) of the decoders to `path`, those with trained encoder layers
    to path-ft.pt (each file under the device tool's 16 MiB)."""
    for group, p in [(False, path), (True, path.replace(".pt", "-ft.pt"))]:
        chosen = [d for d in decoders if (d["ema"].upper is not None) == group]
        if chosen:
            save_group(chosen, args, step, seconds, p)


def save_group(decoders, args, step, seconds, path):
    out = {"meta": {"step": step, "seconds": seconds, "args": vars(args)}, "decoders": {}}
    for d in decoders:
        sd = {k: (v.half() if v.dtype.is_floating_point and k not in ("decoder.bins", "decoder.log_w") else v).cpu()
              for k, v in d["ema"].state_dict().items()}
        out["decoders"][d["name"]] = {"state": sd, "bins": d["bins"], "finetune": d["ema"].upper is not None, "semantic": d["semantic"]}
    torch.save(out, path + ".tmp")
    os.replace(path + ".tmp", path)


def load_decoder(path, name, backbone=BACKBONE):
    """(encoder, Colorizer in eval mode, float32 on the CPU) of decoder `name` in a decoders.pt;
    the encoder carries the trained top layers of an 'ft' decoder."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    entry = ckpt["decoders"][name]
    encoder = Encoder(backbone)
    model = Colorizer(Decoder(encoder.channels, entry["bins"]), Upper(encoder) if entry["finetune"] else None)
    model.load_state_dict({k: v.float() for k, v in entry["state"].items()})
    model.eval()
    if model.upper is not None:
        model.upper.write_to(encoder)
    return encoder, model


def export_decoder(encoder, model, t, scale, alpha, out):
    """color.py's export of one decoder with a decoding: vivify-color.param/.bin/.json and the parity reference."""
    os.makedirs(out, exist_ok=True)
    export(encoder, model.decoder, t, scale, alpha, os.path.join(out, "vivify-color.param"), os.path.join(out, "vivify-color.bin"))
    reference_pair(encoder, model.decoder, t, scale, alpha, out)
    write_sidecar(out)
    return os.path.join(out, "vivify-color.param")


if __name__ == "__main__":
    main()
