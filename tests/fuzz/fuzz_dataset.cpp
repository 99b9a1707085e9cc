// libFuzzer target: the HDF5 token dataset reader (DatasetFile, src/data/dataset_file.cpp, and `gridtrain
// inspect` of a dataset) on arbitrary files. Seeds: tests/fuzz/corpus/dataset (a prepared dataset).
// Oracles: no crash or sanitizer report, no exception but gt::Error. Reads are bounded (a damaged file may
// claim any length): the first and last tokens and document offsets of each split.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "src/core/error.hpp"
#include "src/data/dataset_file.hpp"
#include "src/data/dataset_inspect.hpp"
#include "tests/fuzz/fuzz_util.hpp"
#include "tests/fuzz/fuzz_h5_leaks.hpp"

namespace {

constexpr int64_t kReadLimit = 1 << 12;  // elements read at each end of each split

void read_ends(gt::DatasetFile& f, gt::Split s) {
  std::vector<int32_t> tokens(kReadLimit);
  const int64_t nt = f.tokens(s);
  const int64_t head = std::min(nt, kReadLimit);
  f.read_tokens(s, 0, head, tokens.data());
  if (nt > head) f.read_tokens(s, nt - std::min(nt - head, kReadLimit), std::min(nt - head, kReadLimit), tokens.data());
  std::vector<int64_t> offsets(kReadLimit);
  const int64_t nd = f.documents(s);
  const int64_t dhead = std::min(nd, kReadLimit);
  f.read_doc_offsets(s, 0, dhead, offsets.data());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = gt::fuzz::write_input("dataset", data, size);
  gt::fuzz::accepted([&] {
    gt::DatasetFile f(path);
    read_ends(f, gt::Split::Train);
    read_ends(f, gt::Split::Val);
  });
  gt::fuzz::accepted([&] {
    std::ostringstream os;
    gt::inspect_dataset(path, os);
  });
  gt::fuzz::check_no_open_hdf5_objects();
  return 0;
}
