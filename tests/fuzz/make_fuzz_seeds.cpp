// Writes the binary seeds of tests/fuzz/corpus that are not text: a checkpoint of the seed tensors
// (fuzz_seed_tensors.hpp) through save_checkpoint, as a run would write it (corpus/checkpoint/seed.h5).
// Usage: make_fuzz_seeds OUT_DIR (writes OUT_DIR/seed.h5). The dataset seeds are two short texts through
// `gridtrain prepare --tokenizer byte --val-fraction 0.5`, made small with `h5repack -l CONTI` (contiguous.h5)
// and `h5repack -l /train/tokens,/val/tokens:CHUNK=16 -l /train/doc_offsets,/val/doc_offsets:CHUNK=4`
// (chunked.h5): prepare's 65536-token chunks make a 210 kB file that mutations would mostly spend on zeros.
#include <mpi.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "src/io/checkpoint.hpp"
#include "tests/fuzz/fuzz_seed_tensors.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds OUT_DIR\n");
    return 2;
  }
  const std::string out = argv[1];
  gt::CheckpointOptions opt;
  opt.dir = out + "/ckpt";
  opt.alignment = 1;  // no 1 MiB alignment: the seed should be a few kB
  std::vector<std::vector<float>> store;
  const std::vector<gt::TensorShard> shards = gt::fuzz::seed_shards(store);
  gt::CheckpointMeta meta;
  meta.ints["samples_done"] = 28;
  meta.strings["model"] = gt::fuzz::kSeedModel;
  meta.strings["config"] = "[train]\nsteps = 7\n";
  const std::string path = gt::save_checkpoint(MPI_COMM_SELF, opt, 7, shards, meta);
  std::filesystem::copy_file(path, out + "/seed.h5", std::filesystem::copy_options::overwrite_existing);
  std::filesystem::remove_all(opt.dir);
  MPI_Finalize();
  return 0;
}
