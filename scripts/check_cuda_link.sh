#!/usr/bin/env bash
# Compile and link the GPU backends (cuBLAS GEMM, NCCL communicator) against /usr/local/cuda in a build of
# their own. No GPU is needed: the link-check program only reports whether a device answers.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${GRIDTRAIN_CUDA_BUILD:-$here/build-cuda}
cuda=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release -DGRIDTRAIN_ENABLE_CUBLAS=ON -DGRIDTRAIN_ENABLE_NCCL=ON \
    -DCUDAToolkit_ROOT="$cuda" -DNCCL_ROOT="$cuda" -DGRIDTRAIN_BUILD_TESTS=OFF -DGRIDTRAIN_BUILD_BENCH=OFF \
    >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
fi
# gridtrain_grid too: the grid creates the NCCL communicators of its groups on GPU builds.
cmake --build "$build" -j "$(nproc)" --target gridtrain_gpu_link_check gridtrain_grid >"$build.build.log" 2>&1 \
  || { tail -40 "$build.build.log"; exit 1; }
"$build/src/comm/gridtrain_gpu_link_check"
