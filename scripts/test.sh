#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: set-up (packages, build), then ctest. When the CUDA
# toolkit is present, also compile and link the cuBLAS and NCCL backends (they cannot run without a GPU).
# The full run (no arguments) ends with the sanitizer and fuzzing step, scripts/sanitize.sh (a few minutes;
# GRIDTRAIN_SKIP_SANITIZE=1 leaves it out).
#   scripts/test.sh [extra ctest args, e.g. -L kernels]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GRIDTRAIN_BUILD:-$here/build}
"$here/scripts/setup.sh"

if [ -x /usr/local/cuda/bin/nvcc ] && [ "${GRIDTRAIN_SKIP_CUDA_LINK:-0}" != 1 ]; then
  "$here/scripts/check_cuda_link.sh"
fi

cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
if [ $# -eq 0 ] && [ "${GRIDTRAIN_SKIP_SANITIZE:-0}" != 1 ]; then
  "$here/scripts/sanitize.sh"
fi
