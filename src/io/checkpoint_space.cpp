#include "src/io/checkpoint_space.hpp"

#include <sys/statvfs.h>

#include <cstdio>

namespace gt::io {

namespace {
// HDF5 metadata per dataset: its object header (dataspace, datatype, layout, fill value, the checksum attribute)
// and its share of the group indices that name it. Measured (HDF5 1.10.8, 1.8 file format): 425 bytes per
// dataset in tiny's checkpoint (84 datasets), about 340 in a 300-dataset file; 768 leaves room for long names.
constexpr int64_t kDatasetMetaBytes = 768;
// Superblock, root group, the root attributes' headers, and the partly used blocks of HDF5's metadata and small
// raw-data aggregators (2 KiB each by default): a few KiB measured, 64 KiB allowed.
constexpr int64_t kFixedBytes = 64 << 10;
}  // namespace

int64_t checkpoint_file_bytes(const CheckpointFileShape& shape) {
  int64_t total = kFixedBytes + 2 * shape.attribute_bytes;  // a long attribute may also pass through a heap
  for (const int64_t n : shape.dataset_elements) {
    const int64_t bytes = n * int64_t(sizeof(float));
    total += bytes + kDatasetMetaBytes;
    if (shape.alignment > 1 && bytes >= shape.alignment_threshold) total += shape.alignment - 1;
  }
  return total;
}

int64_t free_bytes(const std::string& dir) {
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return -1;
  return int64_t(vfs.f_bavail) * int64_t(vfs.f_frsize);
}

std::string mib_text(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

}  // namespace gt::io
