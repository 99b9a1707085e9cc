#!/usr/bin/env bash
# Memory validation of the planner on this machine (docs/planner.md, "Validation on this machine"): peak RSS of
# one training step of the small preset in 14 layouts (1, 2, 4 and 8 ranks; dp, tp, pp, ZeRO 1/2, micro-batch
# counts, GPipe) against `gridtrain plan` plus the process baseline, measured once from a run of a model too small
# to matter. Memory does not depend on the machine's load, so oversubscribed 4- and 8-rank runs are valid here.
# The DP all-reduce runs as parallel.allreduce=ring (in place): with shm the gradients live in a node-shared
# window and a rank's RSS also counts the pages of its peers' windows it reads (about 40 MiB per peer here), which
# is the same physical memory counted twice, not memory the rank needs; with mpi MPICH adds temporary buffers
# (+13 MiB at dp 2). Both are noted in docs/planner.md.
#   scripts/plan_memory.sh [OUT=runs/plan_memory] [--doc]   (--doc: write the table into docs/planner.md)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/runs/plan_memory}
doc=${2:-}
bin=$here/build/src/cli/gridtrain
mkdir -p "$out"
run() {  # NAME RANKS ARGS...
  local name=$1 n=$2
  shift 2
  echo "== $name ($(cut -d' ' -f1-3 /proc/loadavg))"
  if [ "$n" -gt 1 ]; then launcher=(mpiexec -n "$n"); else launcher=(); fi
  OMP_NUM_THREADS=1 "${launcher[@]}" "$bin" train --config small train.steps=1 output.dir="$out/$name" \
    output.peak_gflops=155 checkpoint.save_final=false output.log_every=1 parallel.allreduce=ring "$@" >"$out/$name.log" 2>&1 ||
    echo "   failed: $out/$name.log"
}
# the baseline: MPI, Kokkos, BLAS/oneDNN, the start-up sgemm measurement, with a model of a few kB
run baseline 1 model.n_layer=1 model.d_model=32 model.n_head=1 model.seq_len=16 model.vocab_size=64 \
  train.micro_batch_size=1
run r1_b4_m1 1 train.micro_batch_size=4 train.micro_batches=1
run r1_b8_m2 1 train.micro_batch_size=8 train.micro_batches=2
run dp2_b4 2 train.micro_batch_size=4 parallel.dp=2
run dp2_b4_zero1 2 train.micro_batch_size=4 parallel.dp=2 parallel.zero=1
run dp2_b4_zero2 2 train.micro_batch_size=4 parallel.dp=2 parallel.zero=2
run tp2_b4 2 train.micro_batch_size=4 parallel.tp=2
run pp2_b4_m4 2 train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2
run pp2_b4_m4_gpipe 2 train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2 parallel.schedule=gpipe
run dp4_b4 4 train.micro_batch_size=4 parallel.dp=4
run dp4_b4_zero2 4 train.micro_batch_size=4 parallel.dp=4 parallel.zero=2
run tp2_dp2_b4 4 train.micro_batch_size=4 parallel.tp=2 parallel.dp=2
run pp2_dp2_b4_m4 4 train.micro_batch_size=4 train.micro_batches=4 parallel.pp=2 parallel.dp=2
run tp2_pp2_dp2_b4_m4 8 train.micro_batch_size=4 train.micro_batches=4 parallel.tp=2 parallel.pp=2 parallel.dp=2
run pp4_dp2_b2_m8 8 train.micro_batch_size=2 train.micro_batches=8 parallel.pp=4 parallel.dp=2
args=()
[ "$doc" = "--doc" ] && args=(--doc "$here/docs/planner.md")
python3 "$here/scripts/plan_compare.py" "$bin" "$out" --kind memory --baseline-run "$out/baseline" "${args[@]}" \
  --note "$(date -u +%Y-%m-%d), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load $(cut -d' ' -f1-3 /proc/loadavg) at the end; \`scripts/plan_memory.sh runs/plan_memory --doc\`"
