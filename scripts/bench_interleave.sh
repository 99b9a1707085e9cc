#!/usr/bin/env bash
# The interleaved 1F1B schedule on this machine against 1F1B, measured and predicted (docs/planner.md, "The
# engine's interleaved schedule"): pp = 2 on two ranks, v = 1 (1f1b) and v = 2 (interleaved), m = 4 and 8, for
# `tiny` and `small` (n_layer overridden to a multiple of pp v: 4 and 8). For every case, run back to back so that
# v = 1 and v = 2 share the machine's load: the median step time over the steps after the first two, the median
# time blocked in pipeline communication per step (metrics.jsonl's comm_pp_ms, the mean over the ranks: each
# stage's idle time waiting on the other, i.e. the measured bubble plus transfer), and the planner's step and
# bubble for the same layout on the calibrated cpu-2core description (`gridtrain plan --virtual-stages v`).
# Quote ratios, not absolute times: the machine is shared.
# Usage: scripts/bench_interleave.sh [build/src/cli/gridtrain]  -> table on stdout and in $OUT
# Env: OUT (bench_interleave.txt), STEPS (8), MODELS ("tiny small"), MS ("4 8"), MPIEXEC (mpiexec)
set -euo pipefail
bin=${1:-build/src/cli/gridtrain}
out=${OUT:-bench_interleave.txt}
STEPS=${STEPS:-8}
MODELS=${MODELS:-tiny small}
MS=${MS:-4 8}
mpiexec=${MPIEXEC:-mpiexec}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

# median over steps > 2 of a metrics.jsonl field
median() {
  python3 - "$1" "$2" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
vals = [r[sys.argv[2]] for r in rows if r.get("step", 0) > 2]
print("%.1f" % statistics.median(vals))
EOF
}
# the planner's step and bubble (ms) for the layout: its first fit in fp32, no recompute, zero 0
predict() {
  "$bin" plan --config "$1" --cluster cpu-2core --devices 2 --global-batch "$2" --pp 2 --tp 1 --micro-batch "$3" \
    --virtual-stages "$4" --precision fp32 --recompute none --zero 0 "model.n_layer=$5" --json |
    python3 -c "import json,sys; t=json.load(sys.stdin)['fits'][0]['time_ms']; print('%.1f %.1f' % (t['step'], t['bubble']))"
}
{
  echo "# pp=2 on 2 ranks, $STEPS steps, medians of steps 3..$STEPS ($(date -u +%FT%TZ), $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1-3 /proc/loadavg); shared machine)"
  echo "| model | n_layer | m | b | v | ms/step | pp blocked ms | v2/v1 measured | planner ms/step | planner bubble ms | v2/v1 planner |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
} | tee "$out"
for model in $MODELS; do
  if [ "$model" = tiny ]; then L=4; b=2; else L=8; b=1; fi
  for m in $MS; do
    base_ms="" base_pred=""
    for v in 1 2; do
      d="$work/${model}_m${m}_v${v}"
      sched=1f1b; [ "$v" -gt 1 ] && sched=interleaved
      "$mpiexec" -n 2 "$bin" train --config "$model" model.n_layer=$L parallel.pp=2 parallel.schedule=$sched \
        parallel.virtual_stages=$v train.micro_batches="$m" train.micro_batch_size=$b train.steps="$STEPS" \
        output.log_every=1 output.peak_gflops=1 checkpoint.save_final=false output.dir="$d" >"$d.log" 2>&1 ||
        { echo "run $model m=$m v=$v failed:"; tail -5 "$d.log"; exit 1; }
      ms=$(median "$d/metrics.jsonl" ms)
      pp=$(median "$d/metrics.jsonl" comm_pp_ms)
      read -r pred bubble <<<"$(predict "$model" $((m * b)) $b $v $L)"
      [ -n "$base_ms" ] || { base_ms=$ms; base_pred=$pred; }
      r=$(python3 -c "print('%.2f' % ($ms / $base_ms))")
      rp=$(python3 -c "print('%.2f' % ($pred / $base_pred))")
      echo "| $model | $L | $m | $b | $v | $ms | $pp | $r | $pred | $bubble | $rp |" | tee -a "$out"
    done
  done
done
