#pragma once
// Helpers for the checkpoint tests: reproducible global tensors, decompositions into hyperslabs, an
// independent (test-side) copy of the documented checksum formula, and a scratch directory per test.
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "src/io/checkpoint.hpp"

namespace iotest {

inline int comm_rank(MPI_Comm c) { int r; MPI_Comm_rank(c, &r); return r; }
inline int comm_size(MPI_Comm c) { int s; MPI_Comm_size(c, &s); return s; }

inline int64_t numel(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Full global tensor, the same on every rank: a seeded xorshift stream (independent of the library).
inline std::vector<float> global_tensor(const std::string& name, const std::vector<int64_t>& shape, uint64_t seed) {
  uint64_t x = seed * 0x100000001B3ull + 0x811C9DC5ull;
  for (char c : name) x = (x ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  std::vector<float> v(numel(shape));
  for (float& f : v) {
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    f = static_cast<float>(static_cast<int64_t>(x >> 40) - (1 << 23)) / (1 << 20);
  }
  return v;
}

// Row-major copy of the box [start, start + count) out of a full tensor, by plain index arithmetic.
inline std::vector<float> slice(const std::vector<float>& full, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& start, const std::vector<int64_t>& count) {
  std::vector<float> out;
  const int64_t n = numel(count);
  for (int64_t k = 0; k < n; ++k) {
    int64_t rem = k, flat = 0, stride = 1;
    std::vector<int64_t> idx(shape.size());
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      idx[d] = start[d] + rem % count[d];
      rem /= count[d];
    }
    for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
      flat += idx[d] * stride;
      stride *= shape[d];
    }
    out.push_back(full[flat]);
  }
  return out;
}

// Test-side copy of the checksum in docs/checkpoints.md: sum of fmix64(key(i, bits)) mod 2^64.
inline uint64_t reference_checksum(const std::vector<float>& full) {
  uint64_t sum = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    uint32_t b;
    std::memcpy(&b, &full[i], 4);
    uint64_t k = ((uint64_t(i) << 32) | b) ^ ((uint64_t(i) >> 32) * 0x9E3779B97F4A7C15ull) ^ 0x2545F4914F6CDD1Dull;
    k ^= k >> 33; k *= 0xFF51AFD7ED558CCDull; k ^= k >> 33; k *= 0xC4CEB9FE1A85EC53ull; k ^= k >> 33;
    sum += k;
  }
  return sum;
}

struct Spec {
  std::string name;
  std::vector<int64_t> shape;
};
inline std::vector<Spec> small_model() {
  return {{"params/wte", {6, 10}}, {"params/h.0/ln.b", {5}}, {"adam_m/h.0/attn.qkv.w", {3, 4, 7}},
          {"adam_v/tiny", {1, 3}}};
}

// A rank's part [p*n/parts, (p+1)*n/parts) of dimension dim.
inline void split_dim(const std::vector<int64_t>& shape, int dim, int part, int parts, std::vector<int64_t>& start,
                      std::vector<int64_t>& count) {
  start.assign(shape.size(), 0);
  count = shape;
  const int64_t n = shape[dim];
  start[dim] = part * n / parts;
  count[dim] = (part + 1) * n / parts - start[dim];
}

// The elements of a hyperslab's data that a shard with a flat range holds.
inline std::vector<float> flat_part(const std::vector<float>& box, const gt::TensorShard& t) {
  if (t.flat_end < 0) return box;
  return std::vector<float>(box.begin() + t.flat_begin, box.begin() + t.flat_end);
}

// Owns the buffers behind a list of TensorShard.
struct Shards {
  std::vector<gt::TensorShard> list;
  std::vector<std::vector<float>> bufs;
};

// TpZero: as TpDp, but the dp replicas split each hyperslab into flat ranges cut one element past an even
// split (mid-row, as a ZeRO shard does) and each writes its own range.
enum class Layout { Rows, Cols, WholeWriter0, WholeAllWriters, TpDp, TpZero };

// Cut point q of Q of n elements: one past the even split, so the ranges begin and end mid-row.
inline int64_t flat_cut(int64_t n, int q, int Q) { return q == 0 ? 0 : q == Q ? n : std::min(n, q * n / Q + 1); }

// Shards of this rank under a layout; data filled from the seeded reference (or zero when fill is false).
inline Shards make_shards(const std::vector<Spec>& specs, Layout layout, int rank, int size, uint64_t seed, bool fill) {
  Shards s;
  s.bufs.reserve(specs.size());
  for (const Spec& sp : specs) {
    gt::TensorShard t;
    t.name = sp.name;
    t.global_shape = sp.shape;
    const int last = static_cast<int>(sp.shape.size()) - 1;
    switch (layout) {
      case Layout::Rows: split_dim(sp.shape, 0, rank, size, t.start, t.count); break;
      case Layout::Cols: split_dim(sp.shape, last, rank, size, t.start, t.count); break;
      case Layout::WholeWriter0: split_dim(sp.shape, 0, 0, 1, t.start, t.count); t.writer = rank == 0; break;
      case Layout::WholeAllWriters: split_dim(sp.shape, 0, 0, 1, t.start, t.count); break;
      case Layout::TpDp: {  // tp = rank % 2 splits the last dim, dp replicas: only dp == 0 writes
        const int tp = size >= 2 ? 2 : 1;
        split_dim(sp.shape, last, rank % tp, tp, t.start, t.count);
        t.writer = rank / tp == 0;
        break;
      }
      case Layout::TpZero: {
        const int tp = size >= 2 ? 2 : 1, dp = size / tp, q = rank / tp;
        split_dim(sp.shape, last, rank % tp, tp, t.start, t.count);
        t.flat_begin = flat_cut(numel(t.count), q, dp);
        t.flat_end = flat_cut(numel(t.count), q + 1, dp);
        break;
      }
    }
    const std::vector<float> full = global_tensor(sp.name, sp.shape, seed);
    s.bufs.push_back(fill ? flat_part(slice(full, sp.shape, t.start, t.count), t)
                          : std::vector<float>(flat_part(std::vector<float>(numel(t.count)), t).size(), 0.f));
    t.data = s.bufs.back().data();
    s.list.push_back(t);
  }
  return s;
}

// Number of elements of shards that differ from the seeded reference.
inline int64_t count_wrong(const Shards& s, uint64_t seed) {
  int64_t wrong = 0;
  for (size_t i = 0; i < s.list.size(); ++i) {
    const gt::TensorShard& t = s.list[i];
    const std::vector<float> want =
        flat_part(slice(global_tensor(t.name, t.global_shape, seed), t.global_shape, t.start, t.count), t);
    for (size_t k = 0; k < want.size(); ++k) wrong += std::memcmp(&want[k], &t.data[k], 4) != 0;
  }
  return wrong;
}

// Fresh empty directory, the same path on every rank of comm.
inline std::string scratch_dir(MPI_Comm comm, const std::string& tag) {
  long id = static_cast<long>(getpid());
  MPI_Bcast(&id, 1, MPI_LONG, 0, comm);
  const std::string dir =
      (std::filesystem::temp_directory_path() / ("gridtrain_io_" + tag + "_" + std::to_string(id))).string();
  if (comm_rank(comm) == 0) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  MPI_Barrier(comm);
  return dir;
}

}  // namespace iotest
