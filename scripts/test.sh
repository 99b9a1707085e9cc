#!/usr/bin/env bash
# The whole test suite on a fresh Debian machine: set-up (packages, build), then ctest. When the CUDA
# toolkit is present, also compile and link the cuBLAS and NCCL backends (they cannot run without a GPU).
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
