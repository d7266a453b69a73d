#!/usr/bin/env bash
# Rebuilds the built-in model bundles from training runs and embeds them in the binary.
#   python3 training/fast2x.py --out training/runs/fast2x   (trains, exports vivify-fast-2x.param/.bin)
#   python3 training/color.py --out training/runs/color     (trains, exports vivify-color.param/.bin)
#   python3 training/fusion.py train                        (trains, exports vivify-guide.param/.bin)
#   Models/make-builtin.sh [FAST2X_RUN] [COLOR_RUN] [FUSION_RUN]
#                                                            (copies them here, packs Models/*.wifm
#                                                             with manifest and info.md, embeds them
#                                                             and the colour guide's fusion)
# A model whose run folder holds no export keeps its current bundle (zip timestamps would
# otherwise change its hash for nothing).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=("${1:-training/runs/fast2x}" "${2:-training/runs/color}")
names=(vivify-fast-2x vivify-color)
swift build --product vivify
for i in 0 1; do
  name=${names[$i]} run=${runs[$i]}
  if [ -f "$run/$name.param" ] || [ ! -f "Models/$name.wifm" ]; then
    if [ -f "$run/$name.param" ]; then cp "$run/$name.param" "$run/$name.bin" Models/; fi
    # A colorizer's description beside its .param (for bench-model and direct use), and the
    # PyTorch output on the test pattern for the engine's parity test.
    if [ -f "$run/$name.json" ]; then cp "$run/$name.json" Models/; fi
    if [ -f "$run/$name.reference.bin" ]; then cp "$run/$name.reference.bin" Models/; fi
    stage=$(mktemp -d)
    cp "Models/$name.info.md" "$stage/info.md"
    .build/debug/vivify models pack --manifest "Models/$name.manifest.json" \
      "Models/$name.param" "Models/$name.bin" "$stage/info.md" -o "Models/$name.wifm"
    rm -rf "$stage"
  fi
done
fusion=${3:-training/runs/fusion}
if [ -f "$fusion/vivify-guide.param" ]; then
  cp "$fusion/vivify-guide.param" "$fusion/vivify-guide.bin" "$fusion/vivify-guide.reference.json" Models/
fi
python3 training/embed_builtin.py --fusion Models/vivify-guide.param Models/vivify-guide.bin \
  Models/vivify-fast-2x.wifm Models/vivify-color.wifm
