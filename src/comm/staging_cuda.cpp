// CUDA side of the host-staged backend (comm_staged.hpp): pinned host buffers (page-locked, so the copies run at
// the link's rate and need no bounce buffer inside the driver) and copies on the compute stream, which orders them
// after the kernels that wrote the data and before the kernels that read the result. Each copy synchronises the
// host with that stream before returning: the MPI call that follows reads the host copy, and a buffer handed back
// to the pool may be overwritten at once.
#include <cuda_runtime.h>

#include "src/comm/comm_staged.hpp"
#include "src/core/error.hpp"

namespace gt {

namespace {

void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw Error(std::string("cuda: ") + what + " failed: " + cudaGetErrorString(r));
}

class CudaStaging : public HostStaging {
 public:
  explicit CudaStaging(cudaStream_t s) : stream_(s) {}
  void* alloc_host(size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost (a staging buffer)");
    return p;
  }
  void free_host(void* p) override { cudaFreeHost(p); }
  // cudaMemcpyDefault: unified addressing tells device from host pointers, so a host buffer passed to a device
  // group (a scalar, a test's vector) is copied correctly too.
  void to_host(void* host, const void* device, size_t bytes) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync (to host)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void to_device(void* device, const void* host, size_t bytes) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyDefault, stream_), "cudaMemcpyAsync (to device)");
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  const char* name() const override { return "cuda pinned"; }

 private:
  cudaStream_t stream_;  // not owned: Kokkos' stream
};

}  // namespace

std::shared_ptr<HostStaging> make_cuda_staging(void* compute_stream) {
  return std::make_shared<CudaStaging>(static_cast<cudaStream_t>(compute_stream));
}

}  // namespace gt
