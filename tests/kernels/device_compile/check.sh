#!/bin/bash
# Device-compile check of the kernel headers without a Kokkos CUDA install: a mock kokkos_compat.hpp turns
# parallel_for/parallel_reduce into __global__ launches, so nvcc compiles every kernel body for the GPU and
# any host-only call inside a KOKKOS_LAMBDA (nvcc diagnostic 20011) fails the check.
# Usage: tests/kernels/device_compile/check.sh [path/to/nvcc]   (default /usr/local/cuda/bin/nvcc)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
nvcc="${1:-/usr/local/cuda/bin/nvcc}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$nvcc" -std=c++17 --extended-lambda -arch=sm_90 -Werror all-warnings -DGRIDTRAIN_HAVE_CUBLAS=1 \
  -I"$here/mock" -I"$root" --ptx "$here/instantiate.cu" -o "$out/k.ptx"
echo "device compile OK: $(grep -c '\.entry' "$out/k.ptx") kernels"
