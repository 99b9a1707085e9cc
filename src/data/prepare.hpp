#pragma once
// Text corpus -> HDF5 token dataset (format in dataset_format.hpp, docs/data.md). With --images, an image
// dataset instead (src/vision/prepare_images.hpp).
//   gridtrain prepare --tokenizer byte|gpt2 [--bpe-dir DIR] --out FILE.h5 [--val-fraction 0.05] [--seed S]
//                     [--quiet] INPUT...
// A document is one input file (INPUT files, and the regular files under INPUT directories, recursively, in
// sorted order; symbolic links inside directories are skipped so that aliases are not counted twice; empty
// files are skipped). Each document goes whole to train or val. Streaming: files are read in 1 MiB chunks
// and tokens appended in blocks, so memory does not grow with the corpus (only the list of file names does).
// The output is written to FILE.h5.tmp.<pid> and renamed to FILE.h5 only when complete.
#include <cstdint>
#include <string>
#include <vector>

namespace gt {

struct PrepareOptions {
  std::string tokenizer = "byte";      // "byte" or "gpt2"
  std::string bpe_dir;                 // gpt2 files; empty: $GRIDTRAIN_BPE_DIR, else <repo>/data/gpt2
  std::string out;
  double val_fraction = 0.05;          // share of the corpus bytes that goes to val, by whole documents
  uint64_t seed = 1234;                // which documents go to val
  std::vector<std::string> inputs;
  bool progress = true;                // progress lines on stderr every 2 s
};

struct PrepareStats {
  int64_t files = 0, bytes = 0;
  int64_t tokens[2] = {0, 0}, documents[2] = {0, 0};
  double seconds = 0;
};

// Throws gt::Error on bad input (missing input, empty corpus, unwritable output, missing BPE files); then no
// output file exists (a previous FILE.h5 stays untouched).
PrepareStats prepare_dataset(const PrepareOptions& opt);

// The `gridtrain prepare` command: argv[0] = "prepare". Prints "gridtrain: error: ..." and returns non-zero
// (2 for a bad command line, 1 otherwise) on failure. Under MPI only world rank 0 works; others return 0.
int prepare_main(int argc, char** argv);

}  // namespace gt
