#include "src/io/checksum.hpp"

#include <cstring>

namespace gt::io {

uint64_t range_checksum(const float* data, uint64_t first_index, size_t n) {
  uint64_t sum = 0;
  for (size_t k = 0; k < n; ++k) {
    uint32_t bits;
    std::memcpy(&bits, data + k, sizeof bits);
    sum += element_hash(first_index + k, bits);
  }
  return sum;
}

uint64_t hyperslab_checksum(const float* data, const std::vector<int64_t>& global_shape,
                            const std::vector<int64_t>& start, const std::vector<int64_t>& count) {
  const size_t ndim = global_shape.size();
  if (ndim == 0) return 0;
  for (int64_t c : count)
    if (c == 0) return 0;
  // Walk the hyperslab row by row (all dimensions but the last), like an odometer over `pos`.
  std::vector<int64_t> pos(ndim, 0);
  const int64_t row_len = count[ndim - 1];
  uint64_t sum = 0;
  size_t offset = 0;
  while (true) {
    uint64_t flat = 0;
    for (size_t d = 0; d < ndim; ++d) flat = flat * global_shape[d] + (start[d] + pos[d]);
    sum += range_checksum(data + offset, flat, row_len);
    offset += row_len;
    int d = static_cast<int>(ndim) - 2;
    while (d >= 0 && ++pos[d] == count[d]) pos[d--] = 0;
    if (d < 0) break;
  }
  return sum;
}

}  // namespace gt::io
