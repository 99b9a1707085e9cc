#!/usr/bin/env bash
# Build all of gridtrain (trainer, tests, benchmarks) for NVIDIA GPUs: Kokkos with CUDA, cuBLAS, NCCL.
# No GPU is needed (compile and link only); scripts/gpu_check.sh runs the result on a machine with one.
#
#   scripts/check_gpu_build.sh [--third-party DIR] [-DKokkos_ROOT=DIR] [--arch HOPPER90] [--jobs N]
#                              [--build DIR] [--kokkos-only] [-- extra cmake args for gridtrain]
#
# Kokkos: with -DKokkos_ROOT=DIR (a Spack or site install with CUDA) that install is used as is. Otherwise the
# Kokkos source tarball and the CUDA 13 patch in --third-party (default ../shared/third_party beside the
# checkout) are checked against SHA256SUMS, built once and installed into a per-machine cache outside the
# checkout, $GRIDTRAIN_CACHE or ${XDG_CACHE_HOME:-~/.cache}/gridtrain/kokkos-<key>, where <key> hashes the
# tarball, the patch and every flag of that build: a later run with the same inputs reuses it (a lock keeps two
# concurrent runs from building it twice; an interrupted build leaves no half install behind).
# gridtrain then builds into --build (default build-gpu/ in the checkout) with the given jobs (default: 2 on a
# machine shared by several builds, GRIDTRAIN_GPU_JOBS or --jobs to change), at nice 10 (GRIDTRAIN_GPU_NICE).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
third_party=$here/../shared/third_party
kokkos_root=""
arch=${GRIDTRAIN_GPU_ARCH:-HOPPER90}
jobs=${GRIDTRAIN_GPU_JOBS:-2}
nice_level=${GRIDTRAIN_GPU_NICE:-10}
build=${GRIDTRAIN_GPU_BUILD:-$here/build-gpu}
kokkos_only=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --third-party) third_party=$2; shift 2 ;;
    -DKokkos_ROOT=*) kokkos_root=${1#-DKokkos_ROOT=}; shift ;;
    --kokkos-root) kokkos_root=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --kokkos-only) kokkos_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) echo "check_gpu_build.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || { echo "check_gpu_build.sh: no nvcc in $cuda/bin (set CUDA_HOME)" >&2; exit 1; }
export PATH=$cuda/bin:$PATH
t_start=$(date +%s)
log() { echo "check_gpu_build.sh: $*"; }

# ---- Kokkos ------------------------------------------------------------------------------------------------
if [ -z "$kokkos_root" ]; then
  # absolute: the patch is applied from inside the extracted source (.ci/run passes ../shared/third_party)
  third_party=$(cd "$third_party" 2>/dev/null && pwd) \
    || { echo "check_gpu_build.sh: no third-party directory '$third_party'" >&2; exit 1; }
  tarball=$third_party/kokkos-4.6.01.tar.gz
  patchfile=$third_party/kokkos-4.6.01-cuda13.patch
  [ -f "$tarball" ] && [ -f "$patchfile" ] && [ -f "$third_party/SHA256SUMS" ] \
    || { echo "check_gpu_build.sh: $third_party lacks the Kokkos tarball, patch or SHA256SUMS" >&2; exit 1; }
  (cd "$third_party" && sha256sum --quiet -c SHA256SUMS) \
    || { echo "check_gpu_build.sh: $third_party does not match its SHA256SUMS" >&2; exit 1; }
  # Every input of the Kokkos build goes into the key: a changed flag builds a new cache entry.
  kokkos_flags=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 -DKokkos_ENABLE_CUDA=ON
                -DKokkos_ENABLE_SERIAL=ON "-DKokkos_ARCH_${arch}=ON" -DKokkos_ENABLE_TESTS=OFF
                -DKokkos_ENABLE_EXAMPLES=OFF -DBUILD_TESTING=OFF)
  key=$( { sha256sum <"$tarball"; sha256sum <"$patchfile"; printf '%s\n' "${kokkos_flags[@]}";
           "$cuda/bin/nvcc" --version | tail -1; } | sha256sum | cut -c1-16)
  cache=${GRIDTRAIN_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gridtrain}
  kokkos_root=$cache/kokkos-$key
  mkdir -p "$cache"
  exec 9>"$cache/kokkos-$key.lock"
  flock 9
  if [ -f "$kokkos_root/.complete" ]; then
    log "Kokkos from the cache $kokkos_root"
  else
    log "building Kokkos 4.6.01 (CUDA $arch + Serial) into $kokkos_root with -j$jobs; log in $cache/kokkos-$key.log"
    work=$(mktemp -d "$cache/kokkos-$key.work.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    t0=$(date +%s)
    # Each step only after the one before succeeded (set -e does not apply on the left of ||): an unapplied
    # patch once went on to a configure that failed on nvcc_wrapper's unpatched sm_70 default.
    {
      tar -xzf "$tarball" -C "$work" &&
      src=$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -1) &&
      (cd "$src" && patch -p1 <"$patchfile") &&
      rm -rf "$kokkos_root.partial" &&
      nice -n "$nice_level" cmake -S "$src" -B "$work/build" "${kokkos_flags[@]}" \
        "-DCMAKE_CXX_COMPILER=$src/bin/nvcc_wrapper" "-DCMAKE_INSTALL_PREFIX=$kokkos_root.partial" &&
      nice -n "$nice_level" cmake --build "$work/build" -j "$jobs" &&
      cmake --install "$work/build"
    } >"$cache/kokkos-$key.log" 2>&1 || { tail -40 "$cache/kokkos-$key.log"; echo "check_gpu_build.sh: the Kokkos build failed (log: $cache/kokkos-$key.log)" >&2; exit 1; }
    # The install prefix is baked into the installed CMake files: install to .partial, then patch the path.
    grep -rl --null "$kokkos_root.partial" "$kokkos_root.partial" | xargs -0 -r sed -i "s|$kokkos_root.partial|$kokkos_root|g"
    rm -rf "$kokkos_root"
    mv "$kokkos_root.partial" "$kokkos_root"
    touch "$kokkos_root/.complete"
    rm -rf "$work"
    trap - EXIT
    log "Kokkos built in $(( $(date +%s) - t0 )) s"
  fi
  exec 9>&-
fi
[ "$kokkos_only" = 1 ] && { log "Kokkos ready at $kokkos_root"; exit 0; }

# ---- gridtrain -----------------------------------------------------------------------------------------------
# Compiled through Kokkos' launcher: targets that use Kokkos go to nvcc_wrapper, the rest stay with g++.
mkdir -p "$build"
if [ ! -f "$build/CMakeCache.txt" ] || ! grep -q "^Kokkos_DIR:.*$kokkos_root" "$build/CMakeCache.txt"; then
  rm -f "$build/CMakeCache.txt"
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DKokkos_ROOT=$kokkos_root" \
    -DGRIDTRAIN_ENABLE_CUBLAS=ON -DGRIDTRAIN_ENABLE_NCCL=ON "-DCUDAToolkit_ROOT=$cuda" "-DNCCL_ROOT=$cuda" \
    "${extra[@]}" >"$build.configure.log" 2>&1 || { tail -40 "$build.configure.log"; echo "check_gpu_build.sh: configuring gridtrain failed (log: $build.configure.log)" >&2; exit 1; }
fi
grep -q "Kokkos devices:.*CUDA" "$build.configure.log" \
  || { echo "check_gpu_build.sh: the Kokkos at $kokkos_root has no CUDA backend" >&2; exit 1; }
t0=$(date +%s)
nice -n "$nice_level" cmake --build "$build" -j "$jobs" >"$build.build.log" 2>&1 \
  || { grep -B2 -A8 -m5 "error" "$build.build.log" | head -60; tail -20 "$build.build.log"; echo "check_gpu_build.sh: the CUDA build of gridtrain failed (log: $build.build.log)" >&2; exit 1; }
if grep -n "warning" "$build.build.log" | grep -v "nvcc_wrapper has been given\|Wno-deprecated-gpu-targets" | head -5 | grep -q .; then
  echo "check_gpu_build.sh: warnings in the CUDA build:"; grep -n "warning" "$build.build.log" | head -20
fi
# CPU time (user + sys of the compilers: `times`' second line, this shell's waited-for children) is the figure to
# compare on a shared machine, where wall time depends on the others' load.
times >"$build.times"
cpu=$(tail -1 "$build.times" | awk '{ split($1, u, /[ms]/); split($2, s, /[ms]/); printf "%d", u[1] * 60 + u[2] + s[1] * 60 + s[2] }')
log "gridtrain built for $arch in $(( $(date +%s) - t0 )) s wall, ${cpu} s CPU since the start of this script ($(grep -c "Building CXX" "$build.build.log") files compiled)"
"$build/src/comm/gridtrain_gpu_link_check" || true   # reports "no CUDA device" on a machine without a GPU
log "done in $(( $(date +%s) - t_start )) s; build in $build"
