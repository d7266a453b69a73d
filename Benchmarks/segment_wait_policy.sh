#!/usr/bin/env bash
# Segmented against unsegmented runs of one colorize + upscale job, with OpenMP's default
# (spinning) wait policy and the passive one vivify now chooses, under a loaded machine
# (issue 33: segmented runs stalled). Prints the seconds of each run and the medians' ratios.
#
#   Benchmarks/segment_wait_policy.sh [CLIP] [REPEATS] [LOAD]
#
# CLIP defaults to the 1950s clip in ../shared/media/videos, REPEATS to 3, LOAD to 2 busy
# loops (the machine's other work; 0 for none). Segments of 3 s.
set -euo pipefail
cd "$(dirname "$0")/.."
clip=${1:-../shared/media/videos/bw_a-bomb_blast_effects_part_deepremaster.mp4}
repeats=${2:-3}
load=${3:-2}
swift build -c release --product vivify >/dev/null
vivify=$PWD/.build/release/vivify
scratch=$(mktemp -d)
busy=()
for _ in $(seq 1 "$load"); do (while :; do :; done) & busy+=($!); done
trap 'kill ${busy[*]:-} 2>/dev/null || true; rm -rf "$scratch"' EXIT
declare -A times
for _ in $(seq 1 "$repeats"); do
  for cfg in "0 active" "3 active" "3 passive" "0 passive"; do
    set -- $cfg
    start=$(date +%s.%N)
    OMP_WAIT_POLICY=$2 "$vivify" run "$clip" "$scratch/out.mp4" --colorize --upscale --segment-seconds "$1" --quiet -y
    t=$(echo "$(date +%s.%N) - $start" | bc)
    echo "segments=$1 wait=$2: $t s"
    times[$1-$2]+="$t "
  done
done
median() { printf '%s\n' $1 | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for policy in active passive; do
  s=$(median "${times[3-$policy]}"); u=$(median "${times[0-$policy]}")
  echo "wait=$policy: segmented $s s, unsegmented $u s, ratio $(echo "scale=2; $s / $u" | bc)"
done
