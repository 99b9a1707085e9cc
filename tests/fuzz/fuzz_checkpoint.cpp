// libFuzzer target: the checkpoint readers (verify_checkpoint, read_checkpoint_meta, load_checkpoint over
// MPI-IO on one rank, and `gridtrain inspect`) on arbitrary files. Seeds: tests/fuzz/corpus/checkpoint, written
// by make_fuzz_seeds with the tensors of kSeedTensors.
// Oracles: no crash or sanitizer report, no exception but gt::Error; a file that verify_checkpoint accepts
// against the seed's tensors also loads.
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"
#include "src/io/inspect.hpp"
#include "tests/fuzz/fuzz_seed_tensors.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/fuzz_h5_leaks.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  MPI_Init(nullptr, nullptr);  // a singleton MPI process: the readers take a communicator (MPI_COMM_SELF here)
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = gt::fuzz::write_input("checkpoint", data, size);
  std::vector<std::vector<float>> store;
  std::vector<gt::TensorShard> shards = gt::fuzz::seed_shards(store);
  const bool verified = gt::fuzz::accepted([&] {
    gt::read_checkpoint_meta(MPI_COMM_SELF, path);
    gt::verify_checkpoint(MPI_COMM_SELF, path, gt::training_requirements(shards, gt::fuzz::kSeedModel));
  });
  if (verified) {
    gt::CheckpointMeta meta;
    try {
      gt::load_checkpoint(MPI_COMM_SELF, path, shards, meta);
    } catch (const gt::Error& e) {
      std::fprintf(stderr, "verified against the seed's tensors but does not load: %s\n", e.what());
      std::abort();
    }
  }
  gt::fuzz::accepted([&] {
    std::ostringstream os;
    gt::inspect_checkpoint(path, os);
  });
  gt::fuzz::check_no_open_hdf5_objects();
  return 0;
}
