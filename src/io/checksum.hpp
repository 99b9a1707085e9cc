#pragma once
// Dataset checksum of gridtrain checkpoints (format version 1).
//
//   checksum = sum over elements, mod 2^64, of element_hash(i, bits)
//   i    : the element's row-major flat index in the *global* tensor
//   bits : the element's float32 bit pattern
//
// A sum is order-independent and composable: each rank hashes the elements of its own hyperslab and one
// MPI all-reduce (sum of uint64) gives the checksum of the whole tensor, whatever the decomposition.
// Mixing the index into each term makes swapped or shifted elements change the sum, not only bit flips.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gt::io {

// fmix64 (the MurmurHash3 finalizer) is a bijection of 64-bit words; the key packs the low 32 bits of the
// index above the value bits, so distinct (i, bits) give distinct terms for tensors below 2^32 elements.
inline uint64_t element_hash(uint64_t index, uint32_t bits) {
  uint64_t x = ((index << 32) | bits) ^ ((index >> 32) * 0x9E3779B97F4A7C15ull) ^ 0x2545F4914F6CDD1Dull;
  x ^= x >> 33;
  x *= 0xFF51AFD7ED558CCDull;
  x ^= x >> 33;
  x *= 0xC4CEB9FE1A85EC53ull;
  x ^= x >> 33;
  return x;
}

// Sum of element_hash over n consecutive elements whose first global flat index is first_index.
uint64_t range_checksum(const float* data, uint64_t first_index, size_t n);

// Sum of element_hash over the hyperslab [start, start + count) of global_shape; data holds the hyperslab
// row-major contiguous (prod(count) floats).
uint64_t hyperslab_checksum(const float* data, const std::vector<int64_t>& global_shape,
                            const std::vector<int64_t>& start, const std::vector<int64_t>& count);

}  // namespace gt::io
