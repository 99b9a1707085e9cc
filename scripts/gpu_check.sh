#!/usr/bin/env bash
# One prepared command for a machine with an NVIDIA GPU (the project is sometimes lent one H200 with 16 cores for
# about 15 minutes in all): builds Kokkos (CUDA) and all of gridtrain with every core, runs the CUDA ctest suite,
# bench_step on tiny/small/gpt2-124m, a CPU-vs-GPU loss comparison of the same run, and nvidia-smi; everything goes
# under one folder ($OUT when set, else runs/gpu_check). Fail-soft: each stage logs, records its exit code and
# time in summary.txt and the next one runs anyway; each stage has its own time limit and the whole script a
# budget, so it ends inside the device tool's 600 s per call.
#
#   scripts/gpu_check.sh [--stages build,test,bench,compare] [--budget SECONDS]
#
# The device machine reaches nothing outside itself: what it lacks travels in .gpu-bundle/ (prepared on this
# side by scripts/gpu_bundle.sh, ignored by git, named in the run's `carry`): the Kokkos source and patch, the
# Debian packages of MPICH, parallel HDF5, OpenBLAS and GoogleTest (unpacked into a prefix, never into /), and the
# CPU build's reference losses. With the build outputs kept between two calls on a warm machine, `--stages build`
# then `--stages test,bench,compare` splits the work over two calls.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$here/runs/gpu_check}
bundle=${GRIDTRAIN_GPU_BUNDLE:-$here/.gpu-bundle}
stages=build,test,bench,compare
budget=570
while [ $# -gt 0 ]; do
  case "$1" in
    --stages) stages=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "gpu_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
t_start=$(date +%s)
summary=$out/summary.txt
jobs=$(nproc)
build=$here/build-gpu
echo "gpu_check $(date -u +%FT%TZ) stages=$stages budget=${budget}s cores=$jobs commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null)" >>"$summary"
want() { [[ ",$stages," == *",$1,"* ]]; }

# stage NAME LIMIT LOG CMD...: runs CMD with at most LIMIT seconds (less if the budget is nearly spent), output
# appended to LOG, one line "NAME rc=.. s=.." in summary.txt. Never stops the script.
stage() {
  local name=$1 limit=$2 log=$3
  shift 3
  local left=$((budget - ($(date +%s) - t_start)))
  [ "$left" -lt "$limit" ] && limit=$left
  if [ "$limit" -le 5 ]; then echo "$name skipped (budget spent)" >>"$summary"; return 1; fi
  local t0=$(date +%s)
  echo "===== $name (limit ${limit}s) $(date -u +%T)" >>"$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
  local rc=$?
  echo "$name rc=$rc s=$(( $(date +%s) - t0 ))$([ $rc -eq 124 ] && echo ' TIMED OUT')" >>"$summary"
  return $rc
}

nvidia-smi >"$out/nvidia-smi.txt" 2>&1 || echo "no nvidia-smi" >>"$out/nvidia-smi.txt"
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv >>"$out/nvidia-smi.txt" 2>&1

# ---- dependencies: the carried Debian packages, unpacked into a prefix ---------------------------------------
deps=/opt/gridtrain-deps
cmake_deps=()
setup_deps() {
  if command -v mpicxx >/dev/null && [ -f /usr/include/hdf5/mpich/hdf5.h ]; then echo "system MPI and HDF5 used"; return 0; fi
  [ -d "$bundle/debs" ] || { echo "no MPI on this machine and no $bundle/debs (run scripts/gpu_bundle.sh here first)"; return 1; }
  mkdir -p "$deps"
  for f in "$bundle"/debs/*.deb; do dpkg -x "$f" "$deps" || return 1; done
  local lib=$deps/usr/lib/x86_64-linux-gnu
  # Debian's wrappers and alternatives point at /usr: repoint them to the prefix.
  for w in mpicc.mpich mpicxx.mpich; do
    sed -i "s|/usr/|$deps/usr/|g" "$deps/usr/bin/$w"
  done
  ln -sf mpicc.mpich "$deps/usr/bin/mpicc"; ln -sf mpicxx.mpich "$deps/usr/bin/mpicxx"
  ln -sf mpiexec.hydra "$deps/usr/bin/mpiexec"
  ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
  ln -sf openblas-pthread/libopenblas.so "$lib/libopenblas.so"
  ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
  echo "unpacked $(ls "$bundle"/debs/*.deb | wc -l) packages into $deps"
}
if want build || want test || want bench || want compare; then
  t0=$(date +%s)
  setup_deps >>"$out/build.log" 2>&1
  echo "deps rc=$? s=$(( $(date +%s) - t0 ))" >>"$summary"
  if [ -d "$deps/usr" ]; then
    lib=$deps/usr/lib/x86_64-linux-gnu
    export PATH=$deps/usr/bin:$PATH
    export LD_LIBRARY_PATH=$lib:$lib/hdf5/mpich:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export HYDRA_LAUNCHER=fork   # one machine: no ssh
    cmake_deps=("-DMPI_C_COMPILER=$deps/usr/bin/mpicc.mpich" "-DMPI_CXX_COMPILER=$deps/usr/bin/mpicxx.mpich"
                "-DMPIEXEC_EXECUTABLE=$deps/usr/bin/mpiexec.hydra"
                "-DHDF5_PAR_INCLUDE_DIR=$deps/usr/include/hdf5/mpich" "-DHDF5_PAR_LIBRARY=$lib/hdf5/mpich/libhdf5.so"
                "-DBLAS_LIBRARIES=$lib/openblas-pthread/libopenblas.so"
                "-DCBLAS_INCLUDE_DIR=$deps/usr/include/x86_64-linux-gnu/openblas-pthread"
                "-DGTest_DIR=$lib/cmake/GTest" "-DCMAKE_PREFIX_PATH=$deps/usr")
  fi
fi

# ---- build: Kokkos CUDA (cached) and every gridtrain target ---------------------------------------------------
if want build; then
  third=$bundle/third_party
  [ -d "$third" ] || third=$here/../shared/third_party
  stage build 420 "$out/build.log" env GRIDTRAIN_GPU_BUILD="$build" "$here/scripts/check_gpu_build.sh" \
    --third-party "$third" --jobs "$jobs" -- "${cmake_deps[@]}"
fi
gridtrain=$build/src/cli/gridtrain

# ---- test: the ctest suite of the CUDA build ---------------------------------------------------------------
if want test && [ -d "$build" ]; then
  ( cd "$build" && stage ctest 150 "$out/ctest.log" ctest --output-on-failure -j 4 --timeout 60 -LE "slurm" )
  grep -E "tests passed|tests failed|^\s+[0-9]+ - " "$out/ctest.log" >>"$summary"
fi

# ---- bench: bench_step fp32, then the trainer in bf16 ---------------------------------------------------------
# bench_step times fp32 steps of each preset (MFU against the device's fp32 datasheet peak, kernels/device_peak).
# bf16 (issue 9's train.precision): bench_step has no precision switch, so the trainer itself runs 6 steps of each
# preset; its summary.json holds ms_per_step, tokens/s and MFU against the dense bf16 tensor-core peak. Fail-soft:
# a build whose trainer refuses bf16 records the one-line error in bench.log and rc=1 in summary.txt.
if want bench && [ -x "$build/bench/bench_step" ]; then
  stage bench_fp32 120 "$out/bench.log" "$build/bench/bench_step" --presets tiny,small,gpt2-124m --steps 5 \
    --out "$out/bench_step.json"
  grep -E "^(tiny|small|gpt2-124m|device|peak)" "$out/bench.log" >>"$summary"
  for preset in tiny small gpt2-124m; do
    stage "bf16_$preset" 90 "$out/bench.log" "$gridtrain" train --config "$preset" train.precision=bf16 train.steps=6 \
      checkpoint.every=0 checkpoint.save_final=false output.dir="$out/bf16_$preset" output.log_every=1
    python3 - "$out/bf16_$preset/summary.json" "$preset" >>"$summary" 2>&1 <<'EOF2'
import json, sys
try:
    s = json.load(open(sys.argv[1]))
    print(f"bf16 {sys.argv[2]}: " + " ".join(f"{k}={s[k]:.4g}" for k in ("ms_per_step", "tokens_per_s", "mfu") if k in s))
except Exception as e:
    print(f"bf16 {sys.argv[2]}: no summary ({e})")
EOF2
  done
fi

# ---- compare: the same run on the CPU build (losses carried in the bundle) and here ------------------------
# Reference: scripts/gpu_bundle.sh ran `gridtrain train --config P train.steps=20` on a CPU build and kept each
# step's loss. fp32 on both sides, different summation orders (cuBLAS vs OpenBLAS, device reductions): the losses
# drift apart by rounding only, about 1e-6 relative per step; 1e-3 relative over 20 steps leaves room for that
# drift and still catches a wrong kernel or a missing synchronisation (both change the loss at the first steps by
# far more).
if want compare && [ -x "$gridtrain" ]; then
  for ref in "$bundle"/ref_*.losses; do
    [ -f "$ref" ] || continue
    preset=$(basename "$ref" .losses); preset=${preset#ref_}
    stage "train_$preset" 120 "$out/losses.txt" "$gridtrain" train --config "$preset" train.steps=20 \
      checkpoint.every=0 checkpoint.save_final=false output.dir="$out/run_$preset" output.log_every=1
    python3 - "$ref" "$out/run_$preset/metrics.jsonl" "$preset" >>"$out/losses.txt" 2>&1 <<'EOF'
import json, sys
ref = [float(x) for x in open(sys.argv[1]).read().split()]
gpu = [json.loads(l)["loss"] for l in open(sys.argv[2]) if l.strip() and "loss" in json.loads(l)]
n = min(len(ref), len(gpu))
worst = max((abs(a - b) / abs(a) for a, b in zip(ref[:n], gpu[:n])), default=float("inf"))
ok = n == len(ref) and worst < 1e-3
for i in range(n): print(f"{sys.argv[3]} step {i+1:3d} cpu {ref[i]:.6f} gpu {gpu[i]:.6f}")
print(f"{sys.argv[3]}: {n}/{len(ref)} steps, max relative loss difference {worst:.2e}: {'ok' if ok else 'MISMATCH'}")
EOF
    tail -1 "$out/losses.txt" >>"$summary"
  done
fi
echo "total $(( $(date +%s) - t_start )) s" >>"$summary"
cat "$summary"
