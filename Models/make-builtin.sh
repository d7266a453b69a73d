#!/usr/bin/env bash
# Rebuilds the built-in model bundles from a training run and embeds them in the binary.
#   training/fast2x.py --out training/runs/fast2x   (trains and exports vivify-fast-2x.param/.bin)
#   Models/make-builtin.sh training/runs/fast2x      (packs Models/vivify-fast-2x.wifm, embeds it)
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-training/runs/fast2x}
cp "$run/vivify-fast-2x.param" "$run/vivify-fast-2x.bin" Models/
swift build --product vivify
stage=$(mktemp -d)
cp Models/vivify-fast-2x.info.md "$stage/info.md"
.build/debug/vivify models pack --manifest Models/vivify-fast-2x.manifest.json \
  Models/vivify-fast-2x.param Models/vivify-fast-2x.bin "$stage/info.md" -o Models/vivify-fast-2x.wifm
rm -rf "$stage"
python3 training/embed_builtin.py Models/vivify-fast-2x.wifm
