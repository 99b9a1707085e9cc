#!/usr/bin/env bash
# The one prepared command for a machine with an NVIDIA GPU (the project is sometimes lent one H200 with 16 cores for
# 15 minutes in all, at most 10 per command; docs/gpu.md "On a machine with a GPU"). Stages in order of information,
# each with its own time cap inside one total budget, fail-soft (a failed stage is recorded and the next one runs):
#
#   probe     what the machine has (GPU, nvcc, cuBLAS, cuDNN, NCCL, cuSPARSELt, NVIDIA_TF32_OVERRIDE, tools, MPI),
#             one line each, MISSING where absent; adds the libraries it finds (Python wheels too) to the path
#   build     the carried prebuilt CUDA build (.gpu-bundle/prebuilt.tar.xz, made here by scripts/gpu_bundle.sh), or
#             a build there with every core (Ninja if present) against the carried Kokkos install or source
#   match     one rank, 20 steps, `small` in fp32 and bf16 and `resnet-tiny` in fp32, against the CPU build's
#             losses carried in the bundle
#   bench     bench_step fp32 (small, gpt2-124m) and the trainer in bf16 (small; gpt2-124m at micro-batch 4 and 16)
#   kernels   the gpt2-124m bf16 step under Nsight Compute (one metric: each kernel's duration), a table by kernel
#   torch     the same gpt2-124m step in PyTorch on the same GPU (math and fused attention, fp32 and bf16)
#   vision_own gridtrain's ResNet-50 at 224x224, batch 128, fp32 (cuDNN's convolutions, the Kokkos BatchNorm,
#             pooling and head kernels; the first device run of that path, 2026-12-06: docs/vision.md): img/s, MFU
#   vision    torchvision's ResNet-50 at 224x224, batch 128, fp32 and bf16 autocast: img/s and img/J from NVML's
#             energy counter (issue 21's H200 figures)
#   tests     the ctest suite's `gpu1` label (every test that applies on one GPU; docs/gpu.md lists the rest)
#   sanitize  compute-sanitizer memcheck over two steps of `tiny`
#
#   scripts/gpu_check.sh [--stages probe,build,...] [--budget SECONDS] [--dry-run]
#
# Everything comes back in at most 8 files under $OUT (the device tool returns 8): summary.txt (one line per stage
# and the figures), summary.json, log.txt (every stage's output), kernels.txt, bench.jsonl, ctest.txt, losses.txt.
# --dry-run (also chosen when no GPU is visible): the same logic on a machine without a GPU, each stage printing why
# it is skipped, so CI exercises the script (tests/cli/test_gpu_check_dry.sh).
set -uo pipefail
set -a  # every variable reaches the stages, which run as functions in a child bash under timeout (stage below)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-$here/runs/gpu_check}
bundle=${GRIDTRAIN_GPU_BUNDLE:-$here/.gpu-bundle}
all_stages=probe,build,match,bench,kernels,torch,vision_own,vision,tests,sanitize
stages=$all_stages
budget=480
dry=0
while [ $# -gt 0 ]; do
  case "$1" in
    --stages) stages=$2; shift 2 ;;
    --budget) budget=$2; shift 2 ;;
    --dry-run) dry=1; shift ;;
    *) echo "gpu_check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for s in ${stages//,/ }; do
  [[ ",$all_stages," == *",$s,"* ]] || { echo "gpu_check.sh: unknown stage '$s' (stages: $all_stages)" >&2; exit 2; }
done
mkdir -p "$out"
summary=$out/summary.txt
log=$out/log.txt
: >"$summary"
t_start=$(date +%s)
jobs=$(nproc)
build=${GRIDTRAIN_GPU_BUILD:-$here/build-gpu}
gridtrain=$build/src/cli/gridtrain
deps=/opt/gridtrain-deps
say() { echo "$*" | tee -a "$summary"; }
# Python (the image's, with PyTorch) runs without the carried Debian libraries on its path: they could shadow the
# image's own (zlib, OpenSSL, ...) that its extensions were built against.
orig_ldpath=${LD_LIBRARY_PATH:-}
py() { LD_LIBRARY_PATH="$orig_ldpath" python3 "$@"; }
want() { [[ ",$stages," == *",$1,"* ]]; }
left() { echo $((budget - ($(date +%s) - t_start))); }
json_rows=()   # "stage rc seconds note" rows for summary.json

# ---- preconditions: each returns 0 or prints why not (the dry run prints the same reasons) -----------------
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
[ -z "$gpu_name" ] && dry=1
no_gpu() { [ "$dry" = 1 ] && { [ -z "$gpu_name" ] && echo "no GPU visible (nvidia-smi found none)" || echo "dry run"; }; }
no_build() { [ -x "$gridtrain" ] || echo "no CUDA build at $build"; }
no_refs() { ls "$bundle"/ref_small_*.losses >/dev/null 2>&1 || echo "no reference losses in $bundle (scripts/gpu_bundle.sh)"; }
no_torch() { py -c "import torch; assert torch.cuda.is_available()" 2>/dev/null || echo "no PyTorch with CUDA"; }
no_torchvision() { py -c "import torchvision" 2>/dev/null || echo "no torchvision"; }
no_tool() { command -v "$1" >/dev/null || echo "no $1 on PATH"; }

# stage NAME CAP "REASON-CHECKS" CMD...: runs CMD (output into log.txt) with at most CAP seconds, less when the
# budget is nearly spent; skips with the first non-empty reason. One line in summary.txt either way.
stage() {
  local name=$1 cap=$2 checks=$3 why="" c
  shift 3
  want "$name" || return 1
  for c in $checks; do why=$($c); [ -n "$why" ] && break; done
  local l; l=$(left)
  [ -z "$why" ] && [ "$l" -le 5 ] && why="budget spent"
  if [ -n "$why" ]; then say "$name skipped: $why"; json_rows+=("$name -1 0 skipped: $why"); return 1; fi
  [ "$l" -lt "$cap" ] && cap=$l
  local t0; t0=$(date +%s)
  echo "===== $name (cap ${cap}s) $(date -u +%T): $*" >>"$log"
  # a stage is a function of this script: timeout runs it in a child bash that gets the functions and variables
  export -f $(compgen -A function)
  timeout -k 5 "$cap" bash -c '"$@"' stage "$@" >>"$log" 2>&1
  local rc=$? s=$(( $(date +%s) - t0 ))
  local note=""; [ $rc -eq 124 ] && note="TIMED OUT"
  say "$name rc=$rc s=$s $note"
  json_rows+=("$name $rc $s $note")
  return $rc
}

# ---- probe ---------------------------------------------------------------------------------------------------
# Library directories found here, the CUDA toolkit's and the Python wheels' (the image carries NCCL, cuDNN and
# cuSPARSELt as wheels), go on LD_LIBRARY_PATH for every later stage.
find_lib() {  # find_lib SONAME WHEEL-SUBDIR: prints the directory holding SONAME, or nothing
  local d
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu; do
    [ -e "$d/$1" ] && { echo "$d"; return; }
  done
  d=$(py -c "import importlib, os, sys; m = importlib.import_module(sys.argv[1]); print(os.path.join(list(m.__path__)[0], 'lib'))" "$2" 2>/dev/null)
  [ -n "$d" ] && [ -e "$d/$1" ] && { echo "$d"; return; }
  ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s { print $NF; exit }' | xargs -r dirname
}
probe() {
  export PATH=/usr/local/cuda/bin:$PATH
  echo "probe: gpu: ${gpu_name:-MISSING (no GPU visible: every GPU stage is skipped)}"
  [ -n "$gpu_name" ] && nvidia-smi --query-gpu=memory.total,driver_version,clocks.max.sm,clocks.sm,power.draw --format=csv 2>&1
  echo "probe: nvcc: $(nvcc --version 2>/dev/null | tail -1 || true)$(command -v nvcc >/dev/null || echo MISSING)"
  local lib dir libpath=""
  for lib in "libcudart.so.13 nvidia.cuda_runtime" "libcublas.so.13 nvidia.cublas" "libnccl.so.2 nvidia.nccl" \
             "libcudnn.so.9 nvidia.cudnn" "libcusparseLt.so.0 nvidia.cusparselt"; do
    set -- $lib
    dir=$(find_lib "$1" "$2")
    if [ -n "$dir" ]; then echo "probe: $1: $dir"; libpath=$libpath:$dir; else echo "probe: $1: MISSING"; fi
  done
  echo "probe: NVIDIA_TF32_OVERRIDE=${NVIDIA_TF32_OVERRIDE-unset} (0 would turn TF32 off; fp32 runs use no TF32 anyway)"
  local t
  for t in cmake ninja make patch ncu compute-sanitizer python3 mpiexec xz dpkg; do
    command -v "$t" >/dev/null && echo "probe: $t: $(command -v "$t")" || echo "probe: $t: MISSING"
  done
  py -c "import torch; print('probe: torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())" 2>/dev/null \
    || echo "probe: torch: MISSING"
  echo "$libpath" >"$out/.libpath"
}
echo "gpu_check $(date -u +%FT%TZ) stages=$stages budget=${budget}s cores=$jobs commit=$(git -C "$here" rev-parse --short HEAD 2>/dev/null) gpu=${gpu_name:-none}" | tee -a "$summary"
want probe && { t0=$(date +%s); probe >>"$log" 2>&1; grep "^probe:" "$log" | tee -a "$summary" >/dev/null
                say "probe s=$(( $(date +%s) - t0 ))"; }
[ -f "$out/.libpath" ] && export LD_LIBRARY_PATH=$(cat "$out/.libpath" | sed 's/^://')${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
rm -f "$out/.libpath"
export PATH=/usr/local/cuda/bin:$PATH

# A .deb without dpkg: an ar archive whose data.tar.* holds the files (Python's tarfile reads xz, gz, bz2).
deb_extract() {
  py - "$1" "$2" <<'EOF'
import io, sys, tarfile
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"!<arch>\n", "not an ar archive"
pos = 8
while pos + 60 <= len(data):
    name, size = data[pos:pos + 16].decode().strip().rstrip("/"), int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith("data.tar"):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
        sys.exit(0)
    pos += 60 + size + (size & 1)
sys.exit("no data.tar in " + sys.argv[1])
EOF
}

# ---- MPI, HDF5, OpenBLAS: the system's, or the carried Debian packages unpacked into a prefix (never into /) --
setup_deps() {
  if [ -z "${GPU_CHECK_FORCE_DEPS:-}" ] && command -v mpicxx >/dev/null && [ -f /usr/include/hdf5/mpich/hdf5.h ]; then
    echo "system MPI and HDF5 used"; return 0
  fi
  mkdir -p "$deps"
  if [ -f "$bundle/deps.tar.xz" ]; then  # unpacked and trimmed by gpu_bundle.sh
    tar -xJf "$bundle/deps.tar.xz" -C "$deps" 2>/dev/null ||
      py -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$bundle/deps.tar.xz" "$deps" || return 1
  else
    [ -d "$bundle/debs" ] || { echo "no MPI here and no $bundle/deps.tar.xz (run scripts/gpu_bundle.sh first)"; return 1; }
    local x=deb_extract; command -v dpkg >/dev/null && x="dpkg -x"
    for f in "$bundle"/debs/*.deb; do $x "$f" "$deps" || return 1; done
  fi
  local lib=$deps/usr/lib/x86_64-linux-gnu
  for w in mpicc.mpich mpicxx.mpich; do [ -f "$deps/usr/bin/$w" ] && sed -i "s|/usr/|$deps/usr/|g" "$deps/usr/bin/$w"; done
  ln -sf mpicc.mpich "$deps/usr/bin/mpicc"; ln -sf mpicxx.mpich "$deps/usr/bin/mpicxx"
  ln -sf mpiexec.hydra "$deps/usr/bin/mpiexec"
  ln -sf openblas-pthread/libopenblas.so.0 "$lib/libopenblas.so.0"
  ln -sf openblas-pthread/libblas.so.3 "$lib/libblas.so.3"
  echo "MPI, HDF5, OpenBLAS and GoogleTest unpacked into $deps"
}
if [ "$dry" = 0 ] && { want build || want match || want bench || want kernels || want tests || want sanitize; }; then
  t0=$(date +%s); setup_deps >>"$log" 2>&1; say "deps rc=$? s=$(( $(date +%s) - t0 ))"
fi
if [ -d "$deps/usr" ]; then
  lib=$deps/usr/lib/x86_64-linux-gnu
  export PATH=$deps/usr/bin:$PATH
  export LD_LIBRARY_PATH=$lib:$lib/hdf5/mpich:$lib/openblas-pthread${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export HYDRA_LAUNCHER=fork   # one machine: no ssh
fi
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# ---- build -----------------------------------------------------------------------------------------------------
# The prebuilt tree was configured at another path: its CTest files name that source and build directory (written
# into the tarball as .origin), rewritten here to this checkout's.
unpack_prebuilt() {
  rm -rf "$build" && mkdir -p "$build" || return 1
  tar -xJf "$bundle/prebuilt.tar.xz" -C "$build" 2>/dev/null ||  # no xz there: Python's lzma
    py -c "import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])" "$bundle/prebuilt.tar.xz" "$build" \
    || return 1
  local src bld
  read -r src bld <"$build/.origin"
  grep -rlZ --include=CTestTestfile.cmake -e "$bld" -e "$src" "$build" | xargs -0 -r sed -i -e "s|$bld|$build|g" -e "s|$src|$here|g"
  local mpx; mpx=$(command -v mpiexec.hydra || command -v mpiexec)
  [ -n "$mpx" ] && grep -rlZ --include=CTestTestfile.cmake "/usr/bin/mpiexec" "$build" | xargs -0 -r sed -i "s|/usr/bin/mpiexec[.a-z]*|$mpx|g"
  echo "prebuilt build from $src unpacked into $build ($(find "$build" -type f -executable | wc -l) programs)"
  ldd "$build/src/cli/gridtrain-bin" | grep "not found" && return 1
  return 0
}
# NCCL for the build there: the image carries it as a Python wheel (libnccl.so.2, maybe no header and no unversioned
# library for CMake to find): a prefix with the header (the image's, else the one carried from here) and libnccl.so.
nccl_prefix() {
  local lib; lib=$(find_lib libnccl.so.2 nvidia.nccl)
  [ -n "$lib" ] || { echo "no libnccl.so.2 here" >&2; return 1; }
  nccl_root=/opt/gridtrain-nccl
  mkdir -p "$nccl_root/include" "$nccl_root/lib"
  local h
  for h in /usr/local/cuda/include "$lib/../include" "$bundle/nccl"; do
    [ -f "$h/nccl.h" ] && { cp "$h/nccl.h" "$nccl_root/include/"; break; }
  done
  ln -sf "$lib/libnccl.so.2" "$nccl_root/lib/libnccl.so"
  ln -sf "$lib/libnccl.so.2" "$nccl_root/lib/libnccl.so.2"
  echo "NCCL for the build: $lib (header from $h)"
}
build_here() {
  local kk=() gen=()
  nccl_prefix || return 1
  command -v ninja >/dev/null && gen=(-G Ninja)
  if [ -f "$bundle/kokkos/.origin" ]; then  # the install's CMake files name the prefix it was built for
    local at; at=$(cat "$bundle/kokkos/.origin")
    [ -d "$at" ] || { mkdir -p "$(dirname "$at")" && cp -a "$bundle/kokkos" "$at"; }
    kk=("-DKokkos_ROOT=$at")
  fi
  local third=$bundle/third_party; [ -d "$third" ] || third=$here/../shared/third_party
  local dd=() lib=$deps/usr/lib/x86_64-linux-gnu
  [ -d "$deps/usr" ] && dd=("-DMPI_C_COMPILER=$deps/usr/bin/mpicc.mpich" "-DMPI_CXX_COMPILER=$deps/usr/bin/mpicxx.mpich"
    "-DMPIEXEC_EXECUTABLE=$deps/usr/bin/mpiexec.hydra"
    "-DHDF5_PAR_INCLUDE_DIR=$deps/usr/include/hdf5/mpich" "-DHDF5_PAR_LIBRARY=$lib/hdf5/mpich/libhdf5.so"
    "-DBLAS_LIBRARIES=$lib/openblas-pthread/libopenblas.so"
    "-DCBLAS_INCLUDE_DIR=$deps/usr/include/x86_64-linux-gnu/openblas-pthread"
    "-DGTest_DIR=$lib/cmake/GTest" "-DCMAKE_PREFIX_PATH=$deps/usr"
    "-DNCCL_ROOT=${nccl_root:-/usr/local/cuda}")
  GRIDTRAIN_GPU_NICE=0 GRIDTRAIN_GPU_BUILD="$build" "$here/scripts/check_gpu_build.sh" --third-party "$third" \
    --jobs "$jobs" "${kk[@]}" -- "${gen[@]}" "${dd[@]}"
}
do_build() { if [ -f "$bundle/prebuilt.tar.xz" ]; then unpack_prebuilt; else build_here; fi; }
stage build 300 "no_gpu" do_build

# ---- match: the CPU build's losses against this GPU's, same deck and steps ----------------------------------
# fp32: cuBLAS and the device reductions sum in other orders than OpenBLAS and the host kernels: rounding-level drift,
# about 1e-6 relative per step; 1e-3 relative over 20 steps leaves room for it and still catches a wrong kernel or a
# missing synchronisation (either moves the first steps' losses by far more). bf16: the same run in bf16 on both sides
# (oneDNN's native bf16 GEMMs there, cuBLAS's here, both fp32-accumulating); bf16 rounds at 2^-8 = 3.9e-3 and the
# rounding of the two libraries differs, so 1e-2 relative (the ZeRO tests' bf16 bound; the layout tests measured
# 4.2e-4 over 5 steps) over 20 steps.
# resnet-tiny fp32 (the device build's ResNet: cuDNN's convolutions, the Kokkos BatchNorm, pooling and head
# kernels): oneDNN's and cuDNN's convolutions sum in other orders, and BatchNorm over 8 images of 16x16 divides by
# small standard deviations, which magnifies that drift; 1e-2 relative over 20 steps still catches a wrong kernel, a
# missing fence or a stream out of order (they move the loss by O(1) within a few steps).
match() {
  local run_of rc=0
  for run_of in small:fp32:1e-3 small:bf16:1e-2 resnet-tiny:fp32:1e-2; do
    local deck=${run_of%%:*} rest=${run_of#*:}
    local prec=${rest%%:*} tol=${rest#*:}
    local ref=$bundle/ref_${deck}_$prec.losses
    [ -f "$ref" ] || { echo "match $deck $prec: no $ref"; rc=1; continue; }
    "$gridtrain" train --config "$deck" train.steps=20 train.precision=$prec checkpoint.every=0 \
      checkpoint.save_final=false output.dir="$out/run_${deck}_$prec" output.log_every=1 || rc=1
    py - "$ref" "$out/run_${deck}_$prec/metrics.jsonl" "$deck $prec" "$tol" >>"$out/losses.txt" <<'EOF' || rc=1
import json, sys
ref = [float(x) for x in open(sys.argv[1]).read().split()]
try:
    gpu = [json.loads(l)["loss"] for l in open(sys.argv[2]) if l.strip() and "loss" in json.loads(l)]
except OSError:
    gpu = []
n, tol = min(len(ref), len(gpu)), float(sys.argv[4])
worst = max((abs(a - b) / abs(a) for a, b in zip(ref[:n], gpu[:n])), default=float("inf"))
ok = n == len(ref) and worst < tol
for i in range(n): print(f"{sys.argv[3]} step {i+1:3d} cpu {ref[i]:.6f} gpu {gpu[i]:.6f}")
print(f"match {sys.argv[3]}: {n}/{len(ref)} steps, max relative loss difference {worst:.2e} (tolerance {tol}): {'ok' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
EOF
    tail -1 "$out/losses.txt" | tee -a "$summary"
    rm -rf "$out/run_${deck}_$prec"
  done
  return $rc
}
stage match 90 "no_gpu no_build no_refs" match

# ---- bench: fp32 through bench_step, bf16 through the trainer ---------------------------------------------------
trainer_bench() {  # trainer_bench PRESET PRECISION MICRO_BATCH STEPS
  local d=$out/bench_$1_$2_b$3
  "$gridtrain" train --config "$1" train.precision="$2" train.micro_batch_size="$3" train.steps="$4" \
    checkpoint.every=0 checkpoint.save_final=false output.dir="$d" output.log_every=1 >/dev/null || return 1
  py - "$d/summary.json" "$1" "$2" "$3" <<'EOF' | tee -a "$out/bench.jsonl" "$summary"
import json, sys
s = json.load(open(sys.argv[1]))
row = {"what": "gridtrain", "preset": sys.argv[2], "precision": sys.argv[3], "batch": int(sys.argv[4])}
row.update({k: s[k] for k in ("ms_per_step", "tokens_per_s", "mfu", "peak_gflops_per_rank", "peak_kind", "forward_ms",
                               "backward_ms", "optimizer_ms", "comm_exposed_ms") if k in s})
print(json.dumps(row))
EOF
  rm -rf "$d"
}
bench() {
  local rc=0
  "$build/bench/bench_step" --presets small,gpt2-124m --steps 5 --out "$out/bench_step.json" || rc=1
  [ -f "$out/bench_step.json" ] && { cat "$out/bench_step.json" >>"$out/bench.jsonl"; echo >>"$out/bench.jsonl"; rm -f "$out/bench_step.json"; }
  trainer_bench small bf16 4 10 || rc=1
  trainer_bench gpt2-124m bf16 4 10 || rc=1
  trainer_bench gpt2-124m bf16 16 10 || rc=1
  trainer_bench gpt2-124m fp32 16 6 || rc=1
  return $rc
}
stage bench 150 "no_gpu no_build" bench

# ---- kernels: each kernel's time in one gpt2-124m bf16 step (Nsight Compute, one metric, no replay) -----------
kernels() {
  ncu --metrics gpu__time_duration.sum --csv --print-kernel-base demangled --print-units base --clock-control none --target-processes all \
    --log-file "$out/ncu.csv" "$build/src/cli/gridtrain-bin" train --config gpt2-124m train.precision=bf16 train.steps=2 \
    checkpoint.every=0 checkpoint.save_final=false output.dir="$out/ncu_run" output.log_every=1 >/dev/null || return 1
  rm -rf "$out/ncu_run"
  py "$here/scripts/ncu_table.py" "$out/ncu.csv" --steps 2 >"$out/kernels.txt"; local rc=$?
  rm -f "$out/ncu.csv"
  head -25 "$out/kernels.txt"
  return $rc
}
stage kernels 120 "no_gpu no_build" kernels
[ -f "$out/kernels.txt" ] && head -12 "$out/kernels.txt" >>"$summary"

# ---- torch: the same step in PyTorch on this GPU ---------------------------------------------------------------
torch_peer() {
  PYTHONUNBUFFERED=1 py "$here/scripts/bench_torch_gpu.py" --preset gpt2-124m --precision bf16,fp32 \
    --attention math,sdpa --batch 4,16 --steps 10 --warmup 3 | tee -a "$out/bench.jsonl"
}
stage torch 120 "no_gpu no_torch" torch_peer && grep '"peer"' "$out/bench.jsonl" | py -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print("torch", r["precision"], r["attention"], "b%s" % r["batch"], "%.2f ms" % r.get("ms_per_step", -1), "mfu %.3f" % (r.get("mfu") or 0), r.get("error", ""))' >>"$summary"

# ---- vision: the ResNet-50 peer on this GPU, img/s and img/J (scripts/bench_torchvision.py --device cuda) -------
vision_peer() {
  local p
  for p in "" --bf16; do
    PYTHONUNBUFFERED=1 py "$here/scripts/bench_torchvision.py" --device cuda --model resnet50 --image 224 --batch 128 \
      --steps 20 $p | tee -a "$out/bench.jsonl" || return 1
  done
}
# gridtrain's own ResNet-50 beside it: fp32 (the one precision a device build runs the ResNet in so far), the same
# batch, 20 steps; img/s, MFU and energy from the run's summary.json
vision_own() {
  "$gridtrain" train --config resnet50-imagenet train.micro_batch_size=128 train.steps=20 train.precision=fp32 \
    checkpoint.every=0 checkpoint.save_final=false output.dir="$out/run_resnet50" output.log_every=5 || return 1
  py - "$out/run_resnet50/summary.json" <<'EOF' | tee -a "$out/bench.jsonl"
import json, sys
s = json.load(open(sys.argv[1]))
print(json.dumps({"program": "gridtrain", "model": "resnet50", "precision": s["precision"], "batch": s["global_batch_images"],
                  "img_per_s": s["images_per_s"], "mfu": s["mfu"], "energy": s.get("energy_source", "")}))
EOF
  rm -rf "$out/run_resnet50"
}
stage vision_own 120 "no_gpu no_build" vision_own && grep '"program": "gridtrain"' "$out/bench.jsonl" | py -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    print("vision gridtrain resnet50", r["precision"], "b%s" % r["batch"], "%.0f img/s, MFU %.2f" % (r["img_per_s"], r["mfu"]))' >>"$summary"
stage vision 90 "no_gpu no_torch no_torchvision" vision_peer && grep '"model": "resnet50"' "$out/bench.jsonl" | py -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    e = "%.2f img/J at %.0f W" % (r["img_per_j"], r["avg_power_w"]) if "img_per_j" in r else r.get("energy", "")
    print("vision resnet50", r["precision"], "b%s" % r["batch"], "%.0f img/s" % r["img_per_s"], e)' >>"$summary"

# ---- tests: the ctest label gpu1 -------------------------------------------------------------------------------
tests() {
  # GPU_CHECK_CTEST replaces the selection (e.g. "-LE slurm" for every test, to see which fail on one GPU)
  (cd "$build" && ctest ${GPU_CHECK_CTEST:--L gpu1} --output-on-failure -j 8 --timeout 90 >"$out/ctest.txt" 2>&1); local rc=$?
  grep -E "tests passed|tests failed|Failed|Timeout|Not Run" "$out/ctest.txt" | head -60
  return $rc
}
stage tests 200 "no_gpu no_build" tests
[ -f "$out/ctest.txt" ] && grep -E "tests passed|tests failed" "$out/ctest.txt" >>"$summary"

# ---- sanitize: compute-sanitizer memcheck over two steps of tiny and of resnet-tiny ------------------------------
sanitize() {
  local deck rc=0
  for deck in tiny resnet-tiny; do
    compute-sanitizer --tool memcheck --leak-check no --error-exitcode 3 "$build/src/cli/gridtrain-bin" train \
      --config $deck train.steps=2 checkpoint.every=0 checkpoint.save_final=false output.dir="$out/san_run" || rc=$?
    rm -rf "$out/san_run"
  done
  return $rc
}
stage sanitize 90 "no_gpu no_build" sanitize

say "total $(( $(date +%s) - t_start )) s"
py - "$out/summary.json" "$gpu_name" "$dry" "${json_rows[@]}" <<'EOF'
import json, sys
rows = [r.split(" ", 3) for r in sys.argv[4:]]
json.dump({"gpu": sys.argv[2] or None, "dry_run": sys.argv[3] == "1",
           "stages": [{"stage": r[0], "rc": int(r[1]), "s": int(r[2]), "note": r[3] if len(r) > 3 else ""} for r in rows]},
          open(sys.argv[1], "w"), indent=1)
EOF
exit 0
