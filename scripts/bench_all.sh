#!/usr/bin/env bash
# Every benchmark of the issues' targets, one after another, on an idle machine (nothing else running: each
# figure needs one rank per core). Output: runs/bench/*.json|txt and runs/bench/all.log (with load averages).
#   scripts/bench_all.sh [what ...]     what: step pytorch kernels allreduce scaling checkpoint data sweep
#                                       (default: all of them, in that order)
# PyTorch figures need Debian's python3-torch (`apt-get install python3-torch`); they are skipped without it.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GRIDTRAIN_BUILD:-$here/build}
out=$here/runs/bench
mkdir -p "$out"
log=$out/all.log
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
what=("$@")
[ ${#what[@]} -eq 0 ] && what=(step pytorch kernels allreduce scaling checkpoint data sweep)
say() { echo "== $* | $(date -u +%FT%TZ) | load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$log"; }
has_torch() { /usr/bin/python3 -c "import torch" 2>/dev/null; }

cd "$here"
for w in "${what[@]}"; do
  say "$w"
  case $w in
    step)  # each preset in its own process so that its peak RSS is its own
      for p in tiny small gpt2-124m; do
        "$build/bench/bench_step" --presets "$p" --steps 5 --out "$out/step_$p.json" | tee -a "$log"
      done ;;
    pytorch)
      if has_torch; then
        rm -f "$out/pytorch_step.jsonl"  # as installed, then with the AVX-512 OpenBLAS kernels forced
        /usr/bin/python3 scripts/bench_pytorch.py --preset small --threads 1 --steps 5 --out "$out/pytorch_step.jsonl" \
          | tee -a "$log"
        OPENBLAS_CORETYPE=SkylakeX /usr/bin/python3 scripts/bench_pytorch.py --preset small --threads 1 --steps 5 \
          --out "$out/pytorch_step.jsonl" | tee -a "$log"
      else echo "python3-torch not installed: skipped" | tee -a "$log"; fi ;;
    kernels) "$build/bench/bench_kernels" --reps 20 --out "$out/kernels.json" | tail -25 | tee -a "$log" ;;
    allreduce)
      mpiexec -n 2 --bind-to core "$build/bench/bench_allreduce" --max-mib 256 --iters 7 --out "$out/allreduce.json" \
        | tee -a "$log" ;;
    scaling) "$here/scripts/bench_scaling.sh" 8 3 | tee -a "$log" ;;
    checkpoint)
      mpiexec -n 2 "$build/bench/bench_checkpoint" --reps 3 --dir "$out/ckpt" --out "$out/checkpoint.txt" \
        | tail -20 | tee -a "$log" ;;
    data)
      if [ -x "$build/bench/bench_data" ]; then "$build/bench/bench_data" --out "$out/data.json" | tee -a "$log"
      else echo "bench_data not built: skipped" | tee -a "$log"; fi ;;
    sweep)  # a real weak-scaling sweep through the local Slurm cluster, table and plots
      "$here/scripts/slurm_local.sh" start >/dev/null
      eval "$("$here/scripts/slurm_local.sh" env)"
      rm -rf "$out/sweep_weak"
      "$here/scripts/sweep.py" --kind weak --ranks 1,2 --layouts 1x1,2x1 --deck small --steps 8 --out "$out/sweep_weak" --wait --collect \
        2>&1 | tail -12 | tee -a "$log" || true
      "$here/scripts/slurm_local.sh" stop >/dev/null ;;
    *) echo "unknown benchmark '$w'" >&2; exit 2 ;;
  esac
done
say "done"
