#pragma once
// How much room one checkpoint file takes: the one sizing used by the start-up check of the checkpoint
// directory (src/io/run_dirs.cpp) and by every save, which reserves that room before any rank writes
// (src/io/checkpoint_reserve.hpp). Two formulas (start-up: the tensors alone, 5.0 MiB for tiny; save: the tensors
// plus a flat 1 MiB, 6.0 MiB) let a run with 5-6 MiB free train and then stop with "no room" at its first save.
#include <cstdint>
#include <string>
#include <vector>

namespace gt::io {

// What shapes the size of a checkpoint file besides its tensors.
struct CheckpointFileShape {
  std::vector<int64_t> dataset_elements;  // float32 elements of each dataset
  int64_t attribute_bytes = 0;            // root attribute values (the config text dominates)
  int64_t alignment_threshold = 1 << 20;  // H5Pset_alignment(threshold, alignment) of the writer
  int64_t alignment = 1 << 20;
};

// Upper bound of the file's size in bytes: the data, HDF5's metadata (object headers, group indices, the
// checksum attribute of each dataset, the root attributes) and the alignment padding before each dataset of
// at least the threshold. Measured against written files in tests/io/checkpoint_space_test.cpp.
int64_t checkpoint_file_bytes(const CheckpointFileShape& shape);

// Bytes an unprivileged writer may still allocate in dir (statvfs f_bavail x f_frsize); -1 when unknown.
int64_t free_bytes(const std::string& dir);

// "5.1 MiB": one decimal, as in the error lines.
std::string mib_text(double bytes);

}  // namespace gt::io
