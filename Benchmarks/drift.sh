#!/bin/bash
# Colour drift through a shot (issue 29, item 4): each colour clip in ../shared/media/videos is
# turned grey, colorized with the built-in model with shot anchors on and off (--no-anchor),
# and measured with `vivify flicker OUT --truth ORIGINAL` (drift of ours, of the truth over the
# same regions, and of the difference; flicker). Figures in the README ("Shot anchors").
#
#   swift build -c release --product vivify && Benchmarks/drift.sh [CLIP ...]
#
# MODEL=path/to/vivify-color.param (or .wifm) measures another colorizer than the built-in one,
# e.g. a cross-validation fold's decoder from training/crossval.py. Less drift can be less
# colour: `python3 training/clip_colour.py --model M` gives the same clip's rebalanced AuC over
# grey and colourfulness against the truth's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
vivify=${VIVIFY:-$root/.build/release/vivify}
videos=$root/../shared/media/videos
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
colorize=(--colorize)
[ -n "${MODEL:-}" ] && colorize=(--colorize "$MODEL")
clips=("$@")
[ ${#clips[@]} -gt 0 ] || clips=(color_davis_bedroom_123f color_pexels_plane_clouds cartoon_big_buck_bunny_10s_360p vid4_walk_gt vid4_calendar_gt)
printf '%-34s %-9s %8s %8s %10s %8s\n' clip anchors drift truth difference flicker
for c in "${clips[@]}"; do
  truth=$videos/$c.mp4
  # Frame for frame (no duplicated or dropped frames), x264 CRF 12.
  ffmpeg -nostdin -v error -y -i "$truth" -fps_mode passthrough -vf format=gray,format=yuv420p -c:v libx264 -crf 12 -an "$work/grey.mp4"
  for mode in on off; do
    extra=()
    [ $mode = off ] && extra=(--no-anchor)
    "$vivify" run "$work/grey.mp4" "$work/out.mkv" "${colorize[@]}" --codec ffv1 --quiet -y "${extra[@]}"
    m=$("$vivify" flicker "$work/out.mkv" --truth "$truth")
    flicker=$(sed -n 's/^flicker \([0-9.]*\).*/\1/p' <<<"$m")
    drift=$(sed -n 's/.*; drift \([0-9.]*\).*/\1/p' <<<"$m")
    truthd=$(sed -n 's/^truth drift \([0-9.]*\).*/\1/p' <<<"$m")
    diff=$(sed -n 's/.*drift of the difference \([0-9.]*\).*/\1/p' <<<"$m")
    printf '%-34s %-9s %8s %8s %10s %8s\n' "$c" "$mode" "$drift" "$truthd" "$diff" "$flicker"
  done
done
