#!/usr/bin/env bash
# Experiment 1 of issue 11 (dense baseline): dp=2 training and the all-reduce benchmark across emulated
# interconnect rates (scripts/emulate_cluster.sh), one rank per emulated node.
#   scripts/bench_interconnect.sh [OUT_DIR] [PRESET] [STEPS] [RATES...]
#   defaults: runs/interconnect small 6 none pcie4 100gbit 25gbit 1gbit; BENCH_MAX_MIB (64): largest all-reduce;
#   BENCH=0 skips the all-reduce benchmark; TRAIN_ARGS: extra overrides, e.g. "compress.method=topk"
# Writes OUT_DIR/<rate>/{allreduce.json,train/summary.json,train.log,bench.log}; then
#   python3 scripts/plot_interconnect.py OUT_DIR docs/experiments/interconnect.png
# draws the figure and prints the table. Needs root (network namespaces); build gridtrain and bench_allreduce first.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-runs/interconnect}" preset="${2:-small}" steps="${3:-6}"
shift $(( $# < 3 ? $# : 3 ))
rates=("$@")
[[ ${#rates[@]} -gt 0 ]] || rates=(none pcie4 100gbit 25gbit 1gbit)
bin="${GT_BUILD:-$here/build}"
mkdir -p "$out"
for r in "${rates[@]}"; do
  d="$out/$r"
  rm -rf "$d" && mkdir -p "$d"
  if [[ "${BENCH:-1}" != 0 ]]; then
    echo "== $r: all-reduce benchmark" >&2
    "$here/scripts/emulate_cluster.sh" --rate "$r" --keep-stats -- \
      "$bin/bench/bench_allreduce" --max-mib "${BENCH_MAX_MIB:-64}" --iters 3 --out "$d/allreduce.json" >"$d/bench.log" 2>&1
  fi
  echo "== $r: $preset dp=2, $steps steps ${TRAIN_ARGS:-}" >&2
  "$here/scripts/emulate_cluster.sh" --rate "$r" --keep-stats -- \
    "$bin/src/cli/gridtrain" --config "$preset" parallel.dp=2 train.steps="$steps" output.log_every=1 \
    output.dir="$d/train" ${TRAIN_ARGS:-} >"$d/train.log" 2>&1
  grep -E "comm mpi|step +$steps/" "$d/train.log" >&2 || true
done
