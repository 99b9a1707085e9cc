#!/usr/bin/env bash
# Runs the layouts docs/planner.md compares the planner with on this machine (small preset, 1 and 2 ranks,
# plus memory-only 4- and 8-rank runs) and leaves one run directory per layout under OUT.
#   scripts/plan_measure.sh [OUT=runs/plan] [STEPS=6]
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/runs/plan}
steps=${2:-6}
bin=$here/build/src/cli/gridtrain
mkdir -p "$out"
run() {  # NAME RANKS DECK ARGS...
  local name=$1 n=$2 deck=$3
  shift 3
  echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$n" -gt 1 ]; then launcher=(mpiexec -n "$n"); else launcher=(); fi
  OMP_NUM_THREADS=1 "${launcher[@]}" "$bin" train --config "$deck" train.steps="$steps" output.dir="$out/$name" \
    output.peak_gflops=155 checkpoint.save_final=false "$@" >"$out/$name.log" 2>&1 || echo "   failed: $out/$name.log"
}
run r1_b4_m1 1 small train.micro_batch_size=4 train.micro_batches=1
run r1_b2_m2 1 small train.micro_batch_size=2 train.micro_batches=2
run r1_b4_m2 1 small train.micro_batch_size=4 train.micro_batches=2
run r1_b8_m1 1 small train.micro_batch_size=8 train.micro_batches=1
run dp2_b4_m1 2 small train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2
run dp2_b2_m2 2 small train.micro_batch_size=2 train.micro_batches=2 parallel.dp=2
run tp2_b4_m1 2 small train.micro_batch_size=4 train.micro_batches=1 parallel.tp=2
run tp2_b4_m2 2 small train.micro_batch_size=4 train.micro_batches=2 parallel.tp=2
run pp2_b4_m4 2 small train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2
run pp2_b4_m4_gpipe 2 small train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2 parallel.schedule=gpipe
run pp2_b2_m8 2 small train.micro_batch_size=2 train.micro_batches=8 parallel.pp=2
# memory only (oversubscribed: 4 and 8 ranks on 2 cores; their times mean nothing)
steps=2
run mem_tp2_dp2 4 small train.micro_batch_size=4 parallel.tp=2 parallel.dp=2
run mem_pp2_dp2 4 small train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2 parallel.dp=2
run mem_tp2_pp2_dp2 8 small train.micro_batch_size=4 train.micro_batches=4 parallel.tp=2 parallel.pp=2 parallel.dp=2
run mem_pp4_dp2 8 small train.micro_batch_size=2 train.micro_batches=8 parallel.pp=4 parallel.dp=2
