#pragma once
// A TensorShard as hyperslab boxes. A shard whose data is a flat range [flat_begin, flat_end) of its hyperslab
// (row-major; a ZeRO shard cuts tensors anywhere) is the union of at most 2 * ndim - 1 boxes: the partial row
// it starts in, whole rows (or whole planes), the partial row it ends in. The boxes come in row-major order, so
// their elements, concatenated, are the shard's data in order: one HDF5 selection (their union, which HDF5
// walks in row-major order) transfers the whole range with one call.
#include <hdf5.h>

#include <cstdint>
#include <vector>

#include "src/io/checkpoint.hpp"
#include "src/io/h5_util.hpp"

namespace gt::io {

struct Box {
  std::vector<int64_t> start, count;  // global coordinates
};

int64_t num_elements(const std::vector<int64_t>& shape);
// Elements the shard's data holds.
int64_t shard_elements(const TensorShard& t);
// The boxes of the shard, in row-major order (none for an empty shard).
std::vector<Box> shard_boxes(const TensorShard& t);
// The dataset checksum's terms over the shard's elements (src/io/checksum.hpp).
uint64_t shard_checksum(const TensorShard& t);
// Selects the shard's elements in `space` (none when !select or the shard is empty).
void select_shard(hid_t space, const TensorShard& t, bool select);
// One rank's part of a dataset read or write: selects the shard's elements in the file's `space` and returns the
// matching memory space. t = nullptr: the rank moves nothing but takes part in a collective call (nothing
// selected, a one-element memory space with nothing selected either).
H5Handle select_shard_transfer(hid_t space, const TensorShard* t);

}  // namespace gt::io
