#!/usr/bin/env bash
# Start-up time against model depth: a narrow model (d_model=16, 2 heads, T=16, V=64, micro-batch 1) of n_layer
# blocks trains one step (checkpoint.save_final=false), on one rank. CPU seconds (user + system, from /proc via
# GNU time's format) are the figure to compare on a shared machine; wall seconds are printed too. Linear start-up:
# CPU seconds per 1000 layers stay flat as n_layer doubles (a quadratic step doubles them). Also times the
# refusal of n_layer=1000000 (the memory floor, before any per-layer work).
#   scripts/startup_scaling.sh [GRIDTRAIN] [N_LAYER...]    (defaults: build/src/cli/gridtrain 1250 2500 5000 10000 20000)
#   SCALING_OUT=FILE   the table is also appended there (default runs/startup_scaling.md)
set -u
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${1:-$here/build/src/cli/gridtrain}
shift $(( $# >= 1 ? 1 : 0 ))
layers=("$@"); [ ${#layers[@]} -gt 0 ] || layers=(1250 2500 5000 10000 20000)
out=${SCALING_OUT:-$here/runs/startup_scaling.md}
w=$(mktemp -d "${TMPDIR:-/tmp}/gridtrain_scaling_XXXXXX"); trap 'rm -rf "$w"' EXIT
mkdir -p "$(dirname "$out")"
narrow=(model.d_model=16 model.n_head=2 model.seq_len=16 model.vocab_size=64 train.micro_batch_size=1 train.steps=1
        checkpoint.save_final=false output.log_every=1000 output.peak_gflops=1)
measure() {  # label args... -> "wall cpu exit"
  local t0 t1
  t0=$(date +%s.%N)
  /usr/bin/time -f "%U %S" -o "$w/time" timeout -k 5 600 "$bin" train --config tiny "$@" >"$w/log" 2>&1
  local code=$?
  t1=$(date +%s.%N)
  echo "$(echo "$t1 - $t0" | bc) $(awk '{print $1 + $2}' "$w/time" | tail -1) $code"
}
{
  echo
  echo "startup_scaling: $(date -u '+%Y-%m-%d %H:%M UTC'), $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores," \
       "load $(cut -d' ' -f1-3 /proc/loadavg); $bin"
  echo
  echo "| n_layer | wall s | CPU s | CPU s per 1000 layers | exit |"
  echo "|---|---|---|---|---|"
} | tee -a "$out"
for L in "${layers[@]}"; do
  read -r wall cpu code < <(measure model.n_layer="$L" "${narrow[@]}" output.dir="$w/r$L")
  printf '| %d | %.1f | %.2f | %.3f | %d |\n' "$L" "$wall" "$cpu" "$(echo "$cpu * 1000 / $L" | bc -l)" "$code" | tee -a "$out"
  rm -rf "$w/r$L"
done
read -r wall cpu code < <(measure model.n_layer=1000000 output.dir="$w/huge")
printf '| 1000000 (tiny, refused) | %.1f | %.2f | - | %d: %s |\n' "$wall" "$cpu" "$code" \
  "$(grep -m1 '^gridtrain: error' "$w/log" | cut -c1-90)" | tee -a "$out"
