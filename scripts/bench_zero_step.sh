#!/usr/bin/env bash
# Step time of the `small` preset at dp=2 (one rank per core) for ZeRO stages 0..3 and the exposed-communication
# share of each (docs/zero.md). The four runs follow each other so that they share the machine's load; quote
# the ratios. Usage: scripts/bench_zero_step.sh [build/src/cli/gridtrain] [mpiexec]  -> table on stdout and in $OUT
set -euo pipefail
bin=${1:-build/src/cli/gridtrain}
mpiexec=${2:-mpiexec}
out=${OUT:-bench_zero_step.txt}
STEPS=${STEPS:-8}
source "$(dirname "$0")/bench_lib.sh"
bench_setup
field() { json_field "$1" "$2" 3; }
table_head "small, dp=2, $STEPS steps ($(date -u +%FT%TZ), load before $(cut -d' ' -f1-3 /proc/loadavg))" \
  zero ms/step "x zero 0" "exposed comm share" "comm dp ms" "compute ms"
base=""
for z in 0 1 2 3; do
  d="$work/z$z"
  "$mpiexec" -n 2 "$bin" train --config small parallel.dp=2 parallel.zero="$z" train.steps="$STEPS" \
    output.peak_gflops=1 checkpoint.save_final=false output.dir="$d" >"$d.log" 2>&1 ||
    { echo "run zero=$z failed:"; tail -5 "$d.log"; exit 1; }
  s="$d/summary.json"
  ms=$(field "$s" ms_per_step)
  [ -n "$base" ] || base=$ms
  table_row "$z" "$ms" "$(ratio "$ms" "$base")" "$(field "$s" exposed_comm_share)" "$(field "$s" comm_dp_ms)" \
    "$(field "$s" compute_ms)"
done
