#!/usr/bin/env bash
# Step-time validation of the planner on this machine (docs/planner.md, "Validation on this machine"): 15 runs of
# the small preset that use one core per rank (1 and 2 ranks: micro-batch sizes and counts, dp2, ZeRO 1/2, tp2,
# pp2 with 1F1B and GPipe, bf16 where the build trains it), STEPS steps each, then predicted (gridtrain plan,
# inputs/clusters/cpu-2core.toml, nothing fitted to these runs) against measured ms_per_step, written into
# docs/planner.md with --doc. Also fits a description from the same runs (gridtrain plan --calibrate, plus
# bench_allreduce's figures when runs/bench/allreduce.json exists) into OUT/calibrated.toml and prints the
# in-sample comparison with it. Needs an IDLE machine (times). Each run is capped at 90 s and no run starts after
# 10 minutes, so the script ends within 12 minutes (6.5 minutes with 2 steps on a machine loaded 18 on 2 cores).
#   scripts/plan_measure.sh [OUT=runs/plan] [STEPS=6] [--doc]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/runs/plan}
steps=${2:-6}
doc=${3:-}
bin=$here/build/src/cli/gridtrain
mkdir -p "$out"
start=$(date +%s)
run() {  # NAME RANKS ARGS...
  local name=$1 n=$2
  shift 2
  rm -rf "${out:?}/$name"
  if [ $(( $(date +%s) - start )) -gt 600 ]; then  # the whole script stays under 12 minutes
    echo "== $name: skipped (10 minutes spent: is the machine idle?)"
    return
  fi
  echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$n" -gt 1 ]; then launcher=(mpiexec -n "$n"); else launcher=(); fi
  OMP_NUM_THREADS=1 timeout 90 "${launcher[@]}" "$bin" train --config small train.steps="$steps" output.dir="$out/$name" \
    output.peak_gflops=155 checkpoint.save_final=false output.log_every=1000 "$@" >"$out/$name.log" 2>&1 ||
    echo "   not run: $(grep -m1 'error' "$out/$name.log" || tail -1 "$out/$name.log")"
}
run r1_b4_m1 1 train.micro_batch_size=4 train.micro_batches=1
run r1_b2_m2 1 train.micro_batch_size=2 train.micro_batches=2
run r1_b4_m2 1 train.micro_batch_size=4 train.micro_batches=2
run r1_b8_m1 1 train.micro_batch_size=8 train.micro_batches=1
run dp2_b4_m1 2 train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2
run dp2_b2_m2 2 train.micro_batch_size=2 train.micro_batches=2 parallel.dp=2
run dp2_b4_zero1 2 train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2 parallel.zero=1
run dp2_b4_zero2 2 train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2 parallel.zero=2
run tp2_b4_m1 2 train.micro_batch_size=4 train.micro_batches=1 parallel.tp=2
run tp2_b4_m2 2 train.micro_batch_size=4 train.micro_batches=2 parallel.tp=2
run pp2_b4_m4 2 train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2
run pp2_b4_m4_gpipe 2 train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2 parallel.schedule=gpipe
run pp2_b2_m8 2 train.micro_batch_size=2 train.micro_batches=8 parallel.pp=2
# bf16 (issue 9): refused with one error line by builds without it, and then left out of the table
run r1_b4_m1_bf16 1 train.micro_batch_size=4 train.micro_batches=1 train.precision=bf16
run dp2_b4_m1_bf16 2 train.micro_batch_size=4 train.micro_batches=1 parallel.dp=2 train.precision=bf16
echo "runs took $(( $(date +%s) - start )) s"

note="$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $steps steps per run (the first left out of ms_per_step), load $(cut -d' ' -f1-3 /proc/loadavg) at the end; \`scripts/plan_measure.sh runs/plan $steps --doc\`"
args=()
[ "$doc" = "--doc" ] && args=(--doc "$here/docs/planner.md")
python3 "$here/scripts/plan_compare.py" "$bin" "$out" --kind time --cluster cpu-2core --note "$note" "${args[@]}"
# In-sample: a description fitted to these very runs (and the all-reduce benchmark when there is one).
dirs=()
for d in "$out"/*/; do [ -f "$d/summary.json" ] && dirs+=("${d%/}"); done
bench=()
[ -f "$here/runs/bench/allreduce.json" ] && bench=("$here/runs/bench/allreduce.json")
if "$bin" plan --calibrate "${dirs[@]}" "${bench[@]}" --out "$out/calibrated.toml"; then
  echo "calibrated description: $out/calibrated.toml"
  grep '^#' "$out/calibrated.toml"
  [ "$doc" = "--doc" ] && args=(--doc "$here/docs/planner.md" --block time_calibrated)
  python3 "$here/scripts/plan_compare.py" "$bin" "$out" --kind time --cluster "$out/calibrated.toml" \
    --note "In-sample (fitted to the same runs): $note" "${args[@]}"
fi
echo "total $(( $(date +%s) - start )) s"
