#!/usr/bin/env python3
"""How well vivify-color's training recipe colours ImageNet classes it never saw: K-fold cross
validation over all of ImageNet-sample900 (issue 11).

The held-out splits of training/color.py are 90 photographs each, and the rebalanced AuC of
90 photographs swings by points with the few that carry a rare colour (the shipped decoder:
tune +5.1, test +0.0, 90% intervals 2.4 to 4.7 points wide). Here every ImageNet photograph
is held out once: fold k holds out files[k::K] (fold 0 of 5 is exactly the tune and test
splits together, so its decoder is trained on exactly the shipped decoder's photographs), and
its decoder trains on every other photograph of ../shared/datasets/train with the shipped
recipe, unchanged and chosen by nothing here:
  - the cached crops of training/color.py (two sets of 12 per photograph; the held-out splits'
    crops are cached beside them, as held1/held2, by the same code and seeds),
  - the colour bins and rebalancing weights of the fold's own training crops,
  - Adam at 2e-3 on a cosine schedule of --schedule 2,700 steps (the shipped 45-minute run's
    length), stopped at --steps 600 (the shipped checkpoint's step), dropout 0.1;
  - exported with the shipped decoding (alpha 0.5, T 0.5, chroma scale 1.155).
Each fold's decoder colorizes its held-out photographs through the real binary (full size,
guided upsampling: training/evaluate.py's evaluate_colorizer), and the 900 photographs are
pooled into one set: AuC and rebalanced AuC against grey (prior of all 900), colourfulness,
MobileNetV1 top-1, with 90% bootstrap intervals. Each fold is reported too.

With --checkpoints (issue 29), the folds' decoders are not trained here but read from a
decoders.pt of training/color_gpu.py (decoder `fold{k}`, or `fold0-VARIANT` with --variant for
an ablation evaluated on fold 0 alone), exported by color.py's code with the decoding given by
--alpha/--t/--scale, or with --choose-decoding, the decoding chosen on the tune split (every
10th ImageNet file, inside fold 0's held-out photographs) with fold 0's decoder, by color.py's
margin over the weakest bar at 224x224 (--choose-decoding works on decoders trained here too:
each fold is then exported again with fold 0's choice, as fold{k}-chosen). The figures are
reported for all held-out photographs
and again without those of Imagenette's 10 classes (training/data.py), which a decoder trained
on Imagenette has seen, though not in these photographs.

With --critic-kl/--critic-feat (issue 29), each fold's decoder also learns from the semantic
loss of training/color_gpu.py, on the CPU: the frozen MobileNetV2 classifier reads each cached
crop's clean L* (color.replay_clean_l replays the caches' random draws once to get it, about
70 s a set; the shipped recipe's four cache sets only) with the decoded colour and with the true
colour at 56x56, brought up to 224x224 alike; about twice the time a step.

Usage: python3 training/crossval.py --out training/runs/cv [--folds 5] [--threads 2] [--json cv.json]
       (about 14 minutes a fold on 2 cores once the caches exist; a finished fold is reused)
       python3 training/crossval.py --checkpoints runs/gpu/decoders.pt --choose-decoding --out training/runs/cv29 --json cv29.json
       python3 training/crossval.py --out training/runs/cv-sem --critic-kl 1 --critic-feat 1 --only 0 --only 2 [--choose-decoding]
           (about 22 minutes of training a fold on 2 cores)
       python3 training/crossval.py --model Models/vivify-color.param --only 0   (one exported model on fold 0's photographs)
       python3 training/crossval.py --out training/runs/cv-inette --ship training/runs/color-inette
           (fold 0's decoder trained here, which saw exactly the shipped decoder's photographs plus
            any --imagenette ones, exported with the decoding of --alpha/--t/--scale and with the
            PyTorch reference output for the engine's parity test: a run folder that
            Models/make-builtin.sh takes as its COLOR_RUN; nothing is trained or evaluated)
"""
import argparse, json, os, sys, tempfile, types

import numpy as np
import torch

from color import (BACKBONE, SHIPPED_DECODING, Caches, Colorizer, Decoder, Encoder, build_cache, export, image_files, prepare_eval, replay_clean_l,
                   quantize_prior, reference_pair, split_files, train, write_sidecar)
from common import summarize
from data import IMAGENETTE_CLASSES, wnid
from evaluate import Judge, evaluate_colorizer, print_colorizer, public


def crop_files(files, crops):
    return [f for f in files for _ in range(crops)]


def caltech_files(root):
    """Caltech 101's colour photographs as training/data.py keeps them, sorted."""
    from data import CALTECH_COMMIT, caltech_files as listed, require_snapshot
    require_snapshot(root, CALTECH_COMMIT)
    return listed(root)


def imagenette_files(root, train_root):
    """Imagenette's colour photographs as training/data.py keeps them, sorted."""
    from data import IMAGENETTE_COMMIT, entries, require_snapshot
    require_snapshot(root, IMAGENETTE_COMMIT)
    return sorted(f for f, e in entries(root, train_root) if e["source"] == "imagenette")


def resume(ckpt, model, opt):
    """(step, seconds trained) of an interrupted fold's checkpoint (written every --save-every
    steps), loaded into `model` and `opt`; (0, 0.0) where there is none. The crops drawn after
    it are seeded by the step, so a resumed fold sees other crops than an unbroken one would."""
    if not os.path.exists(ckpt):
        return 0, 0.0
    state = torch.load(ckpt, weights_only=False)  # our own checkpoint
    if not np.array_equal(state["bins"], model.decoder.bins.numpy()):
        sys.exit(f"'{ckpt}' was trained with other colour bins (other caches or options): delete it to start the fold afresh.")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    return state["step"], state.get("seconds", 0.0)


def train_fold(k, folds, imagenet, args, encoder):
    """Train fold k's decoder (or reuse it) and export it; returns the .param path."""
    out = os.path.join(args.out, f"fold{k}")
    param = os.path.join(out, "vivify-color.param")
    if os.path.exists(param):
        return param
    os.makedirs(out, exist_ok=True)
    held = set(imagenet[k::folds])
    train_files, tune, test = split_files(args.train)
    kept_out = sorted(tune + test)
    paths = [os.path.join(args.cache, n) for n in ["cache", "cache2", "held1", "held2"]]
    for seed, (path, files) in enumerate(zip(paths, [train_files, train_files, kept_out, kept_out])):
        if not os.path.exists(os.path.join(path, "ab.npy")):
            build_cache(encoder, files, args.crops, args.seed + seed % 2, path)
    owners = crop_files(train_files, args.crops) * 2 + crop_files(kept_out, args.crops) * 2
    first = [0, 2]  # the cache sets of the first seed, whose ab fix the bins and the rebalancing
    first_owners = crop_files(train_files, args.crops) + crop_files(kept_out, args.crops)
    # Issue 29: more colour photographs in every fold, `crops` degraded crops a photograph in
    # each of `sets` cache sets (their first set counts in the colour-bin prior): Imagenette's
    # (training/data.py's list: no one-channel JPEGs, none of ImageNet-sample900's own
    # photographs) and Caltech 101's (no grey pictures). Some of their classes are ImageNet
    # classes too; the held-out photographs themselves never are in them.
    extras = []
    if args.imagenette:
        extras.append(("imagenette", imagenette_files(args.imagenette, args.train), args.imagenette_crops, args.imagenette_sets))
    if args.caltech:
        extras.append(("caltech", caltech_files(args.caltech), args.caltech_crops, args.caltech_sets))
    for name, files, crops, sets in extras:
        first.append(len(paths))
        for seed in range(sets):
            path = os.path.join(args.cache, f"{name}{seed + 1}")
            if not os.path.exists(os.path.join(path, "ab.npy")):
                build_cache(encoder, files, crops, args.seed + seed, path)
            paths.append(path)
        owners += crop_files(files, crops) * sets
        first_owners += crop_files(files, crops)
    keep = np.array([i for i, f in enumerate(owners) if f not in held])
    semantic = args.critic_kl > 0 or args.critic_feat > 0
    if semantic:
        # The crops' clean L*, replayed from the caches' own random draws (once; about 70 s a set).
        for path, files, seed in zip(paths, [train_files, train_files, kept_out, kept_out], [0, 1, 0, 1]):
            if not os.path.exists(os.path.join(path, "l.npy")):
                replay_clean_l(files, args.crops, args.seed + seed, path)
    data = Caches(paths, keep, clean_l=semantic)
    first_set = np.concatenate([np.asarray(data.parts[j][5]) for j in first])
    bins, weights = quantize_prior(first_set[[f not in held for f in first_owners]], args.rebalance)
    print(f"fold {k}/{folds}: {len(held)} photographs held out, {len(data)} training crops, {len(bins)} ab bins", flush=True)
    torch.manual_seed(args.seed)
    model = Colorizer(Decoder(encoder.channels, bins, args.dropout))
    model.decoder.log_w.copy_(torch.log(weights))
    opt = torch.optim.Adam([{"params": list(model.decoder.parameters()), "lr": args.lr, "base_lr": args.lr}], weight_decay=args.weight_decay)
    val = prepare_eval(encoder, sorted(held)[::6])  # logged once at the end; nothing is chosen by it
    targs = types.SimpleNamespace(out=out, seed=args.seed, minutes=0, steps=args.steps, schedule_steps=args.schedule, batch=args.batch,
                                  eval_every=args.steps, save_every=args.save_every, even_weight=args.even_weight,
                                  even_relative=args.even_relative, critic=None, critic_kl=args.critic_kl, critic_feat=args.critic_feat)
    if semantic:
        from color_gpu import Critic
        targs.critic = Critic(BACKBONE, torch.device("cpu"))
    ckpt = os.path.join(out, "checkpoint.pt")
    step, spent = resume(ckpt, model, opt)
    if step:
        print(f"fold {k}: resumed at step {step} ({spent:.0f} s trained)", flush=True)
    train(model, None, opt, data, weights, val, val, targs, ckpt, step, spent)
    model.eval()
    d = SHIPPED_DECODING
    export(encoder, model.decoder, d["t"], d["scale"], d["alpha"], param + ".tmp", os.path.join(out, "vivify-color.bin"))
    write_sidecar(out)
    os.replace(param + ".tmp", param)
    return param


DECODING_GRID = [(a, t, sc) for a in (0.25, 0.5, 0.75) for t in (0.38, 0.5, 0.7) for sc in (0.9, 1.0, 1.1, 1.2, 1.35)]


class _CachedLogits:
    """A decoder whose logits are computed once per prepared photograph (the decoding grid only
    changes what is done with them)."""

    def __init__(self, model):
        self.model, self.cache = model, {}

    def __call__(self, *feats):
        key = id(feats[0])
        if key not in self.cache:
            self.cache[key] = self.model(*feats)
        return self.cache[key]

    def ab(self, logits, t, scale=1.0, alpha=0.0):
        return self.model.ab(logits, t, scale, alpha)


def trained_decoder(out, encoder, k):
    """Fold k's decoder as train_fold left it (its checkpoint.pt under `out`), in eval mode."""
    state = torch.load(os.path.join(out, f"fold{k}", "checkpoint.pt"), weights_only=False)  # our own checkpoint
    model = Colorizer(Decoder(encoder.channels, state["bins"]))
    model.load_state_dict(state["model"])
    model.eval()
    return model


def choose_decoding(checkpoint, imagenet, args, encoder=None):
    """(alpha, T, scale, table): the decoding with the largest margin over the weakest bar on the
    tune split (imagenet[::10]) for fold 0's decoder, which never saw those photographs: from
    --checkpoints, or (checkpoint None) the one train_fold trained under --out."""
    from color import evaluate, margin
    if checkpoint is None:
        model = trained_decoder(args.out, encoder, 0)
    else:
        from color_gpu import load_decoder
        encoder, model = load_decoder(checkpoint, "fold0" + (f"-{args.variant}" if args.variant else ""))
    tune = prepare_eval(encoder, imagenet[::10])
    cached, table = _CachedLogits(model), []
    with torch.no_grad():
        for a, t, sc in DECODING_GRID:
            r = {k: float(v) for k, v in evaluate(cached, tune, t, sc, a).items()}
            r.update(alpha=a, T=t, scale=sc, margin=margin(r))
            table.append(r)
            print(f"  tune split, alpha {a} T {t} scale {sc}: AuC {100 * (r['auc'] - r['grey_auc']):+.2f}, rebalanced "
                  f"{100 * (r['rb_auc'] - r['grey_rb_auc']):+.2f}, colourfulness {100 * r['colourfulness'] / r['truth_colourfulness']:.0f}%, "
                  f"margin {r['margin']:+.2f}", flush=True)
    best = max(table, key=lambda r: r["margin"])
    return best["alpha"], best["T"], best["scale"], table


def checkpoint_fold(k, args, decoding):
    """Exports fold k's decoder from --checkpoints with `decoding`; returns the .param path."""
    from color_gpu import export_decoder, load_decoder
    name = f"fold{k}" + (f"-{args.variant}" if args.variant else "")
    out = os.path.join(args.out, name)
    encoder, model = load_decoder(args.checkpoints, name)
    return export_decoder(encoder, model, decoding["t"], decoding["scale"], decoding["alpha"], out)


def ship(args):
    """Fold 0's decoder under --out, exported to --ship as training/color.py exports a run: the
    network with the decoding of --alpha/--t/--scale, its sidecar and the PyTorch output on the
    test pattern (for BuiltinColorizerParityTests)."""
    if not os.path.exists(os.path.join(args.out, "fold0", "checkpoint.pt")):
        sys.exit(f"No fold 0 decoder under '{args.out}': train it first (--only 0 with the same options).")
    encoder = Encoder(BACKBONE)
    model = trained_decoder(args.out, encoder, 0)
    os.makedirs(args.ship, exist_ok=True)
    export(encoder, model.decoder, args.t, args.scale, args.alpha, os.path.join(args.ship, "vivify-color.param"),
           os.path.join(args.ship, "vivify-color.bin"))
    write_sidecar(args.ship)
    reference_pair(encoder, model.decoder, args.t, args.scale, args.alpha, args.ship)
    print(f"fold 0's decoder from {args.out} exported to {args.ship} (alpha {args.alpha}, T {args.t}, scale {args.scale})", flush=True)


def unseen(rows):
    """The rows of photographs whose class is not one of Imagenette's."""
    return [r for r in rows if wnid(r["image"]) not in set(IMAGENETTE_CLASSES)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--train", default="../shared/datasets/train")
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--vivify", default=".build/release/vivify")
    ap.add_argument("--out", default="training/runs/cv")
    ap.add_argument("--cache", default="training/runs/shared", help="folder of training/color.py's feature caches")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--only", type=int, action="append", help="train (and evaluate) only these folds")
    ap.add_argument("--crops", type=int, default=12)
    ap.add_argument("--imagenette", help="a checkout of thunderInfy/imagenette at training/data.py's commit: its colour photographs join every fold's training set (issue 29)")
    ap.add_argument("--imagenette-crops", type=int, default=2, help="cached crops per Imagenette photograph in each of its two cache sets")
    ap.add_argument("--imagenette-sets", type=int, choices=[1, 2], default=2,
                    help="Imagenette cache sets used (1: half the features, which then fit in the page cache of a 24 GB machine)")
    ap.add_argument("--caltech", help="a checkout of MachineLearning2020/Homework2-Caltech101 at training/data.py's commit: Caltech 101's colour photographs join every fold's training set (issue 29)")
    ap.add_argument("--caltech-crops", type=int, default=2, help="cached crops per Caltech 101 photograph in each of its cache sets")
    ap.add_argument("--caltech-sets", type=int, choices=[1, 2], default=2, help="Caltech 101 cache sets (each with its own seed)")
    ap.add_argument("--save-every", type=int, default=100, help="steps between the checkpoints an interrupted fold resumes from")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--schedule", type=int, default=2700)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--weight-decay", type=float, default=1e-4)
    ap.add_argument("--dropout", type=float, default=0.1)
    ap.add_argument("--rebalance", type=float, default=0.5)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--even-weight", type=float, default=0.0,
                    help="weight of color.py's evenness loss (the decoded colour's gradients against the truth's; issue 29, item 4); 0: the shipped recipe")
    ap.add_argument("--even-relative", action="store_true", help="the evenness loss over each picture's mean chroma (colouring less gains nothing)")
    ap.add_argument("--critic-kl", type=float, default=0.0,
                    help="issue 29's semantic loss: weight of the KL of the frozen MobileNetV2 classifier's classes on the colorized crop from those on the true one (color_gpu.py's --kl; 0: off)")
    ap.add_argument("--critic-feat", type=float, default=0.0, help="the semantic loss's feature matching at 28, 14 and 7 across (color_gpu.py's --feat; 0: off)")
    ap.add_argument("--threads", type=int, default=max(1, os.cpu_count() or 1))
    ap.add_argument("--json", help="write the pooled and per-fold figures here")
    ap.add_argument("--checkpoints", help="a decoders.pt of training/color_gpu.py: evaluate its fold decoders instead of training them")
    ap.add_argument("--variant", default="", help="with --checkpoints: evaluate the ablation decoder fold0-VARIANT (fold 0 only)")
    ap.add_argument("--alpha", type=float, default=SHIPPED_DECODING["alpha"])
    ap.add_argument("--t", type=float, default=SHIPPED_DECODING["t"])
    ap.add_argument("--scale", type=float, default=SHIPPED_DECODING["scale"])
    ap.add_argument("--model", help="evaluate this exported .param (e.g. the shipped Models/vivify-color.param) on the folds' held-out photographs; nothing is trained")
    ap.add_argument("--ship", metavar="DIR", help="export fold 0's decoder trained under --out (the shipped decoder's photographs) to DIR for Models/make-builtin.sh, with the decoding of --alpha/--t/--scale; nothing is trained or evaluated")
    ap.add_argument("--choose-decoding", action="store_true", help="choose alpha, T and scale on the tune split with fold 0's decoder (from --checkpoints, or trained here) and export every fold with it")
    args = ap.parse_args()
    if (args.critic_kl > 0 or args.critic_feat > 0) and (args.imagenette or args.caltech):
        ap.error("--critic-kl/--critic-feat read the clean L* replayed for the shipped recipe's four cache sets only: leave out --imagenette/--caltech (or train with color_gpu.py, which has every photograph)")
    if args.ship:
        torch.set_num_threads(args.threads)
        ship(args)
        return
    if not os.access(args.vivify, os.X_OK):
        sys.exit(f"No vivify binary at '{args.vivify}'. Build it (swift build -c release --product vivify) or pass --vivify.")
    torch.set_num_threads(args.threads)
    encoder = None if args.checkpoints or args.model else Encoder(BACKBONE)
    imagenet = image_files(os.path.join(args.train, "ImageNet-sample900"))
    judge = Judge(args.shared)
    folds = args.only or list(range(args.folds))
    rows, results = [], {"folds": {}, "recipe": {k: getattr(args, k) for k in ["steps", "schedule", "batch", "lr", "dropout", "rebalance", "seed", "imagenette", "imagenette_crops", "imagenette_sets", "caltech", "caltech_crops", "caltech_sets", "even_weight", "even_relative", "critic_kl", "critic_feat"]}}
    decoding = dict(SHIPPED_DECODING, alpha=args.alpha, t=args.t, scale=args.scale)
    if args.checkpoints:
        meta = torch.load(args.checkpoints, map_location="cpu", weights_only=False)["meta"]
        results["recipe"] = {"checkpoints": args.checkpoints, "variant": args.variant, "trained": meta}
        if args.variant:
            folds = [0]
        if args.choose_decoding:
            a, t, sc, table = choose_decoding(args.checkpoints, imagenet, args)
            decoding = dict(alpha=a, t=t, scale=sc)
            results["decoding_table"] = table
            print(f"chose alpha {a}, T {t}, scale {sc} on the tune split", flush=True)
    results["decoding"] = decoding
    with tempfile.TemporaryDirectory() as work:
        for k in folds:
            if args.model:
                param = args.model
            elif args.checkpoints:
                param = checkpoint_fold(k, args, decoding)
            else:
                param = train_fold(k, args.folds, imagenet, args, encoder)
                if args.choose_decoding:
                    # The decoding chosen with fold 0's decoder on the tune split (trained first,
                    # if need be), every fold's decoder exported again with it.
                    if "decoding_table" not in results:
                        if k != 0:
                            train_fold(0, args.folds, imagenet, args, encoder)
                        a, t, sc, table = choose_decoding(None, imagenet, args, encoder)
                        decoding = dict(alpha=a, t=t, scale=sc)
                        results["decoding"], results["decoding_table"] = decoding, table
                        print(f"chose alpha {a}, T {t}, scale {sc} on the tune split", flush=True)
                    out = os.path.join(args.out, f"fold{k}-chosen")
                    os.makedirs(out, exist_ok=True)
                    param = os.path.join(out, "vivify-color.param")
                    export(encoder, trained_decoder(args.out, encoder, k).decoder, decoding["t"], decoding["scale"], decoding["alpha"],
                           param, os.path.join(out, "vivify-color.bin"))
                    write_sidecar(out)
            s, r = evaluate_colorizer(args.vivify, param, imagenet[k::args.folds], work, None, set(), judge, True)
            print_colorizer(f"fold {k} (held out, its own decoder)", s)
            results["folds"][k] = s
            u = unseen(r)
            results.setdefault("folds_unseen", {})[k] = summarize(u)
            print_colorizer(f"fold {k} without Imagenette's classes", results["folds_unseen"][k])
            rows += r
    results["pooled_unseen"] = summarize(unseen(rows))
    print_colorizer(f"all held-out photographs without Imagenette's classes ({results['pooled_unseen']['images']})", results["pooled_unseen"])
    total = summarize(rows)  # last, so that each row's rb_auc in the JSON is under the prior of all the held-out photographs
    print_colorizer(f"all {len(rows)} held-out ImageNet photographs, {len(folds)} folds pooled", total)
    results["pooled"] = total
    results["per_image"] = public(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1, default=lambda o: o.item() if hasattr(o, "item") else str(o))


if __name__ == "__main__":
    main()
