#pragma once
// The one CUDA stream of a rank's device work: the stream of the default Kokkos execution space instance.
// Kokkos kernels, cuBLAS (gemm_cublas.cpp) and the NCCL communicators (comm_nccl.cpp, which waits on it through an
// event before each collective) all order themselves on it, so no fence is needed between a kernel, a GEMM and a
// collective on the same buffer. Returned as void* so that code without CUDA headers (the grid) can pass it on.
// nullptr on host builds and before Kokkos::initialize (the stream does not exist yet).
namespace gt {
void* device_stream();
// True on a build whose kernels run on a GPU, i.e. with the device work split of kernels/lanes.hpp (for code that
// must know it without compiling through Kokkos: the memory ledger of src/train/memory_check.cpp).
bool kernels_on_device();
// Free memory of this rank's device in bytes (cudaMemGetInfo) on CUDA builds; -1 on host builds or when the runtime
// cannot say. The test hook test_hooks::device_free_bytes() (src/core/test_hooks.hpp)
// replaces it on any build, so the device refusal of the memory pre-check
// (src/train/memory_check.cpp) is tested on CPU-only CI too.
double device_free_bytes();
// GPUs this process can see (cudaGetDeviceCount, after CUDA_VISIBLE_DEVICES); 0 on host builds. Ranks beyond it on
// one node share a device, which NCCL refuses (src/comm/comm.hpp, ranks_share_device).
int device_count();
}  // namespace gt
