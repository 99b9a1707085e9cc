#!/usr/bin/env bash
# Mixed precision on one core (issue 9): gridtrain fp32 and bf16 against PyTorch 1.13 fp32 and its CPU bf16
# autocast, on the same model, run back to back in one invocation; activation memory (the ledger and peak RSS)
# in fp32 and bf16; dp=2 weak scaling in bf16.
#   scripts/bench_precision.sh [steps] [gpt2_batch] [rounds]     figures: runs/bench/precision/, table on stdout
# Time per step is given twice: wall clock (summary.json's ms_per_step, first step left out; what an idle core
# would show) and CPU time (what survives a machine shared with other jobs: a process descheduled for others
# accrues none). gridtrain's CPU time per step = (CPU of a run of 1 + steps steps - CPU of a run of 1 step) /
# steps, from /usr/bin/time, so start-up (peak measurement, model init) cancels; PyTorch's from process_time()
# around each step after a warm-up one. One rank pinned to core 0 (taskset). `small` runs `rounds` interleaved
# rounds, gpt2-124m one round at micro-batch gpt2_batch (default 1: the preset's 4 x 1024 tokens take ~30 s a
# step on an idle core). Activation memory measured = peak RSS - the model-state ledger - the process baseline
# (58.4 MiB, docs/planner.md). Load averages are written with each run (load.txt).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${GRIDTRAIN_BIN:-$here/build/src/cli/gridtrain}
steps=${1:-3}
gpt2_batch=${2:-1}
rounds=${3:-2}
out=$here/runs/bench/precision
rm -rf "$out" && mkdir -p "$out"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
load() { cut -d' ' -f1-3 /proc/loadavg; }
gt_one() {  # dir steps preset precision extra...: CPU seconds (user + sys) into dir.cpu
  local dir=$1 n=$2 preset=$3 prec=$4; shift 4
  /usr/bin/time -f "%U %S" -o "$dir.time" taskset -c 0 "$bin" train --config "$preset" train.steps="$n" \
    train.precision="$prec" output.log_every=1000 output.dir="$dir" checkpoint.save_final=false "$@" >"$dir.log" 2>&1
  awk '{print $1 + $2}' "$dir.time" >"$dir.cpu"
}
gt_run() {  # name preset precision extra...
  local name=$1 preset=$2 prec=$3; shift 3
  gt_one "$out/$name" $((steps + 1)) "$preset" "$prec" "$@"
  gt_one "$out/${name}_1step" 1 "$preset" "$prec" "$@"
  echo "$name load $(load)" >>"$out/load.txt"
}
pt_run() {  # name preset autocast batch
  taskset -c 0 /usr/bin/python3 "$here/scripts/bench_pytorch.py" --preset "$2" --threads 1 --steps "$steps" \
    --autocast "$3" --batch "$4" --out "$out/$1.jsonl" >/dev/null
  echo "$1 load $(load)" >>"$out/load.txt"
}
echo "start $(date -u +%FT%TZ) load $(load) | $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2) | $(getconf _NPROCESSORS_ONLN) cpus" \
  | tee "$out/load.txt"
for r in $(seq 1 "$rounds"); do
  gt_run "gt_small_fp32_r$r" small fp32
  gt_run "gt_small_bf16_r$r" small bf16
  pt_run "pt_small_fp32_r$r" small none 4
  pt_run "pt_small_bf16_r$r" small bf16 4
done
g=(train.micro_batch_size="$gpt2_batch")
gt_run gt_gpt2_fp32_r1 gpt2-124m fp32 "${g[@]}"
gt_run gt_gpt2_bf16_r1 gpt2-124m bf16 "${g[@]}"
pt_run pt_gpt2_fp32_r1 gpt2-124m none "$gpt2_batch"
pt_run pt_gpt2_bf16_r1 gpt2-124m bf16 "$gpt2_batch"
# dp=2 weak scaling in bf16: the same per-rank batch on two ranks (cores 0 and 1) against one rank, back to back
gt_one "$out/gt_small_bf16_dp1" $((steps + 1)) small bf16
/usr/bin/time -f "%U %S" -o "$out/gt_small_bf16_dp2.time" mpiexec -n 2 --bind-to core "$bin" train --config small \
  train.steps=$((steps + 1)) train.precision=bf16 parallel.dp=2 output.log_every=1000 output.dir="$out/gt_small_bf16_dp2" \
  checkpoint.save_final=false >"$out/gt_small_bf16_dp2.log" 2>&1
echo "gt_small_bf16_dp2 load $(load)" >>"$out/load.txt"
echo "end $(date -u +%FT%TZ) load $(load)" >>"$out/load.txt"
/usr/bin/python3 "$here/scripts/bench_precision_table.py" "$out" "$rounds" "$steps"
cat "$out/load.txt"
