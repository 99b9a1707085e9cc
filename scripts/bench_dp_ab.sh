#!/usr/bin/env bash
# A/B of the `small` step time at dp=2 (one rank per core) between two gridtrain binaries, interleaved (old, new,
# old, new, ...) so both see the same load: fp32 and bf16, ZeRO 0 and 2, ROUNDS rounds of STEPS steps. Prints
# each run's ms/step (summary.json: the mean over the steps) and the new/old ratio per pair, and writes them to
# $OUT (issue 20: the data-parallel package must not slow the step).
#   scripts/bench_dp_ab.sh OLD_BIN NEW_BIN [mpiexec]
set -euo pipefail
old=$1 new=$2 mpiexec=${3:-mpiexec}
out=${OUT:-bench_dp_ab.txt}
STEPS=${STEPS:-6} ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ms() {  # bin precision zero -> ms/step
  local d="$work/run"
  rm -rf "$d"
  "$mpiexec" -n 2 "$1" train --config small parallel.dp=2 train.precision="$2" parallel.zero="$3" \
    train.steps="$STEPS" output.peak_gflops=1 checkpoint.save_final=false output.dir="$d" >"$work/log" 2>&1 ||
    { echo "run failed: $1 $2 zero=$3" >&2; tail -5 "$work/log" >&2; exit 1; }
  python3 -c "import json,sys; print('%.1f' % json.load(open(sys.argv[1]))['ms_per_step'])" "$d/summary.json"
}
{
  echo "# small dp=2, $STEPS steps, $(date -u +%FT%TZ), $(lscpu | grep -m1 'Model name' | cut -d: -f2 | xargs), $(nproc) cpus, load $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "# old $old | new $new"
  echo "| precision | zero | round | old ms/step | new ms/step | new/old |"
  echo "|---|---|---|---|---|---|"
} | tee "$out"
for r in $(seq 1 "$ROUNDS"); do
  for p in fp32 bf16; do
    for z in 0 2; do
      a=$(ms "$old" "$p" "$z")
      b=$(ms "$new" "$p" "$z")
      echo "| $p | $z | $r | $a | $b | $(python3 -c "print('%.3f' % ($b / $a))") |" | tee -a "$out"
    done
  done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out"
