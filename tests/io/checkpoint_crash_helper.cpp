// Child program of io_checkpoint_crash (run under mpiexec by the test, not a test itself).
//   checkpoint_crash_helper save <dir> <step>   saves the seeded small model of that step (keep 2)
//   checkpoint_crash_helper latest <dir>        prints "latest <path> step <n>" on rank 0 after loading the
//                                               newest valid checkpoint; exit 3 if its data is wrong, 4 if none
#include <mpi.h>

#include <cstdio>
#include <string>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "tests/io/io_test_util.hpp"

using namespace iotest;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int rank = comm_rank(MPI_COMM_WORLD), size = comm_size(MPI_COMM_WORLD);
  int rc = 0;
  try {
    if (argc < 3) throw gt::Error("usage: checkpoint_crash_helper save|latest <dir> [step]");
    const std::string mode = argv[1], dir = argv[2];
    if (mode == "save" && argc == 4) {
      const int64_t step = std::stoll(argv[3]);
      Shards s = make_shards(small_model(), Layout::Rows, rank, size, 500 + step, true);
      gt::CheckpointOptions opt;
      opt.dir = dir;
      opt.keep = 2;
      gt::save_checkpoint(MPI_COMM_WORLD, opt, step, s.list, gt::CheckpointMeta{});
    } else if (mode == "latest") {
      const auto path = gt::find_latest_checkpoint(MPI_COMM_WORLD, dir);
      if (!path) {
        rc = 4;
      } else {
        Shards s = make_shards(small_model(), Layout::Cols, rank, size, 0, false);
        gt::CheckpointMeta meta;
        gt::load_checkpoint(MPI_COMM_WORLD, *path, s.list, meta);
        const int64_t step = meta.ints.at("step");
        if (count_wrong(s, 500 + step) != 0) rc = 3;
        if (rank == 0) std::printf("latest %s step %lld\n", path->c_str(), static_cast<long long>(step));
      }
    } else {
      throw gt::Error("unknown mode " + mode);
    }
  } catch (const gt::Error& e) {
    std::fprintf(stderr, "gridtrain: error: %s\n", e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}
