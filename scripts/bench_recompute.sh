#!/usr/bin/env bash
# Activation recomputation on one rank (docs/zero.md, docs/benchmarks.md): gpt2-124m (seq_len 1024), micro-batch
# B (default 1), STEPS steps (default 2) with train.recompute = none, selective, full, run back to back so that
# they share the machine's load; peak RSS, the activation ledger (kept per slot + shared work buffers) and the
# mean step time with its forward/backward split, from summary.json. Quote ratios, not absolute times, on a
# shared machine.
# Usage: scripts/bench_recompute.sh [build/src/cli/gridtrain]  -> table on stdout and in $OUT
set -euo pipefail
bin=${1:-build/src/cli/gridtrain}
out=${OUT:-bench_recompute.txt}
B=${B:-1}
STEPS=${STEPS:-2}
source "$(dirname "$0")/bench_lib.sh"
bench_setup
field() { json_field "$1" "$2" 1; }
table_head "gpt2-124m seq_len 1024, micro-batch $B, $STEPS steps, one rank, OMP_NUM_THREADS=$OMP_NUM_THREADS ($(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg))" \
  recompute "kept activations MiB" "work MiB" "peak RSS MiB" ms/step "forward ms" "backward ms" "step x none"
base=""
for rc in none selective full; do
  d="$work/$rc"
  "$bin" train --config gpt2-124m train.recompute="$rc" train.steps="$STEPS" train.micro_batch_size="$B" \
    output.peak_gflops=1 checkpoint.save_final=false output.dir="$d" >"$d.log" 2>&1 ||
    { echo "run recompute=$rc failed:"; tail -5 "$d.log"; exit 1; }
  s="$d/summary.json"
  act=$(grep -o "kept [0-9.]*, work [0-9.]*" "$d.log" | head -1)
  kept=$(echo "$act" | awk '{print $2}' | tr -d ,); wrk=$(echo "$act" | awk '{print $4}')
  ms=$(field "$s" ms_per_step)
  [ -n "$base" ] || base=$ms
  table_row "$rc" "$kept" "$wrk" "$(field "$s" peak_rss_mb)" "$ms" "$(field "$s" forward_ms)" "$(field "$s" backward_ms)" \
    "$(ratio "$ms" "$base")"
done
