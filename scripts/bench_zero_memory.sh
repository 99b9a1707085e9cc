#!/usr/bin/env bash
# Per-rank model-state memory of gpt2-124m at dp = 1, 2, 4 for ZeRO stages 0..3 (docs/zero.md, docs/benchmarks.md).
# Memory figures do not depend on the machine's load; ranks may be oversubscribed. Peak RSS counts in full the
# shared pages a rank maps (the peers' shards it reads when ZeRO runs through shared memory on one node); PSS at
# the end of the run splits them among the ranks that map them. One short step per run
# (seq_len 64, micro-batch 1: the activations stay small, psi changes only by wpe: 64 instead of 1024 rows).
# Usage: [DPS="1 2 4"] scripts/bench_zero_memory.sh [build/src/cli/gridtrain] [mpiexec]  -> table on stdout and in $OUT
set -euo pipefail
bin=${1:-build/src/cli/gridtrain}
mpiexec=${2:-mpiexec}
out=${OUT:-bench_zero_memory.txt}
source "$(dirname "$0")/bench_lib.sh"
bench_setup
field() { json_field "$1" "$2" 1; }
table_head "gpt2-124m (seq_len 64), per-rank model state (MiB, allocated by the TrainState; largest over ranks) and peak RSS" \
  dp zero params grads optimizer "model state" "x zero 0" "peak RSS" "PSS at end"
for dp in ${DPS:-1 2 4}; do
  base=""
  for z in 0 1 2 3; do
    d="$work/dp${dp}_z${z}"
    "$mpiexec" -n "$dp" "$bin" train --config gpt2-124m parallel.dp="$dp" parallel.zero="$z" train.steps=1 \
      model.seq_len=64 train.micro_batch_size=1 output.peak_gflops=1 checkpoint.save_final=false \
      output.dir="$d" >"$d.log" 2>&1 || { echo "run dp=$dp zero=$z failed:"; tail -5 "$d.log"; exit 1; }
    s="$d/summary.json"
    p=$(field "$s" state_params_mb); g=$(field "$s" state_grads_mb); o=$(field "$s" state_optimizer_mb)
    t=$(python3 -c "print('%.1f' % ($p + $g + $o))")
    [ -n "$base" ] || base=$t
    table_row "$dp" "$z" "$p" "$g" "$o" "$t" "$(ratio "$t" "$base")" "$(field "$s" peak_rss_mb)" "$(field "$s" pss_end_mb)"
  done
done
