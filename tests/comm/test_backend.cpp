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

TEST(CommBackend, MpiOnDeviceMemoryIsStagedUnlessCudaAware) {
  // device memory, MPI that reports no CUDA support: through host copies
  EXPECT_EQ(gt::resolve_comm_backend("mpi", true, false), gt::CommBackend::MpiStaged);
  EXPECT_EQ(gt::resolve_comm_backend("mpi", true, false, true), gt::CommBackend::MpiStaged);
  // a CUDA-aware MPI reads device memory itself; host memory needs nothing
  EXPECT_EQ(gt::resolve_comm_backend("mpi", true, true), gt::CommBackend::Mpi);
  EXPECT_EQ(gt::resolve_comm_backend("mpi", false, false), gt::CommBackend::Mpi);
}

TEST(CommBackend, AutoOnDeviceMemory) {
  if (gt::nccl_compiled()) {
    EXPECT_EQ(gt::resolve_comm_backend("auto", true, false), gt::CommBackend::Nccl);
    EXPECT_EQ(gt::resolve_comm_backend("auto", true, true), gt::CommBackend::Nccl);
  } else {
    EXPECT_EQ(gt::resolve_comm_backend("auto", true, true), gt::CommBackend::Mpi);
  }
  // ranks sharing a GPU (NCCL refuses a duplicate device), or no NCCL: MPI, staged unless CUDA-aware
  EXPECT_EQ(gt::resolve_comm_backend("auto", true, false, true), gt::CommBackend::MpiStaged);
  EXPECT_EQ(gt::resolve_comm_backend("auto", true, true, true), gt::CommBackend::Mpi);
  EXPECT_EQ(gt::resolve_comm_backend("auto", false, false), gt::CommBackend::Mpi);
  EXPECT_EQ(gt::resolve_comm_backend("auto", false, false, true), gt::CommBackend::Mpi);
}

TEST(CommBackend, NcclRefusals) {
  if (!gt::nccl_compiled()) {
    EXPECT_NE(error_of([] { gt::resolve_comm_backend("nccl", true, false); }).find("no NCCL backend"), std::string::npos);
    return;
  }
  EXPECT_NE(error_of([] { gt::resolve_comm_backend("nccl", false, false); }).find("host memory"), std::string::npos);
  const std::string e = error_of([] { gt::resolve_comm_backend("nccl", true, false, true); });
  EXPECT_NE(e.find("parallel.comm=nccl"), std::string::npos) << e;
  EXPECT_NE(e.find("GPU per rank"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  EXPECT_EQ(gt::resolve_comm_backend("nccl", true, false), gt::CommBackend::Nccl);
}

// Collective and agreed: one rank per node here cannot exceed "devices" unless devices is 0.
TEST(CommBackend, RanksShareDevice) {
  int local = 0;
  MPI_Comm c;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &c);
  MPI_Comm_size(c, &local);
  MPI_Comm_free(&c);
  EXPECT_FALSE(gt::ranks_share_device(MPI_COMM_WORLD, local));
  EXPECT_TRUE(gt::ranks_share_device(MPI_COMM_WORLD, local - 1));
}

TEST(CommBackend, HostAlgorithmsRefusedOnDeviceMemory) {
  using A = gt::AllreduceAlgo;
  // host staging adds on the host: every algorithm
  for (A a : {A::Auto, A::Library, A::Ring, A::Shm})
    EXPECT_EQ(gt::device_allreduce_algo(a, gt::CommBackend::MpiStaged, true), a);
  EXPECT_EQ(gt::device_allreduce_algo(A::Auto, gt::CommBackend::Mpi, true), A::Library);
  EXPECT_NE(error_of([] { gt::device_allreduce_algo(A::Shm, gt::CommBackend::Mpi, true); }).find("parallel.allreduce=shm"),
            std::string::npos);
  EXPECT_NE(error_of([] { gt::device_allreduce_algo(A::Ring, gt::CommBackend::Mpi, true); }).find("parallel.allreduce=ring"),
            std::string::npos);
  // host memory: unchanged, whatever was asked
  for (A a : {A::Auto, A::Library, A::Ring, A::Shm}) EXPECT_EQ(gt::device_allreduce_algo(a, gt::CommBackend::Mpi, false), a);
}

}  // namespace
