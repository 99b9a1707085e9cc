// Choice of the device groups' communicator (resolve_comm_backend, device_allreduce_algo) with the conditions a
// CUDA build meets injected as arguments, so the refusals are tested on the CPU build too.
#include <gtest/gtest.h>

#include <string>

#include "src/comm/comm.hpp"
#include "src/core/error.hpp"

namespace {

// The error's text, or "" when none was thrown.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const gt::Error& e) {
    return e.what();
  }
  return "";
}

TEST(CommBackend, MpiOnDeviceMemoryNeedsCudaAwareMpi) {
  // refused: device memory, MPI that reports no CUDA support; one line naming the key and the reason
  const std::string e = error_of([] { gt::resolve_comm_backend("mpi", true, false); });
  EXPECT_NE(e.find("parallel.comm=mpi"), std::string::npos) << e;
  EXPECT_NE(e.find("does not report CUDA support"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  // accepted: a CUDA-aware MPI, or host memory
  EXPECT_EQ(gt::resolve_comm_backend("mpi", true, true), gt::CommBackend::Mpi);
  EXPECT_EQ(gt::resolve_comm_backend("mpi", false, false), gt::CommBackend::Mpi);
}

TEST(CommBackend, AutoOnDeviceMemory) {
  if (gt::nccl_compiled()) {
    EXPECT_EQ(gt::resolve_comm_backend("auto", true, false), gt::CommBackend::Nccl);
  } else {  // no NCCL: auto falls back to MPI, which then needs CUDA support
    EXPECT_NE(error_of([] { gt::resolve_comm_backend("auto", true, false); }).find("parallel.comm=auto"),
              std::string::npos);
    EXPECT_EQ(gt::resolve_comm_backend("auto", true, true), gt::CommBackend::Mpi);
  }
  EXPECT_EQ(gt::resolve_comm_backend("auto", false, false), gt::CommBackend::Mpi);
}

TEST(CommBackend, HostAlgorithmsRefusedOnDeviceMemory) {
  using A = gt::AllreduceAlgo;
  EXPECT_EQ(gt::device_allreduce_algo(A::Auto, gt::CommBackend::Mpi, true), A::Library);
  EXPECT_NE(error_of([] { gt::device_allreduce_algo(A::Shm, gt::CommBackend::Mpi, true); }).find("parallel.allreduce=shm"),
            std::string::npos);
  EXPECT_NE(error_of([] { gt::device_allreduce_algo(A::Ring, gt::CommBackend::Mpi, true); }).find("parallel.allreduce=ring"),
            std::string::npos);
  // host memory: unchanged, whatever was asked
  for (A a : {A::Auto, A::Library, A::Ring, A::Shm}) EXPECT_EQ(gt::device_allreduce_algo(a, gt::CommBackend::Mpi, false), a);
}

}  // namespace
