#pragma once
// Host-staged backend of gt::Comm: the device groups (TP, PP, DP, embedding) of a GPU build over an MPI library that
// cannot read device memory (Debian's MPICH), and over several ranks that share one GPU, where NCCL refuses to run
// (it needs one device per rank). Every operation copies its device input into pinned host memory after the kernels
// that wrote it, runs the inner host communicator's operation on the copy (any algorithm: the library's, the ring,
// the node's shared memory), and copies the result back before the call, or the request's wait(), returns. A
// non-blocking operation overlaps its MPI transfer with whatever device work the caller enqueues meanwhile; the copy
// back happens in wait() (or the test() that finds it complete).
//
// NCCL stays the path across devices: this one costs two PCIe copies per operation. It exists so that the whole
// test suite and multi-rank runs work on a machine with one GPU, and where no NCCL is built (start line: "comm
// mpi-staged/<algorithm>").
#include <cstddef>
#include <memory>

#include "src/comm/comm.hpp"

namespace gt {

// How bytes move between the device buffers a caller passes and host memory. The CUDA implementation
// (staging_cuda.cpp) allocates pinned memory and copies on the compute stream; the host one (plain memcpy) is
// what CPU builds use when a test asks for device-memory behaviour (test_hooks::device_memory_as_cuda(), src/core/test_hooks.hpp), so the
// staging logic is tested without a GPU.
class HostStaging {
 public:
  virtual ~HostStaging() = default;
  virtual void* alloc_host(size_t bytes) = 0;  // pinned where the platform has it
  virtual void free_host(void* p) = 0;
  // host <- device, after all device work enqueued before the call; complete when it returns.
  virtual void to_host(void* host, const void* device, size_t bytes) = 0;
  // device <- host, before any device work enqueued after the call; `host` may be reused when it returns.
  virtual void to_device(void* device, const void* host, size_t bytes) = 0;
  virtual const char* name() const = 0;
};

std::shared_ptr<HostStaging> make_host_staging();
#if defined(GRIDTRAIN_HAVE_CUDA_STAGING)
// compute_stream: the cudaStream_t of the kernels (kernels/device_stream.hpp).
std::shared_ptr<HostStaging> make_cuda_staging(void* compute_stream);
#endif

// Wraps `host` (an MPI communicator over host memory) so that the buffers passed in are device buffers.
std::unique_ptr<Comm> make_staged_comm(std::unique_ptr<Comm> host, std::shared_ptr<HostStaging> staging);

}  // namespace gt
