#!/usr/bin/env bash
# Experiments 2 and 3 of issue 11 (docs/experiments/convergence.md, docs/experiments/sparsity.md): validation loss
# against steps on real text (the common-licenses corpus, byte tokenizer) for
#   exp2: dp=2, dense fp32 vs top-k 4% and 1%, with and without error feedback
#   exp3: one rank, dense vs 2:4 SR-STE vs 2:4 ASP
#   exp2wall: dp=2 across an emulated link (LINK, default 200mbit; scripts/emulate_cluster.sh, needs root), every
#         step logged: dense fp32, dense bf16, top-k 4% and 1% with error feedback, back to back, for the
#         wall-time axis (scripts/plot_val_loss.py --wall)
# Each run writes runs/<out>/<name>/{metrics.jsonl,summary.json}; plot with scripts/plot_val_loss.py.
#   scripts/run_compress_experiments.sh OUT STEPS [exp2] [exp3] [exp2wall]
set -eu
out=$1 steps=$2; shift 2
bin=${GRIDTRAIN:-build/src/cli/gridtrain}
mkdir -p "$out"
data=$out/licenses.h5
[[ -f $data ]] || "$bin" prepare --tokenizer byte --out "$data" --seed 1 --quiet /usr/share/common-licenses
common=(train --config tiny train.steps="$steps" train.warmup_steps=20 data.source=hdf5 data.path="$data"
        data.val_every=$((steps / 12)) data.val_batches=8 output.log_every=$((steps / 6)) output.peak_gflops=1
        checkpoint.save_final=false)
run() {  # NP NAME overrides...  (with EMULATE set: NP ranks on NP emulated nodes, linked at $LINK)
  local np=$1 name=$2; shift 2
  echo "== $name ($(date -u +%H:%M:%S), load $(cut -d' ' -f1 /proc/loadavg))"
  local launch=(mpiexec -n "$np")
  [[ -n "${EMULATE:-}" ]] && launch=("$(dirname "$0")/emulate_cluster.sh" --nodes "$np" --rate "${LINK:-200mbit}" --)
  "${launch[@]}" "$bin" "${common[@]}" output.dir="$out/$name" "$@" >"$out/$name.log" 2>&1 \
    || { echo "FAILED: $name"; tail -3 "$out/$name.log"; }
}
for e in "$@"; do
  case $e in
    exp2)
      run 2 exp2_dense parallel.dp=2
      for d in 0.04 0.01; do
        run 2 "exp2_topk${d}_ef" parallel.dp=2 compress.method=topk compress.density=$d compress.error_feedback=true
        run 2 "exp2_topk${d}_noef" parallel.dp=2 compress.method=topk compress.density=$d compress.error_feedback=false
      done ;;
    exp2wall)
      for m in "dense parallel.dp=2" "bf16 parallel.dp=2 compress.method=bf16" \
               "topk0.04 parallel.dp=2 compress.method=topk compress.density=0.04" \
               "topk0.01 parallel.dp=2 compress.method=topk compress.density=0.01"; do
        read -r -a a <<<"$m"
        EMULATE=1 run 2 "wall_${a[0]}" "${a[@]:1}" output.log_every=1
      done ;;
    exp3)
      run 1 exp3_dense
      run 1 exp3_srste sparsity.pattern=2:4 sparsity.recipe=srste
      run 1 exp3_asp sparsity.pattern=2:4 sparsity.recipe=asp sparsity.asp_step=$((steps / 3)) ;;
  esac
done
