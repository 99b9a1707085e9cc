// main() of the MPI checkpoint tests: every rank runs every test; the exit code is non-zero if any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (failed) std::fprintf(stderr, "rank %d: some tests failed\n", rank);
  if (rank == 0) {  // the scratch directories of this run (io_test_util.hpp: gridtrain_io_<tag>_<pid>)
    const std::string suffix = "_" + std::to_string(getpid());
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(std::filesystem::temp_directory_path(), ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("gridtrain_io_", 0) == 0 && n.size() > suffix.size() &&
          n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
        std::filesystem::remove_all(e.path(), ec);
    }
  }
  MPI_Finalize();
  return any;
}
