// gtest main for tests that need MPI and Kokkos. Only rank 0 prints gtest's report; a failure on any rank
// makes every rank exit non-zero.
#include <gtest/gtest.h>
#include <mpi.h>

#include "kernels/kokkos_compat.hpp"

namespace gt_test {
int argc = 0;
char** argv = nullptr;
}  // namespace gt_test

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  Kokkos::initialize(argc, argv);
  ::testing::InitGoogleTest(&argc, argv);
  gt_test::argc = argc;
  gt_test::argv = argv;
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  Kokkos::finalize();
  MPI_Finalize();
  return any;
}
